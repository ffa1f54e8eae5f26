"""Paper 1, Sec. 6 ("Limitations") and App. D (Tab. 12): claim C13, the decay of detectable memorization from
regime to regime (notebook 05), and its rule.

The claim is counted under two readings of Tab. 3 (the text's point rule and the bound reading, the claim's rule)
per regime (:func:`detectable_by_regime`, :func:`detectable_counts`), decays when it never rises and ends below
where it starts (:func:`decays`), and is judged against the membership null of the sweep's runs
(:mod:`iclmem.chapters.ch05_regimes.nulls`): :class:`RegimeEvidence`, :func:`regime_claim`, :func:`decay_text`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from iclmem.chapters.ch05_regimes.nulls import REGIME_NULL
from iclmem.chapters.ch05_regimes.paper import PAPER_DATASETS, PAPER_TABLE12
from iclmem.report.records import claim_record
from iclmem.report.verdicts import evidence_verdict, summarize_null
from iclmem.stats.outcomes import Outcome, get_reading, reclassify
from iclmem.stats.permutation import NULL_LEVEL
from iclmem.training.regimes import MULTI_TASK_RANDOM, REGIMES, SINGLE_TASK_FIXED

# : The readings of Tab. 3 that C13 is counted under: the point rule of the text, and the bound reading (the claim's
# rule).
POINT, BOUND = "text", "bound"


C13_READINGS: tuple[str, ...] = (POINT, BOUND)


#: The paper's "none within 2-5 epochs" (multi-task random pairs): the last epoch counted for it.
REALISTIC_EPOCHS = 5


def decays(counts: pd.Series) -> bool:
    """Whether detectable counts, in regime order, never rise and end below where they start (Tab. 12's decay)."""
    v = counts.to_numpy()
    return bool(v[-1] < v[0] and (v[1:] <= v[:-1]).all())


def detectable_counts(peaks: pd.DataFrame, n_datasets: int | None = None) -> pd.Series:
    """Datasets with detectable memorization per regime (the paper: 5 -> 2 -> 1 of 10)."""
    counts = (
        peaks.auc.notna()
        .groupby(peaks.regime)
        .sum()
        .reindex([r for r in REGIMES if r in set(peaks.regime)])
        .astype(int)
    )
    counts.name = f"detectable (of {n_datasets or peaks.dataset.nunique()})"
    return counts


def detectable_by_regime(
    rows: pd.DataFrame, reading: str, query_size: int = 512, max_epoch: int | None = None
) -> pd.DataFrame:
    """Datasets with a detectable epoch per regime, under one reading of Tab. 3; one row per permutation.

    ``rows``: sweep rows (or :func:`iclmem.probe.null.null_summaries` of them, with a ``perm``
    column; without one the rows are one draw, ``perm`` 0). A dataset counts in a regime when any
    fine-tuned epoch (up to ``max_epoch``) at any learning rate is detectable memorization under
    ``reading`` (:func:`iclmem.stats.outcomes.reclassify`), at ``query_size`` and without label
    randomization: the count of :func:`detectable_counts` of
    :func:`~iclmem.chapters.ch05_regimes.tables.regime_peak_table`, for every
    permutation at once. Columns: the regimes present, in :data:`iclmem.training.regimes.REGIMES` order.
    """
    get_reading(reading)
    if rows.empty:
        return pd.DataFrame(dtype=int)
    keep = (rows.query_size == query_size) & (rows.label_condition == "none") & (rows.epoch > 0)
    if max_epoch is not None:
        keep &= rows.epoch <= max_epoch
    data = rows[keep]
    order = [r for r in REGIMES if r in set(data.regime)]
    if data.empty:
        return pd.DataFrame(columns=order, dtype=int)
    data = reclassify(data, reading)
    perm = (data["perm"] if "perm" in data else pd.Series(0, index=data.index)).rename("perm")
    hit = (data.outcome == Outcome.MEMORIZATION.value).groupby([perm, data.regime.rename("regime"), data.dataset]).any()
    counts = hit.groupby(level=["perm", "regime"]).sum().unstack("regime")
    return counts.reindex(columns=order).fillna(0).astype(int)


def _arrow(counts: Sequence[int] | pd.Series) -> str:
    return " -> ".join(str(int(c)) for c in counts)


def count_range(values: Sequence[int] | pd.Series) -> tuple[int, int]:
    """The central 95% of a null's counts as whole counts: at most 2.5% of the draws lie below, at most 2.5% above."""
    lo, hi = np.quantile(np.asarray(values, dtype=float), [0.025, 0.975], method="inverted_cdf")
    return int(lo), int(hi)


def _persists(counts: pd.Series) -> bool:
    """C13 contradicted: some regime has signal, and the count does not fall (it rises somewhere, or ends where it
    starts)."""
    return not decays(counts) and bool(counts.to_numpy().any())


@dataclass(frozen=True)
class RegimeEvidence:
    """C13's rule on the build and on its null: detectable counts per regime under each reading.

    ``counts``: reading -> counts per regime on the build; ``null_counts``: reading -> one row of
    counts per permutation (empty without a null); ``n_datasets``: the datasets the counts are of;
    ``random_early``: datasets detectable under random pairs at epochs up to
    :data:`REALISTIC_EPOCHS` (bound reading; None without that regime).
    """

    counts: dict[str, pd.Series]
    null_counts: dict[str, pd.DataFrame]
    n_datasets: int
    random_early: int | None = None

    @property
    def testable(self) -> bool:
        regimes = list(self.counts[BOUND].index)
        return SINGLE_TASK_FIXED in regimes and len(regimes) >= 2

    @property
    def n_permutations(self) -> int:
        return len(self.null_counts[BOUND])

    def agrees(self, reading: str = BOUND) -> bool:
        """The claim's rule: the count falls from regime to regime (never rises, ends below the single-task count)."""
        return decays(self.counts[reading])

    def null_agrees(self, reading: str = BOUND) -> list[bool]:
        return [decays(row) for _, row in self.null_counts[reading].iterrows()]

    def null_rate(self, reading: str = BOUND) -> float:
        answers = self.null_agrees(reading)
        return float(np.mean(answers)) if answers else math.nan


def regime_evidence(
    rows: pd.DataFrame, null: pd.DataFrame | Sequence[pd.DataFrame] | None = None, query_size: int = 512
) -> RegimeEvidence:
    """:class:`RegimeEvidence` of sweep rows and their membership null
    (:func:`~iclmem.chapters.ch05_regimes.nulls.regime_null`, or its permutations as a list)."""
    if null is not None and not isinstance(null, pd.DataFrame):
        null = (
            pd.concat([frame.assign(perm=i) for i, frame in enumerate(null)], ignore_index=True) if len(null) else None
        )
    counts, null_counts = {}, {}
    for reading in C13_READINGS:
        build = detectable_by_regime(rows, reading, query_size)
        order = list(build.columns)
        counts[reading] = build.iloc[0] if len(build) else pd.Series(0, index=order, dtype=int)
        counts[reading].name = reading
        drawn = detectable_by_regime(null, reading, query_size) if null is not None and len(null) else pd.DataFrame()
        null_counts[reading] = (
            drawn.reindex(columns=order).fillna(0).astype(int) if len(drawn) else pd.DataFrame(columns=order, dtype=int)
        )
    used = rows[(rows.query_size == query_size) & (rows.label_condition == "none")] if len(rows) else rows
    early = detectable_by_regime(rows, BOUND, query_size, REALISTIC_EPOCHS)
    random_early = int(early[MULTI_TASK_RANDOM].iloc[0]) if MULTI_TASK_RANDOM in early and len(early) else None
    return RegimeEvidence(counts, null_counts, int(used.dataset.nunique()) if len(used) else 0, random_early)


def decay_text(evidence: RegimeEvidence) -> str:
    """One sentence for the page: what the bound reading's count does, and how often chance does the same."""
    bound = evidence.counts[BOUND]
    if not evidence.testable:
        return "the build has too few regimes at this query size to compare"
    if not bound.any():
        return (
            "no regime keeps a table under the bound reading, so the build cannot tell 'no signal to remove' "
            "from 'removed'"
        )
    if not evidence.n_permutations:
        return (
            "the bound reading's count falls from regime to regime, but the null was not computed, so the fall cannot "
            "count "
            "as reproduced"
            if evidence.agrees()
            else "the bound reading's count does not fall from regime to regime, so the paper's decay is not reproduced"
        )
    chance = (
        f"chance alone (membership permuted) makes it fall in {evidence.null_rate(BOUND):.0%} of "
        f"{evidence.n_permutations} "
        f"permutations (the point rule's count in {evidence.null_rate(POINT):.0%})"
    )
    if evidence.agrees():
        return f"the bound reading's count falls from regime to regime, and {chance}"
    return (
        f"the bound reading's count does not fall from regime to regime, so the paper's decay is not "
        f"reproduced; {chance}"
    )


def regime_claim(
    rows: pd.DataFrame, null: pd.DataFrame | Sequence[pd.DataFrame] | None = None, query_size: int = 512
) -> dict:
    """C13: detectable tasks fall from regime to regime (paper: 5 -> 2 -> 1 of 10; random pairs only at epoch 10).

    The rule (bound reading of Tab. 3, detectable when the lower bound of the AUC's bootstrap
    interval exceeds 0.5): the count of tables with a detectable epoch (at any learning rate) falls
    from regime to regime, i.e. never rises and ends below the single-task count (which is then at
    least one). Its null rate is how often the same rule says so on the rows of ``null``
    (:func:`~iclmem.chapters.ch05_regimes.nulls.regime_null`: membership permuted per dataset view); the
    point rule of the text (AUC > 0.5) is counted beside it, with its own null rate, in the reason. Verdict
    (:func:`~iclmem.report.verdicts.evidence_verdict`): a fall with a null rate of at most 5% is
    reproduced, a fall that chance gives as often is inconclusive, some signal that does not fall is
    differs, no signal in any regime is inconclusive (no signal to remove cannot be told from
    removed); without a null (``None``: compute = False or n_permutations = 0) a fall is inconclusive.
    """
    ev = regime_evidence(rows, null, query_size)
    paper = detectable_counts(PAPER_TABLE12, PAPER_DATASETS)
    paper_text = _arrow(paper) + f" of {PAPER_DATASETS} (multi-task random: only at epoch 10)"
    bound, point = ev.counts[BOUND], ev.counts[POINT]
    ours = f"{_arrow(bound)} of {ev.n_datasets} (AUC interval above 0.5); point rule: {_arrow(point)}"
    if not ev.testable:
        return claim_record(
            "C13",
            paper_text,
            ours,
            "not testable here",
            "the comparison needs single-task fixed pairs and at least one multi-task regime at this query size",
        )
    if not ev.n_permutations:
        return _claim_without_null(ev, paper_text, ours)
    return _claim_with_null(ev, paper_text, ours)


def _bound_reason(ev: RegimeEvidence) -> str:
    """C13's reason, first part: what the bound reading's count does from regime to regime."""
    bound = ev.counts[BOUND]
    if bound.any():
        falls = "falls" if ev.agrees() else "does not fall"
        return f"under the bound reading the count {falls} from regime to regime ({_arrow(bound)})"
    return (
        f"under the bound reading no regime keeps a table ({_arrow(bound)}): the build cannot tell "
        "'no signal to remove' from 'removed'"
    )


def _observed(ev: RegimeEvidence) -> str:
    """C13's observed counts under both readings."""
    return f"bound reading {_arrow(ev.counts[BOUND])}; point rule {_arrow(ev.counts[POINT])}"


def _early_text(ev: RegimeEvidence) -> str:
    """C13's reason, last part: the multi-task random pairs' count at realistic epochs (empty without that regime)."""
    return (
        ""
        if ev.random_early is None
        else (
            f"; multi-task random pairs at epochs <= {REALISTIC_EPOCHS}: {ev.random_early} "
            "(bound reading; the paper: none)"
        )
    )


def _claim_without_null(ev: RegimeEvidence, paper_text: str, ours: str) -> dict:
    """C13's record when no null was computed: a fall cannot count as reproduced."""
    agrees, contradicted = ev.agrees(), _persists(ev.counts[BOUND])
    point = ev.counts[POINT]
    point_text = (
        f"; the point rule (AUC > 0.5) counts {_arrow(point)} ({'falls' if ev.agrees(POINT) else 'does not fall'})"
    )
    verdict = "inconclusive" if agrees else evidence_verdict(agrees, None, contradicted=contradicted)
    why = (
        "; no null was computed (compute = False or n_permutations = 0), so a fall cannot count as reproduced"
        if agrees
        else ""
    )
    return claim_record(
        "C13",
        paper_text,
        ours,
        verdict,
        _bound_reason(ev) + why + point_text + _early_text(ev),
        null="not computed",
        observed=_observed(ev),
    )


def _claim_with_null(ev: RegimeEvidence, paper_text: str, ours: str) -> dict:
    """C13's record judged against its membership null (the single-task count's range, the rule's null rate)."""
    bound, point = ev.counts[BOUND], ev.counts[POINT]
    agrees, contradicted = ev.agrees(), _persists(bound)
    drawn = ev.null_counts[BOUND][SINGLE_TASK_FIXED]
    summary = replace(
        summarize_null(float(bound[SINGLE_TASK_FIXED]), drawn.to_numpy(dtype=float), ev.null_agrees()),
        **dict(zip(("lo", "hi"), count_range(drawn), strict=True)),
    )
    reason = _bound_reason(ev) + f"; chance gives a fall in {summary.rate:.0%} of {summary.n} permutations"
    verdict = evidence_verdict(agrees, summary.rate, contradicted=contradicted)
    if agrees and verdict == "inconclusive":
        reason += f" (more than {NULL_LEVEL:.0%}: chance alone gives this verdict)"
    reason += (
        f"; the point rule (AUC > 0.5) counts {_arrow(point)} ({'falls' if ev.agrees(POINT) else 'does not fall'}), "
        f"and chance gives it a fall in {ev.null_rate(POINT):.0%}" + _early_text(ev)
    )
    return claim_record(
        "C13",
        paper_text,
        ours,
        verdict,
        reason,
        null=f"{REGIME_NULL}; {summary.n} permutations",
        observed=_observed(ev),
        null_range="single-task count (bound reading) " + summary.range_text("{:.0f}"),
        null_rate=summary.rate,
    )
