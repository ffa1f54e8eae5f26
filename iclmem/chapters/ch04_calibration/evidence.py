"""Paper 1, Sec. 5, App. A.4 (claims C1-C9, C11, C15 of chapter 4): how one claim's rule is judged against the
membership null (notebook 04).

Each claim is a rule over a stack of probing summaries (one row per run x epoch, outcomes under one reading of Tab. 3;
:class:`iclmem.chapters.ch04_calibration.nulls.SummaryStack`) that returns one :class:`Evidence` per summary. Draw 0
is the build's summary, draws 1..n the permuted summaries of the membership null
(:func:`iclmem.probe.null.null_summaries`): how often the rule says "reproduced" there is the claim's null rate, and
the spread of its statistic there is the null range the scorecard shows. :func:`judge` turns the evidence of every
draw into the claim's record, with the options of :class:`JudgeOptions`. The rules are
:mod:`iclmem.chapters.ch04_calibration.claims`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from iclmem.report.records import claim_record
from iclmem.report.verdicts import evidence_verdict, summarize_null, wilson_interval
from iclmem.stats.permutation import NULL_LEVEL

#: The claims' null (membership permuted across each run's probed queries), as the records state it.
MEMBERSHIP_NULL = (
    "membership permuted across each run's probed queries (same scores, same M_ref, runs that probe the same "
    "queries permuted alike)"
)


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


@dataclass(frozen=True)
class JudgeOptions:
    """How :func:`judge` states one claim's record (Sec. 5, App. A.4).

    ``null_text``: the null as the record states it; ``fmt``: the format of the statistic; ``no_null``: why no
    membership null applies (the rule does not read membership), in place of the null; ``structural`` (given the null
    draws' evidence): the size at which the rule could decide, named when the rule is structural at this grid.
    """

    null_text: str = MEMBERSHIP_NULL
    fmt: str = "{:.3g}"
    no_null: str | None = None
    structural: Callable[[Sequence[Evidence]], str] | None = None


def share_point(label: str, paper: float, k: int, n: int) -> dict:
    """A share's point for the scorecard's figure: the paper's value, this build's and its Wilson interval."""
    lo, hi = wilson_interval(k, n)
    return {"label": label, "paper": float(paper), "build": k / n if n else math.nan, "lo": lo, "hi": hi}


def _against_directions(ev: Evidence, draws: Sequence[Evidence]) -> tuple[bool, bool, list[bool], str]:
    """A direction rule decided against its null: (agrees, contradicted, each draw's agreement, the reason).

    Each of ``ev.directions`` must exceed the 95% quantile of its null distribution over ``draws``; a value rule
    (no directions) keeps its own answers (Sec. 5, App. A.4).
    """
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
    return agrees, contradicted, null_agrees, reason


def _null_reason(reason: str, verdict: str, agrees: bool | None, rate: float, structural: str) -> str:
    """The reason with what the null rate ``rate`` says about the verdict (chance, more data, structural)."""
    if verdict == "inconclusive" and agrees:
        reason += f"; but the rule also agrees in {rate:.0%} of null draws, so chance alone gives this verdict"
    if verdict == "inconclusive" and rate <= NULL_LEVEL:
        reason += "; more data could decide it (notebook 04's power plan, 'What it would take', gives the size)"
    if rate > NULL_LEVEL:
        reason += (
            f"; structural at this grid: the rule agrees in {rate:.0%} of null draws, so no result of a "
            "grid this size could read reproduced" + structural
        )
    return reason


def judge(claim_id: str, paper: str, evidence: Sequence[Evidence], options: JudgeOptions = JudgeOptions()) -> dict:
    """The record of one claim from its rule's ``evidence`` on every draw: element 0 on the build's summary, 1..n on
    the permuted summaries of the membership null (:func:`iclmem.chapters.ch04_calibration.nulls.on_draws`; only
    element 0 when no null was computed).

    Direction rules (``Evidence.directions``: one or more statistics that must each exceed the 95%
    quantile of their null distributions) are decided here; value rules carry their own answer.
    ``options.no_null``: why no membership null applies (the rule does not read membership), in place of the null.
    When the rule agrees in more than :data:`~iclmem.stats.permutation.NULL_LEVEL` of the null draws, no build of this
    grid's size can read reproduced whatever its data, and the reason says so ("structural"); ``options.structural``
    (given
    the null draws' evidence) names the size at which the rule could decide.
    """
    fmt = options.fmt
    ev, draws = evidence[0], list(evidence[1:])
    points = [p for p in ev.points if np.isfinite(p["build"])] or None
    if not ev.testable:
        return claim_record(claim_id, paper, ev.ours, "not testable here", ev.reason, ev.interval)
    if options.no_null is not None:
        verdict = evidence_verdict(ev.agrees, None, contradicted=ev.contradicted, no_null=True)
        return claim_record(
            claim_id,
            paper,
            ev.ours,
            verdict,
            ev.reason,
            ev.interval,
            null=f"no null applies: {options.no_null}",
            observed=fmt.format(ev.statistic),
            points=points,
        )
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
    agrees, contradicted, null_agrees, reason = _against_directions(ev, draws)
    summary_null = summarize_null(ev.statistic, [d.statistic for d in draws], null_agrees)
    verdict = evidence_verdict(agrees, summary_null.rate, contradicted=contradicted)
    structural = f": {options.structural(draws)}" if options.structural and summary_null.rate > NULL_LEVEL else ""
    reason = _null_reason(reason, verdict, agrees, summary_null.rate, structural)
    return claim_record(
        claim_id,
        paper,
        ev.ours,
        verdict,
        reason,
        ev.interval,
        null=f"{options.null_text}; {summary_null.n} permutations",
        observed=fmt.format(ev.statistic),
        null_range=summary_null.range_text(fmt),
        null_rate=summary_null.rate,
        points=points,
        null_draws=summary_null.n,
    )
