"""Confidence intervals, in one place: percentile bootstraps (paired and stratified), Wilson and Newcombe.

Every chapter's interval comes from here (IclMem Sec. 4.2 and App. A.4 bootstrap the attack statistics;
Golchin et al. 2024 Sec. 5 report proportions of instances, whose intervals at small n are Wilson's):

* :func:`percentile_interval`: the ``level`` percentile interval of bootstrap values (NaNs dropped);
* :func:`bootstrap_indices`: a statistic of unit indices on ``n_boot`` resamples of ``n`` units with replacement,
  one ``rng.integers(0, n, n)`` draw per resample (the *paired* bootstrap: a unit keeps all its columns);
* :func:`stratified_indices` / :func:`stratified_bootstrap`: members and non-members resampled separately, sizes
  kept, members then non-members per resample (the RNG order IclMem's tables were built with; unchanged);
* :func:`wilson`: Wilson's score interval of one proportion (vectorized);
* :func:`newcombe`: Newcombe's hybrid score interval of a difference of two independent proportions (his method
  10, 1998), built from the two Wilson intervals; :func:`mover` combines any two independent intervals the same way
  (Zou & Donner's method of variance estimates recovery), e.g. a difference of two Newcombe differences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

#: The normal quantile of a two-sided 95% interval.
Z95 = 1.959963984540054


class IntervalError(ValueError):
    """Bad input to an interval: the message names the problem."""


def percentile_interval(samples: Any, level: float = 0.95) -> tuple[float, float]:
    """The ``level`` percentile interval of ``samples`` (as given: drop undefined values first, as
    :func:`paired_bootstrap` does)."""
    a = (1 - level) / 2
    lo, hi = np.quantile(np.asarray(samples, dtype=np.float64), [a, 1 - a])
    return float(lo), float(hi)


def bootstrap_indices(n: int, stat: Callable[[np.ndarray], float], n_boot: int, seed: int) -> np.ndarray:
    """``stat(indices)`` on ``n_boot`` resamples of ``n`` units with replacement (one generator seeded by ``seed``)."""
    if n < 1 or n_boot < 1:
        raise IntervalError(f"need n >= 1 units and n_boot >= 1 resamples, got n={n}, n_boot={n_boot}.")
    rng = np.random.default_rng(seed)
    return np.array([stat(rng.integers(0, n, n)) for _ in range(n_boot)], dtype=float)


def paired_bootstrap(
    n: int, stat: Callable[[np.ndarray], float], n_boot: int, seed: int, level: float = 0.95
) -> tuple[float, float, int]:
    """(lo, hi, n_valid) of the percentile bootstrap of ``stat`` over ``n`` units (undefined resamples dropped; NaN
    bounds with fewer than 2 units or when fewer than half the resamples are defined)."""
    if n < 2:
        return float("nan"), float("nan"), 0
    values = bootstrap_indices(n, stat, n_boot, seed)
    valid = int(np.isfinite(values).sum())
    if valid < n_boot / 2:
        return float("nan"), float("nan"), valid
    lo, hi = percentile_interval(values[np.isfinite(values)], level)
    return lo, hi, valid


def stratified_indices(n_member: int, n_non_member: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stratified resample indices, members then non-members per resample: (n_boot, n_m), (n_boot, n_n)."""
    rng = np.random.default_rng(seed)
    im, inn = np.empty((n_boot, n_member), dtype=np.int64), np.empty((n_boot, n_non_member), dtype=np.int64)
    for b in range(n_boot):
        im[b], inn[b] = rng.integers(0, n_member, n_member), rng.integers(0, n_non_member, n_non_member)
    return im, inn


def stratified_bootstrap(
    member: np.ndarray,
    non_member: np.ndarray,
    statistic: Callable[[np.ndarray, np.ndarray], dict[str, float]],
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """``statistic`` on ``n_boot`` stratified resamples (members and non-members separately); one row per resample."""
    if n_boot < 1:
        raise IntervalError(f"n_boot must be >= 1, got {n_boot}.")
    im, inn = stratified_indices(len(member), len(non_member), n_boot, seed)
    return pd.DataFrame([statistic(member[a], non_member[b]) for a, b in zip(im, inn, strict=True)])


def unpaired_difference(
    a: np.ndarray, b: np.ndarray, n_boot: int, seed: int, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of ``mean(a) - mean(b)`` with ``a`` and ``b`` resampled apart (one generator, ``a`` then
    ``b`` per resample)."""
    rng = np.random.default_rng(seed)
    d = [
        np.mean(a[rng.integers(0, len(a), len(a))]) - np.mean(b[rng.integers(0, len(b), len(b))]) for _ in range(n_boot)
    ]
    return percentile_interval(d, level)


def wilson(k: Any, n: Any, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval of the proportion ``k / n`` (arrays broadcast; ``k`` may be fractional, a mean times
    ``n``); NaN where ``n <= 0``."""
    k, n = np.broadcast_arrays(np.asarray(k, float), np.asarray(n, float))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(np.clip(p * (1 - p), 0, None) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    bad = ~(n > 0)
    return np.where(bad, np.nan, np.maximum(0.0, centre - half)), np.where(bad, np.nan, np.minimum(1.0, centre + half))


def mover(est1: Any, lo1: Any, hi1: Any, est2: Any, lo2: Any, hi2: Any) -> tuple[np.ndarray, np.ndarray]:
    """Interval of ``est1 - est2`` from the intervals of two independent estimates (method of variance estimates
    recovery: Newcombe 1998 for proportions, Zou & Donner 2008 in general)."""
    e1, l1, h1, e2, l2, h2 = (np.asarray(x, float) for x in (est1, lo1, hi1, est2, lo2, hi2))
    d = e1 - e2
    return d - np.sqrt((e1 - l1) ** 2 + (h2 - e2) ** 2), d + np.sqrt((h1 - e1) ** 2 + (e2 - l2) ** 2)


def newcombe(k1: Any, n1: Any, k2: Any, n2: Any, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval of ``k1/n1 - k2/n2`` (two independent proportions; arrays broadcast)."""
    l1, h1 = wilson(k1, n1, z)
    l2, h2 = wilson(k2, n2, z)
    with np.errstate(invalid="ignore", divide="ignore"):
        return mover(np.asarray(k1, float) / n1, l1, h1, np.asarray(k2, float) / n2, l2, h2)


__all__ = [
    "IntervalError",
    "Z95",
    "bootstrap_indices",
    "mover",
    "newcombe",
    "paired_bootstrap",
    "percentile_interval",
    "stratified_bootstrap",
    "stratified_indices",
    "unpaired_difference",
    "wilson",
]
