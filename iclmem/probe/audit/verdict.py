"""The verdict of ``iclmem audit`` with its error rates (Sec. 4.2, App. A.4, Tab. 3; chapter 04's nulls and power).

The attack ranks the probed rows by ``Delta S = S_theta - S_ref`` of the probe loss over the 48 manipulations
(:func:`iclmem.stats.metrics.delta_scores`), oriented so that higher means member. From it:

* :func:`attack_summary`: AUC and TPR at 0.1%, 1% and 10% FPR, each with a 95% stratified bootstrap interval. TPR at
  0.1% is reported only with at least :data:`MIN_NON_MEMBERS_TPR01` non-members: below, no threshold can hold the
  FPR at 0.1% other than the one above every non-member, and the number would be a TPR at FPR 0.
* **The rule** (:data:`RULE`): "detected" when the lower end of the AUC's 95% interval lies above 0.5 (the
  ``bound`` reading of Tab. 3, one-sided level 2.5%).
* :func:`null_rate`: how often the rule says "detected" when membership is exchangeable: the rule applied to
  ``n_permutations`` relabellings of the probed rows that keep the member count (the membership-permutation null of
  :mod:`iclmem.probe.null`; each permutation's lower bound from the same stratified percentile bootstrap with the
  same number of resamples, :func:`iclmem.probe.null.auc_lower_bounds`), with a Wilson interval.
* :func:`power_at_size`: the smallest AUC this many members and non-members detect with 80% power under the rule
  (Hanley-McNeil variances, :func:`iclmem.stats.permutation.min_detectable_auc`).
* :func:`equivalence`: when nothing is found, whether the AUC lies below
:data:`iclmem.stats.permutation.ABSENCE_MARGIN` (0.60)
  with 95% confidence: the one-sided 95% upper bound, the larger of the bootstrap's and the Hanley-McNeil normal
  bound (a bootstrap of tied scores, e.g. a model audited against itself, has no width), below the margin; else
  "cannot say at this size", with the size at which a model without signal would show it with 80% power.
* :func:`rows_at_risk`: the members with the largest ``Delta S`` and the share of members above the non-members'
  99th percentile (about 1% without memorization): population averages understate the leakage of the most exposed
  rows (Aerni, Zhang and Tramer, CCS 2024).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as st

from ...stats.intervals import wilson
from ...stats.metrics import attack_metrics, delta_scores
from ...stats.permutation import (
    ABSENCE_MARGIN,
    hanley_mcneil_se,
    min_detectable_auc,
    permuted_labels,
    queries_for_absence,
    query_set_seed,
)
from ..null import auc_lower_bounds

#: The FPRs at which the attack's TPR is reported.
FPRS: tuple[float, ...] = (0.001, 0.01, 0.1)
#: Fewest non-members for a TPR at 0.1% FPR.
MIN_NON_MEMBERS_TPR01 = 1000
#: Power of the smallest detectable AUC; one-sided level of the rule (the lower end of a 95% interval).
POWER, RULE_ALPHA = 0.8, 0.025
#: The rule, as the report states it.
RULE = "detected when the lower end of the 95% bootstrap interval of AUC(Delta S, loss) lies above 0.5"
#: The metric the attack reads (Sec. 4.2: the probe loss).
METRIC = "loss"


def delta_frame(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per probed row: ``query_id``, ``is_member``, ``s_theta``, ``s_ref``, ``delta`` and ``score``
    (oriented, higher = member) of the probe loss, from the scores of :func:`iclmem.probe.audit.audit_fine_tuned`."""
    return delta_scores(scores[scores.model == "theta"], scores[scores.model == "ref"], METRIC)


def _fpr_key(fpr: float) -> str:
    return f"tpr{fpr * 100:g}"


def attack_summary(delta: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """AUC and TPR at :data:`FPRS` with 95% intervals, and whether the rule fires (module docstring)."""
    is_m = delta.is_member.astype(bool).to_numpy()
    m, n = delta.score.to_numpy()[is_m], delta.score.to_numpy()[~is_m]
    found = attack_metrics(m, n, n_boot=n_boot, seed=seed, fprs=FPRS)
    out: dict[str, Any] = {"n_members": int(is_m.sum()), "n_non_members": int((~is_m).sum()), "metric": METRIC}
    out.update({k: float(v) for k, v in found.items()})
    key = _fpr_key(FPRS[0])
    if len(n) < MIN_NON_MEMBERS_TPR01:
        for suffix in ("", "_lo", "_hi"):
            out[key + suffix] = None
        out[key + "_note"] = (
            f"not estimated: {len(n)} non-members, fewer than the {MIN_NON_MEMBERS_TPR01} a 0.1% FPR needs"
        )
    out["detected"] = bool(found["auc_lo"] > 0.5)
    return out


def null_rate(delta: pd.DataFrame, *, n_permutations: int = 100, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The share of membership permutations under which the rule fires, with its Wilson 95% interval."""
    ordered = delta.sort_values("query_id")
    labels = permuted_labels(
        ordered.is_member.astype(bool).to_numpy(), n_permutations, query_set_seed(ordered.query_id.to_numpy(), seed)
    )
    bounds = auc_lower_bounds(ordered.score.to_numpy(), labels, n_boot, seed)
    fired = int((bounds > 0.5).sum())
    lo, hi = wilson(fired, n_permutations)
    return {
        "rate": fired / n_permutations,
        "rate_lo": float(lo),
        "rate_hi": float(hi),
        "fired": fired,
        "n_permutations": n_permutations,
        "nominal": RULE_ALPHA,
    }


def power_at_size(n_members: int, n_non_members: int) -> dict[str, Any]:
    """The smallest AUC the rule detects with :data:`POWER` at this size."""
    return {
        "smallest_detectable_auc": float(min_detectable_auc(n_members, n_non_members, POWER, RULE_ALPHA)),
        "power": POWER,
        "alpha_one_sided": RULE_ALPHA,
        "method": "Hanley-McNeil variances, normal approximation",
    }


def equivalence(
    delta: pd.DataFrame, auc_value: float, *, n_boot: int = 1000, seed: int = 0, margin: float = ABSENCE_MARGIN
) -> dict[str, Any]:
    """Whether the AUC lies below ``margin`` with 95% confidence (module docstring), and the reading in words."""
    is_m = delta.is_member.astype(bool).to_numpy()
    m, n = delta.score.to_numpy()[is_m], delta.score.to_numpy()[~is_m]
    boot_hi = attack_metrics(m, n, n_boot=n_boot, seed=seed, level=0.90, fprs=())["auc_hi"]
    normal_hi = auc_value + st.norm.ppf(0.95) * hanley_mcneil_se(auc_value, len(m), len(n))
    upper = float(max(boot_hi, normal_hi))
    below = upper < margin
    needed = queries_for_absence(margin)
    reading = (
        f"below AUC {margin:.2f} with 95% confidence (upper bound {upper:.3f})"
        if below
        else f"cannot say at this size: the upper bound is {upper:.3f}, not below {margin:.2f}; about {needed} members "
        f"and as many non-members would show a model without signal below {margin:.2f} with 80% power"
    )
    return {
        "margin": margin,
        "upper_bound": upper,
        "bootstrap_upper": float(boot_hi),
        "normal_upper": float(normal_hi),
        "below_margin": bool(below),
        "queries_needed": int(needed),
        "reading": reading,
    }


def rows_at_risk(delta: pd.DataFrame, top_k: int = 10) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The ``top_k`` members by ``Delta S`` (largest score first) and the share of members above the non-members'
    99th percentile, with its Wilson interval."""
    is_m = delta.is_member.astype(bool)
    members, non = delta[is_m], delta[~is_m]
    p99 = float(np.quantile(non.score.to_numpy(), RISK_QUANTILE))
    above = int((members.score > p99).sum())
    lo, hi = wilson(above, len(members))
    top = members.sort_values(["score", "query_id"], ascending=[False, True]).head(top_k)
    share = {
        "non_member_p99": p99,
        "members_above": above,
        "share": above / len(members) if len(members) else math.nan,
        "share_lo": float(lo),
        "share_hi": float(hi),
        "expected_without_memorization": 1 - RISK_QUANTILE,
    }
    return top.reset_index(drop=True), share


#: The quantile of the non-members' scores above which a member counts as at risk (about 1% of members without
#: memorization).
RISK_QUANTILE = 0.99
#: The verdict words and their exit statuses.
VERDICTS: dict[str, int] = {"not detected": 0, "detected": 1, "cannot tell: distribution shift": 3}


def verdict(attack: dict[str, Any], separates: bool) -> tuple[str, int]:
    """The verdict word and the exit status: a baseline that separates the files overrides the attack (the audit
    cannot tell memorization from the shift), else the rule decides."""
    word = "cannot tell: distribution shift" if separates else ("detected" if attack["detected"] else "not detected")
    return word, VERDICTS[word]


__all__ = [
    "FPRS",
    "METRIC",
    "MIN_NON_MEMBERS_TPR01",
    "POWER",
    "RISK_QUANTILE",
    "RULE",
    "RULE_ALPHA",
    "VERDICTS",
    "attack_summary",
    "delta_frame",
    "equivalence",
    "null_rate",
    "power_at_size",
    "rows_at_risk",
    "verdict",
]
