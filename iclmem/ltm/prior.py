"""The synthetic prior the reference LTM is pretrained on (a PFN prior, Mueller et al. 2021).

Two families of random datasets, as in TabPFN / TabICL:

* **MLP-SCM**: a random MLP with random activations is run on random root causes with
  additive noise; features and target are read off randomly chosen hidden nodes, so
  features can be causes, effects or siblings of the target (structural-causal style);
* **tree ensembles**: features drawn from mixed marginals, target = sum of a few random
  axis-aligned decision trees plus noise;
* **clusters** (share ``cluster_share``, 0 before stage 3): rows are noisy copies of a few
  random prototypes over a random subset of the features, and the target is a value of the
  prototype, so a class can hold several prototypes. Answering needs similarity over many
  features at once, as in scikit-learn's digits, where kNN is strong.

Post-processing: some features are quantized into categories (and then encoded as
ordinal-by-frequency codes, exactly as :class:`iclmem.ltm.encoding.TableEncoder` does
for real categorical columns), some tables get missing cells, and all features are
robust-standardized with the context rows' statistics. Classification targets are
the continuous target cut at random quantiles into 2..10 classes, with a random class
permutation; regression targets are standardized with the context mean and std.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .encoding import robust_center_scale, robust_standardize

_ACTIVATIONS = (
    np.tanh,
    lambda z: np.maximum(z, 0.0),
    np.sin,
    lambda z: z,
    lambda z: 1.0 / (1.0 + np.exp(-z)),
    np.abs,
    lambda z: np.sign(z) * np.sqrt(np.abs(z)),
)


@dataclass(frozen=True)
class PriorConfig:
    """Ranges the prior samples from."""

    min_context: int = 16
    max_context: int = 512
    min_features: int = 1
    max_features: int = 32
    max_classes: int = 10
    regression_share: float = 0.35
    tree_share: float = 0.3
    scm_share: float = 0.2
    cluster_share: float = 0.0  # the rest: a random MLP of the features
    categorical_share: float = 0.3
    max_categories: int = 10  # quantized columns get 2..max_categories levels
    missing_share: float = 0.2
    typical_context: int = 128  # most tables have at most this many context rows ...
    large_context_share: float = 0.15  # ... the others up to max_context
    # Stage 4: a share of steps with contexts below ``min_context`` (down to ``small_context_min`` rows), the size
    # of the probe's zero-information contexts (|Y| rows: 2 for a binary table, Sec. 4.2). Their features and
    # categories are scaled on ``population_rows`` rows of the same table, as a real table's encoder is fitted on
    # the table and not on the few rows of one context. 0 (stages 1-3) draws exactly the tables it drew before.
    small_context_share: float = 0.0
    small_context_min: int = 2
    population_rows: int = 128

    def __post_init__(self) -> None:
        if self.tree_share + self.scm_share + self.cluster_share > 1.0 + 1e-9:
            raise ValueError(
                "PriorConfig: tree_share + scm_share + cluster_share = "
                f"{self.tree_share + self.scm_share + self.cluster_share:g} > 1; "
                "the shares of the table families must sum to at most 1 (the rest are MLP-of-features tables)."
            )
        if not 0.0 <= self.small_context_share <= 1.0:
            raise ValueError(
                f"PriorConfig.small_context_share is {self.small_context_share}; it is a share of steps, in [0, 1]."
            )
        if not 1 <= self.small_context_min <= self.min_context:
            raise ValueError(
                f"PriorConfig.small_context_min is {self.small_context_min}; it must lie in [1, min_context = "
                f"{self.min_context}] (the small contexts are those below min_context)."
            )
        if self.max_categories < 2:
            raise ValueError(
                f"PriorConfig.max_categories is {self.max_categories}; a categorical column needs at least 2 levels, "
                "so use 2 or more."
            )


@dataclass
class SyntheticTable:
    """One generated table: encoded features, targets and the context/query split."""

    x: np.ndarray  # (n_rows, n_features) float32, NaN = missing
    y: np.ndarray  # (n_rows,) class slot or standardized target, float32
    n_context: int
    is_regression: bool
    n_classes: int


def _mlp_scm(rng: np.random.Generator, n: int, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    n_layers = int(rng.integers(1, 5))
    width = int(rng.integers(max(4, n_features + 1), max(8, 2 * n_features + 2) + 1))
    noise = float(np.exp(rng.uniform(np.log(0.001), np.log(0.2))))
    act = _ACTIVATIONS[int(rng.integers(len(_ACTIVATIONS)))]
    n_roots = int(rng.integers(1, width + 1))
    h = rng.normal(size=(n, n_roots)) if rng.random() < 0.5 else rng.uniform(-1.7, 1.7, size=(n, n_roots))
    nodes = []
    for _ in range(n_layers):
        w = rng.normal(size=(h.shape[1], width)) / np.sqrt(h.shape[1])
        w *= rng.random(w.shape) < rng.uniform(0.4, 1.0)  # sparse edges
        h = act(h @ w) + noise * rng.normal(size=(n, width))
        h = (h - h.mean(0)) / (h.std(0) + 1e-6)
        nodes.append(h)
    pool = np.concatenate(nodes, axis=1)
    pick = rng.choice(pool.shape[1], size=n_features + 1, replace=pool.shape[1] < n_features + 1)
    return pool[:, pick[:-1]], pool[:, pick[-1]]


def _features(rng: np.random.Generator, n: int, n_features: int) -> np.ndarray:
    """Feature marginals (normal, uniform, exponential), with random linear correlation."""
    x = np.empty((n, n_features))
    for j in range(n_features):
        kind = rng.integers(3)
        x[:, j] = (
            rng.normal(size=n) if kind == 0 else rng.uniform(-2, 2, size=n) if kind == 1 else rng.exponential(size=n)
        )
    if n_features > 1 and rng.random() < 0.5:
        mix = np.eye(n_features) + rng.normal(scale=rng.uniform(0.1, 0.7), size=(n_features, n_features))
        x = x @ mix
    return x


def _mlp_of_features(rng: np.random.Generator, n: int, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Target = random MLP (0-3 hidden layers) of a random subset of the features, plus noise."""
    x = _features(rng, n, n_features)
    used = rng.random(n_features) < rng.uniform(0.3, 1.0)
    used[rng.integers(n_features)] = True  # at least one informative feature
    h = (x[:, used] - x[:, used].mean(0)) / (x[:, used].std(0) + 1e-6)
    act = _ACTIVATIONS[int(rng.integers(len(_ACTIVATIONS)))]
    for _ in range(int(rng.integers(0, 4))):
        width = int(rng.integers(8, 33))
        h = act(h @ (rng.normal(size=(h.shape[1], width)) / np.sqrt(h.shape[1])) + rng.normal(scale=0.5, size=width))
    y = h @ rng.normal(size=h.shape[1])
    y = (y - y.mean()) / (y.std() + 1e-6)
    return x, y + float(np.exp(rng.uniform(np.log(0.001), np.log(0.3)))) * rng.normal(size=n)


def _tree_ensemble(rng: np.random.Generator, n: int, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    x = _features(rng, n, n_features)
    y = np.zeros(n)
    for _ in range(int(rng.integers(1, 6))):
        depth = int(rng.integers(1, 6))
        leaf = np.zeros(n, dtype=np.int64)
        for _d in range(depth):
            feat = rng.integers(n_features, size=2**_d)[leaf]
            thr = rng.normal(size=2**_d)[leaf] * 0.8
            leaf = 2 * leaf + (x[np.arange(n), feat] > thr)
        y += rng.normal(size=2**depth)[leaf]
    y += float(rng.uniform(0.0, 0.2)) * y.std() * rng.normal(size=n)
    return x, y


def _clusters(rng: np.random.Generator, n: int, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Noisy copies of 2..20 prototypes; the target is the prototype's value plus noise."""
    k = int(rng.integers(2, 21))
    assign = rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 3.0)))
    relevant = rng.random(n_features) < rng.uniform(0.3, 1.0)
    relevant[rng.integers(n_features)] = True
    prototypes = rng.normal(size=(k, n_features)) * relevant
    noise = float(np.exp(rng.uniform(np.log(0.1), np.log(1.0))))
    x = prototypes[assign] + noise * rng.normal(size=(n, n_features))
    rectified = rng.random(n_features) < rng.uniform(0.0, 0.5)  # non-negative, sparse columns (like pixels)
    x[:, rectified] = np.maximum(x[:, rectified], 0.0)
    return x, rng.normal(size=k)[assign] + float(rng.uniform(0.0, 0.2)) * rng.normal(size=n)


def _categorize(rng: np.random.Generator, x: np.ndarray, n_context: int, share: float, max_levels: int) -> np.ndarray:
    """Quantize some columns into 2..``max_levels`` categories, coded ordinal-by-frequency.

    The real CARTE tables hold high-cardinality columns (regions, grapes, wineries) whose
    frequency codes carry no order; a larger ``max_levels`` lets the prior show such columns.
    """
    for j in range(x.shape[1]):
        if rng.random() >= share:
            continue
        k = int(rng.integers(2, max_levels + 1))
        cuts = np.quantile(x[:n_context, j], np.sort(rng.uniform(0, 1, size=k - 1)))
        codes = np.searchsorted(cuts, x[:, j])
        codes = rng.permutation(k)[codes]  # category identity is arbitrary
        freq = np.bincount(codes[:n_context], minlength=k)
        rank = np.empty(k, dtype=np.int64)
        rank[np.lexsort((np.arange(k), -freq))] = np.arange(k)
        x[:, j] = rank[codes]
    return x


def sample_table(
    rng: np.random.Generator,
    cfg: PriorConfig,
    n_context: int,
    n_query: int,
    n_features: int,
    is_regression: bool,
    stats_rows: int | None = None,
) -> SyntheticTable:
    """Draw one synthetic table with ``n_context`` context and ``n_query`` query rows.

    ``stats_rows`` (at least ``n_context``; default ``n_context``): the rows the feature scaling, the category cuts,
    the class cuts and the regression target's standardization read. Rows ``n_context..stats_rows`` are drawn from
    the same table and dropped, so a small context is scaled as a real table's rows are: on the table, not on itself.
    """
    stats = n_context if stats_rows is None else max(int(stats_rows), n_context)
    n = stats + n_query
    u = rng.random()
    if u < cfg.tree_share:
        gen = _tree_ensemble
    elif u < cfg.tree_share + cfg.scm_share:
        gen = _mlp_scm
    elif u < cfg.tree_share + cfg.scm_share + cfg.cluster_share:
        gen = _clusters
    else:
        gen = _mlp_of_features
    x, target = gen(rng, n, n_features)
    x = _categorize(rng, x.astype(np.float64), stats, cfg.categorical_share, cfg.max_categories)
    if rng.random() < cfg.missing_share:
        x[rng.random(x.shape) < rng.uniform(0.01, 0.15)] = np.nan
    center, scale = robust_center_scale(x[:stats])
    x = robust_standardize(x, center, scale)
    target_pop = target
    if stats > n_context:  # the population rows only scaled the table
        keep_rows = np.r_[np.arange(n_context), np.arange(stats, n)]
        x, target = x[keep_rows], target[keep_rows]
    if is_regression:
        mu, sd = target_pop[:stats].mean(), target_pop[:stats].std() + 1e-6  # the probe scales on the table too
        return SyntheticTable(x, ((target - mu) / sd).astype(np.float32), n_context, True, 0)
    k = (
        2 if cfg.max_classes < 3 or rng.random() < 0.4 else int(rng.integers(3, cfg.max_classes + 1))
    )  # binary is common
    # random class proportions: cut points at sorted uniform quantiles, min share 1/(3k)
    props = rng.dirichlet(np.full(k, 2.0)) * (1 - 1 / 3) + 1 / (3 * k)
    cuts = np.quantile(target_pop[:stats], np.cumsum(props)[:-1])
    labels = rng.permutation(k)[np.searchsorted(cuts, target)]
    present = np.unique(labels[:n_context])
    if len(present) < 2:  # a degenerate target (e.g. a constant tree) or a small context of one class: draw another
        return sample_table(rng, cfg, n_context, n_query, n_features, is_regression, stats_rows)
    slot = np.full(k, -1)
    slot[present] = np.arange(len(present))  # canonical mapping: sorted label values -> slots
    y = slot[labels]
    keep = np.r_[np.ones(n_context, bool), y[n_context:] >= 0]
    return SyntheticTable(x[keep], y[keep].astype(np.float32), n_context, False, len(present))
