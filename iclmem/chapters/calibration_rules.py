"""Paper 1, Sec. 5, Sec. 6, App. A.4, App. B.3 (Tab. 1, Fig. 2, Fig. 5): the rules of claims C1-C9, C11, C15, C16 and
their records for the scorecard (notebook 04).

The paper's values each claim is read against, one rule per claim over a probing summary (each returns an
:class:`~iclmem.chapters.calibration_judge.Evidence`), and :func:`calibration_claims`, which judges them all against
the membership null (:func:`~iclmem.chapters.calibration_judge.judge`). Re-exported by
:mod:`iclmem.chapters.calibration`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pandas as pd

from ..outcomes import OUTCOME_ORDER, SHORT, Outcome, reclassify, with_primary_metric
from ..probe.null import permutations
from .calibration_judge import Evidence, _point, judge
from .calibration_tables import MEMORIZATION, PAPER_CALIBRATION, PAPER_OUTCOME_SHARES, calibration_effect
from .claims import claim_record
from .probing import PAPER_PEAKS, detectable_rows, fine_tuned
from .verdicts import percent, share_agreement, share_text

#: C1 and C3 (Sec. 5, Sec. 6): tasks with detectable memorization / with TPR@1% > 0.1, of the 10 evaluated.
PAPER_DETECTABLE_TASKS = (8, 10)
PAPER_TPR1_TASKS = (2, 10)
#: C9 (Sec. 5, Fig. 2): share of Q=50 configurations with detectable memorization at epoch 1 and by epoch 250;
#: Q=512 peaks at epoch 50 with 5.5% and vanishes after.
PAPER_TEMPORAL = {"q50_epoch1": 0.042, "q50_epoch250": 0.20, "q512_peak": 0.055, "q512_peak_epoch": 50}
#: C15 (Sec. 5, App. B.3): beer_ratings at Q=512, AUC 0.59 but TPR@10% 0.49.
PAPER_LOCALIZED = {"auc": 0.59, "tpr10": 0.49}
#: C15's stated thresholds: a "modest" AUC(Delta S) and a "high" TPR@10% (3x the 0.10 of a random score).
LOCALIZED_MAX_AUC = 0.65
LOCALIZED_MIN_TPR10 = 0.30
#: C1's TPR condition ("AUC(Delta S) > 0.5, TPR@r% > 0.1"), read at r = 10% on the primary metric.
DETECT_MIN_TPR10 = 0.1


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
