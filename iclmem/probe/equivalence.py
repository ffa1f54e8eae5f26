"""The manipulation suite as the model sees it: equivalence classes of the 48 contexts (Sec. 4.2, App. A.3, Tab. 7).

The robustness score of a query is the mean over the suite, ``S(q) = 1/|Pi| sum_k L_k(q)`` (Sec. 4.2),
with the 48 manipulations ``Pi`` of App. A.3 / Tab. 7. A model that is exactly invariant to some
transformations of its context sees several of the 48 manipulated contexts as ONE context; those
manipulations then give the same loss, and ``S(q)`` is a weighted mean over fewer *distinct*
contexts, each weighted by the share of the suite that maps to it. This module makes that explicit:

* :class:`Invariances` — what a model declares it is exactly invariant to, as data;
  :func:`model_invariances` looks it up (a model's own ``invariances`` attribute, then a registry
  by type, else the conservative :data:`NO_INVARIANCES`);
* :func:`canonical_context` — a canonical form of a (manipulated) multiple-choice context and its
  query under those invariances: equal forms mean the model gets the same input up to the
  declared invariances, hence the same prediction;
* :func:`suite_equivalence` (one query), :func:`equivalence_classes` (one row per class),
  :func:`effective_sizes` / :func:`suite_effective_size` (many queries).

**Why the reference LTM is invariant to row order and to uniform duplication**
(:mod:`iclmem.ltm.model`). Rows carry no positional encoding; a row's cells only interact with
other rows through attention across rows within a column, where keys and values come from the
context rows (``ctx_mask``) and every other operation (cell embedding, attention across the columns
of a row, LayerNorm, feed-forward, decoder) acts on one row at a time. Hence:

* *row order* — permuting the context rows permutes the keys/values of that attention; the
  softmax-weighted sum is a sum over a set, so every query row's output is unchanged;
* *uniform duplication* — if every distinct context row occurs ``m_j`` times and all ``m_j`` are
  multiplied by the same ``c``, an attention output is
  ``sum_j c m_j exp(s_j) v_j / sum_j c m_j exp(s_j)``: ``c`` cancels (the weights over identical
  copies renormalize), and identical input rows stay identical in every layer (same inputs, same
  attention output), so by induction over layers the query's output is unchanged. The context
  therefore only matters through its *distribution* of distinct rows: the row multiset divided by the
  gcd of its multiplicities. Nothing else in the model reads the row count: the class slots are the
  sorted distinct labels (unchanged by duplication) and the regression target is standardized with
  dataset-level statistics that :meth:`~iclmem.probe.contexts.MCContext.to_task` requires.

Both hold in exact arithmetic. In float32 they hold **up to rounding only**: the attention sums run
over more (or reordered) terms, which changes the last bits. Measured on the shipped reference LTM
(``spotify``: 2 classes, 30 queries; ``wine_pl``: regression, 10 candidates; scored one context at a
time and in padded batches), manipulations of one class gave probabilities at most ``1.0e-6`` apart
(``wine_pl``: ``4.6e-7``; the positional shuffles alone were bit-exact when scored one at a time,
duplication moved the last bits). ``tests/probe/test_probe_equivalence.py`` asserts ``atol = 5e-6`` on
probabilities and ``1e-4`` on losses. The converse does not hold: distinct classes are different
inputs but can predict alike (e.g. feature reduction and ``distractor_2`` came within ``7e-5`` for one
``spotify`` query), so the class count is the number of distinct inputs, not of distinct scores.
The invariances are properties of the architecture, so they hold for every checkpoint
of :class:`~iclmem.ltm.model.TabularICLTransformer`, fine-tuned ``M_theta`` as well as ``M_ref``.
The shipped checkpoint has ``column_embedding=True``, so it is *not* invariant to column order
(no manipulation of Tab. 7 permutes columns anyway).

**What merges in the default suite** (rows sorted, multiplicities divided by their gcd): baseline,
the three positional shuffles, uniform scaling x2/x5/x10, ``mixed_true_5_non_true_5`` and random
shuffle + uniform x2/x5/x10 are all ``C_base`` (11 of 48); feature reduction = shuffle + reduce =
shuffle + uniform + reduce (4); ``skew_true_f`` = ``shuffle_and_skewed_f``; ``random_f`` =
``shuffle_and_random_f`` (the random step draws the same counts: same stream, same query). With 10
regression candidates that leaves 30 distinct contexts (all 200 sampled ``wine_pl`` queries; random
scaling can draw another manipulation's pattern, e.g. ``random_2`` = ``skew_non_true_k3_x2``, which
leaves 28-29 for about 0.6% of queries). With 2 classes, Skew Incorrect's k is capped at 1 so its 9
manipulations give 3 contexts, and random scaling often draws the ratio of another manipulation (e.g.
counts (2, 4) is ``skew_non_true_k1_x2``, equal counts are ``C_base``): 19 to 24 distinct contexts,
depending on the query (19-23, median 21, over 200 ``spotify`` queries); 3 classes: 22 to 27.
With no invariances (an unknown model) 46-47 remain for 10 candidates, but only 27-38 on ``spotify``:
with 2 candidates the shuffles, the capped k and equal random counts often give *identical* arrays.
Note that ``mixed_true_5_non_true_5`` and ``uniform_5`` are *bit-identical* contexts
(both ``np.repeat`` every row 5 times), so they coincide even for a model with no invariances.

**Mixed skewing: the reading in use and an alternative** (Tab. 7: "True factor in {2,3,5},
Incorrect factor in {2,3,5}, 7, Simultaneously skews both the true target and incorrect targets";
App. A.3: "*Mixed skewing* adjusts both simultaneously"). :mod:`iclmem.probe.manipulations` reads it
as: the true candidate x t and *every* incorrect candidate x n, for 7 of the 9 pairs (the 6 unequal
pairs and (5, 5), the one the paper names). Under that reading ``mixed_true_5_non_true_5`` is
``uniform_5``. The paper's own sentence (App. A.3, "Perturbation Effectiveness"; Fig. 4) supports it:
"simultaneously amplifying all labels by 5x yields the highest observed AUC of 0.559" (then the
paper's best single perturbation is, for a duplication-invariant model, the same context as
``uniform_5``, whose AUC the paper does not report on its own, so this cannot be checked). But Tab. 7 and
App. A.3 do not say *how many* incorrect targets are skewed, and the neighbouring family "Skew
Incorrect Targets" skews k in {1,2,3} of them, so the text also allows mixed skewing = Skew True
(x t) combined with Skew Incorrect (k = 1, x n). The readings coincide on binary tasks (one incorrect
candidate; the paper's two classification tables are binary) and differ whenever |Y| > 2: then
``mixed_true_5_non_true_5`` is *not* a uniform scaling. :func:`mixed_skewing_k` builds that family
(7 :class:`~iclmem.probe.manipulations.Manipulation` objects, which the probing functions accept,
see :func:`~iclmem.probe.manipulations.resolve_manipulations`) and :func:`alternative_suite` the 48
with it in place of the default family (its names, ``mixed_true_{t}_non_true_k{k}_x{n}``, differ from
the default ones, so cached scores keyed by manipulation names do not mix); the default suite is
unchanged. For the reference LTM the alternative suite has 31 distinct contexts with 10 candidates
(``mixed_true_5_non_true_k1_x5`` leaves the baseline's class), and the same classes as the default
on binary tasks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import gcd
from typing import Any

import numpy as np
import pandas as pd

from .contexts import MCContext, ProbeError, mc_context
from .invariances import (
    NO_INVARIANCES,
    REFERENCE_INVARIANCES,
    Invariances,
    canonical_rows,
    float_rows,
    model_invariances,
    register_invariances,
)
from .manipulations import (
    MANIPULATIONS,
    MIXED_PAIRS,
    Manipulation,
    compose,
    resolve_manipulations,
    skew_non_true_step,
    skew_true_step,
)
from .scoring import ProbeQuery

EQUIVALENCE_COLUMNS: tuple[str, ...] = (
    "manipulation",
    "category",
    "group",
    "group_size",
    "weight",
    "counts",
    "n_features",
)


# -- canonical contexts -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CanonicalContext:
    """A hashable canonical form of an MC context and its query (compare with ``==``).

    ``rows``: ``(label, feature bytes, multiplicity)`` — sorted and merged when row order does not
    matter, else runs of consecutive equal rows in order; multiplicities divided by their gcd when
    uniform duplication does not matter. ``query``: the query's feature bytes; ``query_y`` its target.
    """

    rows: tuple[tuple[str, bytes, int], ...]
    n_features: int
    query: bytes
    query_y: str


def canonical_context(ctx: MCContext, invariances: Invariances) -> CanonicalContext:
    """The canonical form of a (manipulated) multiple-choice context under ``invariances`` (Sec. 4.2, Tab. 7).

    Two contexts with equal canonical forms give a model with these invariances the same input up
    to the invariances, hence the same predictive distribution (up to float32 rounding). The query
    is part of the form: feature reduction and distractor injection change it together with the
    context. The form is sound, not necessarily complete: distinct forms may still predict alike.
    """
    q = float_rows(ctx.query_x)
    return CanonicalContext(
        tuple(canonical_rows(ctx.context_x, ctx.context_y, invariances)),
        ctx.n_features,
        q.tobytes() + repr(q.shape).encode(),
        repr(ctx.query_y.tolist()),
    )


def _label_counts(ctx: MCContext, candidates: np.ndarray, invariances: Invariances) -> str:
    """``"true 2 | others 1 1 3"``: rows per candidate (true one first, others in candidate order), gcd-reduced if
    duplication does not matter."""
    c = Counter(ctx.context_y.tolist())
    counts = [c[v] for v in candidates.tolist()]
    if invariances.uniform_duplication:
        g = 0
        for n in counts:
            g = gcd(g, n)
        counts = [n // max(g, 1) for n in counts]
    true = [n for v, n in zip(candidates.tolist(), counts, strict=True) if v == ctx.true_label]
    others = [n for v, n in zip(candidates.tolist(), counts, strict=True) if v != ctx.true_label]
    return f"true {true[0]} | others {' '.join(map(str, others))}"


# -- the suite, one query ---------------------------------------------------------------------------------
def suite_equivalence(
    manipulations: Iterable[str | Manipulation] | None,
    query_x: np.ndarray,
    query_y: Any,
    candidates: Any,
    invariances: Invariances,
    seed: int = 0,
    query_id: int = 0,
) -> pd.DataFrame:
    """Which manipulations of the suite give the same canonical context, for one query (Sec. 4.2, App. A.3, Tab. 7).

    One row per manipulation (``None``: the 48 of Tab. 7, in order) with :data:`EQUIVALENCE_COLUMNS`:
    ``group`` numbers the classes in order of first appearance (the baseline's class is 0),
    ``group_size`` is the size of the manipulation's class and ``weight = group_size / |Pi|`` the
    share of ``S(q)`` that its distinct context carries (the weights of a class's members are all
    equal, one per class sums to 1). ``counts`` gives the rows per candidate (true target first) and
    ``n_features`` the width of the context. Random manipulations (random position, random scaling,
    distractor noise, feature reduction) draw from ``(seed, query_id)`` exactly as the probe does, so
    the classes can depend on the query. Model limits are not checked here.
    """
    manips = resolve_manipulations(manipulations)
    cand = np.asarray(candidates)
    base = mc_context(query_x, query_y, cand)
    groups: dict[CanonicalContext, int] = {}
    rows: list[dict] = []
    for m in manips:
        ctx = m.apply(base, seed, query_id, max_context=None, max_features=None)
        g = groups.setdefault(canonical_context(ctx, invariances), len(groups))
        rows.append(
            {
                "manipulation": m.name,
                "category": m.category,
                "group": g,
                "counts": _label_counts(ctx, cand, invariances),
                "n_features": ctx.n_features,
            }
        )
    frame = pd.DataFrame(rows)
    frame["group_size"] = frame.groupby("group").manipulation.transform("size").astype(int)
    frame["weight"] = frame.group_size / len(frame)
    return frame[list(EQUIVALENCE_COLUMNS)]


def equivalence_classes(equivalence: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct context of a :func:`suite_equivalence` frame: its weight in ``S(q)`` and its
    manipulations."""
    return (
        equivalence.groupby("group", sort=True)
        .agg(
            group_size=("group_size", "first"),
            weight=("weight", "first"),
            counts=("counts", "first"),
            n_features=("n_features", "first"),
            manipulations=("manipulation", ", ".join),
        )
        .reset_index()
    )


# -- many queries -----------------------------------------------------------------------------------------
def effective_sizes(
    queries: Sequence[ProbeQuery],
    manipulations: Iterable[str | Manipulation] | None = None,
    invariances: Invariances = NO_INVARIANCES,
    seed: int = 0,
) -> pd.DataFrame:
    """Per query: ``n_contexts`` distinct contexts in the suite, the weight of the largest class and of the
    baseline's class."""
    if not queries:
        raise ProbeError("no queries given; pass at least one ProbeQuery.")
    manips = resolve_manipulations(manipulations)
    out = []
    for q in queries:
        eq = suite_equivalence(manips, q.x, q.y, q.candidates, invariances, seed, q.query_id)
        out.append(
            {
                "query_id": int(q.query_id),
                "n_candidates": len(q.candidates),
                "n_contexts": int(eq.group.nunique()),
                "max_weight": float(eq.weight.max()),
                "baseline_weight": float(eq.weight.iloc[0]),
            }
        )
    return pd.DataFrame(out)


def suite_effective_size(
    queries: Sequence[ProbeQuery],
    manipulations: Iterable[str | Manipulation] | None = None,
    invariances: Invariances = NO_INVARIANCES,
    seed: int = 0,
) -> pd.Series:
    """The suite's effective size over a set of queries: min / median / max distinct contexts per query (Sec. 4.2, Tab.
    7).

    Also the suite size, the number of queries and the median weight of the baseline's class in ``S(q)``
    (``baseline_weight``; the first manipulation's class, the baseline for the default suite).
    """
    per_query = effective_sizes(queries, manipulations, invariances, seed)
    n = per_query.n_contexts
    return pd.Series(
        {
            "suite_size": len(resolve_manipulations(manipulations)),
            "n_queries": len(per_query),
            "min": int(n.min()),
            "median": float(n.median()),
            "max": int(n.max()),
            "baseline_weight": float(per_query.baseline_weight.median()),
        }
    )


# -- mixed skewing, the alternative reading -----------------------------------------------------------------
def mixed_skewing_k(k: int = 1, pairs: Sequence[tuple[int, int]] = MIXED_PAIRS) -> list[Manipulation]:
    """Mixed skewing read as Skew True (x t) + Skew Incorrect (k targets, x n) (Tab. 7, App. A.3; module docstring).

    ``mixed_true_{t}_non_true_k{k}_x{n}``: the true candidate's rows x t and ``k`` randomly chosen
    incorrect candidates' rows x n, the others once. It composes the suite's own steps
    ``skew_true_t`` and ``skew_non_true_k{k}_x{n}``, so the skewed incorrect candidates are the ones
    that ``skew_non_true_k{k}_x{n}`` picks for the same ``(seed, query)``; k is capped at the number of
    incorrect candidates as there. ``pairs`` defaults to the same 7 (t, n) pairs as the default family.
    On a binary task the contexts equal the default family's.
    """
    if k < 1:
        raise ProbeError(f"k (incorrect targets skewed) must be >= 1, got {k}.")
    return [
        compose(
            skew_true_step(t),
            skew_non_true_step(k, n),
            name=f"mixed_true_{t}_non_true_k{k}_x{n}",
            category="mixed_skewing",
            description=f"True x{t}, {k} incorrect candidate(s) x{n}.",
        )
        for t, n in pairs
    ]


def alternative_suite(k: int = 1) -> list[Manipulation]:
    """The 48 manipulations of Tab. 7 with the mixed-skewing family replaced by :func:`mixed_skewing_k` (same order)."""
    alt = iter(mixed_skewing_k(k))
    return [next(alt) if m.category == "mixed_skewing" else m for m in MANIPULATIONS.values()]


__all__ = [
    "EQUIVALENCE_COLUMNS",
    "NO_INVARIANCES",
    "REFERENCE_INVARIANCES",
    "CanonicalContext",
    "Invariances",
    "alternative_suite",
    "canonical_context",
    "effective_sizes",
    "equivalence_classes",
    "mixed_skewing_k",
    "model_invariances",
    "register_invariances",
    "suite_effective_size",
    "suite_equivalence",
]
