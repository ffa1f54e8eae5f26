"""Paper 1, Sec. 4.2, Sec. 5, Sec. 6, App. A.4, App. B.3 (Tab. 1, Tab. 3, Fig. 2, Fig. 5): the rule of every claim
notebook 04 records, C1-C9, C11, C15, C16, and their records for the scorecard (the instrument rows P1-P3 are
appendix A6's, :mod:`iclmem.chapters.ch_a6_instrument.claims`).

Where each claim's rule is (each membership-null rule reads a stack of summaries, :class:`.nulls.SummaryStack`, and
returns one :class:`~iclmem.chapters.ch04_calibration.evidence.Evidence` per draw, which
:func:`~iclmem.chapters.ch04_calibration.evidence.judge` reads: draw 0 is the build's summary, draws 1..n the
membership null's; :data:`RULES` maps each claim to its rule):

* C1 :func:`detectable_tables`, C2 :func:`_peak`, C3 :func:`tpr1_tables`, C4 :func:`collapse_claim`, C5 and C7
  :func:`_share_rule`, C6 :func:`_detectable_by_q`, C8 :func:`binary_claim`, C9 :func:`_temporal`, C11
  :func:`calibration_claim` (rule :func:`_calibration`), C15 :func:`_localized`, C16 :func:`c16_record`; their paper
  values and records: :func:`_outcome_records`, all of them: :func:`calibration_claims`.

The paper's values are :mod:`.paper`; the stacks, and the membership null they hold, are :mod:`.nulls`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from iclmem.chapters.ch03_probing.probing import PAPER_PEAKS
from iclmem.chapters.ch04_calibration.evidence import (
    MEMBERSHIP_NULL,
    Evidence,
    JudgeOptions,
    judge,
    share_point,
)
from iclmem.chapters.ch04_calibration.nulls import (
    SummaryStack,
    cluster_intervals,
    on_stacks,
    on_summary,
    row_clusters,
    stacks_of,
    stacks_with_null,
)
from iclmem.chapters.ch04_calibration.paper import (
    DETECT_MIN_TPR10,
    LOCALIZED_MAX_AUC,
    LOCALIZED_MIN_TPR10,
    PAPER_CALIBRATION,
    PAPER_DETECTABLE_TASKS,
    PAPER_LOCALIZED,
    PAPER_OUTCOME_SHARES,
    PAPER_TEMPORAL,
    PAPER_TPR1_TASKS,
)
from iclmem.chapters.ch04_calibration.tables import MEMORIZATION, calibration_counts
from iclmem.probe.summary import MEMBERSHIP_CONDITIONS, fine_tuned, membership_rows
from iclmem.report.records import claim_record
from iclmem.report.verdicts import (
    WILSON_Z,
    cluster_share_reason,
    evidence_verdict,
    percent,
    share_agreement,
    share_text,
    summarize_null,
)
from iclmem.stats.intervals import wilson
from iclmem.stats.outcomes import OUTCOME_ORDER, SHORT, Outcome, reclassify

#: Draws of the nulls this module draws itself (C4's learning-rate permutation, C8's table-type permutation).
RULE_DRAWS = 1000
#: C8's smallest number of tables in each group (binary, other) for a permutation of the binary label across tables.
MIN_TABLES_PER_GROUP = 3


# --- The outcome claims C1-C9, C11, C15, C16 (Sec. 5, Sec. 6, App. A.4, App. B.3), one rule each ----------------
#
# Every membership-null rule is written once, over a stack of summaries (:class:`.nulls.SummaryStack`, the fine-tuned
# rows every draw shares), and returns one Evidence per draw: on ``[build, *null]`` draw 0 is the build's evidence
# (the verdict) and draws 1..n the null's (the null rate), :func:`calibration_claims`.

#: A claim's rule: one :class:`~iclmem.chapters.ch04_calibration.evidence.Evidence` per draw of a stack.
Rule = Callable[[SummaryStack], list[Evidence]]


def _untestable(stack: SummaryStack, ours: str, reason: str) -> list[Evidence]:
    """Every draw of ``stack`` untestable: its rows lack what the claim needs."""
    return [Evidence(math.nan, ours, reason, testable=False)] * stack.draws


def _first_max(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Per draw, the first row holding the largest of ``values`` among the ``valid`` rows (as pandas' idxmax; 0 where
    no row is valid: read ``valid`` there)."""
    if not values.shape[1]:
        return np.zeros(values.shape[0], dtype=int)
    return np.argmax(np.where(valid, values, -np.inf), axis=1)


def _share_slots(stack: SummaryStack, outcomes: Sequence[str]) -> list[tuple]:
    """Per outcome and Q in {50, 512}: (name, the paper's share, the rows' flags (draws x rows at Q), each draw's 95%
    interval over runs (lo, hi), the runs)."""
    slots = []
    for outcome in outcomes:
        for q in (50, 512):
            at = (stack.rows.query_size == q).to_numpy()
            flags, clusters = stack.outcome[:, at] == outcome, row_clusters(stack.rows[at])
            none = np.full(stack.draws, math.nan)
            lo, hi = cluster_intervals(flags, clusters) if at.any() else (none, none)
            name = f"{SHORT[outcome]} Q={q}" if len(outcomes) > 1 else f"Q={q}"
            paper = PAPER_OUTCOME_SHARES.loc[outcome, f"Q={q}"] / 100
            slots.append((name, paper, flags, lo, hi, len(set(clusters))))
    return slots


def _share_evidence(slots: list[tuple], draw: int) -> Evidence:
    """A share rule's evidence on one draw of its :func:`_share_slots`."""
    parts, intervals, reasons, answers, points = [], [], [], [], []
    first = math.nan
    for name, paper, flags, lo_all, hi_all, units in slots:
        f, lo, hi = flags[draw], float(lo_all[draw]), float(hi_all[draw])
        k, n = int(f.sum()), len(f)
        parts.append(f"{name}: {k}/{n} = {percent(k / n if n else math.nan)}")
        intervals.append(f"{name}: [{percent(lo)}, {percent(hi)}]")
        if not n:
            reasons.append(f"{name}: no configuration of this kind in the build's grid")
            answers.append(None)
            continue
        reasons.append(f"{name}: " + cluster_share_reason(paper, lo, hi, units, n))
        answers.append(bool(lo <= paper <= hi))
        points.append({"label": name, "paper": float(paper), "build": float(f.mean()), "lo": lo, "hi": hi})
        if math.isnan(first):
            first = k / n
    if all(a is None for a in answers):
        return Evidence(math.nan, "; ".join(parts), "the grid has no configuration at Q=50 or Q=512", testable=False)
    known = [a for a in answers if a is not None]
    return Evidence(
        first,
        "; ".join(parts),
        "; ".join(reasons),
        agrees=all(known),
        contradicted=not all(known),
        interval="; ".join(intervals),
        points=tuple(points),
    )


def _share_rule(outcomes: Sequence[str]) -> Rule:
    """Value rule (C4's shares, C5, C6's shares, C7): for every outcome and Q in {50, 512}, the paper's share lies in
    this build's 95% interval, a bootstrap over runs (the probed epochs of one run are one unit, not independent
    rows)."""

    def rule(stack: SummaryStack) -> list[Evidence]:
        slots = _share_slots(stack, outcomes)
        return [_share_evidence(slots, draw) for draw in range(stack.draws)]

    return rule


def _tables_with(stack: SummaryStack, keep: np.ndarray, hit: np.ndarray) -> tuple[int, np.ndarray]:
    """(the tables of the rows ``keep``, per draw the tables with a ``hit`` among those rows)."""
    codes, tables = pd.factorize(stack.rows.dataset[keep])
    onehot = np.zeros((len(codes), len(tables)))
    onehot[np.flatnonzero(codes >= 0), codes[codes >= 0]] = 1.0
    return len(tables), ((hit[:, keep].astype(float) @ onehot) > 0).sum(axis=1)


def _tables_evidence(hits: np.ndarray, n: int, paper: float, what: str) -> list[Evidence]:
    """A count of tables (C1, C3) on every draw: ``hits`` of ``n`` tables, the paper's share inside its Wilson
    interval."""

    def one(k: int) -> Evidence:
        value, interval = share_text(k, n)
        agrees, why = share_agreement(k, n, paper)
        return Evidence(
            k / n,
            f"{value} tables",
            why + what,
            agrees=agrees,
            contradicted=not agrees,
            interval=interval,
            points=(share_point("tables", paper, k, n),),
        )

    made = {k: one(k) for k in {int(k) for k in hits}}
    return [made[int(k)] for k in hits]


def c1_hits(stack: SummaryStack) -> tuple[np.ndarray, np.ndarray]:
    """(the rows C1 reads: label condition N; per draw x row, its hits: detectable with TPR@10% > 0.1)."""
    rows = stack.rows
    keep = (rows.label_condition == "none").to_numpy() if "label_condition" in rows else np.ones(len(rows), bool)
    return keep, (stack.outcome == MEMORIZATION) & (stack.primary("tpr10") > DETECT_MIN_TPR10)


def c3_hits(stack: SummaryStack) -> tuple[np.ndarray, np.ndarray]:
    """(the rows C3 reads: every one; per draw x row, its hits: detectable with TPR@1% > 0.1)."""
    return np.ones(len(stack.rows), bool), (stack.outcome == MEMORIZATION) & (stack.primary("tpr1") > 0.1)


def detectable_tables(stack: SummaryStack) -> list[Evidence]:
    """C1 (Sec. 5): tables with a detectable configuration (label condition N) whose TPR@10% exceeds 0.1, against the
    paper's 8 of 10."""
    n, hits = _tables_with(stack, *c1_hits(stack))
    if not n:
        return _untestable(
            stack,
            "no fine-tuned configuration under label condition N",
            "C1 is stated for the controlled setup (N)",
        )
    what = (
        f"; a table counts when one of its configurations under label condition N "
        f"(the paper's controlled setup) is detectable and has TPR@10% > {DETECT_MIN_TPR10:g} on its primary metric"
    )
    return _tables_evidence(hits, n, PAPER_DETECTABLE_TASKS[0] / PAPER_DETECTABLE_TASKS[1], what)


def _peak_at(row: pd.Series, auc: float, lo: float, hi: float, metric: str) -> Evidence:
    """C2's evidence on one draw whose largest detectable AUC(Delta S) is ``auc`` [``lo``, ``hi``] at ``row``."""
    inside = bool(lo <= PAPER_PEAKS["auc"] <= hi)
    return Evidence(
        auc,
        f"{auc:.3f} ({row.dataset}, lr {row.learning_rate:g}, epoch {int(row.epoch)}, "
        f"Q={int(row.query_size)}, {row.label_condition}, {metric})",
        f"the paper's peak lies {'inside' if inside else 'outside'} the bootstrap interval of this build's peak; the "
        "peak is the largest of many configurations, so it is compared with the largest of the permuted grids",
        agrees=inside,
        contradicted=not inside,
        interval=f"[{lo:.3f}, {hi:.3f}]",
        directions=(auc,),
        points=({"label": "peak AUC", "paper": PAPER_PEAKS["auc"], "build": auc, "lo": lo, "hi": hi},),
    )


def _peak(stack: SummaryStack) -> list[Evidence]:
    """C2 (Sec. 5, Tab. 1): the grid's largest detectable AUC(Delta S), judged against the null distribution of that
    maximum (a detectable row without an AUC is skipped; none with one: not testable)."""
    auc, lo, hi = (stack.primary(c) for c in ("auc", "auc_lo", "auc_hi"))
    detectable = stack.outcome == MEMORIZATION
    valid = detectable & ~np.isnan(auc)
    entropy = stack.entropy()
    out = []
    for draw, i in enumerate(_first_max(auc, valid)):
        if not detectable[draw].any():
            out.append(
                Evidence(
                    0.5,
                    "no detectable configuration",
                    "no configuration was classified as detectable memorization",
                    directions=(0.5,),
                )
            )
        elif not valid[draw, i]:
            out.append(
                Evidence(
                    math.nan,
                    "no detectable configuration has an AUC",
                    "the peak needs an AUC(Delta S)",
                    testable=False,
                    directions=(math.nan,),
                )
            )
        else:
            metric = "entropy" if entropy[draw, i] else "loss"
            out.append(_peak_at(stack.rows.iloc[i], *(float(a[draw, i]) for a in (auc, lo, hi)), metric))
    return out


def tpr1_tables(stack: SummaryStack) -> list[Evidence]:
    """C3 (Sec. 5): tables with TPR@1% > 0.1 in a detectable configuration, against the paper's 2 of 10 (a share
    rule)."""
    n, hits = _tables_with(stack, *c3_hits(stack))
    if not n:
        return _untestable(stack, "no fine-tuned configuration", "the grid is empty")
    what = "; threshold: TPR@1% > 0.1 on the primary metric of a detectable configuration"
    return _tables_evidence(hits, n, PAPER_TPR1_TASKS[0] / PAPER_TPR1_TASKS[1], what)


def _collapse_contrast(s: pd.DataFrame, high: np.ndarray) -> float:
    """Collapse share at lr >= 1e-2 minus below, over rows, for a row mask ``high``."""
    coll = (s.outcome == Outcome.COLLAPSE.value).to_numpy()
    if not high.any() or high.all():
        return math.nan
    return float(coll[high].mean() - coll[~high].mean())


def lr_permuted_contrasts(summary: pd.DataFrame, n_perm: int = RULE_DRAWS, seed: int = 0) -> np.ndarray:
    """C4's null: the collapse contrast (lr >= 1e-2 minus below) with learning rates permuted across the runs of each
    (table, Q, label condition), a run's epochs moving together; ``(n_perm,)``, vectorized over draws."""
    s = fine_tuned(summary)
    per_run = (
        s.assign(coll=(s.outcome == Outcome.COLLAPSE.value).astype(float))
        .groupby("run_key", sort=True)
        .agg(
            coll=("coll", "sum"),
            rows=("coll", "size"),
            high=("learning_rate", lambda v: float(v.iloc[0]) >= 1e-2),
            dataset=("dataset", "first"),
            query_size=("query_size", "first"),
            label_condition=("label_condition", "first"),
        )
    )
    rng = np.random.default_rng(seed)
    high = np.zeros((n_perm, len(per_run)), dtype=bool)
    for _, idx in per_run.reset_index().groupby(["dataset", "query_size", "label_condition"], sort=True).groups.items():
        idx = np.asarray(idx)
        order = np.argsort(rng.random((n_perm, len(idx))), axis=1)  # one permutation of the group's runs per draw
        high[:, idx] = per_run.high.to_numpy(bool)[idx][order]
    coll, rows = per_run.coll.to_numpy(float), per_run.rows.to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        up = (high * coll).sum(axis=1) / (high * rows).sum(axis=1)
        down = (~high * coll).sum(axis=1) / (~high * rows).sum(axis=1)
    return up - down


def collapse_most_frequent_support(summary: pd.DataFrame, n_boot: int = RULE_DRAWS, seed: int = 0) -> float:
    """Share of bootstrap draws over runs in which collapse is the most frequent outcome (ties count half)."""
    s = fine_tuned(summary)
    codes, runs = pd.factorize(s.run_key)
    counts = pd.crosstab(codes, s.outcome).reindex(columns=list(OUTCOME_ORDER), fill_value=0).to_numpy(float)
    pick = np.random.default_rng(seed).integers(0, len(runs), (n_boot, len(runs)))
    totals = counts[pick].sum(axis=1)  # (n_boot, outcomes)
    c = list(OUTCOME_ORDER).index(Outcome.COLLAPSE.value)
    top = totals.max(axis=1)
    is_top = totals[:, c] == top
    ties = (totals == top[:, None]).sum(axis=1)
    return float(np.mean(np.where(is_top, 1.0 / ties, 0.0)))


def collapse_claim(summary: pd.DataFrame, paper: str, n_perm: int = RULE_DRAWS, seed: int = 0) -> dict:
    """C4 (Sec. 5, Fig. 5): collapse shares at both Q (intervals over runs), collapse the most frequent outcome
    (bootstrap over runs), and more collapse at lr >= 1e-2 than below (against learning rates permuted across runs).

    Collapse is decided by the vanilla loss ratio of fine-tuning, which no relabelling of the probed queries changes,
    so the null here is over learning rates: under it, the shares and the most-frequent test are unchanged and the
    contrast is what any assignment of learning rates to the same runs gives.
    """
    ev = on_summary(_share_rule([Outcome.COLLAPSE.value]), summary)
    if not ev.testable:
        return claim_record("C4", paper, ev.ours, "not testable here", ev.reason, ev.interval)
    s = fine_tuned(summary)
    high = (s.learning_rate >= 1e-2).to_numpy()
    contrast = _collapse_contrast(s, high)
    support = collapse_most_frequent_support(summary, seed=seed)
    null = lr_permuted_contrasts(summary, n_perm, seed)
    finite = null[np.isfinite(null)]
    if not np.isfinite(contrast) or not len(finite):
        return claim_record(
            "C4",
            paper,
            ev.ours,
            "not testable here",
            ev.reason + "; the grid lacks runs on one side of lr 1e-2",
            ev.interval,
        )
    q95, q05 = float(np.quantile(finite, 0.95)), float(np.quantile(finite, 0.05))
    beyond, below = contrast > q95, contrast < q05
    # compared by direction (iclmem.report.registry.COMPARISON, issue 53): collapse rises with the learning rate.
    # The shares and "the most frequent" measure how fragile ConTextTab is; they are shown beside the paper's, not
    # judged, since a 0.2M-parameter model collapses on its own scale.
    agrees, contradicted = bool(beyond), bool(below)
    null_rate = float(np.mean(finite > q95))
    verdict = evidence_verdict(agrees, null_rate, contradicted=contradicted)
    coll = s.outcome == Outcome.COLLAPSE.value
    return claim_record(
        "C4",
        paper,
        ev.ours + f"; collapse at lr >= 1e-2 {percent(float(coll[high].mean()))}, below "
        f"{percent(float(coll[~high].mean()))}",
        verdict,
        f"the verdict reads the direction: lr >= 1e-2 minus below {100 * contrast:+.1f} points, "
        f"{'beyond' if beyond else 'below' if below else 'within'} the 95% range of its learning-rate null "
        f"[{100 * q05:+.1f}, {100 * q95:+.1f}]; shown, not judged (values on ConTextTab's scale): "
        + ev.reason
        + f"; collapse is the most frequent outcome in {support:.0%} of bootstrap draws over runs",
        ev.interval,
        null=f"learning rates permuted across the runs of each table, Q and label condition ({len(finite)} "
        "permutations); collapse itself reads no membership",
        observed=f"{100 * contrast:+.1f} points",
        null_range=f"[{100 * q05:+.1f}, {100 * q95:+.1f}] points over {len(finite)} permutations",
        null_rate=null_rate,
        null_draws=len(finite),
        points=[p for p in ev.points if np.isfinite(p["build"])] or None,
    )


def _detectable_by_q(stack: SummaryStack) -> list[Evidence]:
    """C6 (Sec. 5, Fig. 5): the detectable shares at both Q, and Q=50 above Q=512 beyond what chance gives."""
    at = {q: (stack.rows.query_size == q).to_numpy() for q in (50, 512)}
    n50, n512 = int(at[50].sum()), int(at[512].sum())
    k50, k512 = ((stack.outcome[:, at[q]] == MEMORIZATION).sum(axis=1) for q in (50, 512))
    out = []
    for draw, ev in enumerate(_share_rule([MEMORIZATION])(stack)):
        if not ev.testable:
            out.append(ev)
            continue
        if not (n50 and n512):
            out.append(Evidence(ev.statistic, ev.ours, ev.reason + "; the direction needs both Q", testable=False))
            continue
        diff = int(k50[draw]) / n50 - int(k512[draw]) / n512
        out.append(
            Evidence(
                ev.statistic,
                ev.ours + f"; Q=50 minus Q=512: {100 * diff:+.1f} points",
                ev.reason + f"; direction (Q=50 above Q=512): {100 * diff:+.1f} points",
                agrees=ev.agrees,
                contradicted=ev.contradicted,
                interval=ev.interval,
                directions=(diff,),
                points=ev.points,
            )
        )
    return out


def _table_shares(summary: pd.DataFrame) -> pd.DataFrame:
    """Per table at Q=50 (N and All rows): its detectable share over run x epoch rows and whether it is binary."""
    s = fine_tuned(membership_rows(summary))
    s = s[s.query_size == 50]
    if s.empty or "k" not in s.columns:
        return pd.DataFrame(columns=["dataset", "share", "binary"])
    return (
        s.assign(det=s.outcome == MEMORIZATION, binary=s.k.astype(float) == 2)
        .groupby("dataset", sort=True)
        .agg(share=("det", "mean"), binary=("binary", "first"))
        .reset_index()
    )


def binary_claim(summary: pd.DataFrame, paper: str, n_perm: int = RULE_DRAWS, seed: int = 0) -> dict:
    """C8 (Sec. 5): at Q=50, binary tables have a larger detectable share than the others.

    The unit is the table (its runs share its data): the statistic is the mean detectable share of the binary tables
    minus that of the others, against the binary label permuted across tables. With fewer than
    :data:`MIN_TABLES_PER_GROUP` tables in a group the permutation cannot reach 5% and one table of each kind
    confounds the table, its task and "binary": not testable here, structurally.
    """
    t = _table_shares(summary)
    n_b, n_o = int(t.binary.sum()), int((~t.binary.astype(bool)).sum()) if len(t) else 0
    if n_b < MIN_TABLES_PER_GROUP or n_o < MIN_TABLES_PER_GROUP:
        return claim_record(
            "C8",
            paper,
            f"{n_b} binary and {n_o} other table(s) at Q=50"
            + (
                f" (detectable share: binary {percent(float(t[t.binary].share.mean()))}, others "
                f"{percent(float(t[~t.binary].share.mean()))})"
                if n_b and n_o
                else ""
            ),
            "not testable here",
            f"structural at {n_b} + {n_o} tables: the claim compares kinds of table, so a table is the unit; it needs "
            f"at least {MIN_TABLES_PER_GROUP} binary and {MIN_TABLES_PER_GROUP} other tables (with the binary label "
            f"permuted across tables, {MIN_TABLES_PER_GROUP} + {MIN_TABLES_PER_GROUP} give 20 assignments, the fewest "
            "for a 5% test); with fewer, one table's task and data are confounded with 'binary'",
        )
    binary = t.binary.to_numpy(bool)
    share = t.share.to_numpy(float)
    observed = float(share[binary].mean() - share[~binary].mean())
    rng = np.random.default_rng(seed)
    draws = np.array([(lambda b: share[b].mean() - share[~b].mean())(rng.permutation(binary)) for _ in range(n_perm)])
    q95, q05 = float(np.quantile(draws, 0.95)), float(np.quantile(draws, 0.05))
    agrees, contradicted = observed > q95, observed < q05
    rate = float(np.mean(draws > q95))
    return claim_record(
        "C8",
        paper,
        f"detectable share at Q=50: binary {percent(float(share[binary].mean()))} ({n_b} tables), others "
        f"{percent(float(share[~binary].mean()))} ({n_o} tables)",
        evidence_verdict(bool(agrees), rate, contradicted=bool(contradicted)),
        f"binary minus others {100 * observed:+.1f} points, {'beyond' if agrees else 'within'} the 95% quantile "
        f"{100 * q95:+.1f} of the binary label permuted across tables",
        null=f"the binary label permuted across the {len(t)} tables (label conditions N and All, Q=50)",
        observed=f"{100 * observed:+.1f} points",
        null_range=f"[{100 * q05:+.1f}, {100 * q95:+.1f}] points over {n_perm} permutations",
        null_rate=rate,
        null_draws=n_perm,
    )


def _temporal(stack: SummaryStack) -> list[Evidence]:
    """C9 (Sec. 5, Fig. 2): rise (Q=50), peak and decay (Q=512) of the detectable share over the probed epochs, each
    against the null."""
    rows = stack.rows
    cells = sorted(set(zip(rows.query_size.tolist(), rows.epoch.tolist(), strict=True)))
    epochs = {q: [e for g, e in cells if g == q] for q in (50, 512)}
    if len(epochs[512]) < 3 or len(epochs[50]) < 2:
        return _untestable(
            stack,
            "the grid lacks Q=50 or Q=512, or three probed epochs",
            "rise, peak and decay need both query sizes and at least three fine-tuned probing epochs",
        )
    detectable = stack.outcome == MEMORIZATION

    def share(q: int, e: int) -> np.ndarray:
        at = ((rows.query_size == q) & (rows.epoch == e)).to_numpy()
        return detectable[:, at].sum(axis=1) / int(at.sum())

    shares = {q: [share(q, e) for e in epochs[q]] for q in (50, 512)}
    rise = shares[50][-1] - shares[50][0]
    middle = np.max(shares[512][1:-1], axis=0)
    peak, decay = middle - shares[512][0], middle - shares[512][-1]
    out = []
    for draw in range(stack.draws):
        text = "; ".join(
            f"Q={q}: " + ", ".join(f"ep {int(e)} {percent(v[draw])}" for e, v in zip(epochs[q], shares[q], strict=True))
            for q in (50, 512)
        )
        r, p, d = float(rise[draw]), float(peak[draw]), float(decay[draw])
        out.append(
            Evidence(
                r,
                text,
                f"rise (Q=50, last minus first epoch) {100 * r:+.1f} points, peak (Q=512, best middle epoch minus "
                f"the first) {100 * p:+.1f}, decay (Q=512, best middle minus the last) {100 * d:+.1f}",
                directions=(r, p, d),
            )
        )
    return out


def _calibration(stack: SummaryStack) -> list[Evidence]:
    """C11's statistic (App. A.4): the share of raw TPR@10% signals that the calibrated margin removes (paper: 230 of
    241), from :func:`~.tables.calibration_counts` as the chapter's table shows them."""
    num = stack.numbers
    if stack.collapsed is None:
        raise ValueError("C11 reads the summary's collapsed column (App. A.4 counts the non-collapsed configurations)")
    counts = calibration_counts(num["raw_tpr10_loss"], num["ref_tpr10_loss"], num["tpr10_loss"], ~stack.collapsed)
    paper = PAPER_CALIBRATION["vanished"] / PAPER_CALIBRATION["raw_tpr10_signals"]
    out = []
    for draw in range(stack.draws):
        e = {key: int(value[draw]) for key, value in counts.items()}
        value, interval = share_text(e["vanished"], e["raw_tpr10_signals"])
        agrees, why = share_agreement(e["vanished"], e["raw_tpr10_signals"], paper)
        if agrees is None:
            out.append(
                Evidence(
                    math.nan, "no raw signal", "no non-collapsed configuration has a raw TPR@10% signal", testable=False
                )
            )
            continue
        out.append(
            Evidence(
                e["vanished"] / e["raw_tpr10_signals"],
                f"{value} of raw signals vanish ({e['calibrated_signals']} remain, of {e['non_collapsed']} "
                "non-collapsed)",
                why + "; calibrated margin: Delta TPR@10% >= 0.10 (notebook 04 explains the reading)",
                agrees=agrees,
                contradicted=not agrees,
                interval=interval,
                points=(share_point("vanish", paper, e["vanished"], e["raw_tpr10_signals"]),),
            )
        )
    return out


def calibration_claim(evidence: Sequence[Evidence], paper: str) -> dict:
    """C11 (App. A.4): computed and shown, but *not testable here* against a membership null.

    ``evidence``: :func:`_calibration` on the build's summary (element 0) and on each permuted summary (1..n).
    C11 says that most raw TPR@10% signals are difficulty artifacts, i.e. not membership. Permuting membership
    makes every raw signal an artifact, so the null agrees with the claim by design: its rule's null rate is high
    exactly when the paper is right, and no rule on this statistic can read "reproduced" under this null. Testing C11
    needs a known artifact to remove (pools that differ in difficulty, which a distribution-matched split, C14, rules
    out), not a permutation of membership. The record still carries the build's value and the null's.
    """
    ev = evidence[0]
    if not ev.testable:
        return claim_record("C11", paper, ev.ours, "not testable here", ev.reason, ev.interval)
    draws = [d for d in evidence[1:] if d.testable]
    fields: dict = {}
    if draws:
        summary_null = summarize_null(ev.statistic, [d.statistic for d in draws], [bool(d.agrees) for d in draws])
        fields = dict(
            null=f"{MEMBERSHIP_NULL}; {summary_null.n} permutations: under it every raw signal is an artifact, "
            "which is the claim",
            observed=f"{ev.statistic:.3f}",
            null_range=summary_null.range_text("{:.3f}"),
            null_rate=summary_null.rate,
            null_draws=summary_null.n,
        )
    return claim_record(
        "C11",
        paper,
        ev.ours,
        "not testable here",
        ev.reason + "; structural: the membership null makes every raw signal an artifact, which is what C11 states, "
        "so the null agrees with the claim by design and no result can read reproduced against it; a test needs pools "
        "that differ in difficulty (a known artifact for calibration to remove), which the distribution-matched split "
        "(C14) rules out",
        ev.interval,
        **fields,
    )


def tables_needed(p0: float, p1: float, power: float = 0.8, max_n: int = 500) -> int | None:
    """The fewest tables at which C1's / C3's share rule (``p1`` inside the 95% Wilson interval of k/n) agrees in at
    most 5% of draws when each table hits with the null's rate ``p0``, and in at least ``power`` of builds whose
    tables hit at the paper's rate ``p1`` (binomial over independent tables; analytic). None: not within ``max_n``.
    """
    from scipy.stats import binom

    for n in range(1, max_n + 1):
        k = np.arange(n + 1)
        lo, hi = wilson(k, n, WILSON_Z)  # wilson_interval of every k at once (the same numbers)
        accept = (lo <= p1) & (p1 <= hi)
        if binom.pmf(k, n, p0)[accept].sum() <= 0.05 and binom.pmf(k, n, p1)[accept].sum() >= power:
            return n
    return None


def _tables_size(paper_share: float) -> Callable[[Sequence[Evidence]], str]:
    """C1 / C3's "size at which it could": from the null draws' per-table hit rate, :func:`tables_needed`."""

    def size(draws: Sequence[Evidence]) -> str:
        rates = [d.statistic for d in draws if np.isfinite(d.statistic)]
        if not rates:
            return "the null gives no per-table rate"
        p0 = float(np.mean(rates))
        n = tables_needed(p0, paper_share)
        where = f"at least {n} tables" if n else "more than 500 tables (the null's rate is too close to the paper's)"
        return (
            f"a table hits in {p0:.0%} of null draws, so telling the paper's {paper_share:.0%} from chance with 80% "
            f"power takes {where} (binomial over tables, analytic)"
        )

    return size


def _localized(stack: SummaryStack) -> list[Evidence]:
    """C15 (Sec. 6): a detectable configuration with a modest AUC (at most 0.65) and a high TPR@10% (at least 0.30)."""
    auc, tpr10 = stack.primary("auc"), stack.primary("tpr10")
    detectable = stack.outcome == MEMORIZATION
    modest = detectable & (auc <= LOCALIZED_MAX_AUC)
    valid = modest & ~np.isnan(tpr10)
    out = []
    for draw, i in enumerate(_first_max(tpr10, valid)):
        best, where = (float(tpr10[draw, i]) if valid[draw, i] else math.nan) if modest[draw].any() else 0.0, ""
        if valid[draw, i]:
            top = stack.rows.iloc[i]
            where = (
                f" ({top.dataset}, lr {top.learning_rate:g}, Q={int(top.query_size)}, epoch {int(top.epoch)}, "
                f"AUC {auc[draw, i]:.3f})"
            )
        found = best >= LOCALIZED_MIN_TPR10
        out.append(
            Evidence(
                best,
                f"highest TPR@10% at a detectable AUC <= {LOCALIZED_MAX_AUC:g}: {best:.2f}{where}",
                f"stated thresholds: a modest AUC(Delta S) <= {LOCALIZED_MAX_AUC:g} with TPR@10% >= "
                f"{LOCALIZED_MIN_TPR10:g} (3x chance); {'found' if found else 'not found'} among "
                f"{int(detectable[draw].sum())} detectable configurations",
                agrees=found,
                contradicted=False,
            )
        )
    return out


#: The rule of every membership-null claim (Sec. 5, Sec. 6, App. A.4), each over a stack of summaries.
RULES: dict[str, Rule] = {
    "C1": detectable_tables,
    "C2": _peak,
    "C3": tpr1_tables,
    "C5": _share_rule([Outcome.INVERSION.value]),
    "C6": _detectable_by_q,
    "C7": _share_rule([Outcome.CONTEXT_OVERFITTING.value, Outcome.NO_SIGNAL.value]),
    "C9": _temporal,
    "C11": _calibration,
    "C15": _localized,
}


# --- All outcome claims at once: their paper values, their records and the scorecard's rows ------------------------


def _paper_shares() -> dict[str, str]:
    """Fig. 5's share of each outcome at Q=50 and Q=512, as the records quote it."""
    return {
        o: ", ".join(f"Q={q}: {PAPER_OUTCOME_SHARES.loc[o, f'Q={q}']:.1f}%" for q in (50, 512)) for o in OUTCOME_ORDER
    }


def _with_reason(record: dict, *suffixes: str) -> dict:
    return {**record, "reason": record["reason"] + "".join(suffixes)}


def _outcome_records(summary: pd.DataFrame, stacks: Sequence[SummaryStack], reading: str) -> list[dict]:
    """The records of C1-C9, C11 and C15 (Sec. 5, Sec. 6, App. A.4, App. B.3), each under its rule above.

    ``stacks``: the build's summary (draw 0) and the membership null's permuted summaries (draws 1..n) on label
    conditions N and All, as every membership-null rule of :data:`RULES` reads them. Each record's reason says what
    its kind of claim reads: a membership-null claim the label conditions (``where``), a claim on outcomes the
    reading of Tab. 3 (``which``)."""
    paper_shares = _paper_shares()
    c1_paper = PAPER_DETECTABLE_TASKS[0] / PAPER_DETECTABLE_TASKS[1]
    c3_paper = PAPER_TPR1_TASKS[0] / PAPER_TPR1_TASKS[1]
    which = f" (outcome rule: {reading} reading of Tab. 3)"
    where = (
        f"; membership-null rules read label conditions {' and '.join(MEMBERSHIP_CONDITIONS)} only "
        f"({len(fine_tuned(membership_rows(summary)))} of {len(fine_tuned(summary))} fine-tuned rows)"
    )

    def membership(claim_id: str, paper: str, **options) -> dict:
        """A membership-null claim on outcomes: its record (:func:`judge` of its rule's evidence on every draw)."""
        return _with_reason(
            judge(claim_id, paper, on_stacks(RULES[claim_id], stacks), JudgeOptions(**options)), where, which
        )

    return [
        membership(
            "C1",
            f"{PAPER_DETECTABLE_TASKS[0]}/{PAPER_DETECTABLE_TASKS[1]} tasks",
            fmt="{:.2f}",
            structural=_tables_size(c1_paper),
        ),
        membership("C2", f"max AUC(Delta S) {PAPER_PEAKS['auc']:.3f}", fmt="{:.3f}"),
        membership(
            "C3",
            f"{PAPER_TPR1_TASKS[0]}/{PAPER_TPR1_TASKS[1]} tasks",
            fmt="{:.2f}",
            structural=_tables_size(c3_paper),
        ),
        _with_reason(
            collapse_claim(summary, paper_shares[Outcome.COLLAPSE.value] + "; the most frequent; at lr >= 1e-2"), which
        ),
        membership("C5", paper_shares[Outcome.INVERSION.value], fmt="{:.3f}"),
        membership("C6", paper_shares[MEMORIZATION] + "; Q=50 above Q=512", fmt="{:.3f}"),
        membership(
            "C7",
            f"context overfitting {paper_shares[Outcome.CONTEXT_OVERFITTING.value]}; no signal "
            f"{paper_shares[Outcome.NO_SIGNAL.value]}",
            fmt="{:.3f}",
        ),
        _with_reason(
            binary_claim(summary, "binary tasks most vulnerable at Q=50 (chocolate_bar 13 configs, coffee 8)"), which
        ),
        membership(
            "C9",
            f"Q=50: {percent(PAPER_TEMPORAL['q50_epoch1'])} at epoch 1, {percent(PAPER_TEMPORAL['q50_epoch250'])} by "
            "epoch "
            f"250; Q=512: peak {percent(PAPER_TEMPORAL['q512_peak'])} at epoch {PAPER_TEMPORAL['q512_peak_epoch']}, "
            "then vanishes",
            fmt="{:+.3f}",
        ),
        _with_reason(
            calibration_claim(
                on_stacks(RULES["C11"], stacks),
                f"{PAPER_CALIBRATION['vanished']} of {PAPER_CALIBRATION['raw_tpr10_signals']} raw TPR@10% signals "
                f"vanish ({percent(PAPER_CALIBRATION['vanished'] / PAPER_CALIBRATION['raw_tpr10_signals'])}), "
                f"{PAPER_CALIBRATION['calibrated_signals']} remain",
            ),
            where,
        ),
        membership(
            "C15",
            f"beer_ratings Q=512: AUC {PAPER_LOCALIZED['auc']:.2f} but TPR@10% {PAPER_LOCALIZED['tpr10']:.2f}",
            fmt="{:.2f}",
        ),
    ]


def c16_record(summary: pd.DataFrame) -> dict:
    """C16 (Sec. 5): high-cardinality targets need high Q/n and a target not deducible from features; not testable on
    the book's grid, which cannot vary the two independently."""
    s = fine_tuned(summary)
    return claim_record(
        "C16",
        "high-cardinality targets need high Q/n and a target not deducible from features (clear_corpus: none)",
        f"{s[s.task == 'regression'].dataset.nunique()} high-cardinality (regression) table(s) in the grid",
        "not testable here",
        "separating query coverage from deducibility needs several high-cardinality tables that differ in both "
        "(the paper "
        "contrasts beer_ratings with clear_corpus); the book's grid cannot vary them independently",
    )


def calibration_claims(
    summary: pd.DataFrame,
    null: pd.DataFrame | Sequence[pd.DataFrame] | None = None,
    reading: str = "bound",
) -> list[dict]:
    """Claim records C1-C9, C11, C15, C16 from the chapter's probing summary (one row per run x epoch).

    ``null``: the membership null, as :func:`iclmem.probe.null.null_summaries` returns it or as its
    :func:`~iclmem.probe.null.permutations`. ``summary`` holds its outcomes under ``reading`` of Tab. 3
    (:func:`iclmem.stats.outcomes.reclassify`; default: the book's ``bound`` reading), and so does every permuted
    summary (reclassified here), and the records name it. Membership-null claims read label conditions N and All only
    (:func:`membership_rows`): each rule of :data:`RULES` reads ``[summary, *null]`` stacked (:mod:`.nulls`), its
    verdict draw 0 and its null rate draws 1..n. C4 (collapse, no membership) reads every run with a learning-rate
    null, C8 its own table-level null. Without ``null`` no membership-null claim can read "reproduced".
    """
    if isinstance(null, pd.DataFrame):
        stacks = stacks_with_null(summary, reclassify(null, reading), membership_rows)
    else:
        stacks = stacks_of([summary, *(null or [])], membership_rows)
    return [*_outcome_records(summary, stacks, reading), c16_record(summary)]
