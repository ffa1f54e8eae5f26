"""Paper 1, Sec. 5, Fig. 5, Tab. 1, App. A.4: what it would take for each tabular claim to decide (notebook 04).

The book's grid is a sample of the paper's (Tab. 2): a claim that reads "inconclusive" there may be one that more data
would decide, or one that no amount of data of this design decides. :func:`power_plan` answers that per claim from
this build's own null draws: the statistic's value when membership is exchangeable (``p0``), the paper's value
(``p1``), and the size (tables, probed queries per pool, runs) at which the claim's rule separates the two with 80%
power at the 5% level. Everything here is **analytic** (normal approximations and binomial sums), not simulated:

* a share over configurations (C5, C7, C9): a one-sample test of the paper's share against the null's share,
  ``n = ((z_a sqrt(p0 q0) + z_b sqrt(p1 q1)) / (p1 - p0))^2`` configurations, times this build's design effect (the
  bootstrap-over-runs variance over the binomial one: the epochs of one run are not independent), divided by the
  probed epochs per run to give runs;
* a count of tables (C1, C3): :func:`~iclmem.chapters.ch04_calibration.claims.tables_needed`, the binomial sum of the
  claim's own Wilson rule;
* one configuration's AUC (C2, P1) and a claim of absence (C13, M1: "AUC below ``margin`` with 95% confidence"):
  Hanley-McNeil variances, members and non-members probed in equal numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as st

from iclmem.chapters.ch03_probing.probing import PAPER_PEAKS
from iclmem.chapters.ch04_calibration.claims import detectable_tables, tables_needed, tpr1_tables
from iclmem.chapters.ch04_calibration.nulls import on_draws
from iclmem.chapters.ch04_calibration.paper import (
    PAPER_DETECTABLE_TASKS,
    PAPER_OUTCOME_SHARES,
    PAPER_TABLE1,
    PAPER_TEMPORAL,
    PAPER_TPR1_TASKS,
)
from iclmem.chapters.ch04_calibration.tables import MEMORIZATION
from iclmem.probe.summary import fine_tuned, membership_rows
from iclmem.report.verdicts import cluster_share_interval
from iclmem.stats.outcomes import Outcome
from iclmem.stats.permutation import ABSENCE_MARGIN as ENGINE_ABSENCE_MARGIN
from iclmem.stats.permutation import queries_for_absence, queries_for_auc

#: Power and level of every row of the plan.
POWER, ALPHA = 0.8, 0.05
#: The equivalence margin of a claim of absence (C13, M1): "AUC(Delta S) below 0.60 with 95% confidence"; the engine's
#: (:data:`iclmem.stats.permutation.ABSENCE_MARGIN`), which ``iclmem audit`` reads too.
ABSENCE_MARGIN = ENGINE_ABSENCE_MARGIN
#: The largest size the plan searches (queries per pool, runs, tables); beyond it the row says "more than".
MAX_SIZE = 100_000


def rows_for_share(p0: float, p1: float, power: float = POWER, alpha: float = ALPHA) -> float:
    """Independent configurations at which a share of ``p1`` is told from ``p0`` (two-sided ``alpha``, ``power``)."""
    if not (0 <= p0 <= 1 and 0 <= p1 <= 1) or p0 == p1:
        return math.inf
    za, zb = st.norm.ppf(1 - alpha / 2), st.norm.ppf(power)
    return ((za * math.sqrt(max(p0 * (1 - p0), 1e-6)) + zb * math.sqrt(max(p1 * (1 - p1), 1e-6))) / (p1 - p0)) ** 2


def design_effect(flags: np.ndarray, clusters: Sequence) -> float:
    """The variance of a share bootstrapped over runs over its binomial variance (at least 1): how many probed rows
    one independent configuration is worth."""
    f = np.asarray(flags, dtype=bool)
    p = float(f.mean()) if len(f) else math.nan
    if not len(f) or p in (0.0, 1.0):
        return 1.0
    lo, hi = cluster_share_interval(f, clusters)
    boot_var = ((hi - lo) / (2 * 1.959964)) ** 2
    return max(1.0, boot_var / (p * (1 - p) / len(f)))


def _null_share(null: Sequence[pd.DataFrame], outcome: str, q: int, epoch: int | None = None) -> float:
    """The mean share of ``outcome`` at query size ``q`` (and ``epoch``) over the null draws (N and All rows)."""
    shares = []
    for frame in null:
        s = fine_tuned(membership_rows(frame))
        s = s[s.query_size == q]
        if epoch is not None:
            s = s[s.epoch == epoch]
        if len(s):
            shares.append(float((s.outcome == outcome).mean()))
    return float(np.mean(shares)) if shares else math.nan


def _size_text(n: float | int | None, unit: str) -> str:
    """A size in ``unit``, rounded up, or "more than" :data:`MAX_SIZE` when beyond it or none."""
    if n is None or not np.isfinite(n) or n > MAX_SIZE:
        return f"more than {MAX_SIZE:,} {unit}"
    return f"{math.ceil(n):,} {unit}"


def _row(claim: str, what: str, today: str, p0: str, p1: str, needed: str, decidable: str) -> dict:
    """One row of the plan."""
    return {
        "claim": claim,
        "what the rule compares": what,
        "this grid": today,
        "under the null": p0,
        "paper": p1,
        "needed for 80% power": needed,
        "could more data decide it?": decidable,
    }


def _table_rows(ours: pd.DataFrame, null: Sequence[pd.DataFrame]) -> list[dict]:
    """C1 and C3 (Sec. 5, Sec. 6): the tables each count of tables needs."""
    rows = []
    n_tables = int(ours.dataset.nunique())
    for cid, rule, paper in (
        ("C1", detectable_tables, PAPER_DETECTABLE_TASKS[0] / PAPER_DETECTABLE_TASKS[1]),
        ("C3", tpr1_tables, PAPER_TPR1_TASKS[0] / PAPER_TPR1_TASKS[1]),
    ):
        rates = [e.statistic for e in on_draws(rule, null)]  # the claim's own rule on every null draw
        p0 = float(np.nanmean(rates)) if rates else math.nan
        n = tables_needed(p0, paper) if np.isfinite(p0) else None
        rows.append(
            _row(
                cid,
                "share of tables with a hit (Wilson interval of k/n holds the paper's share)",
                f"{n_tables} tables",
                f"{p0:.0%} of tables hit",
                f"{paper:.0%}",
                _size_text(n if n else math.inf, "tables"),
                "yes, with more tables" if n else "no: chance hits as often as the paper's tables",
            )
        )
    return rows


def _auc_rows(pools: str) -> list[dict]:
    """C2 and P1 (Sec. 5, Tab. 1, Sec. 4.2): the probed queries one configuration's AUC needs."""
    rows = []
    for cid, auc, what in (
        ("C2", PAPER_PEAKS["auc"], "one configuration's AUC(Delta S), the paper's peak"),
        ("C2", float(PAPER_TABLE1.auc.min()), "one configuration's AUC(Delta S), Tab. 1's smallest detectable"),
        ("P1", 0.60, "the positive control's AUC(Delta S) at a modest 0.60"),
    ):
        n = queries_for_auc(auc)
        rows.append(
            _row(
                cid,
                what + " above 0.5 (bound reading: 95% lower bound)",
                pools,
                "0.5",
                f"{auc:.3f}",
                _size_text(n, "members and as many non-members"),
                "yes, probing more queries per run (Q=512 runs have 512 members)",
            )
        )
    return rows


def _share_rows(ours: pd.DataFrame, null: Sequence[pd.DataFrame]) -> list[dict]:
    """C5, C6 and C7 (Sec. 5, Fig. 5): the runs each outcome share at each Q needs."""
    rows = []
    for outcome in (Outcome.INVERSION.value, Outcome.CONTEXT_OVERFITTING.value, Outcome.NO_SIGNAL.value, MEMORIZATION):
        cid = {Outcome.INVERSION.value: "C5", MEMORIZATION: "C6"}.get(outcome, "C7")
        for q in (50, 512):
            at_q = ours[ours.query_size == q]
            if at_q.empty:
                continue
            p0, p1 = _null_share(null, outcome, q), PAPER_OUTCOME_SHARES.loc[outcome, f"Q={q}"] / 100
            flags = (at_q.outcome == outcome).to_numpy()
            deff = design_effect(flags, list(at_q.run_key) if "run_key" in at_q else list(range(len(at_q))))
            per_run = len(at_q) / max(1, at_q.run_key.nunique()) if "run_key" in at_q else 1.0
            runs = rows_for_share(p0, p1) * deff / per_run
            rows.append(
                _row(
                    cid,
                    f"share of {outcome.replace('_', ' ')} at Q={q}",
                    f"{at_q.run_key.nunique() if 'run_key' in at_q else len(at_q)} runs x {per_run:.0f} epochs "
                    f"(design effect {deff:.1f})",
                    f"{p0:.1%}",
                    f"{p1:.1%}",
                    _size_text(runs, "runs"),
                    "yes" if np.isfinite(runs) and runs <= MAX_SIZE else "no: the null gives the paper's share",
                )
            )
    return rows


def _other_rows(ours: pd.DataFrame, null: Sequence[pd.DataFrame], pools: str) -> list[dict]:
    """C9 (Fig. 2), C8, C11 (App. A.4) and the claims of absence C13, M1."""
    n_tables = int(ours.dataset.nunique())
    p0_1 = _null_share(null, MEMORIZATION, 50)
    n9 = rows_for_share(PAPER_TEMPORAL["q50_epoch1"], PAPER_TEMPORAL["q50_epoch250"]) * 2
    n_abs = queries_for_absence()
    return [
        _row(
            "C9",
            "Q=50 detectable share, epoch 1 against epoch 250 (a rise)",
            f"{int(ours[ours.query_size == 50].run_key.nunique()) if 'run_key' in ours else 0} runs per epoch",
            f"{p0_1:.1%} at every epoch",
            f"{PAPER_TEMPORAL['q50_epoch1']:.1%} -> {PAPER_TEMPORAL['q50_epoch250']:.1%}",
            _size_text(n9, "runs per probed epoch"),
            "yes, with the paper's probing epochs (up to 250-500)",
        ),
        _row(
            "C8",
            "binary minus other tables' detectable share (binary label permuted across tables)",
            f"{n_tables} tables",
            "no difference",
            "binary tables most vulnerable",
            "at least 3 binary and 3 other tables (20 assignments, the fewest for a 5% permutation test)",
            "yes, with more tables of each kind",
        ),
        _row(
            "C11",
            "share of raw signals that calibration removes",
            "-",
            "every raw signal removed",
            "95% removed",
            "no size: the membership null is the claim",
            "no: it needs pools that differ in difficulty",
        ),
        _row(
            "C13, M1",
            f"a claim of absence: AUC(Delta S) below {ABSENCE_MARGIN:.2f} with 95% confidence (equivalence)",
            pools,
            "0.5 (no signal)",
            "signal removed",
            _size_text(n_abs, "members and as many non-members"),
            "yes: a non-detection at fewer queries is no evidence of absence",
        ),
    ]


def _pools_text(ours: pd.DataFrame) -> str:
    """The probed pools of the grid's runs, one per query size: "50 + 50 (Q=50), 512 + 512 (Q=512) probed queries"."""
    if "n_members" not in ours or ours.empty:
        return "no probed queries"
    smallest = ours.groupby("query_size").n_members.min()  # a pool's members, and as many non-members
    return ", ".join(f"{int(n)} + {int(n)} (Q={int(q)})" for q, n in smallest.items()) + " probed queries"


def power_plan(summary: pd.DataFrame, null: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One row per tabular claim (and control): what this grid has, what the null gives, what the paper says and what
    size would let the claim's rule tell the two apart with 80% power (analytic; module docstring).

    ``summary``: the chapter's summary (outcomes under its reading); ``null``: its membership null as
    :func:`iclmem.probe.null.permutations` (the same reading). Membership-null rows read label conditions N and All.
    """
    ours = fine_tuned(membership_rows(summary))
    pools = _pools_text(ours)
    rows = [*_table_rows(ours, null), *_auc_rows(pools), *_share_rows(ours, null), *_other_rows(ours, null, pools)]
    return pd.DataFrame(rows)


__all__ = [
    "ABSENCE_MARGIN",
    "design_effect",
    "power_plan",
    "rows_for_share",
]
