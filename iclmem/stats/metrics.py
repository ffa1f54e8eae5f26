"""Membership metrics of IclMem: delta scores, AUC, TPR at low FPR, bootstrap CIs, loss gaps (Sec. 4.2, App. A.4, B.2,
B.3).

* Robustness score ``S(q)``: the mean of a probe score over the manipulation suite (Sec. 4.2).
* Difficulty calibration: ``Delta S(q) = S_theta(q) - S_ref(q)`` (Sec. 4.2, App. A.4).
* Direction: lower loss or entropy and higher target confidence mean "member"
  (:data:`METRIC_DIRECTION`); :func:`membership_score` turns a score into one where higher
  means member, which every ROC function here expects.
* ``AUC``: the Mann-Whitney statistic, P(member score > non-member score) with ties counted 1/2.
* ``TPR@r%``: the largest TPR over all thresholds of the ROC curve whose FPR is at most r%
  (``max(tpr[fpr <= r])``, as ml_privacy_meter and LiRA-style evaluations report it); with
  ``n`` non-members the attainable FPRs are multiples of ``1/n``, so at ``n < 100``, TPR@1%
  is the TPR at FPR 0 (only thresholds above every non-member).
* Bootstrap intervals: percentile intervals from stratified resampling (members and
  non-members resampled separately, with replacement, sizes kept), seeded.
* Loss gaps (App. B.2, Tab. 3): ``g_k`` = mean member probe loss - mean non-member probe loss
  under M_theta for manipulation ``k``; ``mu_gap``, ``sigma_gap`` their mean and standard
  deviation over the suite (population std, ddof=0: the suite is all of Pi, not a sample).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .intervals import percentile_interval, stratified_bootstrap, stratified_indices
from .permutation import count_statistics

METRIC_DIRECTION: dict[str, str] = {"loss": "lower", "entropy": "lower", "confidence": "higher"}
METRICS: tuple[str, ...] = tuple(METRIC_DIRECTION)
FPR_TARGETS: tuple[float, ...] = (0.01, 0.1)


class MetricsError(ValueError):
    """Bad input to a membership metric: the message names the problem and the fix."""


def _check(member: Sequence[float], non_member: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    m, n = np.asarray(member, dtype=np.float64).ravel(), np.asarray(non_member, dtype=np.float64).ravel()
    if len(m) == 0 or len(n) == 0:
        raise MetricsError(
            f"need scores for members and non-members, got {len(m)} member and {len(n)} non-member scores."
        )
    for name, a in (("member", m), ("non-member", n)):
        bad = int(np.isnan(a).sum())
        if bad:
            raise MetricsError(
                f"{bad} {name} score(s) are NaN; a probe failed (e.g. a diverged model) — drop or fix those queries "
                "first."
            )
    return m, n


def membership_score(metric: str, values: np.ndarray | pd.Series | float) -> np.ndarray:
    """``values`` of ``metric`` (a score or a delta) oriented so that higher means member."""
    if metric not in METRIC_DIRECTION:
        raise MetricsError(f"unknown metric {metric!r}; valid: {', '.join(METRICS)}.")
    v = np.asarray(values, dtype=np.float64)
    return -v if METRIC_DIRECTION[metric] == "lower" else v


@dataclass(frozen=True)
class RocCurve:
    """ROC points over every threshold (score >= threshold => member), from (0, 0) to (1, 1)."""

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"fpr": self.fpr, "tpr": self.tpr, "threshold": self.thresholds})


def roc_curve(member: Sequence[float], non_member: Sequence[float]) -> RocCurve:
    """Every ROC point: one per distinct score (descending), plus (0, 0) at threshold +inf."""
    m, n = _check(member, non_member)
    thr = np.unique(np.concatenate([m, n]))[::-1]
    ms, ns = np.sort(m), np.sort(n)
    tpr = (len(m) - np.searchsorted(ms, thr, side="left")) / len(m)
    fpr = (len(n) - np.searchsorted(ns, thr, side="left")) / len(n)
    return RocCurve(np.concatenate([[0.0], fpr]), np.concatenate([[0.0], tpr]), np.concatenate([[np.inf], thr]))


def auc(member: Sequence[float], non_member: Sequence[float]) -> float:
    """Mann-Whitney AUC: P(member > non-member) + 1/2 P(tie)."""
    m, n = _check(member, non_member)
    ranks = pd.Series(np.concatenate([m, n])).rank(method="average").to_numpy()
    return float((ranks[: len(m)].sum() - len(m) * (len(m) + 1) / 2) / (len(m) * len(n)))


def _tpr_at(curve: RocCurve, fpr: float) -> float:
    return float(curve.tpr[curve.fpr <= fpr + 1e-12].max())


def tpr_at_fpr(member: Sequence[float], non_member: Sequence[float], fpr: float = 0.01) -> float:
    """The largest TPR over ROC thresholds whose FPR is at most ``fpr`` (see module docstring)."""
    if not 0 <= fpr <= 1:
        raise MetricsError(f"fpr must lie in [0, 1], got {fpr}.")
    return _tpr_at(roc_curve(member, non_member), fpr)


def _auc_from_curve(curve: RocCurve) -> float:
    return float(np.sum(np.diff(curve.fpr) * (curve.tpr[1:] + curve.tpr[:-1]) / 2))


def attack_statistics(
    member: Sequence[float], non_member: Sequence[float], fprs: Sequence[float] = FPR_TARGETS
) -> dict[str, float]:
    """AUC and TPR at each FPR target (keys ``auc``, ``tpr1``, ``tpr10`` for 1%, 10%) from one ROC curve.

    The trapezoid area under the full ROC curve equals the Mann-Whitney AUC with ties counted 1/2.
    """
    curve = roc_curve(member, non_member)
    out = {"auc": _auc_from_curve(curve)}
    for f in fprs:
        out[f"tpr{f * 100:g}"] = _tpr_at(curve, f)
    return out


def bootstrap(
    member: Sequence[float],
    non_member: Sequence[float],
    statistic: Callable[[np.ndarray, np.ndarray], dict[str, float]],
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """``statistic`` on ``n_boot`` stratified resamples (members and non-members separately); one row per resample
    (:func:`iclmem.stats.intervals.stratified_bootstrap`, whose RNG order :func:`bootstrap_attack_statistics`
    shares)."""
    m, n = _check(member, non_member)
    if n_boot < 1:
        raise MetricsError(f"n_boot must be >= 1, got {n_boot}.")
    return stratified_bootstrap(m, n, statistic, n_boot, seed)


def _value_counts(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Per row of ``codes`` (n_boot, k), how often each value code 0..n_values-1 occurs: (n_boot, n_values)."""
    rows = np.arange(codes.shape[0])[:, None] * n_values
    return np.bincount((rows + codes).ravel(), minlength=codes.shape[0] * n_values).reshape(codes.shape[0], n_values)


def bootstrap_attack_statistics(
    member: Sequence[float],
    non_member: Sequence[float],
    n_boot: int = 1000,
    seed: int = 0,
    fprs: Sequence[float] = FPR_TARGETS,
) -> pd.DataFrame:
    """:func:`attack_statistics` on the stratified resamples of :func:`bootstrap`, all at once.

    Vectorized: each resample is a vector of counts over the distinct observed scores, so its AUC
    (pairs won + ties/2) and its ROC points (cumulative counts from the top score down) are a few
    array operations over ``n_boot x n_distinct`` instead of a sort per resample. Same numbers as
    ``bootstrap(m, n, attack_statistics)`` to floating-point rounding (tested).
    """
    m, n = _check(member, non_member)
    if n_boot < 1:
        raise MetricsError(f"n_boot must be >= 1, got {n_boot}.")
    values = np.unique(np.concatenate([m, n]))
    code_m, code_n = np.searchsorted(values, m), np.searchsorted(values, n)
    im, inn = stratified_indices(len(m), len(n), n_boot, seed)
    cm, cn = _value_counts(code_m[im], len(values)), _value_counts(code_n[inn], len(values))
    return pd.DataFrame(count_statistics(cm, cn, len(m), len(n), tuple(fprs)))


def null_halves(non_member: Sequence[float], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint random halves of the non-member scores (seeded): a negative control that can fail.

    Attacking one half "as members" against the other must give AUC 0.5 up to sampling noise: no
    row of either half was trained on. An interval that excludes 0.5 in many more than 5% of
    configurations points at a bias in the scores themselves (App. A.1's pitfalls), not at
    memorization. Unlike epoch 0, where Delta S is 0 by construction, this control can fail.
    """
    v = np.asarray(non_member, dtype=np.float64).ravel()
    if len(v) < 4:
        raise MetricsError(f"need at least 4 non-member scores to split into two halves, got {len(v)}.")
    order = np.random.default_rng(np.random.SeedSequence([seed, 0x4A1F])).permutation(len(v))
    half = len(v) // 2
    return v[order[:half]], v[order[half : 2 * half]]


def attack_metrics(
    member: Sequence[float],
    non_member: Sequence[float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    fprs: Sequence[float] = FPR_TARGETS,
) -> dict[str, float]:
    """AUC and TPR@FPR with bootstrap ``level`` intervals: keys ``auc``, ``auc_lo``, ``auc_hi``, ``tpr1``, ``tpr1_lo``,
    ...

    ``n_boot=0`` skips the intervals (point estimates only).
    """
    point = attack_statistics(member, non_member, fprs)
    if n_boot == 0:
        return point
    boot = bootstrap_attack_statistics(member, non_member, n_boot, seed, fprs)
    out: dict[str, float] = {}
    for k, v in point.items():
        out[k] = v
        out[f"{k}_lo"], out[f"{k}_hi"] = percentile_interval(boot[k], level)
    return out


def roc_points(member: Sequence[float], non_member: Sequence[float], floor: float = 1e-3) -> pd.DataFrame:
    """ROC points for a log-log plot: FPR and TPR clipped below at ``floor`` (log axes cannot show 0)."""
    f = roc_curve(member, non_member).frame()
    f["fpr_plot"], f["tpr_plot"] = f.fpr.clip(lower=floor), f.tpr.clip(lower=floor)
    return f


# -- scores frames -----------------------------------------------------------------------------------------
def _check_frame(scores: pd.DataFrame, metric: str | None) -> None:
    """Raise unless ``scores`` is a non-empty scores frame with ``metric`` (None: the key columns only)."""
    if metric is not None and metric not in METRIC_DIRECTION:
        raise MetricsError(f"unknown metric {metric!r}; valid: {', '.join(METRICS)}.")
    missing = {"query_id", "is_member", "manipulation", *([metric] if metric else [])} - set(scores.columns)
    if missing:
        raise MetricsError(f"scores lack columns {sorted(missing)}; pass a frame from iclmem.probe.probe_scores.")
    if scores.empty:
        raise MetricsError("the scores frame is empty.")


def suite_scores(scores: pd.DataFrame, metric: str = "loss") -> pd.DataFrame:
    """``S(q)``: mean of ``metric`` over the manipulations of each query (Sec. 4.2); columns query_id, is_member, S."""
    _check_frame(scores, metric)
    return scores.groupby(["query_id", "is_member"], sort=True)[metric].mean().rename("S").reset_index()


def delta_scores(theta: pd.DataFrame, ref: pd.DataFrame, metric: str = "loss") -> pd.DataFrame:
    """``Delta S(q) = S_theta(q) - S_ref(q)`` per query, plus ``score`` (oriented: higher = member).

    Both frames must hold the same (query, manipulation) pairs, so both means run over the same suite.
    """
    _check_frame(theta, metric)
    _check_frame(ref, metric)
    check_paired(theta, ref)
    return delta_from_suites(suite_scores(theta, metric), suite_scores(ref, metric), metric)


def check_paired(theta: pd.DataFrame, ref: pd.DataFrame) -> None:
    """Raise unless both frames hold the same (query, manipulation) pairs, each once (what :func:`delta_scores`
    needs)."""
    _check_frame(theta, None)
    _check_frame(ref, None)
    keys = ["query_id", "manipulation"]
    a, b = theta[keys].drop_duplicates(), ref[keys].drop_duplicates()
    if len(a) != len(theta) or len(b) != len(ref):
        raise MetricsError(
            "a (query, manipulation) pair occurs twice in one frame; pass the scores of one model and epoch."
        )
    if len(a.merge(b, on=keys)) != len(a) or len(a) != len(b):
        raise MetricsError(
            "M_theta and M_ref scores cover different (query, manipulation) pairs; score both on the same queries and "
            "suite."
        )


def delta_from_suites(s_theta: pd.DataFrame, s_ref: pd.DataFrame, metric: str = "loss") -> pd.DataFrame:
    """:func:`delta_scores` from the two :func:`suite_scores` frames of frames already :func:`check_paired`."""
    out = s_theta.merge(s_ref, on=["query_id", "is_member"], suffixes=("_theta", "_ref"), validate="one_to_one")
    out = out.rename(columns={"S_theta": "s_theta", "S_ref": "s_ref"})
    out["delta"] = out.s_theta - out.s_ref
    out["score"] = membership_score(metric, out.delta)
    return out


def split_members(frame: pd.DataFrame, column: str = "score") -> tuple[np.ndarray, np.ndarray]:
    """(member values, non-member values) of ``column``."""
    is_m = frame["is_member"].astype(bool).to_numpy()
    v = frame[column].to_numpy(dtype=np.float64)
    return v[is_m], v[~is_m]


def loss_gaps(theta: pd.DataFrame, metric: str = "loss") -> pd.Series:
    """``g_k``: mean member minus mean non-member ``metric`` under M_theta, per manipulation (App. B.2, Tab. 3)."""
    _check_frame(theta, metric)
    means = theta.groupby(["manipulation", "is_member"], sort=False)[metric].mean().unstack("is_member")
    if True not in means.columns or False not in means.columns or means.isna().any().any():
        raise MetricsError("every manipulation needs member and non-member scores to form a gap.")
    return (means[True] - means[False]).rename("gap")


def gap_stats(gaps: Sequence[float] | pd.Series) -> tuple[float, float]:
    """``(mu_gap, sigma_gap)``: mean and population std (ddof=0) of the per-manipulation gaps."""
    g = np.asarray(gaps, dtype=np.float64)
    if len(g) == 0 or np.isnan(g).any():
        raise MetricsError("gaps are empty or hold NaN; compute them with loss_gaps on complete scores.")
    return float(g.mean()), float(g.std(ddof=0))


__all__ = [
    "METRIC_DIRECTION",
    "METRICS",
    "FPR_TARGETS",
    "MetricsError",
    "RocCurve",
    "membership_score",
    "roc_curve",
    "auc",
    "tpr_at_fpr",
    "attack_statistics",
    "bootstrap",
    "null_halves",
    "bootstrap_attack_statistics",
    "percentile_interval",
    "attack_metrics",
    "roc_points",
    "suite_scores",
    "delta_scores",
    "check_paired",
    "delta_from_suites",
    "split_members",
    "loss_gaps",
    "gap_stats",
]
