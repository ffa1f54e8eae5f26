"""Golchin et al. 2024, Sec. 3-5, claims D1-D9: notebook 06's summary paragraph, every sentence formatted from its
arguments (nothing typed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from iclmem.chapters.ch06_llm_kshot.context_summary import ContextSummary
from iclmem.chapters.ch06_llm_kshot.judge_quality import JudgeQuality, kappa_reading
from iclmem.chapters.ch06_llm_kshot.tables import (
    verdict_counts_text,
)
from iclmem.report.records import VERDICTS, ClaimResult


@dataclass(frozen=True)
class Judging:
    """How this build's completions were judged (Sec. 3.2, 4), as the summary tells it: where the memorization rates
    come from (``source``), the offline judge's held-out quality (``None``: not measured), the offline and LLM judges'
    agreement (:func:`iclmem.llm.judges.agreement`; ``None``: no second judge) and the imported human review's sentence
    (``review_text``; ``None``: no review, claim D9)."""

    source: str
    quality: JudgeQuality | None = None
    agreement: Mapping[str, Any] | None = None
    review_text: str | None = None


def _claims_sentence(results: Sequence[ClaimResult]) -> str:
    by = {v: [r.claim_id for r in results if r.verdict == v] for v in VERDICTS}
    parts = [f"{v} ({', '.join(ids)})" for v, ids in by.items() if ids]
    return (
        f"Of the paper's claims D1-D9, this build's verdicts are {verdict_counts_text(results)}: "
        + "; ".join(parts)
        + "."
    )


def summary_markdown(
    run: Mapping[str, object],
    window: ContextSummary,
    judging: Judging,
    gaps: pd.DataFrame,
    results: Sequence[ClaimResult],
    plan_text: str | None = None,
) -> str:
    """The chapter's summary paragraph (Golchin et al. 2024, Sec. 3-5), each sentence formatted from the arguments
    (nothing typed): the run, its context window (``window``), how it was judged (``judging``), the ground-truth gaps
    (``gaps``), the claims' verdicts (``results``) and what the plan found before any request (``plan_text``)."""
    quality, agree, review_text = judging.quality, judging.agreement, judging.review_text
    s = [
        f"This build made {run['n_completions']} completions ({run['n_cached']} from the disk cache) in "
        f"{run['wall_minutes']} minutes of wall time, with {run['run_models']} on {run['run_instances']} instances."
    ]
    if run.get("n_failed"):
        s.append(f"{run['n_failed']} requests failed; their rows are left out of every rate and count below.")
    left = f"; k = {', '.join(map(str, window.left_out))} did not fit and were left out" if window.left_out else ""
    s.append(
        f"The context window of {window.model_id} ({window.context_window or 'unknown'} tokens) holds up to "
        f"k = {window.largest_k} demonstrations; the run used k = {', '.join(map(str, window.ks_run))}{left}."
    )
    if plan_text:
        s.append(f"Before any request the plan found that {plan_text}.")
    s.append(f"Memorization rates come from {judging.source}.")
    if quality is not None:
        s.append(quality.text())
    if agree is not None and agree.get("n"):
        s.append(
            f"The offline and LLM judges agree on {agree['agreement']:.0%} of the {agree['n']} completions both judged "
            f"(Cohen's kappa {agree['kappa']:.2f}, {kappa_reading(agree['kappa'])})."
        )
    if review_text:
        s.append(f"In the imported human review, {review_text}.")
    for g in gaps.itertuples():
        s.append(
            f"{g.comparison.capitalize()} ({g.regime}): {g.estimate:+.0f} percentage points of memorization, "
            f"95% interval {g.interval} ({g.instances} instances)."
        )
    s.append(_claims_sentence(results))
    return " ".join(s)


__all__ = ["Judging", "summary_markdown"]
