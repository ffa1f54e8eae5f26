"""Paper 1, Sec. 4.2, Sec. 5, Sec. 6, App. A.4, App. B, App. D (Fig. 2, Fig. 4, Fig. 5, Tab. 1-3, Tab. 10-12): the
power of a registered decision design per tabular claim, before it runs (``grids/decide.yaml``, issue 57).

For every tabular claim (C1-C16, P1-P3, and the claims of absence) one row: the unit the claim's rule counts, the
units the design holds, the paper's value, the claim's null, the rate at which the rule agrees under that null, the
power (the rate at which it agrees when the paper's value holds), and a status: ``powered`` (power >= 80% and null
rate <= 5%, so a reproduction can read "reproduced"), ``underpowered by design`` (with what it would take), or the
claim's standing where no size applies (holds by construction, not testable here, not comparable, outside this
design). Nothing here reads a probe result of a suite table: the inputs are the paper's values, the design
(:class:`~.design_plan.DesignFacts`), and two measurements, ``benchmarks/results/design_costs.json``'s pilot on a
table outside the suite (breast_cancer, permuted draws only) and the exchangeability of members and non-members.

**The null per (run, epoch) row** (:func:`row_null_rates`): with membership permuted, a row's AUC, its bootstrap lower
bound and its TPRs depend on the ranks only, so synthetic scores give them exactly: two independent metrics (loss,
entropy), a row detectable when either lower bound clears 0.5 (the bound reading of Tab. 3), with the engine's own
bound (:func:`iclmem.probe.null.auc_lower_bounds`) and TPRs
(:func:`iclmem.stats.permutation.permuted_attack_statistics`), seeded.
Two choices make it an upper bound of the real rate: the metrics are taken independent (their OR fires most often),
and the loss-inversion gate of Tab. 3 (which removes rows before detection) is ignored. The pilot's measured rate is
shown beside it. Rows of one table are taken independent when a claim counts a table as hit by any of its rows: for
positively associated rows, the chance of a hit is at most that.

**The paper's world** (the alternative): the paper's values as printed (Fig. 5 shares, Fig. 2's epochs, Tab. 1's
peak, C1's 8 of 10 tasks, ...). Where collapse (which reads no membership) enters a null share, the null is computed
at both no collapse and the paper's collapse share, and the row reports the harder of the two. Runs are the units of
share rules (their epochs move together: the pilot's permuted Delta AUCs correlate about 0.97 between epochs).

**The rules** are the chapters' own, approximated where they are bootstraps: a count of tables (C1, C3) by the exact
binomial of its Wilson rule (:func:`iclmem.chapters.ch04_calibration.claims.tables_needed`); a share over runs (C5,
C6) by the exact binomial of a percentile interval over runs (a run with k of n detections resamples as Bin(n, k/n));
directions against a permutation null (C4, C8, C9, C10, C13) by seeded simulation of the permutation test; Delta AUC
effects (C12a, C12c) from the pilot's null spread per configuration, scaled to other pools by Hanley-McNeil.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as st

from iclmem.chapters.ch00_scorecard.design_plan import (
    BUDGET_CPU_HOURS,
    BUDGET_MARGIN,
    CLUSTER_WORKERS,
    DESIGN_COSTS,
    SWEEP_SCALING,
    DesignFacts,
)
from iclmem.chapters.ch02_finetuning.claims import AGGRESSIVE_MIN_LR, STABLE_MAX_LR
from iclmem.chapters.ch02_finetuning.paper import PAPER_AGGRESSIVE_MEDIAN, PAPER_STABLE_RATIO
from iclmem.chapters.ch03_probing.claims import NEUTRAL_DELTA, PAPER_PERTURBATION
from iclmem.chapters.ch03_probing.probing import PAPER_PEAKS
from iclmem.chapters.ch04_calibration.claims import MIN_TABLES_PER_GROUP, tables_needed
from iclmem.chapters.ch04_calibration.outcome_readings import paper_rows
from iclmem.chapters.ch04_calibration.paper import (
    DETECT_MIN_TPR10,
    LOCALIZED_MAX_AUC,
    LOCALIZED_MIN_TPR10,
    PAPER_CALIBRATION,
    PAPER_DETECTABLE_TASKS,
    PAPER_OUTCOME_SHARES,
    PAPER_PROBE_EPOCHS,
    PAPER_TABLE1,
    PAPER_TEMPORAL,
    PAPER_TPR1_TASKS,
)
from iclmem.chapters.ch05_regimes.claims import detectable_counts
from iclmem.chapters.ch05_regimes.paper import PAPER_DATASETS, PAPER_TABLE12
from iclmem.chapters.ch07_mitigation.thresholds import M1_EPSILON, M1_MARGIN
from iclmem.chapters.ch_a6_instrument.controls import MIN_SETS_TO_PASS, NON_MEMBER_SET
from iclmem.data.stats import KS_THRESHOLD
from iclmem.probe.invariances import REFERENCE_INVARIANCES
from iclmem.probe.null import auc_lower_bounds
from iclmem.report.verdicts import WILSON_Z
from iclmem.stats.intervals import wilson
from iclmem.stats.outcomes import Outcome
from iclmem.stats.permutation import (
    ABSENCE_MARGIN,
    NULL_LEVEL,
    hanley_mcneil_se,
    permuted_attack_statistics,
    permuted_labels,
    queries_for_absence,
    queries_for_auc,
)
from iclmem.training.regimes import MULTI_TASK, SINGLE_TASK_FIXED

#: The power every claim's rule should reach, and the seed of every simulation here.
POWER, SEED = 0.8, 0
#: Permutations per pool size in :func:`row_null_rates`; runs of each simulated permutation test.
NULL_DRAWS, SIMULATIONS, PERMUTATIONS = 4000, 400, 200
#: The largest number of units a size search tries.
MAX_UNITS = 3000
#: The kinds of run a claim's "what it would take" is counted in, and costed by (the design's own mean run of each).
RUN_KINDS = ("Q=50 run", "Q=512 run")
#: C8 (claims.md): chocolate_bar_ratings 13 and coffee_ratings 8 detectable configurations at Q = 50 (the paper's
#: binary tasks), of the paper's 1,128 configurations over 10 tasks and 2 query sizes.
PAPER_BINARY_DETECTABLE, PAPER_CONFIGURATIONS = (13, 8), 1128
#: C15 (Sec. 5, App. B.3): one task of the paper's ten (beer_ratings, Q = 512) shows a localized leak.
PAPER_LOCALIZED_TASKS = (1, 10)
#: C10's loss ratios in the paper's world (App. B.1): stable runs at 1-2x (log-normal, median 1.4x, log-sd 0.2);
#: aggressive runs at the paper's median of 8x with a log-sd of 4 ("often > 1e4": about 6% of them).
STABLE_LOG_RATIO, AGGRESSIVE_LOG_SD = (math.log(1.4), 0.2), 4.0
COLLAPSE = Outcome.COLLAPSE.value
#: P2's level: :func:`iclmem.chapters.ch_a6_instrument.controls.negative_control` fails below this p-value.
P2_LEVEL = 0.01


# --- the null of one (run, epoch) row ------------------------------------------------------------------------------


def row_null_rates(pools: list[int], draws: int = NULL_DRAWS, seed: int = SEED, n_boot: int = 200) -> pd.DataFrame:
    """Per pool (members probed, as many non-members): the share of permuted rows that are detectable (``detect``),
    that count for C1 (detectable with TPR@10% > 0.1, ``c1``), for C3 (TPR@1% > 0.1, ``c3``) and for C15 (AUC <= 0.65
    and TPR@10% >= 0.30, ``c15``); an upper bound of the real rates (module docstring)."""
    rows, rng = [], np.random.default_rng(seed)
    for n in sorted(set(pools)):
        labels = permuted_labels(np.r_[np.ones(n, bool), np.zeros(n, bool)], draws, seed + n)
        metrics = []
        for m in range(2):  # loss and entropy, independent
            score = rng.standard_normal(2 * n)
            s = permuted_attack_statistics(score, labels)
            metrics.append({**s, "det": auc_lower_bounds(score, labels, n_boot, seed + m) > 0.5})
        fires = {
            "detect": lambda s: s["det"],
            "c1": lambda s: s["det"] & (s["tpr10"] > DETECT_MIN_TPR10),
            "c3": lambda s: s["det"] & (s["tpr1"] > 0.1),
            "c15": lambda s: s["det"] & (s["auc"] <= LOCALIZED_MAX_AUC) & (s["tpr10"] >= LOCALIZED_MIN_TPR10),
        }
        rows.append({"pool": n, **{k: float((f(metrics[0]) | f(metrics[1])).mean()) for k, f in fires.items()}})
    return pd.DataFrame(rows).set_index("pool")


def hit_rate(rows: pd.DataFrame, null: pd.DataFrame, column: str) -> pd.Series:
    """Per table: the chance that at least one of its ``rows`` fires ``column`` under the null (rows independent)."""
    miss = np.log1p(-null.loc[rows.pool, column].to_numpy())
    return 1 - np.exp(pd.Series(miss, index=rows.index).groupby(rows.dataset.to_numpy()).sum())


# --- share rules: exact binomials ----------------------------------------------------------------------------------


def accepted(n: int, paper: float, interval: str) -> np.ndarray:
    """For k = 0..n units hit, whether the rule's 95% interval holds ``paper``: ``wilson`` (C1, C3) or ``runs`` (the
    percentile bootstrap over runs of C5-C7, a run count of k resampling as Bin(n, k/n))."""
    k = np.arange(n + 1)
    if interval == "wilson":
        lo, hi = wilson(k, n, WILSON_Z)
    else:
        lo, hi = st.binom.ppf(0.025, n, k / n) / n, st.binom.ppf(0.975, n, k / n) / n
    return (lo <= paper) & (paper <= hi)


def share_power(n: int, p0: float, p1: float, interval: str) -> tuple[float, float]:
    """(power, null rate) of a share rule over ``n`` independent units: it agrees in P(accept | p1), P(accept | p0)."""
    if n < 1:
        return 0.0, 0.0
    ok, k = accepted(n, p1, interval), np.arange(n + 1)
    return float(st.binom.pmf(k, n, p1)[ok].sum()), float(st.binom.pmf(k, n, p0)[ok].sum())


def units_needed(check: Callable[[int], tuple[float, float]], start: int = 1) -> int | None:
    """The fewest units at which ``check(n)`` gives power >= 80% and a null rate <= 5% (None: not up to
    :data:`MAX_UNITS`), by doubling then bisecting (a rule's power rises with n, not always monotonically; the
    smallest size found this way is a size that works)."""

    def ok(n: int) -> bool:
        power, rate = check(n)
        return power >= POWER and rate <= NULL_LEVEL

    n = max(1, start)
    while not ok(n):
        if n >= MAX_UNITS:
            return None
        n = min(2 * n, MAX_UNITS)
    lo = n // 2 + 1
    while lo < n:
        mid = (lo + n) // 2
        lo, n = (lo, mid) if ok(mid) else (mid + 1, n)
    return n


def paper_collapse(q: int) -> float:
    """Fig. 5's collapse share at query size ``q``."""
    return float(PAPER_OUTCOME_SHARES.loc[COLLAPSE, f"Q={q}"]) / 100


def two_q_power(runs: dict[int, int], p0: dict[int, float], p1: dict[int, float]) -> tuple[float, float]:
    """(power, null rate) of a share rule that must hold at Q = 50 and Q = 512 (C5, C6; the parts independent)."""
    power, rate = 1.0, 1.0
    for q in (50, 512):
        a, b = share_power(runs.get(q, 0), p0[q], p1[q], "runs")
        power, rate = power * a, rate * b
    return power, rate


# --- a row of the power table --------------------------------------------------------------------------------------


def row(
    claim: str,
    unit: str,
    units,
    paper: str,
    null: str,
    rate,
    power,
    status: str | None = None,
    needed: str = "",
    method: str = "",
    extra: dict[str, int] | None = None,
) -> dict:
    """One row of the power table; ``status`` defaults to powered / underpowered by design from power and rate;
    ``extra``: the runs beyond the design that would give the claim 80% power, by kind of run (:data:`RUN_KINDS`),
    costed by :func:`power_table`; a powered claim's ``needed`` is left empty."""
    if status is None:
        ok = power is not None and rate is not None and power >= POWER and rate <= NULL_LEVEL
        status = "powered" if ok else "underpowered by design"
    return {
        "claim": claim,
        "unit": unit,
        "units in design": units,
        "paper": paper,
        "null": null,
        "null rate": None if rate is None else round(float(rate), 4),
        "power": None if power is None else round(float(power), 4),
        "status": status,
        "what it would take": "" if status == "powered" else needed,
        "extra runs": extra if status == "underpowered by design" else None,
        "method": method,
    }


def scaled_runs(runs: dict[int, int], check: Callable[[dict[int, int]], tuple[float, float]]) -> dict[int, int] | None:
    """The design's runs per Q scaled up by the smallest factor (in steps of 1/4, up to 40x) at which ``check`` gives
    80% power at a null rate of at most 5%; None when none does."""
    for m in np.arange(1.0, 40.25, 0.25):
        n = {q: math.ceil(m * v) for q, v in runs.items()}
        power, rate = check(n)
        if power >= POWER and rate <= NULL_LEVEL:
            return n
    return None


def _runs_by_q(facts: DesignFacts, conditions=("none", "all")) -> dict[int, int]:
    runs = facts.runs(facts.single(conditions))
    return {int(q): int(n) for q, n in runs.groupby("query_size").size().items()}


# --- the table-count claims: C1, C3, C15 ---------------------------------------------------------------------------


def table_count_rows(facts: DesignFacts, null: pd.DataFrame) -> list[dict]:
    """C1 (N rows) and C3 (N and All rows): tables hit by chance at the design's rows per table, against the paper's
    share of tasks, the binomial of their Wilson rule (Sec. 5, Sec. 6)."""
    out = []
    for cid, rows, column, paper in (
        ("C1", facts.single(("none",)), "c1", PAPER_DETECTABLE_TASKS),
        ("C3", facts.single(), "c3", PAPER_TPR1_TASKS),
    ):
        p1, tables = paper[0] / paper[1], int(rows.dataset.nunique())
        p0 = float(hit_rate(rows, null, column).mean())
        power, rate = share_power(tables, p0, p1, "wilson")
        need = tables_needed(p0, p1, max_n=MAX_UNITS)
        per = len(rows) / max(tables, 1)
        text = (
            f"{need} tables at these {per:.0f} rows per table"
            if need
            else f"no number of tables at {per:.0f} rows per table (chance hits a table in {p0:.0%})"
        )
        if cid == "C3" and not (power >= POWER and rate <= NULL_LEVEL):
            text += "; it conflicts with C6, C8, C12a (their Q = 50 rows raise each table's chance hit)"
        out.append(
            row(
                cid,
                "tables" + (" (label condition N)" if cid == "C1" else " (N and All)"),
                tables,
                f"{paper[0]}/{paper[1]} tasks",
                f"membership permuted: a table hit by chance in {p0:.1%}",
                rate,
                power,
                needed=text,
                method="exact binomial of the Wilson rule (tables_needed)",
            )
        )
    return out


def c15_row(facts: DesignFacts, null: pd.DataFrame) -> dict:
    """C15 (Sec. 5, App. B.3): a localized leak (AUC <= 0.65, TPR@10% >= 0.30) somewhere; the paper found it on one
    task of ten, at Q = 512."""
    rows = facts.single()
    rate = float(1 - np.exp(np.log1p(-null.loc[rows.pool, "c15"].to_numpy()).sum()))
    at512 = rows[rows.query_size == 512]
    p = PAPER_LOCALIZED_TASKS[0] / PAPER_LOCALIZED_TASKS[1]
    tables = int(at512.dataset.nunique())
    power = 1 - (1 - p) ** tables
    need = math.ceil(math.log(1 - POWER) / math.log(1 - p))
    small = rows[rows.query_size == 50]
    r50 = float(null.loc[50, "c15"]) if 50 in null.index else 0.0
    allowed = math.floor(math.log(1 - NULL_LEVEL) / math.log1p(-r50)) if r50 > 0 else len(small)
    return row(
        "C15",
        "tables at Q=512 (any membership row can fire)",
        tables,
        f"{PAPER_LOCALIZED_TASKS[0]} of {PAPER_LOCALIZED_TASKS[1]} tasks (beer_ratings, Q=512)",
        "membership permuted: some row reads localized by chance",
        rate,
        power,
        needed=f"{need} tables at Q=512 and at most {allowed} membership rows at Q=50 in all (the design has "
        f"{len(small)}: chance localizes a 50 + 50 row in {r50:.2%}); or the rule read at "
        "Q=512 only",
        method="1 - (1 - p)^tables; null: rows independent",
    )


# --- shares over runs: C5, C6, C7 ----------------------------------------------------------------------------------


def _worlds(p0_of: Callable[[float, int], float]) -> dict[str, dict[int, float]]:
    """A null share per Q in the two collapse worlds of the null (module docstring): none, and the paper's."""
    return {
        "no collapse": {q: p0_of(0.0, q) for q in (50, 512)},
        "the paper's collapse": {q: p0_of(paper_collapse(q), q) for q in (50, 512)},
    }


def _shares_text(shares: dict[int, float] | dict[int, int], percent: bool = True) -> str:
    return ", ".join(f"{100 * v:.1f}% at Q={q}" if percent else f"{v} at Q={q}" for q, v in sorted(shares.items()))


def share_rows(facts: DesignFacts, null: pd.DataFrame) -> list[dict]:
    """C5 (loss inversion), C6 (detectable) and C7 (not comparable), Fig. 5: the paper's share inside the interval
    over runs at both Q, in the harder of the null's two collapse worlds."""
    runs, pools = _runs_by_q(facts), facts.single().groupby("query_size").pool.max()
    out = []
    for cid, outcome, p0_of in (
        ("C5", Outcome.INVERSION.value, lambda c, q: (1 - c) / 2),
        ("C6", Outcome.MEMORIZATION.value, lambda c, q: float(null.loc[int(pools.get(q, 50)), "detect"]) * (1 - c)),
    ):
        p1 = {q: float(PAPER_OUTCOME_SHARES.loc[outcome, f"Q={q}"]) / 100 for q in (50, 512)}
        found = {w: (*two_q_power(runs, p0, p1), p0) for w, p0 in _worlds(p0_of).items()}
        world = max(found, key=lambda w: (found[w][1], -found[w][0]))
        power, rate, p0 = found[world]
        need = scaled_runs(runs, lambda n, p0=p0, p1=p1: two_q_power(n, p0, p1))
        text = f"{_shares_text(need, False)} runs" if need else "more than 40x the design's runs at both Q"
        if cid == "C5":
            text += (
                " (its null, half of the non-collapsed runs inverted, lies near the paper's share: it decides "
                "only where the build's collapse share is far from the paper's)"
            )
        extra = {f"Q={q} run": n - runs[q] for q, n in need.items()} if need else None
        out.append(
            row(
                cid,
                "runs per Q (N and All)",
                _shares_text(runs, False),
                _shares_text(p1),
                f"membership permuted ({world}): {_shares_text(p0)}",
                rate,
                power,
                needed=text,
                extra=extra,
                method="exact binomial of the percentile interval over runs at both Q; the harder null world",
            )
        )
    paper7 = {
        o: {q: float(PAPER_OUTCOME_SHARES.loc[o, f"Q={q}"]) / 100 for q in (50, 512)}
        for o in (Outcome.CONTEXT_OVERFITTING.value, Outcome.NO_SIGNAL.value)
    }
    out.append(
        row(
            "C7",
            "runs per Q (N and All)",
            _shares_text(runs, False),
            "; ".join(f"{o.replace('_', ' ')} {_shares_text(v)}" for o, v in paper7.items()),
            "not judged",
            None,
            None,
            "not comparable (shown, not judged)",
            method="registry: shares of different remainders once collapse differs",
        )
    )
    return out


# --- directions against a permutation null: C4, C8, C10 ------------------------------------------------------------


def within_group_permutations(groups: np.ndarray, n_perm: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_perm, n)`` indices: each row a permutation of the units within each of ``groups`` (one group: all)."""
    out = np.tile(np.arange(len(groups)), (n_perm, 1))
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        out[:, idx] = idx[np.argsort(rng.random((n_perm, len(idx))), axis=1)]
    return out


def permutation_power(
    draw: Callable[[np.random.Generator], np.ndarray],
    statistic: Callable[[np.ndarray, np.ndarray], np.ndarray],
    labels: np.ndarray,
    groups: np.ndarray,
    seed: int = SEED,
) -> float:
    """The share of :data:`SIMULATIONS` simulated builds (``draw``: one value per unit in the paper's world) whose
    ``statistic(values, labels)`` exceeds the 95% quantile of the same statistic with ``labels`` permuted within
    ``groups`` (:data:`PERMUTATIONS` permutations): the power of the chapters' permutation rules (C4, C8, C10). Their
    null rate is 5% by construction."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(SIMULATIONS):
        values = draw(rng)
        perm = within_group_permutations(groups, PERMUTATIONS, rng)
        observed = statistic(values[None, :], labels[None, :])[0]
        null = statistic(np.broadcast_to(values, perm.shape), labels[perm])
        finite = null[np.isfinite(null)]
        hits += bool(np.isfinite(observed) and len(finite) and observed > np.quantile(finite, 0.95))
    return hits / SIMULATIONS


def paper_collapse_by_lr() -> tuple[float, float]:
    """(collapse share at lr >= 1e-2, below) in the paper's world: Fig. 5's share over the paper's four learning rates
    (two on each side) and Tab. 10 / 11's non-collapsed rows on each side, solved for the two shares."""
    rows = paper_rows()
    ratio = float((rows.learning_rate >= AGGRESSIVE_MIN_LR).sum()) / float(
        (rows.learning_rate < AGGRESSIVE_MIN_LR).sum()
    )
    total = 2 * float(np.mean([paper_collapse(q) for q in (50, 512)]))  # high + low
    low = (total - 1 + ratio) / (1 + ratio)  # 1 - high = ratio (1 - low), high + low = total
    return total - low, low


def c4_row(facts: DesignFacts) -> dict:
    """C4 (Sec. 5, Fig. 5; compared by direction): more collapse at lr >= 1e-2 than below, against learning rates
    permuted across the runs of each table, Q and label condition (a run collapses or not: runs are the units)."""
    runs = facts.runs(facts.single(None))
    keys = runs.dataset + "|" + runs.query_size.astype(str) + "|" + runs.label_condition
    both = keys.map(runs.groupby(keys).learning_rate.agg(lambda v: (v >= 1e-2).any() and (v < 1e-2).any()))
    runs, keys = runs[both.to_numpy()], keys[both.to_numpy()]
    high = (runs.learning_rate >= 1e-2).to_numpy()
    weight = runs.rows.to_numpy(float)
    p_high, p_low = paper_collapse_by_lr()

    def contrast(v: np.ndarray, lab: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return (v * lab * weight).sum(1) / (lab * weight).sum(1) - (v * ~lab * weight).sum(1) / (~lab * weight).sum(
                1
            )

    power = (
        permutation_power(
            lambda rng: (rng.random(len(high)) < np.where(high, p_high, p_low)).astype(float),
            contrast,
            high,
            pd.factorize(keys)[0],
        )
        if len(runs)
        else 0.0
    )
    return row(
        "C4",
        "runs in (table, Q, condition) groups with learning rates on both sides of 1e-2",
        f"{len(runs)} runs in {keys.nunique()} groups",
        f"collapse {p_high:.0%} at lr >= 1e-2, {p_low:.0%} below (Fig. 5's shares and Tab. 10/11's non-collapsed rows)",
        "learning rates permuted within each group",
        NULL_LEVEL,
        power,
        needed="" if power >= POWER else "more groups with runs on both sides of lr 1e-2",
        method=f"simulated permutation test ({SIMULATIONS} builds x {PERMUTATIONS} permutations)",
    )


def c10_row(facts: DesignFacts) -> dict:
    """C10 (App. B.1; compared by shape): the median loss ratio of every aggressive learning rate (>= 1e-2) above
    every stable one's (<= 1e-4), stable ones within 2x, against learning rates permuted within each group."""
    runs = facts.runs(facts.single(None))
    keys = pd.factorize(runs.dataset + "|" + runs.query_size.astype(str) + "|" + runs.label_condition)[0]
    lr = runs.learning_rate.to_numpy(float)
    levels = sorted(set(lr))
    stable, aggressive = [x for x in levels if x <= STABLE_MAX_LR], [x for x in levels if x >= AGGRESSIVE_MIN_LR]
    if not stable or not aggressive:
        return row(
            "C10",
            "runs at stable and aggressive learning rates",
            len(runs),
            "",
            "",
            None,
            0.0,
            needed="runs at lr <= 1e-4 and at lr >= 1e-2 in the same groups",
        )

    def gap(v: np.ndarray, lab: np.ndarray) -> np.ndarray:
        med = {x: np.nanmedian(np.where(lab == x, v, np.nan), axis=1) for x in stable + aggressive}
        low = np.max([med[x] for x in stable], axis=0)
        out = np.min([med[x] for x in aggressive], axis=0) - low
        return np.where(low <= math.log(PAPER_STABLE_RATIO[1]), out, -np.inf)

    def draw(rng: np.random.Generator) -> np.ndarray:
        calm = rng.normal(*STABLE_LOG_RATIO, len(lr))
        wild = rng.normal(math.log(PAPER_AGGRESSIVE_MEDIAN), AGGRESSIVE_LOG_SD, len(lr))
        return np.where(lr >= AGGRESSIVE_MIN_LR, wild, np.where(lr <= STABLE_MAX_LR, calm, (calm + wild) / 2))

    power = permutation_power(draw, gap, lr, keys)
    return row(
        "C10",
        "runs at stable (<= 1e-4) and aggressive (>= 1e-2) learning rates, grouped by table, Q and condition",
        len(runs),
        f"stable {PAPER_STABLE_RATIO[0]:g}-{PAPER_STABLE_RATIO[1]:g}x, aggressive median {PAPER_AGGRESSIVE_MEDIAN:g}x",
        "learning rates permuted within each group",
        NULL_LEVEL,
        power,
        needed="more groups with runs at a stable and an aggressive learning rate",
        method="simulated permutation test; log loss ratios per run (stable median 1.4x, log-sd 0.2; "
        f"aggressive median {PAPER_AGGRESSIVE_MEDIAN:g}x, log-sd {AGGRESSIVE_LOG_SD:g})",
    )


def c8_power(binary: np.ndarray, runs: np.ndarray) -> float:
    """C8's power with ``runs`` per table at Q = 50: in the paper's world binary tables at chocolate_bar's and
    coffee's shares, the others at the rest of Fig. 5's Q = 50 share, tables spread as the two binary ones; each
    table's share over its runs (runs as units); the binary label permuted across tables."""
    per_q = PAPER_CONFIGURATIONS / PAPER_DATASETS / 2
    shares = np.array(PAPER_BINARY_DETECTABLE) / per_q
    total = float(PAPER_OUTCOME_SHARES.loc[Outcome.MEMORIZATION.value, "Q=50"]) / 100 * PAPER_DATASETS
    mean = np.where(binary, shares.mean(), (total - shares.sum()) / (PAPER_DATASETS - len(shares)))
    sd = float(shares.std(ddof=1))

    def draw(rng: np.random.Generator) -> np.ndarray:
        return rng.binomial(runs, np.clip(rng.normal(mean, sd), 0, 1)) / np.maximum(runs, 1)

    def diff(v: np.ndarray, lab: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return (v * lab).sum(1) / lab.sum(1) - (v * ~lab).sum(1) / (~lab).sum(1)

    return permutation_power(draw, diff, binary, np.zeros(len(binary), dtype=int))


def c8_row(facts: DesignFacts) -> dict:
    """C8 (Sec. 5): the binary tables' detectable share at Q = 50 above the other tables', against the binary label
    permuted across tables (:func:`c8_power`); what it would take: the runs per table (up to 8x the design's)."""
    runs = facts.runs(facts.single())
    runs = runs[runs.query_size == 50]
    per = runs.groupby("dataset").agg(binary=("kind", lambda k: k.iloc[0] == "binary"), runs=("run", "size"))
    binary, n = per.binary.to_numpy(bool), per.runs.to_numpy()
    enough = binary.sum() >= MIN_TABLES_PER_GROUP and (~binary).sum() >= MIN_TABLES_PER_GROUP
    power = c8_power(binary, n) if enough else 0.0
    times = next((t for t in range(2, 9) if c8_power(binary, n * t) >= POWER), None) if enough else None
    extra = {"Q=50 run": int(n.sum() * (times - 1))} if times else None
    shares = np.array(PAPER_BINARY_DETECTABLE) / (PAPER_CONFIGURATIONS / PAPER_DATASETS / 2)
    return row(
        "C8",
        "tables at Q=50 (binary, other)",
        f"{int(binary.sum())} binary, {int((~binary).sum())} other ({int(n.min())}-{int(n.max())} runs each)",
        f"binary tables {shares.mean():.1%} detectable at Q=50, the others the rest of Fig. 5's share",
        "binary label permuted across tables",
        NULL_LEVEL,
        power,
        needed=(
            f"{times}x the runs per table at Q=50 ({int(n.sum() * times)} runs)"
            if times
            else "more than 8x the runs per table at Q=50, or more tables of each kind"
        ),
        extra=extra,
        method=f"simulated permutation test; between-table sd {float(shares.std(ddof=1)):.3f} (the paper's "
        "two binary tables), runs as units",
    )


# --- the temporal claim C9 -----------------------------------------------------------------------------------------


def paper_temporal(q: int, epochs: list[int]) -> np.ndarray:
    """Fig. 2's detectable share at ``epochs`` in the paper's world: at Q = 50 from epoch 1's share to epoch 250's,
    linear in log epoch; at Q = 512 the peak at its epoch, 0 after it ("vanishes") and, before it, the rest of
    Fig. 5's Q = 512 share spread evenly over the paper's other probed fine-tuned epochs."""
    e = np.asarray(epochs, dtype=float)
    if q == 50:
        a, b = PAPER_TEMPORAL["q50_epoch1"], PAPER_TEMPORAL["q50_epoch250"]
        return a + (b - a) * np.clip(np.log(e) / np.log(250), 0, 1)
    peak, at = PAPER_TEMPORAL["q512_peak"], PAPER_TEMPORAL["q512_peak_epoch"]
    fine = [x for x in PAPER_PROBE_EPOCHS if x > 0]  # the paper's fine-tuned probing epochs (Tab. 2)
    share = float(PAPER_OUTCOME_SHARES.loc[Outcome.MEMORIZATION.value, "Q=512"]) / 100
    base = (len(fine) * share - peak) / (len(fine) - 1)
    return np.where(e == at, peak, np.where(e > at, 0.0, base))


def _directions(shares: dict[int, np.ndarray]) -> np.ndarray:
    """C9's three directions per simulated build: rise (Q=50, last minus first epoch), peak (Q=512, best middle minus
    first), decay (Q=512, best middle minus last); ``shares[q]`` is (builds, epochs)."""
    s50, s512 = shares[50], shares[512]
    middle = s512[:, 1:-1].max(axis=1)
    return np.stack([s50[:, -1] - s50[:, 0], middle - s512[:, 0], middle - s512[:, -1]], axis=1)


def c9_row(facts: DesignFacts, null: pd.DataFrame) -> dict:
    """C9 (Sec. 5, Fig. 2): each of rise, peak and decay beyond the 95% quantile of its membership null, simulated on
    the design's runs per probed epoch (epochs of a run taken independent: conservative for the null's spread)."""
    runs, epochs = _runs_by_q(facts), facts.epochs()
    pools = facts.single().groupby("query_size").pool.max()
    if len(epochs) < 3 or not {50, 512} <= set(runs):
        return row("C9", "runs per probed epoch", "", "", "", None, 0.0, needed="both Q and three probed epochs")
    rng, sims = np.random.default_rng(SEED), 4 * SIMULATIONS * 10

    def build(p: dict[int, np.ndarray]) -> np.ndarray:
        return _directions(
            {q: rng.binomial(runs[q], np.broadcast_to(p[q], (sims, len(epochs)))) / runs[q] for q in (50, 512)}
        )

    p0 = {q: np.full(len(epochs), float(null.loc[int(pools[q]), "detect"])) for q in (50, 512)}
    q95 = np.quantile(build(p0), 0.95, axis=0)
    alt = build({q: paper_temporal(q, epochs) for q in (50, 512)})
    null_draws = build(p0)
    power, rate = float((alt > q95).all(axis=1).mean()), float((null_draws > q95).all(axis=1).mean())
    each = (alt > q95).mean(axis=0)
    need512 = units_needed(lambda n: _c9_at(n, runs[50], epochs, p0), start=runs[512])
    return row(
        "C9",
        "runs per probed epoch, at Q=50 and Q=512 (N and All)",
        f"{_shares_text(runs, False)}; epochs {epochs}",
        "Q=50 "
        + " -> ".join(f"{v:.1%}" for v in paper_temporal(50, epochs))
        + "; Q=512 "
        + " -> ".join(f"{v:.1%}" for v in paper_temporal(512, epochs)),
        "membership permuted (no collapse)",
        rate,
        power,
        needed=f"power of rise, peak, decay: {each[0]:.0%}, {each[1]:.0%}, {each[2]:.0%}; about "
        f"{need512 or 'more than ' + str(MAX_UNITS)} runs at Q=512 probed at these epochs",
        extra={"Q=512 run": need512 - runs[512]} if need512 else None,
        method=f"simulated shares ({sims} builds), the null's 95% quantile per direction",
    )


def _c9_at(n512: int, n50: int, epochs: list[int], p0: dict) -> tuple[float, float]:
    """C9's (power, null rate) with ``n512`` runs at Q = 512 (the null quantiles re-drawn at that size)."""
    rng, sims = np.random.default_rng(SEED + 1), 2000
    runs = {50: n50, 512: n512}

    def build(p: dict) -> np.ndarray:
        return _directions(
            {q: rng.binomial(runs[q], np.broadcast_to(p[q], (sims, len(epochs)))) / runs[q] for q in (50, 512)}
        )

    q = np.quantile(build(p0), 0.95, axis=0)
    return float((build({k: paper_temporal(k, epochs) for k in (50, 512)}) > q).all(axis=1).mean()), NULL_LEVEL


# --- the perturbation claims C12a-c --------------------------------------------------------------------------------


def _configs(facts: DesignFacts) -> dict[int, tuple[int, int]]:
    """Per Q: (membership runs, probed members per pool), the configurations C12 averages over come from."""
    runs = facts.runs(facts.single())
    return {int(q): (len(g), int(g.pool.max())) for q, g in runs.groupby("query_size")}


def _delta_sd(sd50: float, pool: int) -> float:
    """The null spread of one configuration's Delta AUC at ``pool`` + ``pool`` queries, from the pilot's at 50 + 50."""
    return sd50 * hanley_mcneil_se(0.5, pool, pool) / hanley_mcneil_se(0.5, 50, 50)


def _expected_power(facts: DesignFacts, sd50: float, power_at: Callable[[float], float], scale: float = 1.0) -> float:
    """The power of a C12 rule averaged over the number of detectable configurations: each run detectable with
    Fig. 5's share at its Q (times ``scale``), independently, one configuration per run (the pilot: a run's epochs
    move together); ``power_at(sd)``: the rule's power when the spread of the mean Delta AUC is ``sd``."""
    cfg = _configs(facts)
    n = {q: cfg.get(q, (0, q))[0] for q in (50, 512)}
    sd = {q: _delta_sd(sd50, cfg.get(q, (0, q))[1]) for q in (50, 512)}
    p = {q: scale * float(PAPER_OUTCOME_SHARES.loc[Outcome.MEMORIZATION.value, f"Q={q}"]) / 100 for q in (50, 512)}
    w = np.outer(st.binom.pmf(np.arange(n[50] + 1), n[50], p[50]), st.binom.pmf(np.arange(n[512] + 1), n[512], p[512]))
    total = 0.0
    for i, j in zip(*np.nonzero(w > 1e-9), strict=True):
        if i + j:
            total += w[i, j] * power_at(_sd_mean(int(i), int(j), sd[50], sd[512]))
    return total


def _sd_mean(i: int, j: int, sd1: float, sd2: float) -> float:
    """The spread of the mean Delta AUC over i configurations of spread sd1 and j of spread sd2 (independent)."""
    return math.sqrt(i * sd1**2 + j * sd2**2) / (i + j)


#: C12c's paper value (Fig. 4, Sec. 5): feature reduction and distractors at AUC 0.543-0.546 against the baseline's
#: 0.543, so an effect of at most +0.003.
PAPER_FEATURE_DELTA = 0.546 - PAPER_PERTURBATION["baseline_auc"]
Z95, Z975 = st.norm.ppf(0.95), st.norm.ppf(0.975)


def _about_zero(delta: float, sd: float, margin: float = NEUTRAL_DELTA) -> float:
    """P(the noise interval, observed +- 1.96 sd, lies within +-margin) when the true effect is ``delta`` (C12b/c's
    rule, :func:`iclmem.chapters.ch03_probing.claims.about_zero_agreement`)."""
    half = margin - Z975 * sd
    return 0.0 if half <= 0 else float(st.norm.cdf((half - delta) / sd) - st.norm.cdf((-half - delta) / sd))


def c12_rows(facts: DesignFacts, pilot: dict) -> list[dict]:
    """C12a (skew_true raises AUC(Delta S): above its permuted null's 95% quantile), C12b (positional shuffling ~0:
    by construction for a row-order-invariant model) and C12c (feature reduction, distractors ~0: equivalence within
    the margin), over the detectable configurations (Sec. 5, Fig. 4)."""
    sd = {c: v["sd_per_config"] for c, v in pilot["delta_auc_null"].items()}
    cfg = _configs(facts)
    units = "; ".join(f"{n} runs at Q={q} ({pool} + {pool} probed)" for q, (n, pool) in sorted(cfg.items()))
    delta = PAPER_PERTURBATION["skew_true_delta"]
    p50 = float(PAPER_OUTCOME_SHARES.loc[Outcome.MEMORIZATION.value, "Q=50"]) / 100
    power_a = _expected_power(facts, sd["skew_true"], lambda s: float(st.norm.cdf(delta / s - Z95)))
    k_a = math.ceil(((Z95 + st.norm.ppf(POWER)) * sd["skew_true"] / delta) ** 2)
    feats = ("feature_reduction", "distractor_injection")
    power_c = _expected_power(
        facts, 1.0, lambda u: math.prod(_about_zero(PAPER_FEATURE_DELTA, u * sd[c]) for c in feats)
    )
    rate_c = _expected_power(facts, 1.0, lambda u: max(_about_zero(NEUTRAL_DELTA, u * sd[c]) for c in feats))
    k_c = next(
        (
            k
            for k in range(1, 20 * MAX_UNITS)
            if math.prod(_about_zero(PAPER_FEATURE_DELTA, sd[c] / math.sqrt(k)) for c in feats) >= POWER
        ),
        None,
    )
    shared = "detectable configurations (one per run) x probed queries"
    have = cfg.get(50, (0, 50))[0]

    def more(k: int | None) -> dict[str, int] | None:
        return {"Q=50 run": max(math.ceil(k / p50) - have, 0)} if k else None

    return [
        row(
            "C12a",
            shared,
            units,
            f"skew true +{delta:.3f} AUC",
            "membership permuted per configuration",
            NULL_LEVEL,
            power_a,
            needed=f"{k_a} detectable configurations at 50 + 50 (about {math.ceil(k_a / p50)} Q=50 runs)",
            extra=more(k_a),
            method=f"normal, null spread per configuration {sd['skew_true']:.4f} at 50 + 50 (pilot), Hanley-McNeil "
            "scaling; detectable runs Bin(runs, Fig. 5's share)",
        ),
        row(
            "C12b",
            shared,
            units,
            "positional shuffling ~0",
            "no null: by construction",
            None,
            None,
            "holds by construction" if REFERENCE_INVARIANCES.row_order else None,
            method="the reference LTM declares row-order invariance: shuffled contexts are the baseline context",
        ),
        row(
            "C12c",
            shared,
            units,
            f"feature reduction, distractors within +{PAPER_FEATURE_DELTA:.3f}",
            f"an effect of exactly +-{NEUTRAL_DELTA:g} (the margin)",
            rate_c,
            power_c,
            needed=(
                f"{k_c} detectable configurations at 50 + 50 (about {math.ceil(k_c / p50)} Q=50 runs)"
                if k_c
                else "no number of configurations"
            ),
            extra=more(k_c),
            method="normal equivalence (observed +- 1.96 sd within the margin) for both categories; null spread per "
            "configuration " + ", ".join(f"{c} {sd[c]:.4f}" for c in feats) + " at 50 + 50 (pilot)",
        ),
    ]


# --- the regimes: C13 ----------------------------------------------------------------------------------------------


def decay_rate(counts: np.ndarray) -> float:
    """The share of rows of ``counts`` (draws x regimes, in regime order) that decay as C13's rule reads it
    (:func:`iclmem.chapters.ch05_regimes.claims.decays`, vectorized)."""
    return float(((counts[:, -1] < counts[:, 0]) & (np.diff(counts, axis=1) <= 0).all(axis=1)).mean())


def c13_rows(facts: DesignFacts, null: pd.DataFrame) -> list[dict]:
    """C13 (App. D, Tab. 12): tables with a detectable epoch fall from regime to regime (single-task, multi-task
    fixed, multi-task random, at Q = 512); and its claim of absence (no signal in random pairs at early epochs)."""
    r = facts.rows[(facts.rows.query_size == 512) & (facts.rows.label_condition == "none")]
    joint = r[r.regime.isin(MULTI_TASK)]
    tables = sorted(set(joint.dataset))
    regimes = [g for g in (SINGLE_TASK_FIXED, *MULTI_TASK) if g in set(r.regime)]
    paper = (detectable_counts(PAPER_TABLE12, PAPER_DATASETS) / PAPER_DATASETS).reindex(regimes).fillna(0).to_numpy()
    rng, sims = np.random.default_rng(SEED), 20000
    p0 = (
        np.array(
            [[hit_rate(r[(r.regime == g) & (r.dataset == t)], null, "detect").sum() for g in regimes] for t in tables]
        )
        if tables
        else np.zeros((0, len(regimes)))
    )
    null_counts = (rng.random((sims, *p0.shape)) < p0).sum(axis=1)
    alt_counts = rng.binomial(len(tables), np.broadcast_to(paper, (sims, len(regimes))))
    rate, power = (decay_rate(null_counts), decay_rate(alt_counts)) if len(regimes) >= 2 else (None, 0.0)
    wide = {
        n: decay_rate(rng.binomial(n, np.broadcast_to(p0.mean(axis=0), (sims, len(regimes)))))
        for n in (PAPER_DATASETS, 36, 100)
        if len(tables) and len(regimes) >= 2
    }
    needed = (
        "no number of tables: chance makes independent counts fall in "
        + ", ".join(f"{v:.0%} at {n}" for n, v in wide.items())
        + " tables; it would take a rule judged against each regime's own null"
        if wide
        else "the single-task and the joint regimes at Q=512 on the same tables"
    )
    pool = int(joint.pool.min()) if len(joint) else 0
    se = hanley_mcneil_se(0.5, pool, pool) if pool else math.inf
    absent = float(st.norm.cdf((ABSENCE_MARGIN - 0.5 - Z95 * se) / se)) if pool else 0.0
    return [
        row(
            "C13",
            "tables in every regime (Q=512, N)",
            f"{len(tables)} tables x {len(regimes)} regimes",
            " -> ".join(f"{v:.0%}" for v in paper) + " of tables",
            "membership permuted per view",
            rate,
            power,
            needed=needed,
            method=f"simulated counts ({sims} builds), tables independent",
        ),
        row(
            "C13 absence",
            "probed queries per pool of a random-pairs view",
            f"{pool} + {pool}",
            "no detectable signal in random pairs within 2-5 epochs",
            f"a view at AUC {ABSENCE_MARGIN:.2f} (the margin)",
            NULL_LEVEL,
            absent,
            needed=f"{queries_for_absence()} + {queries_for_absence()} per view",
            method="Hanley-McNeil: a view at AUC 0.5 shows 'below the margin' with 95% confidence",
        ),
    ]


# --- the claims no size decides, and the instrument rows -----------------------------------------------------------


def _auc_power(auc: float, pool: int) -> float:
    """P(the bound reading detects one configuration of true ``auc`` at ``pool`` + ``pool`` queries), Hanley-McNeil."""
    return float(
        st.norm.cdf((auc - 0.5 - Z975 * hanley_mcneil_se(0.5, pool, pool)) / hanley_mcneil_se(auc, pool, pool))
    )


def fixed_rows(facts: DesignFacts) -> list[dict]:
    """C2 (not comparable), C11 (not testable), C14 (by construction), C16 (no rule), M1 (outside this design)."""
    pool = int(facts.single().pool.max())
    peak = PAPER_PEAKS["auc"]
    regression = facts.single()[facts.single().kind == "regression"]
    return [
        row(
            "C2",
            "probed queries per pool of the peak configuration",
            f"{pool} + {pool}",
            f"max AUC {peak:.3f}",
            "not judged",
            None,
            _auc_power(peak, pool),
            "not comparable (shown, not judged)",
            needed=f"{queries_for_auc(peak)} + {queries_for_auc(peak)} to see a peak of {peak:.3f} above chance",
            method="power to detect the paper's peak at the design's largest pool (Hanley-McNeil)",
        ),
        row(
            "C11",
            "raw TPR@10% signals",
            "",
            f"{PAPER_CALIBRATION['vanished']} of {PAPER_CALIBRATION['raw_tpr10_signals']} raw signals vanish",
            "the membership null makes every raw signal an artifact, which is the claim",
            None,
            None,
            "not testable here",
            needed="pools that differ in difficulty (a known artifact), which the validated split rules out",
        ),
        row(
            "C14",
            "splits (every table, Q, seed)",
            int(facts.rows.groupby(["dataset", "query_size", "seed"]).ngroups),
            f"KS below {KS_THRESHOLD:g}, TVD within the paper's",
            "no null: the checks select the split",
            None,
            None,
            "holds by construction",
            method="notebook 01 validates every split of the suite",
        ),
        row(
            "C16",
            "high-cardinality (regression) tables at two coverages Q/n",
            f"{regression.dataset.nunique()} "
            "regression tables at Q=" + "/".join(str(q) for q in sorted(set(regression.query_size))),
            "leak needs high Q/n and a target not deducible from features",
            "none: the chapter has no rule",
            None,
            None,
            "not testable here",
            needed="a rule that separates coverage from deducibility, registered with its null, before any size "
            "can be powered",
        ),
        row(
            "M1",
            "probed queries per pool (notebook 07's DP runs)",
            "outside this design",
            f"signal removed at eps <= {M1_EPSILON:g} (AUC below {0.5 + M1_MARGIN:.2f})",
            "a run at the margin",
            NULL_LEVEL,
            None,
            "outside this design",
            needed=f"{queries_for_absence(0.5 + M1_MARGIN)} + {queries_for_absence(0.5 + M1_MARGIN)} per run",
        ),
    ]


def p3_power(runs: int, q: int) -> float:
    """P3's power with ``runs`` M runs at query size ``q`` (every member probed): each run detectable with Fig. 5's
    share at ``q``, and the rule passes when every detectable one is re-detected under the control, each with the
    bound reading's power at Tab. 1's mean AUC at ``q`` (the paper's detectable configurations)."""
    p = float(PAPER_OUTCOME_SHARES.loc[Outcome.MEMORIZATION.value, f"Q={q}"]) / 100
    k = np.arange(1, runs + 1)
    return float((st.binom.pmf(k, runs, p) * _auc_power(paper_rows_auc(q), q) ** k).sum())


def p3_row(facts: DesignFacts) -> dict:
    """P3 (the book's member-only control, notebook 04): the M rows that read detectable stay detectable when the
    non-members carry shuffled labels too (:func:`p3_power`); what it would take: M runs at Q = 512."""
    m_runs = facts.runs(facts.single(("members",)))
    q = int(m_runs.query_size.max()) if len(m_runs) else 50
    power = p3_power(len(m_runs), q) if len(m_runs) else 0.0
    need = next((n for n in range(1, MAX_UNITS) if p3_power(n, 512) >= POWER), None)
    return row(
        "P3",
        "detectable M runs (label condition M)",
        f"{len(m_runs)} runs at Q={q}",
        "(the book's control) M rows re-detected when non-members are shuffled too, in the paper's world",
        "membership permuted under the control",
        None,
        power,
        "underpowered by design" if power < POWER else "powered",
        needed=f"the rule needs every detectable M row re-detected: at {q} + {q} the bound reading re-detects "
        f"Tab. 1's mean AUC {paper_rows_auc(q):.3f} in {_auc_power(paper_rows_auc(q), q):.0%}; "
        f"{need or 'more than ' + str(MAX_UNITS)} M runs at Q=512 would",
        extra={"Q=512 run": need - len(m_runs) * (q == 512)} if need else None,
        method="detectable M runs Bin(runs, Fig. 5's share); each re-detected with the bound "
        "reading's power (Hanley-McNeil)",
    )


def instrument_rows(facts: DesignFacts) -> list[dict]:
    """P1 (the positive control, notebook 04's own runs), P2 (the negative control over non-member sets), P3."""
    modest = 0.60  # notebook 04's power plan: the positive control at a modest AUC
    pools = sorted(set(facts.single().pool))
    sets = int(facts.runs(facts.single(None)).groupby(list(NON_MEMBER_SET)).ngroups)
    return [
        row(
            "P1",
            "probed queries per pool at the control's cell",
            "notebook 04's control runs (outside this grid)",
            f"a modest AUC {modest:.2f} (the book's control; no paper value)",
            "membership permuted at the cell",
            None,
            None,
            "outside this design",
            needed=f"{queries_for_auc(modest)} + {queries_for_auc(modest)} per pool; on this design's pools "
            + ", ".join(f"{p} + {p}: power {_auc_power(modest, p):.0%}" for p in pools),
        ),
        row(
            "P2",
            "non-member sets (table, Q, seed)",
            sets,
            "about 5% of null-halves intervals exclude 0.5",
            "no null applies: a test against chance",
            None,
            1 - P2_LEVEL if sets >= MIN_SETS_TO_PASS else 0.0,
            "powered" if sets >= MIN_SETS_TO_PASS else "underpowered by design",
            needed=f"at least {MIN_SETS_TO_PASS} sets to pass",
            method=f"a valid instrument passes the one-sided t-test at {P2_LEVEL:.0%} in {1 - P2_LEVEL:.0%} of builds",
        ),
        p3_row(facts),
    ]


def paper_rows_auc(q: int) -> float:
    """The mean AUC(Delta S) of Tab. 1's rows at query size ``q`` (the paper's detectable configurations)."""
    rows = PAPER_TABLE1[PAPER_TABLE1.query_size == q]
    return float(rows.auc.mean()) if len(rows) else float(PAPER_TABLE1.auc.mean())


# --- the power table -----------------------------------------------------------------------------------------------


def power_rows(facts: DesignFacts, null: pd.DataFrame, pilot: dict) -> pd.DataFrame:
    """Every row of the power table, in the registry's order (extra rows after their claim)."""
    rows = [
        *table_count_rows(facts, null),
        c15_row(facts, null),
        *share_rows(facts, null),
        c4_row(facts),
        c8_row(facts),
        c9_row(facts, null),
        c10_row(facts),
        *c12_rows(facts, pilot),
        *c13_rows(facts, null),
        *fixed_rows(facts),
        *instrument_rows(facts),
    ]
    from iclmem.report.registry import CLAIMS

    order = {c.id: i for i, c in enumerate(CLAIMS)}
    frame = pd.DataFrame(rows)
    key = frame.claim.map(lambda c: (order.get(c.split()[0], len(order)), c))
    return frame.iloc[sorted(range(len(frame)), key=lambda i: key.iloc[i])].reset_index(drop=True)


def power_table(grid_path: str | Path, costs_path: str | Path, scaling_path: str | Path) -> tuple[pd.DataFrame, dict]:
    """(the power table of the design in ``grid_path``, its projected cost) from the measured unit costs and pilot
    (``costs_path``, ``benchmarks/results/design_costs.json``) and the measured scaling (``scaling_path``). An
    underpowered claim's extra runs are costed at the design's own mean run of each kind (:data:`RUN_KINDS`); the
    power it would gain per extra CPU-hour ranks the claims the budget leaves out."""
    from iclmem.chapters.ch00_scorecard.design_plan import design_cost
    from iclmem.sweep.gridfile import load_grid

    facts = DesignFacts.of(load_grid(grid_path))
    pilot = json.loads(Path(costs_path).read_text())["pilot"]
    null = row_null_rates(sorted(set(facts.rows.pool)))
    table = power_rows(facts, null, pilot)
    cost = design_cost(facts, costs_path, scaling_path)
    tasks = cost["costs"]
    single = tasks[tasks.regime == SINGLE_TASK_FIXED]
    per_run = {f"Q={q} run": float(single[single.Q == q].task_s.mean()) for q in (50, 512)}
    hours = table["extra runs"].map(lambda e: sum(n * per_run[k] for k, n in e.items()) / 3600 if e else None)
    table["extra runs"] = table["extra runs"].map(lambda e: ", ".join(f"{n} {k}s" for k, n in e.items()) if e else "")
    table.insert(table.columns.get_loc("method"), "extra CPU-hours", hours.round(2))
    rate = table["null rate"].astype(float)
    decides = table.power.astype(float).where(rate.isna() | (rate <= NULL_LEVEL), 0.0)  # above 5%: nothing decides
    gain = (POWER - decides).clip(lower=0) / hours.astype(float)
    table.insert(table.columns.get_loc("method"), "power gained per extra CPU-hour", gain.round(4))
    cost.update(row_null_rates=null, pilot_detectable_share=pilot["null_detectable_share"], per_run_s=per_run)
    return table, cost


def extension_table(
    grid_path: str | Path, extension_path: str | Path, costs_path: str | Path, scaling_path: str | Path
) -> tuple[pd.DataFrame, dict]:
    """(the power rows of the claims a registered extension serves, read on the design in ``grid_path`` and the
    extension in ``extension_path`` together; the extension's own projected cost). The claims are those whose rows
    the power table has a rule for on runs alone: C9 (:func:`c9_row`), the only claim an extension reads today
    (``grids/decide_c9.yaml``)."""
    from iclmem.chapters.ch00_scorecard.design_plan import design_cost
    from iclmem.sweep.gridfile import load_grid

    base, extension = DesignFacts.of(load_grid(grid_path)), DesignFacts.of(load_grid(extension_path))
    joined = base.joined(extension)
    null = row_null_rates(sorted(set(joined.rows.pool)))
    table = pd.DataFrame([c9_row(joined, null)])
    return table, design_cost(extension, costs_path, scaling_path)


def cost_rows(cost: dict) -> pd.DataFrame:
    """The design's projected cost as rows of the power table (claim ``design``)."""
    machine = f"measured on {cost['machine']} (benchmarks/results/design_costs.json)"
    rows = [
        ("CPU-hours (one thread per task)", round(cost["cpu_hours"], 2), machine),
        (
            "budget CPU-hours",
            BUDGET_CPU_HOURS,
            f"issue 57, on this 2-core machine; the design stays within "
            f"{BUDGET_MARGIN:.0%} of it (a margin for the spread of CPU seconds on a shared machine)",
        ),
        (
            "wall hours on 2 cores",
            round(cost["wall_hours_2_cores"], 2),
            f"largest first, efficiency {cost['efficiency']:.2f} (benchmarks/results/sweep_scaling.json)",
        ),
        (
            f"wall hours on {CLUSTER_WORKERS} Dask workers",
            round(cost[f"wall_hours_{CLUSTER_WORKERS}_workers"], 2),
            f"largest first, the same efficiency (beyond 2 workers an extrapolation); largest task "
            f"{cost['largest_task_hours']:.2f} h",
        ),
        ("tasks", cost["tasks"], "fine-tune + probe + summarize, one per spec (iclmem sweep)"),
    ]
    return pd.DataFrame([{"claim": "design", "unit": u, "units in design": v, "method": m} for u, v, m in rows])


def main(argv: list[str] | None = None) -> int:
    """``python -m iclmem.chapters.ch00_scorecard.design_power grids/decide.yaml``: writes the power table."""
    import argparse

    parser = argparse.ArgumentParser(description="The power table of a registered design (issue 57).")
    parser.add_argument("grid", type=Path)
    parser.add_argument("--extension", type=Path, help="a registered extension of the design: its claims' power")
    parser.add_argument("--out", type=Path, help="default: <grid or extension>_power.csv beside it")
    parser.add_argument("--costs", type=Path, default=DESIGN_COSTS)
    parser.add_argument("--scaling", type=Path, default=SWEEP_SCALING)
    args = parser.parse_args(argv)
    if args.extension:
        table, cost = extension_table(args.grid, args.extension, args.costs, args.scaling)
    else:
        table, cost = power_table(args.grid, args.costs, args.scaling)
    named = args.extension or args.grid
    out = args.out or named.with_name(named.stem + "_power.csv")
    pd.concat([table, cost_rows(cost)], ignore_index=True).to_csv(out, index=False)
    columns = ("claim", "units in design", "null rate", "power", "status", "extra CPU-hours")
    shown = table[[c for c in columns if c in table]]
    print(shown.to_string(index=False))
    print(cost_rows(cost)[["unit", "units in design"]].to_string(index=False))
    return 0


__all__ = [
    "POWER",
    "accepted",
    "c8_power",
    "cost_rows",
    "decay_rate",
    "extension_table",
    "p3_power",
    "paper_collapse",
    "paper_collapse_by_lr",
    "paper_temporal",
    "permutation_power",
    "power_rows",
    "power_table",
    "row_null_rates",
    "scaled_runs",
    "share_power",
    "two_q_power",
    "units_needed",
    "within_group_permutations",
]


if __name__ == "__main__":
    raise SystemExit(main())
