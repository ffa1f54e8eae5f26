"""Paper 1, Sec. 4.2 ("Difficulty Calibration", "Memorization Metric"), Sec. 5, App. A.4, App. B (Tab. 1,
Tab. 3, Tab. 8, Fig. 2, Fig. 5, Fig. 6, Tab. 9), App. C (Tab. 10 / 11): calibration and outcomes (notebook 04).

What only this chapter needs: the paper's outcome shares, calibration counts and Tab. 1, the
tables and figures of the outcomes (Fig. 2, 5, 6, Tab. 1 / 8 / 9), the controls and the claims
they carry. The outcome rules and the calibrated margin are the engine's :mod:`iclmem.outcomes`.

* :func:`shuffled_label_check`: Tab. 3's clause for detectable memorization, "the signal weakens
  materially under shuffled labels", as a computed check per configuration.
* :func:`exhaustive_table`: Tab. 10 / 11's layout, AUC(Delta S) under N beside the shuffled
  condition, with the check's verdict.
* :func:`negative_control` and :func:`positive_control`: controls whose verdict is computed.
* :func:`calibration_claims`: the records of claims C1-C9, C11, C15, C16 for the scorecard.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from scipy import stats

from ..outcomes import (
    DEFAULT_MARGIN_RULE,
    MARGIN_RULES,
    OUTCOME_ORDER,
    SHORT,
    Outcome,
    calibrated_margin,
    get_reading,
    null_margin_rates,
    reclassify,
    with_primary_metric,
)
from ..probe.null import null_summaries, permutations
from ..stats import beyond_null, min_detectable_auc, null_range
from .claims import claim_record
from .outcome_readings import fit_printed_reading, reading_agreement
from .probing import PAPER_PEAKS, detectable_rows, fine_tuned
from .verdicts import evidence_verdict, percent, share_agreement, share_text, summarize_null, wilson_interval

MEMORIZATION = Outcome.MEMORIZATION.value
KEYS = ["dataset", "query_size", "learning_rate", "epoch"]

#: C1 and C3 (Sec. 5, Sec. 6): tasks with detectable memorization / with TPR@1% > 0.1, of the 10 evaluated.
PAPER_DETECTABLE_TASKS = (8, 10)
PAPER_TPR1_TASKS = (2, 10)
#: C9 (Sec. 5, Fig. 2): share of Q=50 configurations with detectable memorization at epoch 1 and by epoch 250;
#: Q=512 peaks at epoch 50 with 5.5% and vanishes after.
PAPER_TEMPORAL = {"q50_epoch1": 0.042, "q50_epoch250": 0.20, "q512_peak": 0.055, "q512_peak_epoch": 50}
#: C15 (Sec. 5, App. B.3): beer_ratings at Q=512, AUC 0.59 but TPR@10% 0.49.
PAPER_LOCALIZED = {"auc": 0.59, "tpr10": 0.49}
#: Level of the controls' intervals and the largest share of null intervals allowed to exclude 0.5 by chance.
CONTROL_LEVEL = 0.95


def shuffled_label_check(summary: pd.DataFrame, shuffled: str = "members", min_drop: float = 0.0) -> pd.DataFrame:
    """Per configuration (dataset, Q, lr, epoch > 0) present under N and under ``shuffled``: does the signal weaken?

    The AUC under N is that of its primary metric (:func:`iclmem.outcomes.with_primary_metric`); the
    shuffled AUC is of the same metric at the same epoch. ``weakens``: the shuffled AUC is lower
    than N's by more than ``min_drop``. ``verdict``: "weakens" / "does not weaken" for
    configurations detectable under N, "n/a" otherwise (Tab. 3 states the clause for detectable
    memorization only). Under ``members`` the members' labels were shuffled before fine-tuning
    and the probe asks for those shuffled labels (Sec. 4.1, "label randomization").
    """
    s = fine_tuned(summary)
    normal = with_primary_metric(s[s.label_condition == "none"])
    other = s[s.label_condition == shuffled]
    if normal.empty or other.empty:
        return pd.DataFrame(
            columns=[*KEYS, "metric", "auc_N", "auc_shuffled", "detectable_N", "detectable_shuffled", "verdict"]
        )
    merged = normal.merge(other, on=KEYS, suffixes=("", "_sh"), validate="one_to_one")
    merged["auc_N"] = merged.auc
    merged["auc_shuffled"] = np.where(merged.metric == "entropy", merged.auc_entropy_sh, merged.auc_loss_sh)
    merged["detectable_N"] = merged.outcome == MEMORIZATION
    merged["detectable_shuffled"] = merged.outcome_sh == MEMORIZATION
    weakens = merged.auc_shuffled < merged.auc_N - min_drop
    merged["verdict"] = np.where(~merged.detectable_N, "n/a", np.where(weakens, "weakens", "does not weaken"))
    return merged[
        [*KEYS, "metric", "auc_N", "auc_shuffled", "detectable_N", "detectable_shuffled", "verdict"]
    ].reset_index(drop=True)


def exhaustive_table(summary: pd.DataFrame, shuffled: str = "members") -> pd.DataFrame:
    """Tab. 10 / 11: per dataset, Q and learning rate, N's peak epoch with AUC under N and under the shuffled condition.

    The peak epoch is the one with N's highest AUC(Delta S) on its primary metric; the TPRs belong to
    that metric; the shuffled AUC is of the same metric at the same epoch (Tab. 10's "S" column),
    and the check column is :func:`shuffled_label_check`'s verdict there.
    """
    s = with_primary_metric(fine_tuned(summary))
    normal = s[s.label_condition == "none"]
    if normal.empty:
        return pd.DataFrame()
    peak = normal.loc[normal.groupby(["dataset", "query_size", "learning_rate"]).auc.idxmax()]
    check = shuffled_label_check(summary, shuffled)
    peak = peak.merge(check[[*KEYS, "auc_shuffled", "verdict"]], on=KEYS, how="left")
    cols = {
        "dataset": "dataset",
        "query_size": "Q",
        "learning_rate": "LR",
        "epoch": "Ep.",
        "delta_lv_members": "dLv IN",
        "delta_lv_non_members": "dLv OUT",
        "metric": "metric",
        "auc": "AUC N",
        "auc_shuffled": f"AUC {shuffled}",
        "mu_gap": "mu_gap",
        "sigma_gap": "sigma_gap",
        "tpr10": "TPR@10%",
        "tpr1": "TPR@1%",
        "outcome": "outcome",
        "verdict": "shuffled check",
    }
    out = peak[[c for c in cols if c in peak.columns]].rename(columns=cols)
    out["outcome"] = out.outcome.map({o.value: o.short for o in Outcome})
    return out.sort_values(["Q", "dataset", "LR"], ascending=[True, True, False]).reset_index(drop=True)


def negative_control(summary: pd.DataFrame, metric: str = "loss", max_p: float = 0.01) -> dict:
    """The null-halves control over every fine-tuned configuration: how often its interval excludes 0.5.

    Each configuration attacks two random halves of its non-members (:func:`iclmem.metrics.null_halves`);
    at the 95% level about 5% of intervals exclude 0.5 by chance. The control *fails* when the count
    is improbably high for that rate (one-sided binomial p-value below ``max_p``). Configurations of
    one run share their non-members, so the count is correlated and the p-value is optimistic.
    """
    s = fine_tuned(summary)
    lo, hi = s[f"null_auc_{metric}_lo"].to_numpy(dtype=float), s[f"null_auc_{metric}_hi"].to_numpy(dtype=float)
    n = int(len(s))
    excluded = int(((lo > 0.5) | (hi < 0.5)).sum())
    p = float(stats.binomtest(excluded, n, 1 - CONTROL_LEVEL, alternative="greater").pvalue) if n else math.nan
    passed = bool(n and p >= max_p)
    return {
        "n": n,
        "excluded": excluded,
        "share": excluded / n if n else math.nan,
        "p_value": p,
        "passed": passed,
        "median_auc": float(np.median(s[f"null_auc_{metric}"])) if n else math.nan,
    }


def positive_control(control: pd.DataFrame, epoch: int, metric: str = "loss") -> dict:
    """The positive control's verdict: AUC(Delta S) of ``metric`` at ``epoch`` must have its interval above 0.5."""
    row = control[control.epoch == epoch]
    if row.empty:
        raise ValueError(f"the control was not probed at epoch {epoch}; probe it there.")
    r = row.iloc[0]
    auc, lo, hi = float(r[f"auc_{metric}"]), float(r[f"auc_{metric}_lo"]), float(r[f"auc_{metric}_hi"])
    passed = lo > 0.5
    meaning = (
        "the probe detects memorization that is known to be there, at this query count"
        if passed
        else "the probe does not separate known members from non-members at this query count, so a non-detection "
        "elsewhere "
        "in this book is no evidence of absence, and a detection whose interval reaches 0.5 is no evidence of "
        "memorization"
    )
    return {"auc": auc, "lo": lo, "hi": hi, "passed": passed, "outcome": r.outcome, "meaning": meaning}


def vanilla_attack(run, table, epoch: int, reference, n_boot: int = 200, seed: int = 0) -> dict:
    """The plain loss attack on the training-style context C' (no multiple-choice probe), calibrated.

    Per query, ``L_v(M_theta) - L_v(M_ref)`` on the run's vanilla context (Tab. 3's vanilla loss);
    lower means member: :func:`iclmem.chapters.instrument.context_attack` on all of C'. Returns AUC
    with its bootstrap interval (keys ``auc``, ``lo``, ``hi``).
    """
    from .instrument import context_attack

    return context_attack(run, table, epoch, reference, 1.0, seed, n_boot)


# --- claims ---------------------------------------------------------------------------------------
#
# Each claim is a rule over a probing summary (one row per run x epoch, outcomes under one reading of
# Tab. 3). The rule runs on the build's summary and on every permuted summary of the membership null
# (:func:`iclmem.probe.null.null_summaries`): how often it says "reproduced" there is the claim's null
# rate, and the spread of its statistic there is the null range the scorecard shows.

#: The claims' null (membership permuted across each run's probed queries), as the records state it.
MEMBERSHIP_NULL = (
    "membership permuted across each run's probed queries (same scores, same M_ref, runs that probe the same "
    "queries permuted alike)"
)
#: C15's stated thresholds: a "modest" AUC(Delta S) and a "high" TPR@10% (3x the 0.10 of a random score).
LOCALIZED_MAX_AUC = 0.65
LOCALIZED_MIN_TPR10 = 0.30
#: C1's TPR condition ("AUC(Delta S) > 0.5, TPR@r% > 0.1"), read at r = 10% on the primary metric.
DETECT_MIN_TPR10 = 0.1


@dataclass(frozen=True)
class Evidence:
    """One claim's rule applied to one summary.

    ``statistic``: the number the rule reads (its null range is shown); ``agrees`` / ``contradicted``:
    the rule's answers for value rules, ``None`` for direction rules (decided against the null by
    :func:`judge`); ``testable=False``: the summary lacks what the claim needs.
    """

    statistic: float
    ours: str
    reason: str
    agrees: bool | None = None
    contradicted: bool | None = None
    interval: str | None = None
    testable: bool = True
    directions: tuple[float, ...] = ()
    points: tuple[dict, ...] = ()


def _point(label: str, paper: float, k: int, n: int) -> dict:
    """A share's point for the scorecard's figure: the paper's value, this build's and its Wilson interval."""
    lo, hi = wilson_interval(k, n)
    return {"label": label, "paper": float(paper), "build": k / n if n else math.nan, "lo": lo, "hi": hi}


def judge(
    claim_id: str,
    paper: str,
    rule: Callable[[pd.DataFrame], Evidence],
    summary: pd.DataFrame,
    null: Sequence[pd.DataFrame] | None,
    *,
    null_text: str = MEMBERSHIP_NULL,
    fmt: str = "{:.3g}",
    no_null: str | None = None,
) -> dict:
    """The record of one claim: ``rule`` on ``summary``, its null rate over the permuted summaries ``null``.

    Direction rules (``Evidence.directions``: one or more statistics that must each exceed the 95%
    quantile of their null distributions) are decided here; value rules carry their own answer.
    ``no_null``: why no membership null applies (the rule does not read membership), in place of ``null``.
    """
    ev = rule(summary)
    points = [p for p in ev.points if np.isfinite(p["build"])] or None
    if not ev.testable:
        return claim_record(claim_id, paper, ev.ours, "not testable here", ev.reason, ev.interval)
    if no_null is not None:
        verdict = evidence_verdict(ev.agrees, None, contradicted=ev.contradicted, no_null=True)
        return claim_record(
            claim_id,
            paper,
            ev.ours,
            verdict,
            ev.reason,
            ev.interval,
            null=f"no null applies: {no_null}",
            observed=fmt.format(ev.statistic),
            points=points,
        )
    draws = [rule(frame) for frame in (null or [])]
    if not draws:
        verdict = (
            "inconclusive"
            if ev.agrees or ev.directions
            else evidence_verdict(ev.agrees, None, contradicted=ev.contradicted, no_null=True)
        )
        return claim_record(
            claim_id,
            paper,
            ev.ours,
            verdict,
            ev.reason + "; no null was computed, so agreement cannot count as reproduced",
            ev.interval,
            null="not computed (n_permutations = 0)",
            observed=fmt.format(ev.statistic),
            points=points,
        )
    agrees, contradicted, null_agrees, reason = ev.agrees, ev.contradicted, [bool(d.agrees) for d in draws], ev.reason
    if ev.directions:
        per = np.array([d.directions for d in draws], dtype=float)  # (n_perm, n_directions)
        q95, q05 = np.nanquantile(per, 0.95, axis=0), np.nanquantile(per, 0.05, axis=0)
        obs = np.asarray(ev.directions, dtype=float)
        beyond = obs > q95
        agrees = bool(beyond.all()) and (ev.agrees is None or bool(ev.agrees))
        contradicted = bool((obs < q05).any()) or bool(ev.contradicted)
        null_agrees = [
            bool((row > q95).all()) and (d.agrees is None or bool(d.agrees)) for row, d in zip(per, draws, strict=True)
        ]
        reason += "; against the null: " + ", ".join(
            f"{o:+.3g} {'beyond' if b else 'within'} its 95% quantile {q:+.3g}"
            for o, b, q in zip(obs, beyond, q95, strict=True)
        )
    summary_null = summarize_null(ev.statistic, [d.statistic for d in draws], null_agrees)
    verdict = evidence_verdict(agrees, summary_null.rate, contradicted=contradicted)
    if verdict == "inconclusive" and agrees:
        reason += (
            f"; but the rule also agrees in {summary_null.rate:.0%} of null draws, so chance alone gives this verdict"
        )
    return claim_record(
        claim_id,
        paper,
        ev.ours,
        verdict,
        reason,
        ev.interval,
        null=f"{null_text}; {summary_null.n} permutations",
        observed=fmt.format(ev.statistic),
        null_range=summary_null.range_text(fmt),
        null_rate=summary_null.rate,
        points=points,
    )


def _share_by_q(summary: pd.DataFrame, outcome: str, q: int) -> tuple[int, int]:
    s = fine_tuned(summary)
    s = s[s.query_size == q]
    return int((s.outcome == outcome).sum()), int(len(s))


def _share_rule(outcomes: Sequence[str], label: str = "") -> Callable[[pd.DataFrame], Evidence]:
    """Value rule: for every outcome and Q in {50, 512}, the paper's share lies in this build's 95% Wilson interval."""

    def rule(summary: pd.DataFrame) -> Evidence:
        parts, intervals, reasons, answers, points = [], [], [], [], []
        first = math.nan
        for outcome in outcomes:
            for q in (50, 512):
                k, n = _share_by_q(summary, outcome, q)
                paper = PAPER_OUTCOME_SHARES.loc[outcome, f"Q={q}"] / 100
                value, interval = share_text(k, n)
                agrees, why = share_agreement(k, n, paper)
                name = f"{SHORT[outcome]} Q={q}" if len(outcomes) > 1 else f"Q={q}"
                parts.append(f"{name}: {value}")
                intervals.append(f"{name}: {interval}")
                reasons.append(f"{name}: {why}")
                answers.append(agrees)
                if n:
                    points.append(_point(name, paper, k, n))
                if math.isnan(first) and n:
                    first = k / n
        if all(a is None for a in answers):
            return Evidence(
                math.nan, "; ".join(parts), "the grid has no configuration at Q=50 or Q=512", testable=False
            )
        known = [a for a in answers if a is not None]
        return Evidence(
            first,
            "; ".join(parts),
            label + "; ".join(reasons),
            agrees=all(known),
            contradicted=not all(known),
            interval="; ".join(intervals),
            points=tuple(points),
        )

    return rule


def _detectable_tables(summary: pd.DataFrame) -> Evidence:
    """C1: tables with a detectable configuration (label condition N) whose TPR@10% exceeds 0.1, against the paper's
    8 of 10."""
    s = with_primary_metric(fine_tuned(summary))
    s = s[s.label_condition == "none"] if "label_condition" in s else s
    n = int(s.dataset.nunique())
    hit = s[(s.outcome == MEMORIZATION) & (s.tpr10 > DETECT_MIN_TPR10)]
    k = int(hit.dataset.nunique())
    if not n:
        return Evidence(
            math.nan,
            "no fine-tuned configuration under label condition N",
            "C1 is stated for the controlled setup (N)",
            testable=False,
        )
    value, interval = share_text(k, n)
    agrees, why = share_agreement(k, n, PAPER_DETECTABLE_TASKS[0] / PAPER_DETECTABLE_TASKS[1])
    return Evidence(
        k / n,
        f"{value} tables",
        why + f"; a table counts when one of its configurations under label condition N "
        f"(the paper's controlled setup) is detectable and has TPR@10% > {DETECT_MIN_TPR10:g} on its primary metric",
        agrees=agrees,
        contradicted=not agrees,
        interval=interval,
        points=(_point("tables", PAPER_DETECTABLE_TASKS[0] / PAPER_DETECTABLE_TASKS[1], k, n),),
    )


def _peak(summary: pd.DataFrame) -> Evidence:
    """C2: the grid's largest detectable AUC(Delta S), judged against the null distribution of that maximum."""
    det = detectable_rows(summary)
    if det.empty:
        return Evidence(
            0.5,
            "no detectable configuration",
            "no configuration was classified as detectable memorization",
            directions=(0.5,),
        )
    top = det.loc[det.auc.idxmax()]
    inside = bool(top.auc_lo <= PAPER_PEAKS["auc"] <= top.auc_hi)
    return Evidence(
        float(top.auc),
        f"{top.auc:.3f} ({top.dataset}, lr {top.learning_rate:g}, epoch {int(top.epoch)}, "
        f"Q={int(top.query_size)}, {top.label_condition}, {top.metric})",
        f"the paper's peak lies {'inside' if inside else 'outside'} the bootstrap interval of this build's peak; the "
        "peak "
        "is the largest of many configurations, so it is compared with the largest of the permuted grids",
        agrees=inside,
        contradicted=not inside,
        interval=f"[{top.auc_lo:.3f}, {top.auc_hi:.3f}]",
        directions=(float(top.auc),),
        points=(
            {
                "label": "peak AUC",
                "paper": PAPER_PEAKS["auc"],
                "build": float(top.auc),
                "lo": float(top.auc_lo),
                "hi": float(top.auc_hi),
            },
        ),
    )


def _tpr1_tables(summary: pd.DataFrame) -> Evidence:
    """C3: tables with TPR@1% > 0.1 in a detectable configuration, against the paper's 2 of 10 (a share rule)."""
    s = fine_tuned(summary)
    det = detectable_rows(summary)
    n = int(s.dataset.nunique())
    k = int(det[det.tpr1 > 0.1].dataset.nunique())
    if not n:
        return Evidence(math.nan, "no fine-tuned configuration", "the grid is empty", testable=False)
    value, interval = share_text(k, n)
    agrees, why = share_agreement(k, n, PAPER_TPR1_TASKS[0] / PAPER_TPR1_TASKS[1])
    return Evidence(
        k / n,
        f"{value} tables",
        why + "; threshold: TPR@1% > 0.1 on the primary metric of a detectable configuration",
        agrees=agrees,
        contradicted=not agrees,
        interval=interval,
        points=(_point("tables", PAPER_TPR1_TASKS[0] / PAPER_TPR1_TASKS[1], k, n),),
    )


def _collapse(summary: pd.DataFrame) -> Evidence:
    """C4: the collapse shares at Q=50 and Q=512, and collapse concentrated at lr >= 1e-2."""
    ev = _share_rule([Outcome.COLLAPSE.value])(summary)
    if not ev.testable:
        return ev
    s = fine_tuned(summary)
    coll = s.outcome == Outcome.COLLAPSE.value
    high, low = coll[s.learning_rate >= 1e-2], coll[s.learning_rate < 1e-2]
    at_high = bool(len(high) and len(low) and high.mean() > low.mean())
    return Evidence(
        ev.statistic,
        ev.ours + f"; collapse at lr >= 1e-2 {percent(high.mean() if len(high) else math.nan)}, below "
        f"{percent(low.mean() if len(low) else math.nan)}",
        ev.reason + f"; more collapse at lr >= 1e-2: {'yes' if at_high else 'no'}",
        agrees=bool(ev.agrees and at_high),
        contradicted=bool(ev.contradicted or not at_high),
        interval=ev.interval,
        points=ev.points,
    )


def _detectable_by_q(summary: pd.DataFrame) -> Evidence:
    """C6: the detectable shares at both Q, and Q=50 above Q=512 beyond what chance gives."""
    ev = _share_rule([MEMORIZATION])(summary)
    if not ev.testable:
        return ev
    k50, n50 = _share_by_q(summary, MEMORIZATION, 50)
    k512, n512 = _share_by_q(summary, MEMORIZATION, 512)
    if not (n50 and n512):
        return Evidence(ev.statistic, ev.ours, ev.reason + "; the direction needs both Q", testable=False)
    diff = k50 / n50 - k512 / n512
    return Evidence(
        ev.statistic,
        ev.ours + f"; Q=50 minus Q=512: {100 * diff:+.1f} points",
        ev.reason + f"; direction (Q=50 above Q=512): {100 * diff:+.1f} points",
        agrees=ev.agrees,
        contradicted=ev.contradicted,
        interval=ev.interval,
        directions=(diff,),
        points=ev.points,
    )


def _binary(summary: pd.DataFrame) -> Evidence:
    """C8: at Q=50, binary tables have a larger detectable share than the others, beyond what chance gives."""
    s = fine_tuned(summary)
    s = s[s.query_size == 50]
    if s.empty or "k" not in s.columns:
        return Evidence(math.nan, "no Q=50 configurations", "the grid has no Q=50 runs", testable=False)
    binary = s.k.astype(float) == 2
    if binary.all() or not binary.any():
        return Evidence(
            math.nan,
            "the grid lacks binary or non-binary tables",
            "the comparison needs both kinds of table",
            testable=False,
        )
    b, o = float((s[binary].outcome == MEMORIZATION).mean()), float((s[~binary].outcome == MEMORIZATION).mean())
    return Evidence(
        b - o,
        f"detectable share at Q=50: binary {percent(b)}, others {percent(o)}",
        f"binary minus others: {100 * (b - o):+.1f} points",
        directions=(b - o,),
    )


def _temporal(summary: pd.DataFrame) -> Evidence:
    """C9: rise (Q=50), peak and decay (Q=512) of the detectable share over the probed epochs, each against the null."""
    s = fine_tuned(summary)
    per = s.assign(det=s.outcome == MEMORIZATION).groupby(["query_size", "epoch"]).det.mean()
    qs = set(per.index.get_level_values(0))
    if 50 not in qs or 512 not in qs or per.loc[512].size < 3 or per.loc[50].size < 2:
        return Evidence(
            math.nan,
            "the grid lacks Q=50 or Q=512, or three probed epochs",
            "rise, peak and decay need both query sizes and at least three fine-tuned probing epochs",
            testable=False,
        )
    q50, q512 = per.loc[50], per.loc[512]
    text = "; ".join(
        f"Q={q}: " + ", ".join(f"ep {int(e)} {percent(v)}" for e, v in per.loc[q].items()) for q in (50, 512)
    )
    rise = float(q50.iloc[-1] - q50.iloc[0])
    middle = float(q512.iloc[1:-1].max())
    peak, decay = middle - float(q512.iloc[0]), middle - float(q512.iloc[-1])
    return Evidence(
        rise,
        text,
        f"rise (Q=50, last minus first epoch) {100 * rise:+.1f} points, peak (Q=512, best middle epoch minus "
        f"the first) {100 * peak:+.1f}, decay (Q=512, best middle minus the last) {100 * decay:+.1f}",
        directions=(rise, peak, decay),
    )


def _calibration(summary: pd.DataFrame) -> Evidence:
    """C11: the share of raw TPR@10% signals that the calibrated margin removes, against the paper's 230 of 241."""
    e = calibration_effect(summary)
    paper = PAPER_CALIBRATION["vanished"] / PAPER_CALIBRATION["raw_tpr10_signals"]
    value, interval = share_text(e["vanished"], e["raw_tpr10_signals"])
    agrees, why = share_agreement(e["vanished"], e["raw_tpr10_signals"], paper)
    if agrees is None:
        return Evidence(
            math.nan, "no raw signal", "no non-collapsed configuration has a raw TPR@10% signal", testable=False
        )
    return Evidence(
        e["vanished"] / e["raw_tpr10_signals"],
        f"{value} of raw signals vanish ({e['calibrated_signals']} remain, of {e['non_collapsed']} non-collapsed)",
        why + "; calibrated margin: Delta TPR@10% >= 0.10 (notebook 04 explains the reading)",
        agrees=agrees,
        contradicted=not agrees,
        interval=interval,
        points=(_point("vanish", paper, e["vanished"], e["raw_tpr10_signals"]),),
    )


def _localized(summary: pd.DataFrame) -> Evidence:
    """C15: a detectable configuration with a modest AUC (at most 0.65) and a high TPR@10% (at least 0.30)."""
    det = detectable_rows(summary)
    modest = det[det.auc <= LOCALIZED_MAX_AUC]
    best = float(modest.tpr10.max()) if len(modest) else 0.0
    found = best >= LOCALIZED_MIN_TPR10
    where = ""
    if len(modest):
        top = modest.loc[modest.tpr10.idxmax()]
        where = (
            f" ({top.dataset}, lr {top.learning_rate:g}, Q={int(top.query_size)}, epoch {int(top.epoch)}, "
            f"AUC {top.auc:.3f})"
        )
    return Evidence(
        best,
        f"highest TPR@10% at a detectable AUC <= {LOCALIZED_MAX_AUC:g}: {best:.2f}{where}",
        f"stated thresholds: a modest AUC(Delta S) <= {LOCALIZED_MAX_AUC:g} with TPR@10% >= {LOCALIZED_MIN_TPR10:g} "
        "(3x "
        f"chance); {'found' if found else 'not found'} among {len(det)} detectable configurations",
        agrees=found,
        contradicted=False,
    )


def outcomes_with_null(
    summary: pd.DataFrame,
    scores: Mapping[str, pd.DataFrame],
    outcome_rule: str,
    n_permutations: int,
    seed: int = 0,
    n_boot: int = 200,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(the summary with its outcomes under ``outcome_rule``, the membership null of
    :func:`iclmem.probe.null.null_summaries`).

    The reading is checked before any permutation; the null is computed from the cached scores with
    no outcome column fixed (each reading reclassifies it); ``n_permutations = 0`` gives no null.
    """
    get_reading(outcome_rule)
    null = null_summaries(summary, scores, n_permutations, seed, n_boot) if n_permutations else None
    return reclassify(summary, outcome_rule), null


def calibration_claims(
    summary: pd.DataFrame, null: pd.DataFrame | Sequence[pd.DataFrame] | None = None, reading: str = "text"
) -> list[dict]:
    """Claim records C1-C9, C11, C15, C16 from the chapter's probing summary (one row per run x epoch).

    ``null``: the membership null, as :func:`iclmem.probe.null.null_summaries` returns it or as its
    :func:`~iclmem.probe.null.permutations`. ``summary`` holds its outcomes under ``reading`` of Tab. 3
    (:func:`iclmem.outcomes.reclassify`), and so does every permuted summary (reclassified here),
    and the records name it. Without ``null`` no claim can read "reproduced" except C4 (whose rule
    does not read membership).
    """
    if isinstance(null, pd.DataFrame):
        null = permutations(reclassify(null, reading))
    which = f" (outcome rule: {reading} reading of Tab. 3)"

    paper_shares = {
        o: ", ".join(f"Q={q}: {PAPER_OUTCOME_SHARES.loc[o, f'Q={q}']:.1f}%" for q in (50, 512)) for o in OUTCOME_ORDER
    }
    records = [
        judge(
            "C1",
            f"{PAPER_DETECTABLE_TASKS[0]}/{PAPER_DETECTABLE_TASKS[1]} tasks",
            _detectable_tables,
            summary,
            null,
            fmt="{:.2f}",
        ),
        judge("C2", f"max AUC(Delta S) {PAPER_PEAKS['auc']:.3f}", _peak, summary, null, fmt="{:.3f}"),
        judge("C3", f"{PAPER_TPR1_TASKS[0]}/{PAPER_TPR1_TASKS[1]} tasks", _tpr1_tables, summary, null, fmt="{:.2f}"),
        judge(
            "C4",
            paper_shares[Outcome.COLLAPSE.value] + "; at lr >= 1e-2",
            _collapse,
            summary,
            null,
            fmt="{:.3f}",
            no_null="collapse is decided by the vanilla loss ratio of fine-tuning, which no relabelling of the probed "
            "queries changes",
        ),
        judge(
            "C5",
            paper_shares[Outcome.INVERSION.value],
            _share_rule([Outcome.INVERSION.value]),
            summary,
            null,
            fmt="{:.3f}",
        ),
        judge("C6", paper_shares[MEMORIZATION] + "; Q=50 above Q=512", _detectable_by_q, summary, null, fmt="{:.3f}"),
        judge(
            "C7",
            f"context overfitting {paper_shares[Outcome.CONTEXT_OVERFITTING.value]}; no signal "
            f"{paper_shares[Outcome.NO_SIGNAL.value]}",
            _share_rule([Outcome.CONTEXT_OVERFITTING.value, Outcome.NO_SIGNAL.value]),
            summary,
            null,
            fmt="{:.3f}",
        ),
        judge(
            "C8",
            "binary tasks most vulnerable at Q=50 (chocolate_bar 13 configs, coffee 8)",
            _binary,
            summary,
            null,
            fmt="{:+.3f}",
        ),
        judge(
            "C9",
            f"Q=50: {percent(PAPER_TEMPORAL['q50_epoch1'])} at epoch 1, {percent(PAPER_TEMPORAL['q50_epoch250'])} by "
            "epoch "
            f"250; Q=512: peak {percent(PAPER_TEMPORAL['q512_peak'])} at epoch {PAPER_TEMPORAL['q512_peak_epoch']}, "
            "then vanishes",
            _temporal,
            summary,
            null,
            fmt="{:+.3f}",
        ),
        judge(
            "C11",
            f"{PAPER_CALIBRATION['vanished']} of {PAPER_CALIBRATION['raw_tpr10_signals']} raw TPR@10% signals vanish "
            f"({percent(PAPER_CALIBRATION['vanished'] / PAPER_CALIBRATION['raw_tpr10_signals'])}), "
            f"{PAPER_CALIBRATION['calibrated_signals']} remain",
            _calibration,
            summary,
            null,
            fmt="{:.3f}",
        ),
        judge(
            "C15",
            f"beer_ratings Q=512: AUC {PAPER_LOCALIZED['auc']:.2f} but TPR@10% {PAPER_LOCALIZED['tpr10']:.2f}",
            _localized,
            summary,
            null,
            fmt="{:.2f}",
        ),
    ]
    s = fine_tuned(summary)
    records.append(
        claim_record(
            "C16",
            "high-cardinality targets need high Q/n and a target not deducible from features (clear_corpus: none)",
            f"{s[s.task == 'regression'].dataset.nunique()} high-cardinality (regression) table(s) in the grid",
            "not testable here",
            "separating query coverage from deducibility needs several high-cardinality tables that differ in both "
            "(the paper "
            "contrasts beer_ratings with clear_corpus); the book's grid cannot vary them independently",
        )
    )
    outcome_claims = {"C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C15"}
    return [{**r, "reason": r["reason"] + which} if r["id"] in outcome_claims else r for r in records]


def outcome_null_shares(
    summary: pd.DataFrame, null: pd.DataFrame, readings: Sequence[str] = ("text", "printed", "bound")
) -> pd.DataFrame:
    """Per reading, Q and outcome: the build's share of configurations and its share under the membership null.

    ``summary``: the build's summary; ``null``: :func:`iclmem.probe.null.null_summaries` without a
    reading (each reading reclassifies both). Columns reading, Q, outcome, build (%), null mean (%),
    null 95% range (%), and the build's share exceeding the null's 95% quantile.
    """
    rows = []
    for reading in readings:
        ours, theirs = fine_tuned(reclassify(summary, reading)), reclassify(null, reading)
        for q, part in ours.groupby("query_size"):
            per_perm = theirs[theirs.query_size == q].groupby("perm").outcome
            for outcome in OUTCOME_ORDER:
                shares = per_perm.apply(lambda o, outcome=outcome: float((o == outcome).mean())) * 100
                lo, hi = null_range(shares)
                build = float((part.outcome == outcome).mean()) * 100
                rows.append(
                    {
                        "reading": reading,
                        "Q": int(q),
                        "outcome": outcome,
                        "build %": round(build, 1),
                        "null mean %": round(float(shares.mean()), 1),
                        "null 95% range": f"[{lo:.1f}, {hi:.1f}]",
                        "above chance": bool(beyond_null(build, shares)),
                    }
                )
    return pd.DataFrame(rows)


def detect_share_texts(shares: pd.DataFrame) -> dict[str, str]:
    """``build_detect_<reading>_<Q>`` and ``null_detect_<reading>_<Q>`` texts of :func:`outcome_null_shares` ("-"
    where absent)."""
    out = {f"{kind}_detect_{r}_{q}": "-" for kind in ("build", "null") for r in set(shares.reading) for q in (50, 512)}
    for _, row in shares[shares.outcome == MEMORIZATION].iterrows():
        out[f"build_detect_{row.reading}_{row.Q}"] = f"{row['build %']:.0f}%"
        out[f"null_detect_{row.reading}_{row.Q}"] = f"{row['null mean %']:.0f}%"
    return out


def power_table(n_pairs: Sequence[tuple[int, int]], power: float = 0.8) -> pd.DataFrame:
    """The smallest AUC(Delta S) each detection rule finds with ``power``, at the probed member / non-member counts.

    Point rule of the text (one-sided test at 5%, what AUC > 0.5 at its best could mean) and the
    bound reading (the lower bound of a 95% interval above 0.5: one-sided 2.5%), by Hanley-McNeil
    variances, beside the paper's detectable peaks.
    """
    rows = []
    for n_m, n_n in sorted(set(n_pairs)):
        rows.append(
            {
                "members": n_m,
                "non-members": n_n,
                "smallest AUC at 80% power, one-sided 5%": min_detectable_auc(n_m, n_n, power, 0.05),
                "smallest AUC at 80% power, bound reading (2.5%)": min_detectable_auc(n_m, n_n, power, 0.025),
                "paper's detectable peaks": f"{PAPER_TABLE1.auc.min():.2f}-{PAPER_PEAKS['auc']:.2f}",
            }
        )
    return pd.DataFrame(rows)


# --- tables of the outcomes -----------------------------------------------------------------

#: Fig. 5 of the paper: % of configurations per outcome (over all 1,128 runs).
PAPER_OUTCOME_SHARES = pd.DataFrame(
    {"Q=50": [55.2, 19.3, 12.0, 5.5, 8.0], "Q=512": [50.9, 19.9, 1.8, 6.7, 20.8]}, index=list(OUTCOME_ORDER)
)


#: App. A.4: non-collapsed configurations, raw TPR@10% >= 0.10, and how many survive calibration.
PAPER_CALIBRATION = {"non_collapsed": 530, "raw_tpr10_signals": 241, "vanished": 230, "calibrated_signals": 11}


#: Tab. 1 of the paper (Q=50 except beer_ratings and bikedekho at Q=512).
PAPER_TABLE1 = pd.DataFrame(
    [
        ("buy_buy_baby", 1e-4, 10, 50, 0.61, 0.14, 0.12),
        ("chocolate_bar_ratings", 1e-3, 10, 50, 0.61, 0.18, 0.02),
        ("babies_r_us", 1e-4, 50, 50, 0.66, 0.02, 0.00),
        ("beer_ratings", 1e-4, 50, 512, 0.59, 0.49, 0.17),
        ("bikedekho", 1e-4, 10, 512, 0.58, 0.15, 0.02),
    ],
    columns=["dataset", "learning_rate", "epoch", "query_size", "auc", "tpr10", "tpr1"],
)


DETECTABLE_COLUMNS = [
    "dataset",
    "learning_rate",
    "epoch",
    "query_size",
    "label_condition",
    "metric",
    "auc",
    "auc_lo",
    "auc_hi",
    "tpr10",
    "tpr1",
]


def detectable_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Tab. 1 / Tab. 8: the peak configuration per dataset and Q among those with detectable memorization.

    AUC and TPRs belong to one metric, the one with the higher AUC (Tab. 8's "primary metric").
    """
    s = detectable_rows(summary)
    if s.empty:
        return pd.DataFrame(columns=DETECTABLE_COLUMNS)
    top = s.loc[s.groupby(["dataset", "query_size"]).auc.idxmax()]
    return top[DETECTABLE_COLUMNS].reset_index(drop=True)


def calibration_effect(
    summary: pd.DataFrame, threshold: float = 0.10, rule: str = DEFAULT_MARGIN_RULE, metric: str = "loss"
) -> dict[str, int]:
    """App. A.4: among non-collapsed configurations, raw TPR@10% >= threshold signals, and how many keep the
    calibrated margin."""
    s = fine_tuned(summary)
    s = s[~s.collapsed.astype(bool)]
    raw = (s[f"raw_tpr10_{metric}"] >= threshold).to_numpy()
    margin = calibrated_margin(
        s[f"raw_tpr10_{metric}"], s[f"ref_tpr10_{metric}"], s[f"tpr10_{metric}"], rule, threshold
    )
    calibrated = raw & margin
    return {
        "non_collapsed": int(len(s)),
        "raw_tpr10_signals": int(raw.sum()),
        "vanished": int((raw & ~calibrated).sum()),
        "calibrated_signals": int(calibrated.sum()),
    }


def outcome_shares(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5: % of configurations (run x probing epoch > 0) per outcome, by Q."""
    s = fine_tuned(summary)
    shares = pd.crosstab(s.outcome, s.query_size, normalize="columns").mul(100)
    shares.columns = [f"Q={q}" for q in shares.columns]
    return shares.reindex(list(OUTCOME_ORDER)).fillna(0.0)


def temporal_evolution(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2: % of configurations per outcome at each probing epoch, by Q (long format)."""
    s = fine_tuned(summary)
    shares = (
        s.groupby(["query_size", "epoch"]).outcome.value_counts(normalize=True).mul(100).rename("percent").reset_index()
    )
    full = pd.MultiIndex.from_product(
        [sorted(s.query_size.unique()), sorted(s.epoch.unique()), list(OUTCOME_ORDER)],
        names=["query_size", "epoch", "outcome"],
    )
    return shares.set_index(["query_size", "epoch", "outcome"]).reindex(full, fill_value=0.0).reset_index()


def data_characteristics(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 6 / Tab. 9: per dataset k, alpha and which Q showed detectable memorization."""
    s = fine_tuned(summary)
    mem = s[s.outcome == Outcome.MEMORIZATION.value]
    rows = []
    for name, part in s.groupby("dataset"):
        qs = set(mem.loc[mem.dataset == name, "query_size"])
        all_q = set(part.query_size)
        category = (
            "No signal"
            if not qs
            else "Both Q"
            if qs == all_q and len(all_q) > 1
            else " & ".join(f"Q={q} only" for q in sorted(qs))
        )
        counts = {
            f"detectable runs Q={q}": int(mem[(mem.dataset == name) & (mem.query_size == q)].run_key.nunique())
            for q in sorted(all_q)
        }
        rows.append(
            {
                "dataset": name,
                "task": part.task.iloc[0],
                "k": int(part.k.iloc[0]),
                "alpha": float(part.alpha.iloc[0]),
                "category": category,
                **counts,
            }
        )
    return pd.DataFrame(rows)


# --- figures ----------------------------------------------------------------------------------

OUTCOME_COLORS = {
    "representational_collapse": "#7f7f7f",
    "loss_inversion": "#ff7f0e",
    "detectable_memorization": "#d62728",
    "context_overfitting": "#1f77b4",
    "no_signal": "#bcbd22",
}


def plot_outcome_shares(ours: pd.DataFrame, paper: pd.DataFrame) -> plt.Figure:
    """Fig. 5: % of configurations per outcome, ours beside the paper's, by Q."""
    data = pd.concat([ours.assign(source="iclmem"), paper.assign(source="paper")]).rename_axis("outcome").reset_index()
    long = data.melt(id_vars=["outcome", "source"], var_name="Q", value_name="percent")
    g = sns.catplot(
        data=long,
        y="outcome",
        x="percent",
        hue="source",
        col="Q",
        kind="bar",
        height=3,
        aspect=1.3,
        order=list(paper.index),
    )
    g.set_axis_labels("% of configurations", "")
    return g.figure


def plot_temporal_evolution(temporal: pd.DataFrame) -> sns.FacetGrid:
    """Fig. 2: % of configurations per outcome across fine-tuning epochs, one panel per Q."""
    g = sns.relplot(
        data=temporal,
        x="epoch",
        y="percent",
        hue="outcome",
        col="query_size",
        kind="line",
        marker="o",
        palette=OUTCOME_COLORS,
        height=3,
        aspect=1.3,
    )
    for ax in g.axes.flat:
        ax.set_xscale("log")
    g.set_axis_labels("fine-tuning epoch", "% of configurations")
    return g


def plot_data_characteristics(chars: pd.DataFrame) -> plt.Figure:
    """Fig. 6: datasets by target cardinality k and majority-class frequency alpha, coloured by signal."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    sns.scatterplot(data=chars, x="k", y="alpha", hue="category", s=80, ax=ax)
    for _, row in chars.iterrows():
        ax.annotate(row.dataset, (row.k, row.alpha), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("number of target classes k (distinct target values)")
    ax.set_ylabel(r"majority class frequency $\alpha$")
    return fig


__all__ = [
    "shuffled_label_check",
    "exhaustive_table",
    "negative_control",
    "positive_control",
    "vanilla_attack",
    "calibration_claims",
    "Evidence",
    "judge",
    "MEMBERSHIP_NULL",
    "LOCALIZED_MAX_AUC",
    "LOCALIZED_MIN_TPR10",
    "DETECT_MIN_TPR10",
    "outcome_null_shares",
    "detect_share_texts",
    "power_table",
    "outcomes_with_null",
    "fit_printed_reading",
    "reading_agreement",
    "MARGIN_RULES",
    "null_margin_rates",
    "PAPER_DETECTABLE_TASKS",
    "PAPER_TPR1_TASKS",
    "PAPER_TEMPORAL",
    "PAPER_LOCALIZED",
    "PAPER_OUTCOME_SHARES",
    "PAPER_CALIBRATION",
    "PAPER_TABLE1",
    "DETECTABLE_COLUMNS",
    "OUTCOME_COLORS",
    "detectable_table",
    "calibration_effect",
    "outcome_shares",
    "temporal_evolution",
    "data_characteristics",
    "plot_outcome_shares",
    "plot_temporal_evolution",
    "plot_data_characteristics",
]
