"""Golchin et al. 2024, Sec. 4 "Human Evaluation" and Sec. 5.2, Tab. 2: the performance claims D6-D8, the human review
D9, and all D claims together (notebook 06). The rules and nulls are those of
:mod:`iclmem.chapters.ch06_llm_kshot.claims`.

D7 and D8 (how accuracy goes with memorization) are :mod:`iclmem.chapters.ch06_llm_kshot.correlation`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.claims import (
    claim_d1,
    claim_d2,
    claim_d3,
)
from iclmem.chapters.ch06_llm_kshot.contrast import raw_reading
from iclmem.chapters.ch06_llm_kshot.correlation import claim_d7, claim_d8
from iclmem.chapters.ch06_llm_kshot.nulls import (
    _draws_text,
    _gain_null,
    _Null,
    _null_of,
)
from iclmem.chapters.ch06_llm_kshot.paper import (
    HUMAN_REVIEW_CHANGED_PERCENT,
    ICL_GAIN_MEMORIZATION,
    JUDGE_HUMAN_ACCURACY,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    N_BOOT,
    Focus,
    _directional_why,
    _ks_text,
    _mean_pct,
    _needs,
    bootstrap,
    correct_matrix,
    directional_agreement,
    icl_settings,
    memorization_matrix,
)
from iclmem.chapters.ch06_llm_kshot.settings import claim_d4, claim_d5
from iclmem.report.glue import null_rate_text
from iclmem.report.records import VERDICTS, ClaimResult
from iclmem.report.verdicts import evidence_verdict, share_agreement, share_text
from iclmem.stats import N_PERMUTATIONS


# -- D6: performance -----------------------------------------------------------------------------------
def paper_d6() -> str:
    return (
        f"ICL beats zero-shot performance when memorization in few-shot regimes reaches "
        f"~{ICL_GAIN_MEMORIZATION:g}% or more"
    )


def claim_d6(
    mem: pd.DataFrame,
    perf: pd.DataFrame,
    focus: Focus,
    n_boot: int = N_BOOT,
    seed: int = 0,
    threshold: float | None = None,
    n_perm: int = N_PERMUTATIONS,
) -> ClaimResult:
    """D6 (Sec. 5.2, Observation 1): ICL outperforms zero-shot when surfaced memorization reaches about 40%.

    Checked: the ks > 0 where the focus's memorization (standard-ICL setting) reaches ``threshold``; there, accuracy
    minus zero-shot accuracy per instance (paired), averaged over those ks; the rule: its bootstrap interval lies above
    0. Not testable when no k reaches it. ``threshold``: :data:`ICL_GAIN_MEMORIZATION` when ``None``.

    Null: an instance's classification answers are exchangeable across the ks run (the demonstrations do not change
    accuracy); each draw permutes the k labels of the answers within every instance, the ks where memorization reaches
    the threshold kept.
    """
    threshold = ICL_GAIN_MEMORIZATION if threshold is None else threshold
    settings, where = icl_settings(mem)
    m = memorization_matrix(mem, focus, settings)
    c = correct_matrix(perf, focus)
    ks = [k for k in m.columns if k in set(c.columns)]
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return _needs("D6", paper_d6(), f"k run: {ks}", "D6 needs zero-shot and k > 0 accuracy and memorization.")
    level = {k: _mean_pct(m, [k]) for k in shots}
    high = [k for k in shots if level[k] >= threshold]
    top = max(shots, key=lambda k: level[k])
    if not high:
        return _needs(
            "D6",
            paper_d6(),
            f"memorization at most {level[top]:.0f}% (k = {top})",
            f"On the {focus.describe()}: memorization ({where}) never reaches {threshold:g}% at k > 0 "
            f"(at most {level[top]:.0f}% at k = {top}): the claim's condition does not occur in this run.",
        )
    x = c.to_numpy()
    cols = list(c.columns)
    high_cols, zero_col = [cols.index(k) for k in high], cols.index(0)
    gain = np.nanmean(x[:, high_cols], axis=1) - x[:, zero_col]

    def stat(idx: np.ndarray) -> float:
        return float(np.nanmean(gain[idx]) * 100)

    est = stat(np.arange(len(x)))
    ci = bootstrap(len(x), stat, n_boot, seed)
    acc0, acc_high = _mean_pct(c, [0]), _mean_pct(c, high)
    ours = (
        f"memorization >= {threshold:g}% at {_ks_text(high)} ({', '.join(f'{level[k]:.0f}%' for k in high)}); accuracy "
        f"there {acc_high:.0f}% vs zero-shot {acc0:.0f}% ({est:+.0f} points)"
    )
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        summary = _gain_null(x, high_cols, zero_col, est, seed, "D6", n_perm)
        nul = _null_of(
            summary,
            agrees,
            (
                "an instance's classification answers exchangeable across the ks run (the demonstrations do not change "
                f"accuracy), their k labels permuted within every instance; {_draws_text(n_perm, seed, n_boot)}"
            ),
            f"accuracy at {_ks_text(high)} minus zero-shot: {est:+.1f} points",
        )
    reason = (
        f"Checked on the {focus.describe()}: at the ks > 0 where memorization ({where}) reaches {threshold:g}%, "
        f"k-shot minus zero-shot accuracy of the same instances; {_directional_why(est, ci, what='the accuracy gain')}."
        f"{nul.why}"
        + raw_reading(
            mem,
            focus,
            f"the {threshold:g}% condition is the paper's raw level (GPT-4's rows "
            "had no non-members to subtract), and the gain is accuracy",
        )
    )
    return ClaimResult(
        "D6",
        paper_d6(),
        ours,
        evidence_verdict(agrees, nul.null_rate, contradicted=contradicted),
        reason,
        ci.text() if ci else None,
        **nul.fields(),
    )


# -- D9: human review of the judge ---------------------------------------------------------------------------
def paper_d9() -> str:
    lo, hi = JUDGE_HUMAN_ACCURACY
    return (
        f"human review changed {HUMAN_REVIEW_CHANGED_PERCENT:g}% of GPT-4's judge labels, all borderline near-exact "
        f"vs inexact (the judge's agreement with humans: {lo:g}-{hi:g}%)"
    )


D9_NO_NULL = (
    "no null applies: the claim is one share (the judge labels a human review changed, over all judged "
    "completions), not a contrast between groups, so there are no labels to exchange; its evidence is the 95% "
    "Wilson interval of that share"
)


def claim_d9(agreement: dict[str, Any] | None = None, review: Any = None) -> ClaimResult:
    """D9 (Sec. 4, "Human Evaluation"): a human review changed 5% of the GPT-4 judge's labels, all borderline cases
    between near-exact and inexact.

    ``review``: an :class:`~iclmem.llm.review.ReviewResult` (a reviewed CSV imported with
    :func:`~iclmem.llm.review.import_review`). With it, the share of this build's judge labels the review changed,
    over all judged completions as in the paper, with its 95% Wilson interval; reproduced when the paper's 5% lies
    inside it (:func:`iclmem.report.verdicts.share_agreement`), differs when outside. No null applies
    (:data:`D9_NO_NULL`): a single share has no groups to exchange. Without a review, not testable; ``agreement``
    (offline vs LLM judge, :func:`iclmem.llm.judges.agreement`) is quoted as context, as two automatic judges agreeing
    is not the paper's measure.
    """
    paper_share = HUMAN_REVIEW_CHANGED_PERCENT / 100
    if review is not None and review.n_judged:
        value, interval = share_text(review.n_changed, review.n_judged)
        kinds = ", ".join(f"{int(r.n)} {r.match_judge} -> {r.match}" for r in review.changes.itertuples()) or "none"
        ours = (
            f"human review changed {value} of the judge's labels ({review.n_reviewed} borderline cases reviewed; "
            f"changes: {kinds})"
        )
        agrees, why = share_agreement(review.n_changed, review.n_judged, paper_share)
        verdict = evidence_verdict(agrees, None, no_null=True, contradicted=agrees is False)
        borderline = all(
            {a, b} <= {"near-exact", "no"}
            for a, b in zip(review.changes["match_judge"], review.changes["match"], strict=True)
        )
        reason = (
            f"Share of this build's judge labels changed by the imported human review, over all {review.n_judged} "
            "judged "
            f"completions as in the paper: {why}. "
            + (
                "Every change is between near-exact and inexact, as in the paper."
                if borderline and review.n_changed
                else "Not every change is between near-exact and inexact."
                if review.n_changed
                else "The review changed no label."
            )
        )
        return ClaimResult(
            "D9",
            paper_d9(),
            ours,
            verdict,
            reason,
            f"{interval} (95% Wilson)",
            null=D9_NO_NULL,
            observed=f"labels changed: {value}",
        )
    if agreement and agreement.get("n"):
        ours = (
            f"no human review; offline and LLM judges agree on {agreement['agreement']:.0%} of {agreement['n']} "
            f"completions (Cohen's kappa {agreement['kappa']:.2f})"
        )
    else:
        ours = "no human review; no second judge was run"
    reason = (
        "The share of judge labels a human review changes needs a human review of this build's completions: export the "
        "borderline cases (notebook parameter review_export), label them, and import the file (review_file). The "
        "agreement of the two automatic judges is shown as context, not as that share."
    )
    return ClaimResult("D9", paper_d9(), ours, "not testable here", reason)


def kappa_reading(kappa: float) -> str:
    """Landis & Koch's (1977) words for Cohen's kappa: "near chance" up to 0.20, then "fair", "moderate",
    "substantial" (above 0.60) and "almost perfect" (above 0.80); "not measured" for NaN."""
    if not np.isfinite(kappa):
        return "not measured"
    for bound, word in ((0.2, "near chance"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"


# -- all -------------------------------------------------------------------------------------------------------
def all_claims(
    mem: pd.DataFrame,
    perf: pd.DataFrame,
    focus: Focus,
    agreement: dict[str, Any] | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    review: Any = None,
    n_perm: int = N_PERMUTATIONS,
    labels_in_training: bool | None = None,
) -> list[ClaimResult]:
    """D1-D9 in order (``mem`` judged, ``perf`` as run; ``review``: an imported human review, for D9; ``n_perm``: null
    draws per claim; ``labels_in_training``: whether the focus model's training texts held the labels, for D8)."""
    return [
        claim_d1(mem, focus, n_boot, seed, n_perm),
        claim_d2(mem, focus, n_boot, seed, n_perm),
        claim_d3(mem, focus, n_boot, seed, n_perm),
        claim_d4(mem, focus, n_boot, seed, n_perm=n_perm),
        claim_d5(mem, focus, n_boot, seed, n_perm=n_perm),
        claim_d6(mem, perf, focus, n_boot, seed, n_perm=n_perm),
        claim_d7(mem, perf, focus, n_boot, seed, n_perm),
        claim_d8(mem, perf, focus, n_boot, seed, n_perm, labels_in_training),
        claim_d9(agreement, review),
    ]


def claims_table(results: Sequence[ClaimResult]) -> pd.DataFrame:
    """One row per claim: paper, ours, interval, verdict and the null rate (the scorecard's columns)."""
    return pd.DataFrame(
        [
            {
                "claim": r.claim_id,
                "paper": r.paper,
                "ours": r.ours,
                "interval": r.interval or "",
                "verdict": r.verdict,
                "null rate": null_rate_text(r.record()),
            }
            for r in results
        ]
    ).set_index("claim")


def verdict_counts(results: Sequence[ClaimResult]) -> str:
    """``"2 reproduced, 5 differs, 2 not testable here"`` (verdicts in :data:`iclmem.report.glue.VERDICTS` order,
    zeros left out)."""
    counts = pd.Series([r.verdict for r in results]).value_counts()
    return ", ".join(f"{int(counts[v])} {v}" for v in VERDICTS if v in counts.index) or "no claims"


__all__ = [
    "D9_NO_NULL",
    "all_claims",
    "claim_d6",
    "claim_d9",
    "claims_table",
    "kappa_reading",
    "paper_d6",
    "paper_d9",
    "verdict_counts",
]
