"""The five IclMem evaluation outcomes of Tab. 3 (App. B.1, B.2), applied in priority order.

1. **Representational collapse** — ``L_v(M_theta) > 5 x L_v(M_ref)`` (vanilla loss, unmanipulated
   training-style context) or collapsed accuracy / near-constant predictions. Input: the
   ``collapsed`` flag and ``loss_ratio`` that :mod:`iclmem.finetune` logs per epoch.
2. **Loss inversion** — ``mean_NM probe loss < mean_M probe loss`` under M_theta, i.e. members have
   the *higher* mean probe loss. Default ``inversion="mean"``: the means run over all queries and
   all manipulations, which (every manipulation scores every query) equals ``mu_gap > 0`` with
   ``g_k = mean_M - mean_NM``. ``inversion="all"`` reads Tab. 3's intuition ("non-members have
   lower mean probe loss than members across all context manipulations") as ``g_k > 0`` for
   every ``k``.
3. **Detectable memorization** — ``AUC(Delta S) > 0.5`` on loss or entropy (Sec. 4.2, Tab. 3: the
   point estimate). ``require_ci=True`` asks instead for the lower bound of the bootstrap
   interval to exceed 0.5 (stricter: excludes chance at the interval's level).
4. **Context overfitting** — ``|mu_gap| < 0.05`` and ``sigma_gap < 0.2``.
5. **No signal** — none of the above.

Note: the outcome labels printed in Tab. 10 / 11 do not all follow this order from the printed
numbers (e.g. Tab. 10, chocolate_bar_ratings, lr 1e-2: ``mu_gap = +0.004`` and AUC 0.604 is
labelled "Mem.", where rule 2 fires first). This module implements Tab. 3 as written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from .metrics import gap_stats

COLLAPSE_RATIO = 5.0
OVERFIT_MU = 0.05
OVERFIT_SIGMA = 0.2
DETECT_METRICS: tuple[str, ...] = ("loss", "entropy")


class Outcome(str, Enum):
    """Tab. 3 outcomes, in priority order."""

    COLLAPSE = "representational_collapse"
    INVERSION = "loss_inversion"
    MEMORIZATION = "detectable_memorization"
    CONTEXT_OVERFITTING = "context_overfitting"
    NO_SIGNAL = "no_signal"

    @property
    def short(self) -> str:
        """The abbreviation of Tab. 10 / 11."""
        return {"representational_collapse": "Coll.", "loss_inversion": "Inv.", "detectable_memorization": "Mem.",
                "context_overfitting": "Ctx.Ov.", "no_signal": "No Sig."}[self.value]


@dataclass(frozen=True)
class OutcomeResult:
    """The outcome and the numbers that decided it (``evidence["rule"]`` names the rule that fired)."""

    outcome: Outcome
    evidence: dict[str, Any] = field(default_factory=dict)


def _finite(x: float | None) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def classify_outcome(
    *,
    gaps: Sequence[float],
    auc: Mapping[str, float],
    collapsed: bool = False,
    loss_ratio: float | None = None,
    auc_ci_low: Mapping[str, float] | None = None,
    require_ci: bool = False,
    inversion: str = "mean",
    collapse_ratio: float = COLLAPSE_RATIO,
    overfit_mu: float = OVERFIT_MU,
    overfit_sigma: float = OVERFIT_SIGMA,
    detect_metrics: Sequence[str] = DETECT_METRICS,
) -> OutcomeResult:
    """Tab. 3 in priority order; see the module docstring.

    gaps: per-manipulation member-minus-non-member probe loss gaps ``g_k`` under M_theta.
    auc: ``AUC(Delta S)`` per metric (``"loss"``, ``"entropy"``, ...); NaN / missing = no evidence.
    collapsed, loss_ratio: from the fine-tuning metrics at this epoch (``L_v(M_theta) / L_v(M_ref)``).
    auc_ci_low: lower bootstrap bounds per metric, required with ``require_ci=True``.
    """
    if inversion not in ("mean", "all"):
        raise ValueError(f"inversion must be 'mean' or 'all', got {inversion!r}.")
    if require_ci and auc_ci_low is None:
        raise ValueError("require_ci=True needs auc_ci_low (the bootstrap lower bounds per metric).")
    g = np.asarray(gaps, dtype=np.float64)
    mu, sigma = gap_stats(g)
    ev: dict[str, Any] = {"collapsed_flag": bool(collapsed), "loss_ratio": loss_ratio, "mu_gap": mu, "sigma_gap": sigma,
                          "all_gaps_positive": bool((g > 0).all()), "auc": dict(auc), "auc_ci_low": dict(auc_ci_low or {}),
                          "require_ci": require_ci, "inversion": inversion}
    ratio_collapse = _finite(loss_ratio) and float(loss_ratio) > collapse_ratio
    if collapsed or ratio_collapse:
        return OutcomeResult(Outcome.COLLAPSE, {**ev, "rule": f"collapsed flag or L_v ratio > {collapse_ratio:g}"})
    inverted = bool((g > 0).all()) if inversion == "all" else mu > 0
    if inverted:
        return OutcomeResult(Outcome.INVERSION, {**ev, "rule": "mean non-member probe loss < mean member probe loss"
                                                 + (" on every manipulation" if inversion == "all" else "")})
    evidence = auc_ci_low if require_ci else auc
    detected = [m for m in detect_metrics if _finite(evidence.get(m)) and float(evidence[m]) > 0.5]
    if detected:
        what = "AUC(Delta S) CI lower bound" if require_ci else "AUC(Delta S)"
        return OutcomeResult(Outcome.MEMORIZATION, {**ev, "detected_on": detected, "rule": f"{what} > 0.5 on {'/'.join(detected)}"})
    if abs(mu) < overfit_mu and sigma < overfit_sigma:
        return OutcomeResult(Outcome.CONTEXT_OVERFITTING, {**ev, "rule": f"|mu_gap| < {overfit_mu:g} and sigma_gap < {overfit_sigma:g}"})
    return OutcomeResult(Outcome.NO_SIGNAL, {**ev, "rule": "none of the above"})


__all__ = ["Outcome", "OutcomeResult", "classify_outcome", "COLLAPSE_RATIO", "OVERFIT_MU", "OVERFIT_SIGMA", "DETECT_METRICS"]
