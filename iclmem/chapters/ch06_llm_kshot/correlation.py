"""Golchin et al. 2024, Sec. 5.2 (Observations 2 and 3), Tab. 2: the claims D7 and D8, how accuracy goes with
memorization (notebook 06).

D7: Pearson r of accuracy and memorization across the ks run, per setting (Tab. 2); D8: accuracy on memorized
instances against non-memorized ones. The rules and nulls are those of :mod:`iclmem.chapters.ch06_llm_kshot.claims`;
re-exported by :mod:`iclmem.chapters.ch06_llm_kshot.performance`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.accuracy import chance_level, icl_condition
from iclmem.chapters.ch06_llm_kshot.contrast import raw_reading
from iclmem.chapters.ch06_llm_kshot.nulls import (
    _chunks,
    _draws_text,
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
from iclmem.chapters.ch06_llm_kshot.paper import TABLE2
from iclmem.chapters.ch06_llm_kshot.rules import (
    N_BOOT,
    NULL_BOOT,
    SHORT_SETTINGS,
    Focus,
    _answers_directional,
    _directional_why,
    _ks_text,
    _needs,
    _pearson_rows,
    _quiet,
    bootstrap,
    correct_matrix,
    directional_agreement,
    memorization_matrix,
    pearson,
)
from iclmem.llm.protocol import regime
from iclmem.report.records import ClaimResult
from iclmem.report.verdicts import evidence_verdict, summarize_null
from iclmem.stats import N_PERMUTATIONS

#: D7's "very strong" correlation (Obs. 3: "Pearson coefficients provide very strong evidence"): r >= 0.8, the usual
#: lower bound of "very strong" (Evans 1996). The paper states no number; its positive Tab. 2 values are 0.88-1.00.
VERY_STRONG_R = 0.8


def paper_d7() -> str:
    t = TABLE2
    cols = ", ".join(f"{d} " + "/".join(f"{v:.2f}" for v in t[d]) for d in t.columns)
    settings = "/".join(SHORT_SETTINGS[s] for s in t.index)
    return (
        f"a very strong Pearson r(performance, memorization) across k when ICL beats zero-shot (Obs. 3); {settings}: "
        f"{cols} (Tab. 2; RTE, where ICL does not help, is reported, not claimed)"
    )


def _k0_kept_permutations(rng: np.random.Generator, n_perm: int, n: int, ks: Sequence[int]) -> np.ndarray:
    """``(n_perm, n, len(ks))`` column orders that keep the k = 0 column in place and permute the ks > 0 within each
    instance (a uniform permutation per draw and instance)."""
    zero = list(ks).index(0)
    shots = [j for j in range(len(ks)) if j != zero]
    inner = _row_permutations(rng, n_perm, n, len(shots))
    out = np.empty((n_perm, n, len(ks)), dtype=inner.dtype)
    out[..., zero] = zero
    out[..., shots] = np.asarray(shots)[inner]
    return out


def claim_d7(
    mem: pd.DataFrame,
    perf: pd.DataFrame,
    focus: Focus,
    n_boot: int = N_BOOT,
    seed: int = 0,
    n_perm: int = N_PERMUTATIONS,
    chance: float | None = None,
    strength: float = VERY_STRONG_R,
) -> ClaimResult:
    """D7 (Sec. 5.2, Observation 3; Tab. 2): when ICL improves performance on zero-shot, performance and memorization
    (exact + near-exact) correlate very strongly across the k regimes ("Pearson coefficients provide very strong
    evidence": WNLI, TREC, DBpedia, r 0.88-1.00). The paper claims nothing where ICL does not help (RTE's negative r is
    reported, not claimed), so neither does the rule.

    Condition (:func:`~iclmem.chapters.ch06_llm_kshot.accuracy.icl_condition`): the focus's mean k > 0 accuracy minus
    its
    zero-shot accuracy has an interval above 0, **and** some k > 0 has an accuracy interval above ``chance`` (the
    share of the most frequent label, from ``perf``'s ``label`` column when ``None``). Without both, not testable here:
    a model that copies one demonstration label to every instance beats a zero-shot prompt it cannot answer in format,
    at chance, and two curves that both jump from k = 0 correlate whatever links them.

    Checked: Pearson r across the ks run of the focus's accuracy and memorization, per setting, with a bootstrap
    interval over instances (r recomputed per resample). Reproduced when every setting's interval lies at or above
    ``strength`` (:data:`VERY_STRONG_R`, "very strong"; a threshold of this companion: the paper gives none); differs
    when a setting's interval lies wholly below it; inconclusive otherwise. At least three ks, k = 0 among them.

    Null: memorization's curve over the ks > 0 unrelated to accuracy's, **with k = 0 kept**: each draw permutes the
    k > 0 labels of the memorization within every instance (the same permutation in all its settings), leaving
    k = 0 in place and accuracy as observed. A shared jump from k = 0 survives every draw, so a rule that only sees
    that jump says reproduced under the null too.
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
    if chance is None:
        chance = chance_level(focus.rows(perf))
        if not np.isfinite(chance):
            raise ValueError("claim_d7 needs chance (a share, 0-1) or a perf frame with a label column")
    cond = icl_condition(perf[perf["k"].isin(ks)], focus, chance, n_boot, seed)
    index = c.index
    acc = c.reindex(columns=ks).to_numpy()
    mems = {s: memorization_matrix(mem, focus, [s]).reindex(index=index, columns=ks).to_numpy() for s in run}
    rs, cis, r_shots = {}, {}, {}
    for s, mx in mems.items():

        def stat(idx: np.ndarray, mx: np.ndarray = mx) -> float:
            return pearson(np.nanmean(acc[idx], axis=0), np.nanmean(mx[idx], axis=0))

        rs[s] = stat(np.arange(len(index)))
        cis[s] = bootstrap(len(index), stat, n_boot, seed)
        with _quiet():
            r_shots[s] = pearson(np.nanmean(acc[:, 1:], axis=0), np.nanmean(mx[:, 1:], axis=0))
    defined = [s for s in run if np.isfinite(rs[s]) and cis[s] is not None]
    ours = ", ".join(f"{SHORT_SETTINGS[s]} r = {rs[s]:.2f}" for s in run) + f" ({_ks_text(ks)}; {cond.text()})"
    if not cond.met:
        return _needs(
            "D7",
            paper_d7(),
            ours,
            f"On the {focus.describe()}: {cond.why_not()}. The paper's claim is conditioned on ICL improving "
            "performance, so this build cannot test it.",
        )
    if not defined:
        return _needs(
            "D7",
            paper_d7(),
            ours,
            f"On the {focus.describe()} accuracy or memorization does not vary with k: "
            "Pearson's r is undefined in every setting.",
        )
    strong = {s: cis[s].lo >= strength for s in defined}
    weak = {s: cis[s].hi < strength for s in defined}
    agrees = len(defined) == len(run) and all(strong.values())
    contradicted = any(weak.values())
    # the null: memorization's k > 0 labels permuted within each instance (all settings alike), k = 0 and accuracy kept
    n = len(index)
    rng = _null_rng(seed, "D7")
    perms = _k0_kept_permutations(rng, n_perm, n, ks)
    boot = _null_boot(rng, n_perm, n)
    acc_all, acc_reps = np.nanmean(acc, axis=0), np.empty((n_perm, NULL_BOOT, len(ks)))  # ks; draws x resamples x ks
    with _quiet():
        for sl in _chunks(n_perm, boot[0].size * len(ks)):
            acc_reps[sl] = np.nanmean(acc[boot[sl]], axis=2)
    null_agrees = np.ones(n_perm, bool)
    ranges = []
    for s in run:
        mp = _permute_within(mems[s], perms)  # draws x instances x ks
        r_reps = np.empty((n_perm, NULL_BOOT))
        with _quiet():
            r_est = _pearson_rows(acc_all, np.nanmean(mp, axis=1))
            for sl in _chunks(n_perm, boot[0].size * len(ks)):
                r_reps[sl] = _pearson_rows(acc_reps[sl], np.nanmean(_per_draw(mp[sl], boot[sl]), axis=2))
        lo, _ = _row_intervals(r_reps)
        null_agrees &= np.isfinite(lo) & (lo >= strength)
        if s in defined:
            sm = summarize_null(rs[s], r_est, np.isfinite(lo) & (lo >= strength))
            ranges.append(f"{SHORT_SETTINGS[s]} {_range_text(sm, '{:+.2f}', '')}")
    rate = float(null_agrees.mean())
    null = (
        "memorization's curve over the ks > 0 unrelated to accuracy's, k = 0 kept: the k > 0 labels of the "
        "memorization permuted within every instance (the same in all its settings), k = 0 and accuracy as observed; "
        f"{_draws_text(n_perm, seed, n_boot)}"
    )
    observed = (
        ", ".join(f"{SHORT_SETTINGS[s]} r = {rs[s]:+.2f}" for s in defined) + f" (very strong: r >= {strength:g})"
    )
    shots_text = ", ".join(
        f"{SHORT_SETTINGS[s]} {r_shots[s]:+.2f}" if np.isfinite(r_shots[s]) else f"{SHORT_SETTINGS[s]} undefined"
        for s in run
    )
    n_strong, n_weak = sum(strong.values()), sum(weak.values())
    reason = (
        f"Checked on the {focus.describe()}: ICL improves on zero-shot and on chance ({cond.text()}), so the claim "
        f"applies. Pearson r across {_ks_text(ks)} of accuracy and memorization per setting; {n_strong} of {len(run)} "
        f"settings have their interval at or above {strength:g} (very strong)"
        + (f", {n_weak} wholly below it" if n_weak else "")
        + ("" if len(defined) == len(run) else "; the others have an undefined r")
        + f". Without k = 0 (the ks > 0 only) r is {shots_text}. Few ks make each r rest on few points."
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
    labels_in_training: bool | None = None,
) -> ClaimResult:
    """D8 (Sec. 5.2, Observation 2): accuracy on memorized instances exceeds accuracy on non-memorized ones.

    ``labels_in_training``: whether the model's training texts held the instances' labels (the controlled fine-tune's
    ``finetune_labels``; None: unknown, as for a hosted model, whose training data are the datasets with their
    labels). With False the claim is not testable here: membership cannot raise accuracy, so the contamination
    D8 reflects cannot occur.

    Checked on the focus model with **all** its instances (members and non-members: memorized vs not is the split):
    per (setting, k) cell holding both groups, accuracy of the memorized minus the non-memorized instances, averaged
    over the cells; bootstrap over instances (cells lacking a group in a resample are skipped); the rule: the interval
    lies above 0.

    Null: the claim contrasts instances, so its null exchanges instances: which instance is memorized is unrelated to
    which is classified right. Each draw permutes the instances of the memorization against those of the accuracy (an
    instance's memorization moves whole, all settings and ks). A within-instance permutation across k would keep an
    instance-level link, which is the claim itself.
    """
    if labels_in_training is False:
        return _needs(
            "D8",
            paper_d8(),
            "the fine-tuning texts hold no labels",
            "The model was fine-tuned on its members' texts without their labels (finetune_labels off): having seen "
            "an instance cannot teach its label, so the contamination D8 reflects cannot occur in this build.",
        )
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
