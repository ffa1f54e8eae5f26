"""Chapter 7's evidence rules: what (epsilon, delta)-DP guarantees about a membership attack, and M1's equivalence
test (DP-SGD, Abadi et al. 2016; the mitigation IclMem's Sec. 6 names).

* :func:`dp_tpr_bound` / :func:`dp_auc_bound`: (epsilon, delta)-DP bounds every membership attack's TPR at a
  given FPR by ``min(1, e^eps FPR + delta, 1 - e^-eps (1 - delta - FPR))`` (the hypothesis-testing reading of DP,
  Kairouz et al. 2015); the AUC bound is the area under that curve. At epsilon = 4 (e^4 = 55) it allows an AUC
  near 0.97: epsilon = 4 alone does not imply that the signal is removed; only a measurement can say so.
* :func:`auc_bounds_under_permutation`: the stratified bootstrap interval bounds of the AUC for many membership
  labellings at once (:func:`iclmem.stats.permuted_auc_lower_bounds`, the upper bound from the negated scores on
  the same resamples).
* :func:`equivalence_power`: the share of membership permutations (a true AUC of 0.5) in which the equivalence
  rule (a ``level`` interval inside ``0.5 +- margin``) says "removed": the rule's power at this query count.
* :func:`paired_auc_difference`: AUC of one run minus another on the same probed queries, with a paired
  stratified bootstrap (members and non-members resampled apart, the same rows for both runs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclmem.stats import permuted_auc_lower_bounds, permuted_labels

#: M1's equivalence margin: the signal counts as removed when the attack's AUC lies within 0.5 +- this (a tenth of
#: the way from chance to a perfect attack). A choice of this companion; neither paper measures DP.
M1_MARGIN = 0.05
#: Confidence of M1's equivalence interval: 90%, two one-sided 5% tests (TOST), so the rule says "removed" in at
#: most 5% of worlds whose true AUC lies at the margin's edge.
M1_LEVEL = 0.90


def dp_tpr_bound(eps: float, delta: float, fpr: float) -> float:
    """The largest TPR at ``fpr`` that any membership attack can reach against an (eps, delta)-DP mechanism."""
    if math.isinf(eps):
        return 1.0
    e = math.exp(eps)
    return float(min(1.0, e * fpr + delta, 1.0 - (1.0 - delta - fpr) / e))


def dp_auc_bound(eps: float, delta: float, grid: int = 20001) -> float:
    """The largest AUC an attack can reach against an (eps, delta)-DP mechanism: the area under
    :func:`dp_tpr_bound` (trapezoids on ``grid`` FPRs)."""
    if math.isinf(eps):
        return 1.0
    x = np.linspace(0.0, 1.0, grid)
    e = math.exp(eps)
    y = np.minimum.reduce([np.ones_like(x), e * x + delta, 1.0 - (1.0 - delta - x) / e])
    return float(np.trapezoid(y, x))


def dp_bound_table(epsilons: Sequence[float], delta: float, fprs: Sequence[float] = (0.01, 0.1)) -> pd.DataFrame:
    """Per epsilon: e^eps, the TPR bound at each of ``fprs`` and the AUC bound (1 at epsilon = inf)."""
    rows = []
    for eps in epsilons:
        row = {"epsilon": float(eps), "e^epsilon": math.exp(eps) if math.isfinite(eps) else math.inf}
        row.update({f"TPR bound at FPR {f:g}": dp_tpr_bound(eps, delta, f) for f in fprs})
        row["AUC bound"] = dp_auc_bound(eps, delta)
        rows.append(row)
    return pd.DataFrame(rows)


def auc_bounds_under_permutation(
    score: np.ndarray, labels: np.ndarray, n_boot: int = 200, seed: int = 0, level: float = M1_LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``labels`` (membership labellings of the queries): the lower and upper bound of the stratified
    percentile bootstrap ``level`` interval of the AUC (ties count half, so AUC(-s) = 1 - AUC(s) on every resample)."""
    s = np.asarray(score, dtype=np.float64)
    lo = permuted_auc_lower_bounds(s, labels, n_boot, seed, level)
    hi = 1.0 - permuted_auc_lower_bounds(-s, labels, n_boot, seed, level)
    return lo, hi


def within_margin(lo: np.ndarray | float, hi: np.ndarray | float, margin: float = M1_MARGIN) -> np.ndarray:
    """Elementwise: does the interval ``[lo, hi]`` lie inside ``0.5 +- margin``?"""
    return (np.asarray(lo) >= 0.5 - margin) & (np.asarray(hi) <= 0.5 + margin)


def observed_bounds(
    score: np.ndarray, n_members: int, n_boot: int = 200, seed: int = 0, level: float = M1_LEVEL
) -> tuple[float, float]:
    """The ``level`` interval of the AUC of ``score`` (its first ``n_members`` queries the members)."""
    labels = (np.arange(len(score)) < n_members)[None, :]
    lo, hi = auc_bounds_under_permutation(score, labels, n_boot, seed, level)
    return float(lo[0]), float(hi[0])


def equivalence_power(
    score: np.ndarray,
    n_members: int,
    margin: float = M1_MARGIN,
    n_permutations: int = 1000,
    n_boot: int = 200,
    seed: int = 0,
    level: float = M1_LEVEL,
) -> float:
    """The share of membership permutations of ``score`` (the queries' scores, members first; a world in which the
    attack's true AUC is 0.5) whose ``level`` interval lies inside ``0.5 +- margin``: the chance that the
    equivalence rule says "removed" when the signal is truly gone, at this number of queries."""
    labels = permuted_labels(np.arange(len(score)) < n_members, n_permutations, seed)
    lo, hi = auc_bounds_under_permutation(score, labels, n_boot, seed, level)
    return float(within_margin(lo, hi, margin).mean())


def queries_for_power(margin: float = M1_MARGIN, power: float = 0.8, level: float = M1_LEVEL) -> int:
    """Members (= non-members) per run for the equivalence rule to reach ``power`` at a true AUC of 0.5, under the
    normal approximation of the AUC (Mann-Whitney) standard error ``sqrt((2n + 1) / (12 n^2))``."""
    from scipy.stats import norm

    z = norm.ppf(1 - (1 - level) / 2) + norm.ppf(1 - (1 - power) / 2)
    n = 2
    while z * math.sqrt((2 * n + 1) / (12 * n * n)) > margin:
        n += 1
    return n


def _auc_rows(member: np.ndarray, non_member: np.ndarray) -> np.ndarray:
    """AUC per row of (resamples x members) and (resamples x non-members) scores, ties counted half."""
    gt = (member[:, :, None] > non_member[:, None, :]).mean(axis=(1, 2))
    eq = (member[:, :, None] == non_member[:, None, :]).mean(axis=(1, 2))
    return gt + 0.5 * eq


def paired_auc_difference(
    a: np.ndarray, b: np.ndarray, n_members: int, n_boot: int = 200, seed: int = 0, level: float = 0.95
) -> dict[str, float]:
    """AUC of scores ``a`` minus AUC of scores ``b`` on the same queries (members first), with a paired stratified
    percentile bootstrap: members and non-members resampled apart, the same rows for both runs."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        raise ValueError("the two runs must score the same queries")
    n_n = len(a) - n_members
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xD1FF]))
    im, inn = rng.integers(0, n_members, (n_boot, n_members)), n_members + rng.integers(0, n_n, (n_boot, n_n))
    est = float(
        _auc_rows(a[None, :n_members], a[None, n_members:])[0] - _auc_rows(b[None, :n_members], b[None, n_members:])[0]
    )
    reps = _auc_rows(a[im], a[inn]) - _auc_rows(b[im], b[inn])
    alpha = (1 - level) / 2
    lo, hi = np.quantile(reps, [alpha, 1 - alpha])
    return {"difference": est, "lo": float(lo), "hi": float(hi)}


__all__ = [
    "M1_LEVEL",
    "M1_MARGIN",
    "auc_bounds_under_permutation",
    "dp_auc_bound",
    "dp_bound_table",
    "dp_tpr_bound",
    "equivalence_power",
    "observed_bounds",
    "paired_auc_difference",
    "queries_for_power",
    "within_margin",
]
