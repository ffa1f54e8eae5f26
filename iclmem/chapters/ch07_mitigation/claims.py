"""Chapter 7 (IclMem Sec. 6 names DP-SGD; neither paper measures it): claims M1 and M2 and their rules.

* **M1** (:func:`m1_record`): DP-SGD at epsilon <= 4 removes the vanilla-attack signal, read on the **attack
  series** (the book's positive control of appendix A6: label condition ``all``, a 64-row context, Q = 50) as an
  equivalence test (:mod:`iclmem.chapters.ch07_mitigation.equivalence_test`), with its membership null
  (:func:`m1_null_rate`);
* **M2** (:func:`m2_record`): DP-SGD at the largest epsilon <= 4 costs at most the utility budget of held-out
  accuracy against M_ref and against epsilon = inf (:func:`cost_verdict`), read on the **utility series** (label
  condition :data:`~iclmem.chapters.ch07_mitigation.thresholds.UTILITY_CONDITION`).

Both go to the scorecard under "Beyond the papers" (:func:`mitigation_claims`); :func:`removal_threshold` reads the
attack series for the page. The levels the rules read are :mod:`iclmem.chapters.ch07_mitigation.thresholds`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclmem.chapters.ch07_mitigation.dp_bounds import dp_auc_bound
from iclmem.chapters.ch07_mitigation.equivalence_test import (
    auc_bounds_under_permutation,
    equivalence_power,
    observed_bounds,
    paired_auc_difference,
    queries_for_power,
    within_margin,
)
from iclmem.chapters.ch07_mitigation.paper import PAPER
from iclmem.chapters.ch07_mitigation.runs import CLIPPED, PLAIN, Mitigation, accuracy_cost, run_label
from iclmem.chapters.ch07_mitigation.thresholds import M1_EPSILON, M1_MARGIN, UTILITY_BUDGET
from iclmem.report.records import claim_record
from iclmem.report.verdicts import evidence_verdict
from iclmem.stats.permutation import N_PERMUTATIONS, permuted_auc_lower_bounds, permuted_labels
from iclmem.training.privacy import DEFAULT_DELTA


def m1_null_rate(
    m: Mitigation,
    private: Sequence[float],
    n_permutations: int = N_PERMUTATIONS,
    n_boot: int = 200,
    seed: int = 0,
    margin: float = M1_MARGIN,
) -> float | None:
    """How often M1's rule says "reproduced" when membership carries nothing (None without scores).

    The members are permuted across the probed queries, the same permutation for every run (the runs probe the same
    queries), and each run's interval is recomputed under it: the rule holds when the plain run's 95% lower bound is
    above 0.5 and every private run's 90% interval lies within 0.5 +- ``margin``. The paired difference is left out,
    which can only raise the rate (an upper bound on it).
    """
    if not m.vanilla_scores or PLAIN not in m.vanilla_scores:
        return None
    n = len(m.vanilla_scores[PLAIN])
    labels = permuted_labels(np.arange(n) < m.n_members, n_permutations, seed)
    holds = permuted_auc_lower_bounds(m.vanilla_scores[PLAIN], labels, n_boot, seed) > 0.5
    for e in private:
        lo, hi = auc_bounds_under_permutation(m.vanilla_scores[run_label(e)], labels, n_boot, seed)
        holds &= within_margin(lo, hi, margin)
    return float(holds.mean())


def cost_verdict(costs: dict[str, dict[str, float]], budget: float = UTILITY_BUDGET) -> tuple[str, str]:
    """M2's rule on the paired cost intervals against M_ref and against epsilon = inf: (verdict, reason).

    reproduced: both intervals lie at or below ``budget``; differs: either lies above it; else inconclusive.
    """
    names = {"ref": "M_ref", "inf": "ε = ∞"}
    above = [names[k] for k, c in costs.items() if c["lo"] > budget]
    if above:
        return "differs", f"the paired interval of the cost against {' and '.join(above)} lies above {budget:.2f}"
    if all(c["hi"] <= budget for c in costs.values()):
        return "reproduced", f"the paired intervals of the cost against M_ref and ε = ∞ lie at or below {budget:.2f}"
    spans = [names[k] for k, c in costs.items() if c["hi"] > budget]
    return "inconclusive", f"the paired interval of the cost against {' and '.join(spans)} contains {budget:.2f}"


def removal_threshold(table: pd.DataFrame) -> float | None:
    """The largest finite epsilon at and below which every vanilla-attack interval covers 0.5 (None: none does)."""
    best = None
    for _, row in table[np.isfinite(table.epsilon)].sort_values("epsilon").iterrows():
        if row["vanilla lo"] > 0.5:
            break
        best = float(row["epsilon"])
    return best


def _eps_label(e: float) -> str:
    return "∞" if math.isinf(e) else f"{e:g}"


def m1_record(
    m: Mitigation, n_boot: int = 200, seed: int = 0, margin: float = M1_MARGIN, n_permutations: int = N_PERMUTATIONS
) -> dict:
    """M1: DP-SGD at epsilon <= 4 removes the vanilla-attack signal, as an **equivalence** test.

    Reproduced when (i) the plain run's 95% interval lies above 0.5 (a signal to remove), (ii) every private run's
    90% interval lies within 0.5 +- ``margin`` (two one-sided tests: "removed" is shown, not assumed from a
    non-detection) and (iii) the paired difference plain minus private has its 95% interval above 0 (DP lowered
    the signal); differs when a private run's 95% interval lies above 0.5 (the signal stays); otherwise inconclusive.
    The record states the rule's power: the share of membership permutations (a true AUC of 0.5) of each private
    run's scores for which (ii) holds, and the members per run that 80% power needs.
    """
    t = m.table[m.table.run != CLIPPED].set_index("epsilon")
    private = m.private()
    if math.inf not in t.index or not private:
        return claim_record(
            "M1", PAPER, "not run", "not testable here", "the grid needs epsilon = inf and some epsilon <= 4"
        )
    top = t.loc[math.inf]
    ours = "; ".join(
        f"ε={_eps_label(e)}: {t.loc[e, 'vanilla AUC']:.3f} [{t.loc[e, 'vanilla lo']:.3f}, {t.loc[e, 'vanilla hi']:.3f}]"
        for e in sorted(t.index, reverse=True)
    )
    scores = m.vanilla_scores or {}
    have = PLAIN in scores and all(run_label(e) in scores for e in private)
    kept = [e for e in private if t.loc[e, "vanilla lo"] > 0.5]
    need = queries_for_power(margin)
    if not have:
        why = "the runs' vanilla scores are missing: the equivalence test and the paired difference need them"
        return claim_record("M1", PAPER, ours, "not testable here", why)
    eq = {e: observed_bounds(scores[run_label(e)], m.n_members, n_boot, seed) for e in private}
    diff = {e: paired_auc_difference(scores[PLAIN], scores[run_label(e)], m.n_members, n_boot, seed) for e in private}
    power = {
        e: equivalence_power(scores[run_label(e)], m.n_members, margin, min(n_permutations, 1000), n_boot, seed)
        for e in private
    }
    removed = all(within_margin(*eq[e], margin) for e in private)
    lowered = all(diff[e]["lo"] > 0 for e in private)
    ours += _m1_interval_text(m, private, eq, diff, n_boot, seed)
    verdict, why, agrees = _m1_verdict(top, kept, removed, lowered, margin)
    rate = m1_null_rate(m, private, n_permutations, n_boot, seed, margin)
    null = (
        "membership exchangeable across the probed queries: the members permuted, the same permutation in every run, "
        f"{n_permutations} draws, each run's interval recomputed and read by the same rule (without the paired "
        "difference: an upper bound on the rate)"
    )
    if agrees:
        verdict = evidence_verdict(True, rate)
    why += (
        f". {_m1_power_text(m, private, power, need)}. The margin ±{margin:g} is this companion's choice; "
        "(ε, δ)-DP alone allows an AUC up to "
        + (f"{dp_auc_bound(M1_EPSILON, DEFAULT_DELTA):.2f} at ε = {M1_EPSILON:g}")
    )
    ci = "; ".join(f"ε={_eps_label(e)}: [{eq[e][0]:.3f}, {eq[e][1]:.3f}] (90%)" for e in private)
    return claim_record(
        "M1",
        PAPER,
        ours,
        verdict,
        why,
        ci,
        null=null,
        observed=f"{top['vanilla lo']:.3f}",
        null_rate=rate,
        null_draws=n_permutations,
    )


def _m1_interval_text(m: Mitigation, private: Sequence[float], eq: dict, diff: dict, n_boot: int, seed: int) -> str:
    """M1's observed intervals: each private run's 90% interval, the paired differences plain minus private and,
    with the clipped run, clipped minus private (the noise's share alone)."""
    scores = m.vanilla_scores or {}
    text = "; " + "; ".join(
        f"ε={_eps_label(e)}: 90% interval [{eq[e][0]:.3f}, {eq[e][1]:.3f}], ε=∞ minus ε={_eps_label(e)} "
        f"{diff[e]['difference']:+.3f} [{diff[e]['lo']:+.3f}, {diff[e]['hi']:+.3f}]"
        for e in private
    )
    if CLIPPED in scores:  # the noise's share alone: the clipped run without noise minus each private run
        text += "; " + "; ".join(
            f"{CLIPPED} minus ε={_eps_label(e)} {d['difference']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]"
            for e in private
            for d in [paired_auc_difference(scores[CLIPPED], scores[run_label(e)], m.n_members, n_boot, seed)]
        )
    return text


def _m1_power_text(m: Mitigation, private: Sequence[float], power: dict, need: int) -> str:
    """The equivalence rule's power per private run, and the members per run that 80% power needs."""
    return (
        f"The equivalence rule's power (true AUC 0.5, {m.n_members} + {m.n_members} queries): "
        + ", ".join(f"{power[e]:.0%} at ε={_eps_label(e)}" for e in private)
        + f"; 80% power needs about {need} members and {need} non-members per run"
    )


def _m1_verdict(
    top: pd.Series, kept: list[float], removed: bool, lowered: bool, margin: float
) -> tuple[str, str, bool | None]:
    """M1's rule before its null: (verdict, reason, agrees); agrees is None without a signal to remove."""
    if not top["vanilla lo"] > 0.5:
        verdict, why = "inconclusive", "the non-private run's vanilla interval covers 0.5: there is no signal to remove"
        agrees = None
    elif kept:
        verdict = "differs"
        why = f"the vanilla interval stays above 0.5 at ε = {', '.join(_eps_label(e) for e in kept)}"
        agrees = False
    else:
        agrees = removed and lowered
        parts = [
            f"every ε ≤ {M1_EPSILON:g} run's 90% interval lies within 0.5 ± {margin:g}"
            if removed
            else f"not every ε ≤ {M1_EPSILON:g} run's 90% interval lies within 0.5 ± {margin:g} (removal not shown: "
            "a non-detection is not an equivalence)",
            "the paired difference ε=∞ minus each private run lies above 0"
            if lowered
            else "the paired difference ε=∞ minus a private run has an interval that includes 0",
        ]
        verdict, why = ("reproduced" if agrees else "inconclusive"), "; ".join(parts)
    return verdict, why, agrees


def m2_record(m: Mitigation, n_boot: int = 200, seed: int = 0, budget: float = UTILITY_BUDGET) -> dict:
    """M2: DP-SGD at the largest epsilon <= 4 costs at most ``budget`` held-out accuracy against M_ref and against
    epsilon = inf (:func:`cost_verdict`), read on ``m``'s runs (the utility runs, label condition
    :data:`UTILITY_CONDITION`, where fine-tuning can help).

    When the plain run does not beat M_ref (the gain's paired interval is not above 0), any run that learns nothing
    passes the rule: an agreement then **holds by construction**, not reproduced.
    """
    private = m.private()
    if PLAIN not in m.correct or not private or m.ref_correct is None:
        return claim_record(
            "M2", PAPER, "not run", "not testable here", "the grid needs epsilon = inf and some epsilon <= 4"
        )
    worst = max(private)  # the run of M1's that costs least
    costs = {k: accuracy_cost(m, worst, k, n_boot, seed) for k in ("ref", "inf")}
    plain = accuracy_cost(m, PLAIN, "ref", n_boot, seed)  # M_ref minus the plain run: minus fine-tuning's gain
    gain, gain_lo, gain_hi = -plain["cost"], -plain["hi"], -plain["lo"]
    helps = gain_lo > 0
    ours = "; ".join(
        f"accuracy cost at ε={_eps_label(worst)} against {name}: {c['cost']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]"
        for name, c in zip(("M_ref", "ε=∞"), costs.values(), strict=True)
    )
    ours += f"; fine-tuning's gain (ε=∞ minus M_ref): {gain:+.3f} [{gain_lo:+.3f}, {gain_hi:+.3f}]"
    if CLIPPED in m.correct:
        clip = accuracy_cost(m, CLIPPED, "inf", n_boot, seed)
        noise = accuracy_cost(m, worst, "clipped", n_boot, seed)
        ours += (
            f"; clipping alone costs {clip['cost']:+.3f} [{clip['lo']:+.3f}, {clip['hi']:+.3f}], the noise at "
            f"ε={_eps_label(worst)} {noise['cost']:+.3f} [{noise['lo']:+.3f}, {noise['hi']:+.3f}]"
        )
    ours += f" (held-out rows, true targets; label condition {m.label_condition})"
    verdict, why = cost_verdict(costs, budget)
    if verdict == "reproduced" and not helps:
        verdict = evidence_verdict(True, None, by_construction=True)
        why += (
            "; but fine-tuning does not raise held-out accuracy above M_ref here (its gain's interval is not above "
            "0), so a run that learns nothing passes: the agreement holds by construction"
        )
    elif helps:
        why += (
            f"; fine-tuning raises held-out accuracy by {gain:+.3f} here, so the cost is measured against a real gain"
        )
    ci = "; ".join(f"[{c['lo']:+.3f}, {c['hi']:+.3f}]" for c in costs.values())
    return claim_record(
        "M2",
        PAPER,
        ours,
        verdict,
        why,
        ci,
        null=("no null applies: the criterion is a stated utility budget, read against paired bootstrap intervals"),
        observed=f"{max(c['cost'] for c in costs.values()):+.3f}",
    )


def mitigation_claims(m: Mitigation, n_boot: int = 200, seed: int = 0, utility: Mitigation | None = None) -> list[dict]:
    """M1 (:func:`m1_record`, on ``m``: the attack runs) and M2 (:func:`m2_record`, on ``utility`` when given, else
    on ``m``)."""
    return [m1_record(m, n_boot, seed), m2_record(utility if utility is not None else m, n_boot, seed)]
