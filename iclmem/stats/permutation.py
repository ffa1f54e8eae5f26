"""Statistics of evidence: permutation nulls and power for membership attacks (Sec. 4.2, Tab. 3).

A verdict is evidence only when chance alone would rarely give it. This module holds what every
claim's null needs, vectorized so that hundreds of permutations cost seconds:

* :func:`permuted_labels`: membership permuted across one run's probed queries (the claims' null:
  "members and non-members are exchangeable"), seeded by the query set so runs that share queries
  share permutations (their membership is the same in the real data too).
* :func:`count_statistics`: AUC and TPR@FPR from per-value member / non-member counts, the kernel
  of :func:`iclmem.stats.metrics.bootstrap_attack_statistics`, here shared by permutations and resamples.
* :func:`permuted_attack_statistics`: AUC and TPR@FPR of one score vector under many label vectors
  at once; :func:`permuted_auc_lower_bounds`: the bootstrap lower bound of each permuted AUC (the
  ``bound`` reading of Tab. 3 needs it under the null too).
* :func:`permuted_gaps`: the per-manipulation member minus non-member loss gaps ``g_k`` under each
  label vector (App. B.2), hence ``mu_gap`` and ``sigma_gap`` of every permutation.
* :func:`hanley_mcneil_se`, :func:`min_detectable_auc`: the smallest AUC a test at ``n_m + n_n``
  queries detects with a given power (Hanley & McNeil 1982); :func:`queries_for_auc`, :func:`queries_for_absence`:
  the queries a detection, or a claim of absence (AUC below :data:`ABSENCE_MARGIN`), needs at 80% power.
* :func:`null_range`, :func:`beyond_null`: the 95% range of a null distribution and whether an
  observed statistic lies above (or below) it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

#: Permutations per claim null in the book (the issue's floor: at least 100 where cheap).
N_PERMUTATIONS = 100


@dataclass(frozen=True)
class NullDraws:
    """The draws of a membership-permutation null (Sec. 4.2, App. A.4): ``n_perm`` permutations of membership, seeded
    by ``seed``, each permuted row's interval from ``n_boot`` bootstrap resamples."""

    n_perm: int = N_PERMUTATIONS
    seed: int = 0
    n_boot: int = 200


#: The book's null: :data:`N_PERMUTATIONS` permutations, seed 0, 200 resamples per interval.
DEFAULT_NULL = NullDraws()
#: The largest null "reproduce" rate a reproduced verdict may have.
NULL_LEVEL = 0.05


class StatsError(ValueError):
    """Bad input to a null or power computation: the message names the problem and the fix."""


def query_set_seed(query_ids: Sequence[int], seed: int = 0) -> int:
    """A seed derived from a set of query ids (order-free) and ``seed``: runs probing the same queries permute alike."""
    ids = np.sort(np.asarray(query_ids, dtype=np.int64))
    digest = hashlib.sha256(ids.tobytes() + int(seed).to_bytes(8, "little", signed=True)).digest()
    return int.from_bytes(digest[:8], "little")


def permuted_labels(is_member: Sequence[bool], n_perm: int, seed: int) -> np.ndarray:
    """``(n_perm, n)`` boolean labels: each row a uniformly random permutation of ``is_member`` (member counts kept)."""
    labels = np.asarray(is_member, dtype=bool).ravel()
    if n_perm < 1:
        raise StatsError(f"n_perm must be >= 1, got {n_perm}.")
    if labels.all() or not labels.any():
        raise StatsError("a permutation null needs members and non-members among the probed queries.")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x9E3779B9]))
    keys = rng.random((n_perm, len(labels)))
    return labels[np.argsort(keys, axis=1)]


def _codes(scores: np.ndarray) -> tuple[np.ndarray, int]:
    values, codes = np.unique(scores, return_inverse=True)
    return codes.ravel(), len(values)


def count_statistics(
    cm: np.ndarray, cn: np.ndarray, n_members: int, n_non_members: int, fprs: Sequence[float] = (0.01, 0.1)
) -> dict[str, np.ndarray]:
    """AUC and TPR@FPR of each row of per-value counts (values in ascending order; higher value = member).

    ``cm``, ``cn``: ``(rows, n_values)`` member and non-member counts per distinct score value. The
    AUC counts pairs won plus half the ties (Mann-Whitney); TPR@r is the largest TPR over thresholds
    (from the top value down) whose FPR is at most r. Keys ``auc`` and ``tpr1`` / ``tpr10`` (for 1%, 10%).
    """
    below_n = np.cumsum(cn, axis=1) - cn  # non-members strictly below each value
    out = {"auc": (cm * (below_n + 0.5 * cn)).sum(axis=1) / (n_members * n_non_members)}
    if fprs:
        tpr = np.cumsum(cm[:, ::-1], axis=1) / n_members
        fpr = np.cumsum(cn[:, ::-1], axis=1) / n_non_members
        for f in fprs:
            out[f"tpr{f * 100:g}"] = np.where(fpr <= f + 1e-12, tpr, 0.0).max(axis=1)
    return out


def permuted_attack_statistics(
    score: Sequence[float], labels: np.ndarray, fprs: Sequence[float] = (0.01, 0.1)
) -> dict[str, np.ndarray]:
    """:func:`count_statistics` of one score vector (higher = member) under each row of ``labels`` ``(n_perm, n)``."""
    s = np.asarray(score, dtype=np.float64).ravel()
    lab = np.asarray(labels, dtype=bool)
    if lab.ndim != 2 or lab.shape[1] != len(s):
        raise StatsError(f"labels must have shape (n_perm, {len(s)}), got {lab.shape}.")
    if np.isnan(s).any():
        raise StatsError("scores hold NaN; drop the failed queries before computing a null.")
    codes, u = _codes(s)
    perm, position = np.nonzero(lab)  # every member of every permutation, row by row
    cm = np.bincount(perm * u + codes[position], minlength=len(lab) * u).reshape(len(lab), u).astype(np.float64)
    cn = np.bincount(codes, minlength=u) - cm  # the non-members: every query of a value less its members
    n_m = int(lab[0].sum())
    return count_statistics(cm, cn, n_m, len(s) - n_m, fprs)


def permuted_auc_lower_bounds(
    score: Sequence[float], labels: np.ndarray, n_boot: int = 200, seed: int = 0, level: float = 0.95
) -> np.ndarray:
    """Per row of ``labels``: the lower bound of the stratified percentile bootstrap interval of the AUC.

    The same interval as :func:`iclmem.stats.metrics.attack_metrics` (members and non-members resampled
    separately, sizes kept), computed for every permutation at once from value counts.
    """
    s = np.asarray(score, dtype=np.float64).ravel()
    lab = np.asarray(labels, dtype=bool)
    n_m = int(lab[0].sum())
    n_n = len(s) - n_m
    codes, u = _codes(s)
    order = np.argsort(~lab, axis=1, kind="stable")  # members first, then non-members, per permutation
    member_codes, non_member_codes = codes[order[:, :n_m]], codes[order[:, n_m:]]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xB0075]))
    im, inn = rng.integers(0, n_m, (n_boot, n_m)), rng.integers(0, n_n, (n_boot, n_n))
    out = np.empty(len(lab))
    per_chunk = max(1, 4_000_000 // (n_boot * max(u, n_m, n_n)))  # permutations per block: a few tens of MB at most
    for start in range(0, len(lab), per_chunk):
        block = slice(start, min(start + per_chunk, len(lab)))
        n_p = block.stop - block.start
        rows = (np.arange(n_p * n_boot) * u).reshape(n_p, n_boot, 1)  # one bin range per (permutation, resample)
        size = n_p * n_boot * u
        cm = np.bincount((rows + member_codes[block][:, im]).ravel(), minlength=size).reshape(n_p * n_boot, u)
        cn = np.bincount((rows + non_member_codes[block][:, inn]).ravel(), minlength=size).reshape(n_p * n_boot, u)
        aucs = count_statistics(cm, cn, n_m, n_n, ())["auc"].reshape(n_p, n_boot)
        out[block] = np.quantile(aucs, (1 - level) / 2, axis=1)
    return out


def permuted_gaps(loss: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``(n_perm, K)`` gaps ``g_k`` = mean member minus mean non-member loss per manipulation, under each label row.

    ``loss``: ``(n_queries, K)`` probe losses of M_theta, query by manipulation (App. B.2).
    """
    x = np.asarray(loss, dtype=np.float64)
    lab = np.asarray(labels, dtype=bool)
    if x.ndim != 2 or lab.shape[1] != x.shape[0]:
        raise StatsError(f"loss must be (n_queries, K) with n_queries = {lab.shape[1]}, got {x.shape}.")
    m = lab.astype(np.float64)
    n_m = m.sum(axis=1, keepdims=True)
    return (m @ x) / n_m - ((1 - m) @ x) / (x.shape[0] - n_m)


def hanley_mcneil_se(auc: float, n_members: int, n_non_members: int) -> float:
    """Standard error of an AUC estimated from ``n_members`` + ``n_non_members`` scores (Hanley & McNeil 1982)."""
    a = float(auc)
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    var = (a * (1 - a) + (n_members - 1) * (q1 - a * a) + (n_non_members - 1) * (q2 - a * a)) / (
        n_members * n_non_members
    )
    return math.sqrt(max(var, 0.0))


def min_detectable_auc(n_members: int, n_non_members: int, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest AUC a one-sided test of AUC > 0.5 at level ``alpha`` detects with ``power`` (Hanley-McNeil
    variances).

    Solves ``AUC - 0.5 = z_{1-alpha} se(0.5) + z_{power} se(AUC)`` by bisection.
    """
    if n_members < 1 or n_non_members < 1:
        raise StatsError("need at least one member and one non-member.")
    za, zb = _st.norm.ppf(1 - alpha), _st.norm.ppf(power)
    se0 = hanley_mcneil_se(0.5, n_members, n_non_members)

    def gap(a: float) -> float:
        return a - 0.5 - za * se0 - zb * hanley_mcneil_se(a, n_members, n_non_members)

    lo, hi = 0.5, 0.9999
    if gap(hi) < 0:
        return math.nan
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
    return hi


#: The equivalence margin of a claim of absence: "AUC(Delta S) below 0.60 with 95% confidence" (chapter 04's C13, M1;
#: ``iclmem audit``'s reading when nothing is found).
ABSENCE_MARGIN = 0.60
#: The largest size :func:`queries_for_auc` and :func:`queries_for_absence` search by default.
MAX_PLANNED_QUERIES = 100_000


def queries_for_auc(
    auc: float, power: float = 0.8, alpha: float = 0.025, max_size: int = MAX_PLANNED_QUERIES
) -> int | None:
    """Members (= non-members) to probe so that one configuration's true ``auc`` clears 0.5 with ``power``
    (the bound reading: a one-sided ``alpha`` = 2.5% lower bound above 0.5). None: not within ``max_size``."""
    if not 0.5 < auc < 1:
        return None
    lo, hi = 1, max_size
    if min_detectable_auc(hi, hi, power, alpha) > auc:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if min_detectable_auc(mid, mid, power, alpha) > auc else (lo, mid)
    return lo


def queries_for_absence(
    margin: float = ABSENCE_MARGIN, power: float = 0.8, alpha: float = 0.05, max_size: int = MAX_PLANNED_QUERIES
) -> int:
    """Members (= non-members) at which a configuration with no signal (AUC 0.5) shows "AUC below ``margin``" (the
    upper end of a one-sided ``1 - alpha`` interval) with ``power``: the equivalence test a claim of absence needs."""
    za, zb = _st.norm.ppf(1 - alpha), _st.norm.ppf(power)
    n = 1
    while 0.5 + (za + zb) * hanley_mcneil_se(0.5, n, n) > margin and n < max_size:
        n = math.ceil(n * 1.2) if n > 10 else n + 1
    while n > 1 and 0.5 + (za + zb) * hanley_mcneil_se(0.5, n - 1, n - 1) <= margin:
        n -= 1
    return n


def null_range(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` range of a null distribution (finite values only; NaNs when there are none)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return math.nan, math.nan
    a = (1 - level) / 2
    lo, hi = np.quantile(v, [a, 1 - a])
    return float(lo), float(hi)


def beyond_null(observed: float, values: Sequence[float], level: float = 0.95, side: str = "greater") -> bool:
    """Whether ``observed`` lies beyond the one-sided ``level`` quantile of the null ``values`` (``side`` greater |
    less).

    With ties at the quantile (discrete statistics) ``observed`` must be strictly beyond it.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not len(v) or not np.isfinite(observed):
        return False
    if side == "greater":
        return bool(observed > np.quantile(v, level))
    if side == "less":
        return bool(observed < np.quantile(v, 1 - level))
    raise StatsError(f"side must be 'greater' or 'less', got {side!r}.")


__all__ = [
    "ABSENCE_MARGIN",
    "MAX_PLANNED_QUERIES",
    "NULL_LEVEL",
    "DEFAULT_NULL",
    "N_PERMUTATIONS",
    "NullDraws",
    "StatsError",
    "beyond_null",
    "count_statistics",
    "hanley_mcneil_se",
    "min_detectable_auc",
    "null_range",
    "permuted_attack_statistics",
    "permuted_auc_lower_bounds",
    "permuted_gaps",
    "permuted_labels",
    "queries_for_absence",
    "queries_for_auc",
    "query_set_seed",
]
