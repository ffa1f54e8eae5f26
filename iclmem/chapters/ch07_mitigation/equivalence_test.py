"""Chapter 7 (IclMem Sec. 6's DP-SGD): the statistics of M1's equivalence test.

* :func:`auc_bounds_under_permutation`: the stratified bootstrap interval bounds of the AUC for many membership
  labellings at once (:func:`iclmem.stats.permutation.permuted_auc_lower_bounds`, the upper bound from the negated
  scores on the same resamples); :func:`observed_bounds` for the observed labelling.
* :func:`within_margin`: does an interval lie inside ``0.5 +- margin`` (M1's "removed")?
* :func:`equivalence_power`: the share of membership permutations (a true AUC of 0.5) in which the equivalence
  rule (a ``level`` interval inside ``0.5 +- margin``) says "removed": the rule's power at this query count;
  :func:`queries_for_power`: the queries that 80% power needs.
* :func:`paired_auc_difference`: AUC of one run minus another on the same probed queries, with a paired
  stratified bootstrap (members and non-members resampled apart, the same rows for both runs).
"""

from __future__ import annotations

import math

import numpy as np

from iclmem.chapters.ch07_mitigation.thresholds import M1_LEVEL, M1_MARGIN
from iclmem.stats.permutation import permuted_auc_lower_bounds, permuted_labels


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
