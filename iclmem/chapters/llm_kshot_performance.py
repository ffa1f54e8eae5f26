"""Golchin et al. 2024, Sec. 4 "Human Evaluation" and Sec. 5.2, Tab. 2: the performance claims D6-D8, the human review
D9, and all D claims together (notebook 06). The rules and nulls are those of :mod:`iclmem.chapters.llm_kshot_claims`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..llm.protocol import regime
from ..stats import N_PERMUTATIONS
from .claims import VERDICTS, null_rate_text
from .llm_kshot_claims import (
    claim_d1,
    claim_d2,
    claim_d3,
)
from .llm_kshot_contrast import raw_reading
from .llm_kshot_nulls import (
    _chunks,
    _draws_text,
    _gain_null,
    _Null,
    _null_boot,
    _null_of,
    _null_rng,
    _per_draw,
    _permute_within,
    _range_text,
    _rate_why,
    _row_intervals,
    _row_permutations,
)
from .llm_kshot_paper import (
    HUMAN_REVIEW_CHANGED_PERCENT,
    ICL_GAIN_MEMORIZATION,
    JUDGE_HUMAN_ACCURACY,
    TABLE2,
)
from .llm_kshot_rules import (
    N_BOOT,
    NULL_BOOT,
    SHORT_SETTINGS,
    ClaimResult,
    Focus,
    _answers_directional,
    _directional_why,
    _ks_text,
    _mean_pct,
    _needs,
    _pearson_rows,
    _quiet,
    bootstrap,
    correct_matrix,
    directional_agreement,
    icl_settings,
    memorization_matrix,
    pearson,
)
from .llm_kshot_settings import claim_d4, claim_d5
from .verdicts import evidence_verdict, share_agreement, share_text, summarize_null


# -- D6, D7, D8: performance -----------------------------------------------------------------------------------
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


def paper_d7() -> str:
    t = TABLE2
    cols = ", ".join(f"{d} " + "/".join(f"{v:.2f}" for v in t[d]) for d in t.columns)
    settings = "/".join(SHORT_SETTINGS[s] for s in t.index)
    return f"Pearson r(performance, memorization) across k, {settings}: {cols} (Tab. 2)"


def claim_d7(
    mem: pd.DataFrame,
    perf: pd.DataFrame,
    focus: Focus,
    n_boot: int = N_BOOT,
    seed: int = 0,
    n_perm: int = N_PERMUTATIONS,
) -> ClaimResult:
    """D7 (Sec. 5.2, Observation 3; Tab. 2): performance and memorization (exact + near-exact) correlate very strongly
    across the k regimes where ICL improves on zero-shot (WNLI, TREC, DBpedia: r ~0.9-1.0), negatively where it does
    not (RTE: r -0.30 to -0.55).

    Checked: Pearson r across the ks run of the focus's accuracy and memorization, per setting, with an interval from
    a bootstrap over instances (r recomputed on each resample). The predicted sign is that of the ICL gain (mean
    k > 0 accuracy minus zero-shot); reproduced when every setting's interval lies on that side of 0; differs when a
    setting's r does not have that sign. Two ks give r = +-1 by construction: at least three are needed.

    Null: an instance's memorization is exchangeable across the ks run (its k curve unrelated to accuracy's); each
    draw permutes the k labels of the memorization within every instance, the same permutation in all its settings,
    accuracy kept.
    """
    c = correct_matrix(perf, focus)
    run = [s for s in SHORT_SETTINGS if s in set(focus.rows(mem)["setting"])]
    ks = [k for k in c.columns if k in set(focus.rows(mem)["k"])]
    if len(ks) < 3 or 0 not in ks:
        return _needs(
            "D7",
            paper_d7(),
            f"k run: {ks}",
            f"A correlation across k needs at least three k values including k = 0 (run: {ks}); with two, r is +-1 "
            "or undefined by construction.",
        )
    index = c.index
    acc = c.reindex(columns=ks).to_numpy()
    mems = {s: memorization_matrix(mem, focus, [s]).reindex(index=index, columns=ks).to_numpy() for s in run}
    gain = float(np.nanmean(acc[:, 1:]) - np.nanmean(acc[:, 0])) * 100
    sign = 1 if gain > 0 else -1
    rs, cis = {}, {}
    for s, mx in mems.items():

        def stat(idx: np.ndarray, mx: np.ndarray = mx) -> float:
            return pearson(np.nanmean(acc[idx], axis=0), np.nanmean(mx[idx], axis=0))

        rs[s] = stat(np.arange(len(index)))
        cis[s] = bootstrap(len(index), stat, n_boot, seed)
    defined = [s for s in run if np.isfinite(rs[s]) and cis[s] is not None]
    ours = (
        ", ".join(f"{SHORT_SETTINGS[s]} r = {rs[s]:.2f}" for s in run)
        + f" ({_ks_text(ks)}; ICL accuracy gain {gain:+.0f} points)"
    )
    if not defined:
        return _needs(
            "D7",
            paper_d7(),
            ours,
            f"On the {focus.describe()} accuracy or memorization does not vary with k: "
            "Pearson's r is undefined in every setting.",
        )
    answers = {s: directional_agreement(rs[s], cis[s], sign) for s in defined}
    agrees = all(a for a, _ in answers.values())
    contradicted = any(x for _, x in answers.values())
    # the null: memorization's k labels permuted within each instance (all settings alike), accuracy kept
    n = len(index)
    rng = _null_rng(seed, "D7")
    perms = _row_permutations(rng, n_perm, n, len(ks))
    boot = _null_boot(rng, n_perm, n)
    acc_all, acc_reps = np.nanmean(acc, axis=0), np.empty((n_perm, NULL_BOOT, len(ks)))  # ks; draws x resamples x ks
    with _quiet():
        for sl in _chunks(n_perm, boot[0].size * len(ks)):
            acc_reps[sl] = np.nanmean(acc[boot[sl]], axis=2)
    all_agree, any_defined = np.ones(n_perm, bool), np.zeros(n_perm, bool)
    ranges = []
    for s in run:
        mp = _permute_within(mems[s], perms)  # draws x instances x ks
        r_reps = np.empty((n_perm, NULL_BOOT))
        with _quiet():
            r_est = _pearson_rows(acc_all, np.nanmean(mp, axis=1))
            for sl in _chunks(n_perm, boot[0].size * len(ks)):
                r_reps[sl] = _pearson_rows(acc_reps[sl], np.nanmean(_per_draw(mp[sl], boot[sl]), axis=2))
        lo, hi = _row_intervals(r_reps)
        ok = np.isfinite(r_est) & np.isfinite(lo) & np.isfinite(hi)
        all_agree &= ~ok | _answers_directional(r_est, lo, hi, sign)[0]
        any_defined |= ok
        if s in defined:
            sm = summarize_null(rs[s], r_est, ok)
            ranges.append(f"{SHORT_SETTINGS[s]} {_range_text(sm, '{:+.2f}', '')}")
    null_agrees = all_agree & any_defined
    rate = float(null_agrees.mean())
    null = (
        "an instance's memorization exchangeable across the ks run (its k curve unrelated to accuracy's), its k labels "
        "permuted within every instance, the same in all its settings, accuracy kept; "
        f"{_draws_text(n_perm, seed, n_boot)}"
    )
    observed = (
        ", ".join(f"{SHORT_SETTINGS[s]} r = {rs[s]:+.2f}" for s in defined)
        + f" (predicted sign {'+' if sign > 0 else '-'})"
    )
    side = (
        "positive (ICL beats zero-shot, as WNLI/TREC/DBpedia)"
        if sign > 0
        else "negative (ICL does not beat zero-shot, as RTE)"
    )
    n_agree, n_wrong = sum(a for a, _ in answers.values()), sum(x for _, x in answers.values())
    reason = (
        f"Checked on the {focus.describe()}: Pearson r across {_ks_text(ks)} of accuracy and memorization per setting; "
        f"the paper's pattern predicts r {side}; {n_agree} of {len(defined)} settings with a defined r have their "
        f"interval on that side of 0"
        + (f", {n_wrong} have r of the other sign" if n_wrong else "")
        + ("" if len(defined) == len(run) else "; the others have an undefined r")
        + ". Few ks make each r rest on few points."
        + _rate_why(agrees, rate, n_perm)
        + raw_reading(mem, focus, "the paper's Tab. 2 correlates raw memorization rates with accuracy")
    )
    method = next(cis[s].method() for s in defined)
    interval = "; ".join(
        f"{SHORT_SETTINGS[s]} " + (cis[s].bounds("{:.2f}", "") if cis[s] else "undefined") for s in run
    )
    interval += f" (r recomputed per resample; {method})"
    return ClaimResult(
        "D7",
        paper_d7(),
        ours,
        evidence_verdict(agrees, rate, contradicted=contradicted),
        reason,
        interval,
        null=null,
        observed=observed,
        null_range="; ".join(ranges),
        null_rate=rate,
    )


def paper_d8() -> str:
    return (
        "performance on memorized instances is higher than on non-memorized ones across nearly all regimes "
        "(Sec. 5.2, Obs. 2)"
    )


def _memorized_gap(
    cells: Sequence[tuple[np.ndarray, np.ndarray]], mem_idx: np.ndarray, acc_idx: np.ndarray
) -> np.ndarray:
    """D8's statistic for index arrays ``mem_idx`` (draws x resamples x instances, rows of the memorization) and
    ``acc_idx`` (the same shape, rows of the accuracy, paired with them): the mean over the (setting, k) cells
    holding both groups of accuracy on memorized minus non-memorized instances, in points (NaN when no cell has
    both)."""
    total = np.zeros(mem_idx.shape[:-1])
    count = np.zeros(mem_idx.shape[:-1])
    with _quiet():
        for mcol, ccol in cells:
            mm, cc = mcol[mem_idx], ccol[acc_idx]
            ok = np.isfinite(mm) & np.isfinite(cc)
            hit, miss = ok & (mm > 0), ok & ~(mm > 0)
            n1, n0 = hit.sum(axis=-1), miss.sum(axis=-1)
            d = (np.where(hit, cc, 0.0).sum(axis=-1) / n1 - np.where(miss, cc, 0.0).sum(axis=-1) / n0) * 100
            valid = (n1 > 0) & (n0 > 0)
            total += np.where(valid, d, 0.0)
            count += valid
        return np.where(count > 0, total / count, np.nan)


def claim_d8(
    mem: pd.DataFrame,
    perf: pd.DataFrame,
    focus: Focus,
    n_boot: int = N_BOOT,
    seed: int = 0,
    n_perm: int = N_PERMUTATIONS,
) -> ClaimResult:
    """D8 (Sec. 5.2, Observation 2): accuracy on memorized instances exceeds accuracy on non-memorized ones.

    Checked on the focus model with **all** its instances (members and non-members: memorized vs not is the split):
    per (setting, k) cell holding both groups, accuracy of the memorized minus the non-memorized instances, averaged
    over the cells; bootstrap over instances (cells lacking a group in a resample are skipped); the rule: the interval
    lies above 0.

    Null: the claim contrasts instances, so its null exchanges instances: which instance is memorized is unrelated to
    which is classified right. Each draw permutes the instances of the memorization against those of the accuracy (an
    instance's memorization moves whole, all settings and ks). A within-instance permutation across k would keep an
    instance-level link, which is the claim itself.
    """
    c = correct_matrix(perf, focus, members_only=False)
    run = [s for s in SHORT_SETTINGS if s in set(focus.rows(mem, False)["setting"])]
    ks = list(c.columns)
    cells = []
    for s in run:
        mx = memorization_matrix(mem, focus, [s], members_only=False).reindex(index=c.index, columns=ks).to_numpy()
        cells += [(s, k, mx[:, j], c.to_numpy()[:, j]) for j, k in enumerate(ks)]

    def diffs(idx: np.ndarray) -> list[tuple[str, int, float]]:
        out = []
        for s, k, mcol, ccol in cells:
            mm, cc = mcol[idx], ccol[idx]
            ok = np.isfinite(mm) & np.isfinite(cc)
            hit = mm[ok] > 0
            if hit.any() and (~hit).any():
                out.append((s, k, float(cc[ok][hit].mean() - cc[ok][~hit].mean()) * 100))
        return out

    def stat(idx: np.ndarray) -> float:
        d = diffs(idx)
        return float(np.mean([x for *_, x in d])) if d else float("nan")

    n = len(c)
    full = diffs(np.arange(n))
    if not full:
        return _needs(
            "D8",
            paper_d8(),
            "no (setting, k) cell with both memorized and non-memorized instances",
            f"On the {focus.describe(False)}: no (setting, k) holds both memorized and non-memorized instances.",
        )
    est = stat(np.arange(n))
    ci = bootstrap(n, stat, n_boot, seed)
    by_regime = pd.DataFrame(full, columns=["setting", "k", "d"]).assign(regime=lambda f: f["k"].map(regime))
    per = ", ".join(f"{r} {g['d'].mean():+.0f} points" for r, g in by_regime.groupby("regime", sort=False))
    ours = (
        f"memorized minus non-memorized accuracy {est:+.0f} points (mean of {len(full)} (setting, k) cells; higher in "
        f"{int((by_regime['d'] > 0).sum())} of {len(full)}; by regime: {per})"
    )
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        rng = _null_rng(seed, "D8")
        perm = np.argsort(rng.random((n_perm, n)), axis=1)
        boot = _null_boot(rng, n_perm, n)
        rows = np.concatenate([np.broadcast_to(np.arange(n), (n_perm, 1, n)), boot], axis=1)  # row 0: the whole sample
        values = np.empty(rows.shape[:2])
        pairs = [(mcol, ccol) for *_, mcol, ccol in cells]
        for sl in _chunks(n_perm, rows[0].size * len(pairs)):
            values[sl] = _memorized_gap(pairs, _per_draw(perm[sl], rows[sl]), rows[sl])
        null_est = values[:, 0]
        null_agrees = _answers_directional(null_est, *_row_intervals(values[:, 1:]))[0]
        summary = summarize_null(est, null_est, null_agrees)
        nul = _null_of(
            summary,
            agrees,
            (
                "which instances are memorized unrelated to which are classified right: the instances of the "
                "memorization "
                "permuted against those of the accuracy (an instance's memorization moves whole, all settings and ks); "
                f"{_draws_text(n_perm, seed, n_boot)}"
            ),
            f"memorized minus non-memorized accuracy: {est:+.1f} points",
        )
    reason = (
        f"Checked on the {focus.describe(False)}: per (setting, k) with both groups, accuracy of memorized minus "
        f"non-memorized instances, averaged; {_directional_why(est, ci)}.{nul.why}"
    )
    return ClaimResult(
        "D8",
        paper_d8(),
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
    inside it (:func:`iclmem.chapters.verdicts.share_agreement`), differs when outside. No null applies
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
) -> list[ClaimResult]:
    """D1-D9 in order (``mem`` judged, ``perf`` as run; ``review``: an imported human review, for D9; ``n_perm``: null
    draws per claim)."""
    return [
        claim_d1(mem, focus, n_boot, seed, n_perm),
        claim_d2(mem, focus, n_boot, seed, n_perm),
        claim_d3(mem, focus, n_boot, seed, n_perm),
        claim_d4(mem, focus, n_boot, seed, n_perm=n_perm),
        claim_d5(mem, focus, n_boot, seed, n_perm=n_perm),
        claim_d6(mem, perf, focus, n_boot, seed, n_perm=n_perm),
        claim_d7(mem, perf, focus, n_boot, seed, n_perm),
        claim_d8(mem, perf, focus, n_boot, seed, n_perm),
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
    """``"2 reproduced, 5 differs, 2 not testable here"`` (verdicts in :data:`iclmem.chapters.claims.VERDICTS` order,
    zeros left out)."""
    counts = pd.Series([r.verdict for r in results]).value_counts()
    return ", ".join(f"{int(counts[v])} {v}" for v in VERDICTS if v in counts.index) or "no claims"
