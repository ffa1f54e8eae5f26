"""The five IclMem evaluation outcomes of Tab. 3 (App. B.1, B.2), applied in priority order.

1. **Representational collapse** — ``L_v(M_theta) > 5 x L_v(M_ref)`` (vanilla loss, unmanipulated
   training-style context) or collapsed accuracy / near-constant predictions. Input: the
   ``collapsed`` flag and ``loss_ratio`` that :mod:`iclmem.training.finetune` logs per epoch.
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
labelled "Mem.", where rule 2 fires first). :func:`classify_outcome` implements Tab. 3 as written;
:data:`OUTCOME_READINGS` holds it beside two other readings (``printed``: the order and cut that
reproduce the printed labels; ``bound``: detectable only when the AUC's interval clears 0.5), which
:func:`classify_arrays` applies to many configurations at once.

Also here, because they decide what a configuration's signal is: the primary metric of Tab. 8
(:func:`with_primary_metric`: loss or entropy, whichever signals most, with that metric's own
TPRs) and App. A.4's calibrated margin (:data:`MARGIN_RULES`, :func:`calibrated_margin`, and
:func:`null_margin_rates`, how often each reading fires by chance).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
import pandas as pd

from .metrics import gap_stats, tpr_at_fpr

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
        return {
            "representational_collapse": "Coll.",
            "loss_inversion": "Inv.",
            "detectable_memorization": "Mem.",
            "context_overfitting": "Ctx.Ov.",
            "no_signal": "No Sig.",
        }[self.value]


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
) -> OutcomeResult:
    """Tab. 3 in priority order; see the module docstring.

    gaps: per-manipulation member-minus-non-member probe loss gaps ``g_k`` under M_theta.
    auc: ``AUC(Delta S)`` per metric (``"loss"``, ``"entropy"``, ...); NaN / missing = no evidence; detection reads
    :data:`DETECT_METRICS`.
    collapsed, loss_ratio: from the fine-tuning metrics at this epoch (``L_v(M_theta) / L_v(M_ref)``; collapse above
    :data:`COLLAPSE_RATIO`); context overfitting below :data:`OVERFIT_MU` and :data:`OVERFIT_SIGMA` (Tab. 3's
    thresholds).
    auc_ci_low: lower bootstrap bounds per metric, required with ``require_ci=True``.
    """
    if inversion not in ("mean", "all"):
        raise ValueError(f"inversion must be 'mean' or 'all', got {inversion!r}.")
    if require_ci and auc_ci_low is None:
        raise ValueError("require_ci=True needs auc_ci_low (the bootstrap lower bounds per metric).")
    g = np.asarray(gaps, dtype=np.float64)
    mu, sigma = gap_stats(g)
    ev: dict[str, Any] = {
        "collapsed_flag": bool(collapsed),
        "loss_ratio": loss_ratio,
        "mu_gap": mu,
        "sigma_gap": sigma,
        "all_gaps_positive": bool((g > 0).all()),
        "auc": dict(auc),
        "auc_ci_low": dict(auc_ci_low or {}),
        "require_ci": require_ci,
        "inversion": inversion,
    }
    ratio_collapse = _finite(loss_ratio) and float(loss_ratio) > COLLAPSE_RATIO
    if collapsed or ratio_collapse:
        return OutcomeResult(Outcome.COLLAPSE, {**ev, "rule": f"collapsed flag or L_v ratio > {COLLAPSE_RATIO:g}"})
    inverted = bool((g > 0).all()) if inversion == "all" else mu > 0
    if inverted:
        return OutcomeResult(
            Outcome.INVERSION,
            {
                **ev,
                "rule": "mean non-member probe loss < mean member probe loss"
                + (" on every manipulation" if inversion == "all" else ""),
            },
        )
    evidence = auc_ci_low if require_ci else auc
    detected = [m for m in DETECT_METRICS if _finite(evidence.get(m)) and float(evidence[m]) > 0.5]
    if detected:
        what = "AUC(Delta S) CI lower bound" if require_ci else "AUC(Delta S)"
        return OutcomeResult(
            Outcome.MEMORIZATION, {**ev, "detected_on": detected, "rule": f"{what} > 0.5 on {'/'.join(detected)}"}
        )
    if abs(mu) < OVERFIT_MU and sigma < OVERFIT_SIGMA:
        return OutcomeResult(
            Outcome.CONTEXT_OVERFITTING, {**ev, "rule": f"|mu_gap| < {OVERFIT_MU:g} and sigma_gap < {OVERFIT_SIGMA:g}"}
        )
    return OutcomeResult(Outcome.NO_SIGNAL, {**ev, "rule": "none of the above"})


OUTCOME_ORDER: tuple[str, ...] = tuple(o.value for o in Outcome)
#: Short labels of the outcomes, as Tab. 10 / 11 print them.
SHORT: dict[str, str] = {o.value: o.short for o in Outcome}


# --- three readings of the rule (Tab. 3 text, Tab. 10 / 11 as printed, a statistical bound) -----------


@dataclass(frozen=True)
class OutcomeReading:
    """One reading of Tab. 3: the order of the three membership rules after collapse, and what "detectable" asks.

    ``order``: the outcomes tried after collapse, first match wins (context overfitting, then no
    signal, come last in every reading). ``detect_on``: ``"point"`` (the AUC itself) or ``"bound"``
    (the lower bound of its bootstrap interval); detectable when it exceeds ``cut`` on loss or entropy.
    """

    name: str
    order: tuple[str, str]
    detect_on: str
    cut: float
    description: str


_INV, _MEM = Outcome.INVERSION.value, Outcome.MEMORIZATION.value
#: The detectable cut of the ``printed`` reading: the middle of the cuts that best reproduce Tab. 10 / 11's labels.
PRINTED_CUT = 0.5508
#: The readings of the outcome rule notebook 04 shows side by side (``outcome_rule`` parameter).
#: ``printed``'s order and cut are those that best reproduce the paper's own printed labels of
#: Tab. 10 / 11 (:func:`iclmem.chapters.ch04_calibration.outcome_readings.fit_printed_reading` finds them from the 34
#: transcribed non-collapsed rows; a test checks that the search still returns these constants).
OUTCOME_READINGS: dict[str, OutcomeReading] = {
    "text": OutcomeReading(
        "text",
        (_INV, _MEM),
        "point",
        0.5,
        "Tab. 3 as written: collapse, inversion (mu_gap > 0), AUC(Delta S) > 0.5, context overfitting, no signal",
    ),
    "printed": OutcomeReading(
        "printed",
        (_MEM, _INV),
        "point",
        PRINTED_CUT,
        f"Tab. 10 / 11 as printed: collapse, AUC(Delta S) > {PRINTED_CUT:g} (the bold cut), inversion, "
        "context overfitting, no signal",
    ),
    "bound": OutcomeReading(
        "bound",
        (_INV, _MEM),
        "bound",
        0.5,
        "a statistical reading: as the text, but detectable only when the lower bound of the 95% bootstrap "
        "interval of AUC(Delta S) exceeds 0.5",
    ),
}
#: The reading the scorecard's outcome claims (C1-C9, C15) use: the only one whose detectable share is small under
#: the permutation null (notebook 04 shows all three with their null shares).
DEFAULT_READING = "bound"


def get_reading(name: str) -> OutcomeReading:
    """The :data:`OUTCOME_READINGS` entry ``name``; a clear error for an unknown one."""
    if name not in OUTCOME_READINGS:
        raise ValueError(f"unknown outcome_rule {name!r}; use one of {', '.join(OUTCOME_READINGS)}.")
    return OUTCOME_READINGS[name]


def classify_arrays(
    *,
    auc: Mapping[str, np.ndarray],
    mu_gap: np.ndarray,
    sigma_gap: np.ndarray,
    collapsed: np.ndarray,
    auc_lo: Mapping[str, np.ndarray | None] | None = None,
    reading: str | OutcomeReading = "text",
) -> np.ndarray:
    """Tab. 3 outcomes of many configurations at once under one reading (an object array of outcome values).

    ``collapsed`` already holds the collapse test (flag or loss ratio above the threshold). Under
    ``text`` and ``bound`` this equals :func:`classify_outcome` with ``inversion="mean"`` (tested);
    NaN AUCs never detect.
    """
    r = reading if isinstance(reading, OutcomeReading) else get_reading(reading)
    if r.detect_on == "bound":
        if auc_lo is None or any(auc_lo.get(m) is None for m in ("loss", "entropy")):
            raise ValueError(
                f"reading {reading!r} needs the lower bounds of the AUC intervals (auc_lo of loss and entropy)."
            )
        a, b = np.asarray(auc_lo["loss"], dtype=float), np.asarray(auc_lo["entropy"], dtype=float)
    else:
        a, b = np.asarray(auc["loss"], dtype=float), np.asarray(auc["entropy"], dtype=float)
    with np.errstate(invalid="ignore"):
        detect = (np.nan_to_num(a, nan=-np.inf) > r.cut) | (np.nan_to_num(b, nan=-np.inf) > r.cut)
    mu, sigma = np.asarray(mu_gap, dtype=float), np.asarray(sigma_gap, dtype=float)
    fires = {_INV: mu > 0, _MEM: detect}
    out = np.full(len(mu), Outcome.NO_SIGNAL.value, dtype=object)
    out[(np.abs(mu) < OVERFIT_MU) & (sigma < OVERFIT_SIGMA)] = Outcome.CONTEXT_OVERFITTING.value
    for outcome in reversed(r.order):  # later rules first, so earlier ones overwrite them
        out[fires[outcome]] = outcome
    out[np.asarray(collapsed, dtype=bool)] = Outcome.COLLAPSE.value
    return out


def collapse_mask(summary: pd.DataFrame, collapse_ratio: float = COLLAPSE_RATIO) -> np.ndarray:
    """The collapse test of Tab. 3 per summary row: the logged flag, or the loss ratio above ``collapse_ratio``."""
    ratio = (
        pd.to_numeric(summary["loss_ratio"], errors="coerce").to_numpy(dtype=float)
        if "loss_ratio" in summary
        else np.nan
    )
    with np.errstate(invalid="ignore"):
        return summary["collapsed"].astype(bool).to_numpy() | (np.nan_to_num(ratio, nan=0.0) > collapse_ratio)


def reclassify(summary: pd.DataFrame, reading: str) -> pd.DataFrame:
    """``summary`` with its ``outcome`` column recomputed under ``reading`` (and ``outcome_reading`` naming it)."""
    out = summary.copy()
    out["outcome"] = classify_arrays(
        auc={"loss": out.auc_loss, "entropy": out.auc_entropy},
        mu_gap=out.mu_gap,
        sigma_gap=out.sigma_gap,
        collapsed=collapse_mask(out),
        auc_lo={"loss": out.get("auc_loss_lo"), "entropy": out.get("auc_entropy_lo")},
        reading=reading,
    )
    out["outcome_reading"] = reading
    return out


# --- the primary metric (Tab. 8) --------------------------------------------------------------------

#: Per-metric columns that :func:`with_primary_metric` copies from the primary metric.
PRIMARY_COLUMNS: tuple[str, ...] = ("auc", "auc_lo", "auc_hi", "tpr10", "tpr1")


def with_primary_metric(summary: pd.DataFrame, metric: str = "best") -> pd.DataFrame:
    """``summary`` plus ``metric`` and the ``auc``, ``auc_lo``, ``auc_hi``, ``tpr10``, ``tpr1`` of that metric.

    ``metric="best"`` (Tab. 8: "We report AUC and TPR for the metric (loss or entropy) yielding the
    maximum signal"): per row, whichever of loss and entropy has the higher AUC(Delta S), ties to
    loss; the TPRs are that metric's own, never another metric's. ``"loss"`` / ``"entropy"`` fix it.
    """
    if metric not in ("best", "loss", "entropy"):
        raise ValueError(f"metric must be 'best', 'loss' or 'entropy', got {metric!r}.")
    out = summary.copy()
    if metric == "best":
        chosen = np.where(
            out["auc_entropy"].to_numpy(dtype=float) > out["auc_loss"].to_numpy(dtype=float), "entropy", "loss"
        )
    else:
        chosen = np.full(len(out), metric)
    out["metric"] = chosen
    for col in PRIMARY_COLUMNS:
        base, _, bound = col.partition("_")
        values = {
            m: out.get(f"{base}_{m}" + (f"_{bound}" if bound else ""), pd.Series(np.nan, index=out.index))
            for m in ("loss", "entropy")
        }
        out[col] = np.where(chosen == "entropy", values["entropy"], values["loss"]).astype(float)
    return out


# --- App. A.4: the calibrated margin -------------------------------------------------------------------

#: App. A.4's "calibrated margin (Delta TPR@10% >= 0.10)", the readings its text allows (see :func:`calibrated_margin`).
MARGIN_RULES: dict[str, str] = {
    "delta_tpr": "TPR@10% of S_theta minus TPR@10% of S_ref >= 0.10 "
    "(fine-tuning adds 0.10 to what M_ref already separates)",
    "tpr_over_fpr": "TPR@10% of Delta S minus the FPR of 0.10 >= 0.10 (the calibrated attack beats chance by 0.10)",
    "calibrated_tpr": "TPR@10% of Delta S >= 0.10 "
    "(the calibrated attack reaches the raw threshold; chance level itself)",
}
#: The reading used by default, chosen for its false-alarm rate under the null (see notebook 04 and the tests).
DEFAULT_MARGIN_RULE = "delta_tpr"


def calibrated_margin(
    raw_tpr: np.ndarray,
    ref_tpr: np.ndarray,
    calibrated_tpr: np.ndarray,
    rule: str = DEFAULT_MARGIN_RULE,
    threshold: float = 0.10,
    fpr: float = 0.10,
) -> np.ndarray:
    """Whether App. A.4's calibrated margin holds, per configuration, under one reading of :data:`MARGIN_RULES`.

    ``raw_tpr``: TPR@fpr of S_theta alone; ``ref_tpr``: of S_ref alone; ``calibrated_tpr``: of Delta S.
    """
    if rule not in MARGIN_RULES:
        raise ValueError(f"unknown calibrated-margin rule {rule!r}; use one of {', '.join(MARGIN_RULES)}.")
    raw, ref, cal = (np.asarray(a, dtype=np.float64) for a in (raw_tpr, ref_tpr, calibrated_tpr))
    if rule == "delta_tpr":
        return raw - ref >= threshold - 1e-12
    if rule == "tpr_over_fpr":
        return cal - fpr >= threshold - 1e-12
    return cal >= threshold - 1e-12


def null_margin_rates(
    n_members: int = 50,
    n_non_members: int = 50,
    n_sim: int = 2000,
    seed: int = 0,
    difficulty_sd: float = 1.0,
    noise_sd: float = 0.5,
    threshold: float = 0.10,
) -> pd.DataFrame:
    """How often each reading of the calibrated margin fires when nothing was memorized (members and non-members
    exchangeable).

    Each query gets a difficulty ``d ~ N(0, difficulty_sd)`` shared by both models; ``S_ref = d + e_ref`` and
    ``S_theta = d + e_theta`` with independent noise ``N(0, noise_sd)``: fine-tuning moved scores, but not with
    membership. Columns: rule, fires (share of null runs where raw TPR@10% >= threshold and the rule holds),
    fires_given_raw (the same share among null runs with a raw signal), description.
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xA4]))
    n = n_members + n_non_members
    tprs = np.empty((n_sim, 3))
    for i in range(n_sim):
        d = rng.normal(0, difficulty_sd, n)
        s_ref, s_theta = d + rng.normal(0, noise_sd, n), d + rng.normal(0, noise_sd, n)
        member = rng.permutation(n) < n_members
        tprs[i] = [tpr_at_fpr(v[member], v[~member], 0.10) for v in (s_theta, s_ref, s_theta - s_ref)]
    raw = tprs[:, 0] >= threshold
    rows = []
    for rule, text in MARGIN_RULES.items():
        fires = raw & calibrated_margin(tprs[:, 0], tprs[:, 1], tprs[:, 2], rule, threshold)
        rows.append(
            {
                "rule": rule,
                "fires": float(fires.mean()),
                "fires_given_raw": float(fires[raw].mean()) if raw.any() else np.nan,
                "description": text,
            }
        )
    return pd.DataFrame(rows)


__all__ = [
    "COLLAPSE_RATIO",
    "DEFAULT_MARGIN_RULE",
    "DEFAULT_READING",
    "OUTCOME_READINGS",
    "PRINTED_CUT",
    "OutcomeReading",
    "classify_arrays",
    "collapse_mask",
    "get_reading",
    "reclassify",
    "DETECT_METRICS",
    "MARGIN_RULES",
    "OUTCOME_ORDER",
    "OVERFIT_MU",
    "OVERFIT_SIGMA",
    "PRIMARY_COLUMNS",
    "SHORT",
    "Outcome",
    "OutcomeResult",
    "calibrated_margin",
    "classify_outcome",
    "null_margin_rates",
    "with_primary_metric",
]
