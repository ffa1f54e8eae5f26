"""Training contexts with a uniform label distribution (Sec. 4.1; Tab. 2 "Context label distribution: Uniform").

Classification: equal counts per class, at most ``size`` rows (512 in Tab. 2). When a class has fewer
rows in the context pool than its equal share, it contributes all of them and the spare slots are shared
equally among the other classes (a max-min fair allocation: as uniform as the pool allows; with
``strict=True`` every class is instead cut to the rarest class's count, which is exactly uniform but
smaller). With more classes than slots, ``size`` classes are chosen at random and get one row each.

Regression: the same allocation over ``n_bins`` equal-width bins of the target range. Equal-width bins
are the default because uniform counts over *quantile* bins would just reproduce the marginal target
distribution (every quantile bin holds the same share of rows), which does nothing against the
base-rate fallacy; ``binning="quantile"`` is available for that stratified variant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from iclmem.data.errors import DataError


@dataclass(frozen=True)
class TrainingContext:
    """Row ids of one training context and how many came from each class / target bin."""

    ids: np.ndarray
    counts: dict[str, int]


def fair_allocation(available: np.ndarray, size: int, rng: np.random.Generator, strict: bool = False) -> np.ndarray:
    """Rows to take per group: equal shares up to ``size``, groups short of their share give it to the others."""
    available = np.asarray(available, dtype=np.int64)
    take = np.zeros_like(available)
    if strict:
        present = available > 0
        if present.any():
            per = min(int(available[present].min()), size // int(present.sum()))
            take[present] = per
        return take
    budget = int(min(size, available.sum()))
    while budget > 0:
        active = np.flatnonzero(take < available)
        share = budget // len(active)
        if share == 0:
            take[rng.choice(active, size=budget, replace=False)] += 1
            break
        add = np.minimum(share, available[active] - take[active])
        take[active] += add
        budget -= int(add.sum())
    return take


def _groups(target: pd.Series, task: str, n_bins: int, binning: str) -> pd.Series:
    if task == "classification":
        return target.astype(str)
    values = target.to_numpy(dtype=float)
    if binning == "width":
        edges = np.linspace(values.min(), values.max(), n_bins + 1)
        codes = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, n_bins - 1)
    elif binning == "quantile":
        codes = pd.qcut(pd.Series(values).rank(method="first"), n_bins, labels=False).to_numpy()
    else:
        raise DataError(f"binning must be 'width' or 'quantile', not {binning!r}")
    return pd.Series([f"bin{c:02d}" for c in codes], index=target.index)


def draw_training_context(
    target: pd.Series,
    pool_ids: np.ndarray,
    task: str,
    size: int = 512,
    seed: int = 0,
    *,
    n_bins: int = 10,
    binning: str = "width",
    strict: bool = False,
) -> TrainingContext:
    """Draw a training context of at most ``size`` rows from ``pool_ids`` with a uniform label distribution.

    ``target`` is the deduplicated table's target indexed by row id; ``pool_ids`` the context pool of a
    split manifest. The allocation rule for rare classes / sparse bins is described in the module docstring.
    """
    if size < 1:
        raise DataError(f"context size must be positive, not {size}")
    pool_ids = np.asarray(pool_ids, dtype=np.int64)
    if len(pool_ids) == 0:
        raise DataError("the context pool is empty; use a smaller query_size or context_pool_size")
    rng = np.random.default_rng(seed)
    groups = _groups(target.iloc[pool_ids].reset_index(drop=True), task, min(n_bins, len(pool_ids)), binning)
    names, codes = np.unique(groups.to_numpy(), return_inverse=True)
    available = np.bincount(codes, minlength=len(names))
    take = fair_allocation(available, size, rng, strict)
    chosen = [rng.choice(np.flatnonzero(codes == g), size=int(t), replace=False) for g, t in enumerate(take) if t]
    ids = np.sort(pool_ids[np.concatenate(chosen)]) if chosen else np.array([], dtype=np.int64)
    return TrainingContext(ids=ids, counts={str(n): int(t) for n, t in zip(names, take, strict=True)})
