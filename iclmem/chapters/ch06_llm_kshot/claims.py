"""Golchin et al. 2024, "Memorization In In-Context Learning", Sec. 3-5, Tab. 1-3, Fig. 2-4; claims D1-D9.

The claims D1-D9 of notebook 06 (``notebooks/06_llm_kshot_replication.py``): what only that chapter needs,
apart from the engine (:mod:`iclmem.llm`, which never imports from here): one function per claim, ``claim_d1`` ...
``claim_d9``, and :func:`all_claims`. Their reusable steps live in one-job modules of this package:

* :mod:`~iclmem.chapters.ch06_llm_kshot.paper`: the paper's values (Tab. 1-3, Sec. 5.1) and its side of each claim;
* :mod:`~iclmem.chapters.ch06_llm_kshot.matrices`: the rows a claim reads (:class:`Focus`), frames as matrices;
* :mod:`~iclmem.chapters.ch06_llm_kshot.rules`: the intervals and the directional and equality rules;
* :mod:`~iclmem.chapters.ch06_llm_kshot.nulls`: the permutation nulls;
* :mod:`~iclmem.chapters.ch06_llm_kshot.basis`: the one basis each claim's verdict reads (:data:`BASIS`);
* :mod:`~iclmem.chapters.ch06_llm_kshot.contrast` (members net of non-members, D1-D5, D7),
  :mod:`~iclmem.chapters.ch06_llm_kshot.transitions` (D3), :mod:`~iclmem.chapters.ch06_llm_kshot.equality` (D4, D5),
  :mod:`~iclmem.chapters.ch06_llm_kshot.accuracy` (D6, D7's condition) and
  :mod:`~iclmem.chapters.ch06_llm_kshot.correlation` (D7, D8).

The claims. Pure functions over the notebook's frames: ``mem`` (one judged memorization completion per model,
setting, k and instance: columns ``model, setting, k, instance_id, member, match``;
:func:`~iclmem.llm.replication.run_memorization` then :func:`~iclmem.llm.replication.add_judgement`) and ``perf``
(one classification answer per model, k and instance: ``model, k, instance_id, member, correct, error``;
:func:`~iclmem.llm.replication.run_performance`). Each ``claim_dN`` returns a :class:`ClaimResult`, the fields of
:func:`iclmem.report.glue.glue_claim`; the paper's values are formatted in :mod:`~iclmem.chapters.ch06_llm_kshot.paper`.

What is checked. The paper measured GPT-4 on WNLI, RTE, TREC and DBpedia; this build runs another model on
other data, so its *levels* are not comparable and each claim is checked for its **direction** (or equality)
on the rows of one :class:`Focus`: by default the fine-tuned model on its fine-tuning members (the rows a
model is known to have seen, the controlled analogue of GPT-4's training data).

On which basis (:data:`~iclmem.chapters.ch06_llm_kshot.basis.BASIS`, one table). The paper reads raw rates (Sec. 3.2,
5). A claim about memorization (D1-D5, D7) is judged **net of non-members** where the focus model has non-members:
the members' reading minus the non-members' under the same prompts, on all the model's instances
(:mod:`~iclmem.chapters.ch06_llm_kshot.contrast`); its record shows the raw reading of the focus rows (the paper's)
beside the verdict, not judged. D6 and D8 are about accuracy and are judged on raw rates, the record saying why.
Without non-members (no fine-tune) every claim is judged on raw rates, the only reading there, and the record says so.
Each record's reason opens with the basis its verdict reads ("Verdict on: ...").

How a verdict is decided (uniformly; the words of :data:`iclmem.report.glue.VERDICTS`, chosen by
:func:`iclmem.report.verdicts.evidence_verdict` from what the claim's rule says on the build and under its null):

* **the rule on the build.** A directional claim (an effect > 0) *agrees* when its 95% percentile bootstrap interval
  over instances lies above 0; it is *contradicted* when that interval lies below 0; in between (the interval includes
  0, whatever the estimate's sign: not distinguishable from no effect at this many instances) it is inside the noise
  (issue 53: a wrong-signed estimate alone no longer reads "differs"). An equality claim (D4, D5 at k >= 25) agrees
  when the interval of the difference lies within +-:data:`EQUIVALENCE_MARGIN` percentage points (a margin of this
  companion, not of the paper), is contradicted when it lies wholly outside, and is inside the noise when it straddles
  the margin. An equality also needs memorization to be there: when the compared level's interval does not lie above
  the margin, every setting is within the margin of the others by the floor (two settings at 0% are trivially
  "equal"), and the claim is ``inconclusive``;
* **the rule under the claim's null.** Each claim has a null, a world in which the claim is false on the basis its
  verdict reads, built from this build's instances: read net of non-members, a rise (D1-D3) has the member labels
  permuted across the model's instances; read raw, the labels the claim contrasts are made exchangeable within an
  instance (the ks for D1-D3 and D6-D7, the settings for D5 at k = 0), or between instances where the claim contrasts
  instances (D8: memorized vs not). For an equality the settings are exchanged within an instance and one of them is
  then thinned (memorized completions dropped at random; read net, the members' only) until it lies a margin below
  the other (D4, D5 at k >= 25), since exchangeable settings are what an equality claims; D7's null permutes the
  k > 0 labels within every instance, k = 0 kept, on either basis. :data:`~iclmem.stats.permutation.N_PERMUTATIONS`
  draws (``draws.n_perm`` of a :class:`~.rules.ClaimDraws`), seeded by the claim's ``draws.seed``; each draw is
  judged by the claim's own rule with a :data:`~.rules.NULL_BOOT`-resample bootstrap. The *null rate* is the share of
  draws in which the rule says "reproduced";
* **the verdict.** ``reproduced`` when the rule agrees and its null rate is at most 5%; ``inconclusive`` when it
  agrees but the null rate is higher (chance alone gives that answer), or when the disagreement lies inside the
  noise; ``differs`` when the build clearly contradicts the claim; ``not testable here`` when the frames lack what
  the claim needs (a k, a setting, a human review; the reason names it). D9 (a single share) has no groups to
  exchange: no null applies, and its Wilson interval decides. No D claim holds by construction.

Bootstraps resample instances with replacement (paired: an instance keeps all its k, settings and answers),
seeded, :data:`~.rules.N_BOOT` resamples; replicates where the statistic is undefined are dropped and the interval is
undefined when fewer than half remain. Each record carries its null: what is exchangeable, the observed statistic,
its central 95% under the null and the null rate (:class:`ClaimResult`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.accuracy import IclCondition, chance_level, icl_condition
from iclmem.chapters.ch06_llm_kshot.basis import basis_lead, paper_reading, reads_net
from iclmem.chapters.ch06_llm_kshot.contrast import (
    PRESENCE_FLOOR,
    excess_level,
    excess_rise,
    excess_why,
    ground_truth,
    membership,
    net_contrast,
    presence_text,
    rise_excess,
)
from iclmem.chapters.ch06_llm_kshot.correlation import (
    VERY_STRONG_R,
    CurveReading,
    curve_null,
    memorized_difference,
    memorized_differences,
    memorized_gap_null,
    net_setting_correlations,
    r_intervals_text,
    r_without_zero_text,
    setting_correlations,
)
from iclmem.chapters.ch06_llm_kshot.equality import (
    EqualReading,
    SettingsPair,
    difference_intervals_text,
    equal_floor_text,
    maximum_floor_text,
    net_equal_null,
    net_gap,
    net_gap_null,
    settings_difference,
    settings_equal_null,
    settings_gap_null,
    short_level,
)
from iclmem.chapters.ch06_llm_kshot.matrices import MEMORIZED, Focus, correct_matrix, icl_settings, memorization_matrix
from iclmem.chapters.ch06_llm_kshot.nulls import (
    ClaimNull,
    directional_null,
    gain_null,
    judged_record,
    null_boot,
    null_of,
    null_rng,
    permute_within,
    row_permutations,
)
from iclmem.chapters.ch06_llm_kshot.paper import (
    HUMAN_REVIEW_CHANGED_PERCENT,
    ICL_GAIN_MEMORIZATION,
    ICL_SETTING,
    KEY_ELEMENT_SETTING,
    MEMORIZATION_RANGES,
    SETTINGS_EQUAL_FROM_K,
    SHARP_RISE_K,
    SHORT_SETTINGS,
    UPPER_BOUND_SETTING,
    paper_d1,
    paper_d2,
    paper_d3,
    paper_d4,
    paper_d5,
    paper_d6,
    paper_d7,
    paper_d8,
    paper_d9,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    DEFAULT_DRAWS,
    EQUIVALENCE_MARGIN,
    ClaimDraws,
    Interval,
    directional_agreement,
    directional_why,
    equivalence_why,
    instance_interval,
    ks_text,
    margin_agreement,
    mean_pct,
    not_testable,
    quiet,
)
from iclmem.chapters.ch06_llm_kshot.transitions import match_cube, transition_counts
from iclmem.llm.protocol import BELOW_FEW_SHOT, regime
from iclmem.report.records import ClaimResult
from iclmem.report.verdicts import (
    directional_answers,
    equivalence_answers,
    evidence_verdict,
    share_agreement,
    share_text,
    summarize_null,
)


def _regime_levels(m: pd.DataFrame, ks: list[int]) -> str:
    """D1's levels: memorization per regime of Sec. 5.1 (zero-, few-, many-shot; k in 1-24 apart), with the spread
    over its ks."""
    levels = []
    below = [BELOW_FEW_SHOT] if any(regime(k) == BELOW_FEW_SHOT for k in ks) else []  # k in 1-24: no paper regime
    for name in ["zero-shot", *below, *(r for r in MEMORIZATION_RANGES if r != "zero-shot")]:
        rk = [k for k in ks if regime(k) == name]
        if not rk:
            levels.append(f"{name}: no k run")
            continue
        per_k = [mean_pct(m, [k]) for k in rk]
        spread = f" ({ks_text(rk)}: {min(per_k):.0f}-{max(per_k):.0f}%)" if len(rk) > 1 else f" (k = {rk[0]})"
        levels.append(f"{name} {mean_pct(m, rk):.0f}%{spread}")
    return "; ".join(levels)


def _raw_text(
    what: str, est: float, ci: Interval | None, fmt: str = "{:+.0f}", unit: str = " points", rule: str | None = None
) -> str:
    """The raw reading of a claim judged net of non-members, for :func:`~.basis.paper_reading`: its estimate, its
    bootstrap interval and what the claim's rule says on it (``rule``; the directional rule's words by default)."""
    bounds = ci.bounds(fmt, unit) if ci is not None else "undefined"
    return f"{what} {fmt.format(est)}{unit}, interval {bounds}: " + (
        directional_why(est, ci, what="it") if rule is None else rule
    )


def claim_d1(mem: pd.DataFrame, focus: Focus, draws: ClaimDraws = DEFAULT_DRAWS) -> ClaimResult:
    """D1 (Sec. 5.1, Observation 1): ICL surfaces more memorization than zero-shot; levels per regime.

    Basis (:data:`~iclmem.chapters.ch06_llm_kshot.basis.BASIS`): net of non-members where the model has them. Checked:
    memorization (exact + near-exact) with k > 0 (mean of the ks run) minus zero-shot, per instance, in the
    standard-ICL setting; the paper's levels (GPT-4, four datasets) are quoted, not compared.

    Net of non-members: the members' rise minus the non-members' (:func:`~.contrast.rise_excess`); the rule: its
    interval lies above 0. Null: membership exchangeable, the member labels permuted across the model's instances. The
    raw rise of the focus rows (the paper's reading) is shown beside the verdict, not judged.

    Raw (no non-members): the rule: the bootstrap interval of the focus's mean rise lies above 0. Null: an instance's
    memorization is exchangeable across the ks run (k = 0 included), i.e. the demonstrations change nothing; each draw
    permutes the k labels within every instance (``draws.n_perm`` draws, seeded by ``draws.seed``).
    """
    settings, where = icl_settings(mem)
    m = memorization_matrix(mem, focus, settings)
    ks = list(m.columns)
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return not_testable(
            "D1", paper_d1(), f"k run: {ks}", "D1 needs the zero-shot regime (k = 0) and at least one k > 0."
        )
    x = m.to_numpy()
    zero_col, shot_cols = ks.index(0), [ks.index(k) for k in shots]
    zero, icl = x[:, zero_col], np.nanmean(x[:, shot_cols], axis=1)

    def stat(idx: np.ndarray) -> float:
        return float(np.nanmean(icl[idx] - zero[idx]) * 100)

    est = stat(np.arange(len(x)))
    ci = instance_interval(len(x), stat, draws.n_boot, draws.seed)
    ours = _regime_levels(m, ks) + f"; k > 0 minus zero-shot {est:+.0f} points"
    if focus.members_only:
        nm = memorization_matrix(mem, focus, settings, members_only=False)
        nm = nm.loc[nm.index.difference(m.index)]
        if len(nm):
            ours += f" (non-members: zero-shot {mean_pct(nm, [0]):.0f}%, k > 0 {mean_pct(nm, shots):.0f}%)"
    missing = [name for name in ("few-shot", "many-shot") if not any(regime(k) == name for k in shots)]
    unrun = f"; no k of the {' and '.join(missing)} regime was run" if missing else ""
    truth = ground_truth(mem, focus)
    excess = rise_excess("D1", mem, focus, settings, shots, draws) if reads_net("D1", truth) else None
    if excess is not None:
        ex, agrees, contradicted, nul = excess
        ours = (
            f"members minus non-members: k > 0 minus zero-shot {ex.estimate:+.0f} points (members "
            f"{ex.member_rise:+.0f}, non-members {ex.non_member_rise:+.0f}); raw: {ours}"
        )
        reason = (
            basis_lead("D1", True)
            + f" Direction checked on the {focus.model} model, members minus non-members under the same prompt, "
            f"{where}: the rise from zero-shot to k > 0 ({ks_text(shots)}); "
            f"{excess_why(ex, agrees, 'the member-minus-non-member rise')}. The paper's levels are GPT-4's on "
            f"WNLI/RTE/TREC/DBpedia and are not compared{unrun}.{nul.why}"
            + paper_reading(focus.describe(), _raw_text("k > 0 minus zero-shot", est, ci))
        )
        return judged_record("D1", paper_d1(), ours, reason, (agrees, contradicted), nul, ex.text())
    truth = False  # a net claim read raw: the model has no non-members (to subtract under this prompt)
    agrees, contradicted = directional_agreement(est, ci)
    nul = ClaimNull()
    if ci is not None:
        summary = gain_null(x, shot_cols, zero_col, est, "D1", draws)
        nul = null_of(
            summary,
            agrees,
            (
                "memorization exchangeable across the ks of an instance (k = 0 included: the demonstrations change "
                f"nothing), its k labels permuted within every instance; {draws.text}"
            ),
            f"k > 0 minus zero-shot: {est:+.1f} points",
        )
    reason = basis_lead("D1", truth) + (
        f" Direction checked on the {focus.describe()}, {where}: memorization with k > 0 ({ks_text(shots)}) minus "
        f"zero-shot; {directional_why(est, ci)}. The paper's levels are GPT-4's on WNLI/RTE/TREC/DBpedia and are "
        f"not compared{unrun}.{nul.why}"
    )
    return judged_record("D1", paper_d1(), ours, reason, (agrees, contradicted), nul, ci.text() if ci else None)


def claim_d2(mem: pd.DataFrame, focus: Focus, draws: ClaimDraws = DEFAULT_DRAWS) -> ClaimResult:
    """D2 (Sec. 5.1, Observation 2): a few demonstrations (25 shots) sharply raise memorization over zero-shot.

    Basis: net of non-members where the model has them (:data:`~iclmem.chapters.ch06_llm_kshot.basis.BASIS`, as D1).
    Checked: memorization at k = 25 (the smallest k > 0 run when 25 is not) minus k = 0, per instance, standard-ICL
    setting. Net of non-members: the members' rise minus the non-members', its interval above 0, against the member
    labels permuted; the raw rise is shown beside it. Raw (no non-members): the focus's rise, its bootstrap interval
    above 0; null: an instance's memorization at k = 25 and at k = 0 exchangeable, each draw swapping the two labels
    at random within every instance (a random sign of its difference). The per-dataset levels are GPT-4's and not
    comparable.
    """
    settings, where = icl_settings(mem)
    m = memorization_matrix(mem, focus, settings)
    ks = list(m.columns)
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return not_testable("D2", paper_d2(), f"k run: {ks}", "D2 needs k = 0 and at least one k > 0.")
    k1 = SHARP_RISE_K if SHARP_RISE_K in shots else shots[0]
    x = m.to_numpy()
    diff = x[:, ks.index(k1)] - x[:, ks.index(0)]

    def stat(idx: np.ndarray) -> float:
        return float(np.nanmean(diff[idx]) * 100)

    est = stat(np.arange(len(x)))
    ci = instance_interval(len(x), stat, draws.n_boot, draws.seed)
    curve = ", ".join(f"{mean_pct(m, [k]):.0f}% at k = {k}" for k in ks)
    ours = f"k = 0 to k = {k1}: {est:+.0f} points ({curve})"
    note = "" if k1 == SHARP_RISE_K else f" No k = {SHARP_RISE_K} was run: the smallest k > 0 run (k = {k1}) is used."
    truth = ground_truth(mem, focus)
    excess = rise_excess("D2", mem, focus, settings, [k1], draws) if reads_net("D2", truth) else None
    if excess is not None:
        ex, agrees, contradicted, nul = excess
        ours = (
            f"members minus non-members: k = 0 to k = {k1} {ex.estimate:+.0f} points (members "
            f"{ex.member_rise:+.0f}, non-members {ex.non_member_rise:+.0f}); raw: {ours}"
        )
        reason = (
            basis_lead("D2", True)
            + f" Direction checked on the {focus.model} model, members minus non-members under the same prompt, "
            f"{where}: the rise from zero-shot to k = {k1}; "
            f"{excess_why(ex, agrees, 'the member-minus-non-member rise')}.{note} The dataset levels (WNLI, RTE, "
            f"TREC, DBpedia with GPT-4) are not comparable.{nul.why}"
            + paper_reading(focus.describe(), _raw_text(f"k = {k1} minus zero-shot", est, ci))
        )
        return judged_record("D2", paper_d2(), ours, reason, (agrees, contradicted), nul, ex.text())
    truth = False  # a net claim read raw: the model has no non-members (to subtract under this prompt)
    agrees, contradicted = directional_agreement(est, ci)
    nul = ClaimNull()
    if ci is not None:
        rng = null_rng(draws.seed, "D2")
        signs = rng.choice((-1.0, 1.0), (draws.n_perm, len(x)))
        null_est, null_agrees = directional_null(signs * diff * 100, null_boot(rng, draws.n_perm, len(x)))
        summary = summarize_null(est, null_est, null_agrees)
        nul = null_of(
            summary,
            agrees,
            (
                f"memorization at k = {k1} and at k = 0 exchangeable within an instance (the two labels swapped at "
                "random "
                f"per instance); {draws.text}"
            ),
            f"k = {k1} minus k = 0: {est:+.1f} points",
        )
    reason = basis_lead("D2", truth) + (
        f" Direction checked on the {focus.describe()}, {where}: memorization at k = {k1} minus zero-shot; "
        f"{directional_why(est, ci)}.{note} The dataset levels (WNLI, RTE, TREC, DBpedia with GPT-4) are not "
        f"comparable.{nul.why}"
    )
    return judged_record("D2", paper_d2(), ours, reason, (agrees, contradicted), nul, ci.text() if ci else None)


def claim_d3(mem: pd.DataFrame, focus: Focus, draws: ClaimDraws = DEFAULT_DRAWS) -> ClaimResult:
    """D3 (Sec. 5.1, Observation 3; Tab. 1): as demonstrations increase, near-exact matches become exact matches.

    Basis: net of non-members where the model has them (:data:`~iclmem.chapters.ch06_llm_kshot.basis.BASIS`): a
    near-exact match turning exact is memorization becoming explicit, and demonstrations that teach the format turn
    never-seen rows' near-exact matches exact too. Checked over consecutive k > 0 (k = 0 included when fewer than two
    k > 0 were run) and all settings: per instance, its near-exact -> exact transitions minus its exact -> near-exact
    ones; also the exact share of the memorized matches at the first and last of those ks.

    Net of non-members: per instance, the share of its (setting, consecutive k) pairs turning exact minus the share
    turning near-exact (the pairs its settings were run at, the same for every instance), members minus non-members
    (:func:`~.contrast.net_contrast`, in points: transitions per 100 pairs); the rule: its interval lies above 0.
    Null: the member labels permuted across the model's instances. The raw count of the focus rows is shown beside it.

    Raw (no non-members): the rule: the bootstrap interval of the focus's net count lies above 0. Null: the order of an
    instance's ks carries nothing (its matches exchangeable across k); each draw permutes the k labels within every
    instance, the same permutation for all its settings.
    """
    truth = ground_truth(mem, focus)
    net_basis = reads_net("D3", truth)
    read = focus.everyone() if net_basis else focus  # the rows the verdict reads
    rows = read.rows(mem)
    ks_all = sorted(set(rows["k"]))
    shots = [k for k in ks_all if k > 0]
    ks = shots if len(shots) >= 2 else ks_all
    if len(ks) < 2:
        return not_testable("D3", paper_d3(), f"k run: {ks_all}", "D3 needs at least two values of k.")
    judged = rows[rows["match"].notna() & rows["k"].isin(ks)]
    if not judged["match"].isin(MEMORIZED).any():
        return not_testable(
            "D3",
            paper_d3(),
            f"no exact or near-exact match at {ks_text(ks)}",
            f"On the {read.describe()}: no memorized completion at {ks_text(ks)}, so no match can turn exact.",
        )
    index, pairs, codes = match_cube(mem, read, ks)
    up, down = transition_counts(codes, pairs)
    in_focus = np.isin(index, focus.rows(mem)["instance_id"].unique())  # the raw reading's rows
    focus_judged = judged[judged["instance_id"].isin(index[in_focus])]
    net = (up - down)[in_focus]

    def stat(idx: np.ndarray) -> float:
        return float(net[idx].sum())

    n = len(net)
    est = stat(np.arange(n))
    ci = instance_interval(n, stat, draws.n_boot, draws.seed)

    def exact_share(k: int) -> str:
        hit = focus_judged[(focus_judged["k"] == k) & focus_judged["match"].isin(MEMORIZED)]
        return f"{(hit['match'] == 'exact').mean() * 100:.0f}% at k = {k}" if len(hit) else f"none memorized at k = {k}"

    ours = (
        f"{int(up[in_focus].sum())} near-exact -> exact, {int(down[in_focus].sum())} exact -> near-exact transitions "
        f"(net {est:+.0f}); exact share of memorized matches {exact_share(ks[0])}, {exact_share(ks[-1])}"
    )
    note = "" if ks == shots else " Fewer than two k > 0 were run, so the transitions include k = 0."
    if net_basis:
        raw = _raw_text("net transitions", est, ci, unit=" transitions")
        return _d3_net(mem, focus, ks, index, pairs, up, down, draws, note, ours, raw)
    agrees, contradicted = directional_agreement(est, ci)
    nul = ClaimNull()
    if ci is not None:
        nul = _d3_order_null(codes, pairs, est, agrees, draws)
    reason = basis_lead("D3", truth) + (
        f" Checked on the {focus.describe()}, all settings, consecutive {ks_text(ks)}: near-exact -> exact minus "
        f"exact -> near-exact transitions of the same instance and setting; "
        f"{directional_why(est, ci, what='the net count')}.{note}{nul.why}"
    )
    return judged_record(
        "D3", paper_d3(), ours, reason, (agrees, contradicted), nul, ci.text("{:+.0f}", " transitions") if ci else None
    )


def _d3_net(
    mem: pd.DataFrame,
    focus: Focus,
    ks: list[int],
    index: pd.Index,
    pairs: list[list[tuple[int, int]]],
    up: np.ndarray,
    down: np.ndarray,
    draws: ClaimDraws,
    note: str,
    raw_ours: str,
    raw_why: str,
) -> ClaimResult:
    """D3 read net of non-members (Sec. 5.1, Obs. 3; :func:`claim_d3`): per instance of ``index`` (all the model's),
    the share of its (setting, consecutive k) ``pairs`` turning exact (``up``) minus the share turning near-exact
    (``down``), members minus non-members (:func:`~.contrast.net_contrast`); ``raw_ours`` and ``raw_why``: the raw
    reading of the focus rows, shown beside the verdict."""
    slots = sum(len(p) for p in pairs)
    member = membership(mem, focus, index)
    ex, agrees, contradicted, nul = net_contrast(
        "D3",
        up / slots,
        down / slots,
        member,
        draws,
        "members minus non-members, net near-exact -> exact transitions per 100 pairs",
    )
    ours = (
        f"members minus non-members: net near-exact -> exact transitions {ex.estimate:+.0f} per 100 (setting, "
        f"consecutive k) pairs (members {ex.member_rise:+.0f}, non-members {ex.non_member_rise:+.0f}); raw: {raw_ours}"
    )
    reason = (
        basis_lead("D3", True)
        + f" Checked on the {focus.model} model, all settings, consecutive {ks_text(ks)}: per instance, the share "
        f"of its {slots} (setting, consecutive k) pairs where a near-exact match turns exact minus the share where "
        "an exact one turns near-exact, members minus non-members; "
        f"{excess_why(ex, agrees, 'the member-minus-non-member net share')}.{note}{nul.why}"
        + paper_reading(focus.describe(), raw_why)
    )
    return judged_record("D3", paper_d3(), ours, reason, (agrees, contradicted), nul, ex.text())


def _d3_order_null(
    codes: np.ndarray,
    pairs: list[list[tuple[int, int]]],
    est: float,
    agrees: bool | None,
    draws: ClaimDraws,
) -> ClaimNull:
    """D3's null read raw (Sec. 5.1, Obs. 3; :func:`claim_d3`): the order of an instance's ks carries nothing; each
    draw permutes the k labels of ``codes`` (instances x settings x ks) within every instance, the same permutation
    for all its settings, and counts the transitions again."""
    n, n_perm = codes.shape[0], draws.n_perm
    rng = null_rng(draws.seed, "D3")
    perms = row_permutations(rng, n_perm, n, codes.shape[2])
    # draws x instances x settings x ks
    permuted = permute_within(codes.transpose(0, 2, 1), perms).transpose(0, 1, 3, 2)
    p_up, p_down = transition_counts(permuted, pairs)
    null_est, null_agrees = directional_null((p_up - p_down).astype(float), null_boot(rng, n_perm, n), total=True)
    summary = summarize_null(est, null_est, null_agrees)
    return null_of(
        summary,
        agrees,
        (
            "an instance's matches exchangeable across its ks (the order of k carries nothing), its k labels "
            "permuted "
            f"within every instance, the same permutation in all its settings; {draws.text}"
        ),
        f"net near-exact -> exact transitions: {est:+.0f}",
        unit=" transitions",
    )


def claim_d4(
    mem: pd.DataFrame,
    focus: Focus,
    draws: ClaimDraws = DEFAULT_DRAWS,
    margin: float = EQUIVALENCE_MARGIN,
) -> ClaimResult:
    """D4 (Sec. 5.1, Observation 7): maximum memorization is reached with only segment pairs in the prompt.

    Basis: net of non-members where the model has them (:data:`~iclmem.chapters.ch06_llm_kshot.basis.BASIS`): a
    setting's instruction and labels move the template matches of never-seen rows too. Checked: for each k > 0,
    memorization of the only-segment-pairs setting minus the largest memorization of the settings run (the maximum,
    full information being the paper's upper bound), averaged over k. The rule: the gap's interval lies above
    -``margin`` points (exceeding the maximum counts as reaching it) *and* memorization is present: below that every
    setting is within the margin of the maximum, so equality would hold by the floor (two settings at 0% are trivially
    "equal"); then the verdict is inconclusive.

    Net of non-members: each setting's level is its members' memorization minus its non-members', the maximum the
    setting with the highest net level at each k (:func:`~.equality.net_gap`, Newcombe + MOVER intervals below 30
    instances per group); present means the highest net level's Newcombe interval lies above
    :data:`~.contrast.PRESENCE_FLOOR` points. Null: as below, on all the model's instances, with the members'
    memorization in the key setting thinned until its net level lies ``margin`` points below the highest other
    (:func:`~.equality.net_gap_null`). The raw gap of the focus rows is shown beside it.

    Raw (no non-members): the focus rows' levels; present means the maximum's bootstrap interval lies above ``margin``.
    Null: the claim is false by the margin. The settings are exchanged within every instance (its setting labels
    permuted, the same permutation at all its ks), then the only-segment-pairs setting's memorized completions are
    dropped at random until, in expectation, it lies ``margin`` points below the highest other setting at each k: a
    build where segment pairs alone fall just a margin short. Thinning, not a shift, keeps the data 0/1, so ties between
    settings stay as likely as in such a build (a percentile bootstrap over tied instances is [0, 0] and would otherwise
    look certain). Exchanging the settings alone would not do: equal settings are what the claim says.
    """
    run = [s for s in SHORT_SETTINGS if s in set(focus.rows(mem)["setting"])]
    if KEY_ELEMENT_SETTING not in run or len(run) < 2:
        return not_testable(
            "D4",
            paper_d4(),
            f"settings run: {', '.join(run)}",
            "D4 compares the only-segment-pairs setting with the other settings; not all of them were run.",
        )
    mats = [memorization_matrix(mem, focus, [s]) for s in run]
    index = mats[0].index
    shots = [k for k in mats[0].columns if k > 0]
    if not shots:
        return not_testable(
            "D4", paper_d4(), "no k > 0 run", "D4 concerns prompts with demonstrations; no k > 0 was run."
        )
    cube = np.stack([mt.reindex(index=index, columns=shots).to_numpy() for mt in mats])  # settings x instances x ks
    key = run.index(KEY_ELEMENT_SETTING)
    if not np.nansum(cube) > 0:
        return not_testable(
            "D4",
            paper_d4(),
            f"no memorization at {ks_text(shots)} in any setting",
            f"On the {focus.describe()}: nothing is memorized at {ks_text(shots)} in any setting, so there is no "
            "maximum to reach.",
        )

    def stat(idx: np.ndarray) -> float:
        means = np.nanmean(cube[:, idx, :], axis=1) * 100  # settings x ks
        return float(np.mean(means[key] - means.max(axis=0)))

    def level_stat(idx: np.ndarray) -> float:
        return float(np.mean(np.nanmean(cube[:, idx, :], axis=1).max(axis=0)) * 100)

    n = len(index)
    est, level = stat(np.arange(n)), level_stat(np.arange(n))
    ci = instance_interval(n, stat, draws.n_boot, draws.seed)
    level_ci = instance_interval(n, level_stat, draws.n_boot, draws.seed)
    means = np.nanmean(cube, axis=1) * 100
    best = [SHORT_SETTINGS[run[i]] for i in means.argmax(axis=0)]
    ours = (
        f"seg. only {means[key].mean():.0f}% vs the maximum {means.max(axis=0).mean():.0f}% (mean of "
        f"{ks_text(shots)}; "
        f"highest setting per k: {', '.join(best)}); gap {est:+.0f} points"
    )
    truth = ground_truth(mem, focus)
    raw_why = f"{equivalence_why(est, ci, margin, True, 'the gap')}; the maximum is {level:.0f}%"
    if reads_net("D4", truth):
        raw = f"gap {est:+.0f} points, interval {ci.bounds() if ci else 'undefined'}: {raw_why}"
        return _d4_net(mem, focus, run, shots, key, draws, margin, ours, raw)
    gap_agrees, contradicted = margin_agreement(ci, margin, one_sided=True)
    present = level_ci is not None and level_ci.lo > margin
    agrees = None if ci is None or level_ci is None else bool(gap_agrees and present)
    nul = ClaimNull()
    if agrees is not None:
        nul = settings_gap_null(cube, key, est, agrees, margin, draws)
    floor = maximum_floor_text(gap_agrees and not present, level_ci, margin)
    reason = basis_lead("D4", truth) + (
        f" Checked on the {focus.describe()}: only-segment-pairs memorization minus the highest setting per k "
        f"({ks_text(shots)}); {raw_why}.{floor}{nul.why}"
    )
    interval = None if ci is None else ci.text() + (f"; maximum {level_ci.bounds('{:.0f}', '%')}" if level_ci else "")
    return judged_record("D4", paper_d4(), ours, reason, (agrees, contradicted), nul, interval)


def _d4_net(
    mem: pd.DataFrame,
    focus: Focus,
    run: list[str],
    shots: list[int],
    key: int,
    draws: ClaimDraws,
    margin: float,
    raw_ours: str,
    raw_why: str,
) -> ClaimResult:
    """D4 read net of non-members (Sec. 5.1, Obs. 7; :func:`claim_d4`): each setting of ``run`` at ``shots`` its
    members' memorization minus its non-members' (:func:`~.equality.net_gap`), the only-segment-pairs setting (``key``)
    minus the highest within -``margin`` points with the highest net level present; its null
    :func:`~.equality.net_gap_null`. ``raw_ours`` and ``raw_why``: the raw reading of the focus rows."""
    everyone = focus.everyone()
    mats_all = [memorization_matrix(mem, everyone, [s]) for s in run]
    index_all = mats_all[0].index
    cube_all = np.stack([mt.reindex(index=index_all, columns=shots).to_numpy() for mt in mats_all])
    member = membership(mem, focus, index_all)
    ex, net_means = net_gap(cube_all, member, key, draws.n_boot, draws.seed)
    level_net = excess_level(mem, focus, run, shots)
    present = level_net is not None and level_net[2] > PRESENCE_FLOOR
    gap_agrees, contradicted = (bool(a) for a in equivalence_answers(ex.lo, ex.hi, margin, one_sided=True))
    agrees = bool(gap_agrees and present)
    nul = net_gap_null(cube_all, member, key, ex.estimate, agrees, margin, draws)
    with quiet():
        top = np.nanmax(net_means, axis=0)
        best_net = [SHORT_SETTINGS[run[i]] for i in np.argmax(np.nan_to_num(net_means, nan=-np.inf), axis=0)]
    ours = (
        f"members minus non-members: seg. only {np.nanmean(net_means[key]):+.0f} vs the maximum "
        f"{np.nanmean(top):+.0f} points (mean of {ks_text(shots)}; highest setting per k: {', '.join(best_net)}); "
        f"gap {ex.estimate:+.0f} points; raw: {raw_ours}"
    )
    reason = (
        basis_lead("D4", True)
        + f" Checked on the {focus.model} model, members minus non-members under the same prompts: "
        f"only-segment-pairs memorization minus the highest setting's per k ({ks_text(shots)}); "
        f"{equivalence_why(ex.estimate, ex.interval(), margin, True, 'the gap')}."
        f"{presence_text(short_level(level_net))}{nul.why}" + paper_reading(focus.describe(), raw_why)
    )
    return judged_record("D4", paper_d4(), ours, reason, (agrees, contradicted), nul, ex.text())


def claim_d5(
    mem: pd.DataFrame,
    focus: Focus,
    draws: ClaimDraws = DEFAULT_DRAWS,
    margin: float = EQUIVALENCE_MARGIN,
) -> ClaimResult:
    """D5 (Sec. 5.1, Observation 5): with k >= 25 the segment pairs and labels setting reaches the full-information
    level; the two settings differ at zero-shot.

    Basis: net of non-members where the model has them (:data:`~iclmem.chapters.ch06_llm_kshot.basis.BASIS`, as D4):
    each setting's level is its members' memorization minus its non-members', the difference of two settings the
    members' difference minus the non-members' (:func:`~.contrast.excess_rise`, Newcombe + MOVER below 30 instances
    per group); memorization present means the higher setting's net level has its Newcombe interval above
    :data:`~.contrast.PRESENCE_FLOOR` points; (b) sits at the floor when no instance of the model memorizes at k = 0 in
    either setting. Its null is the one below on all the model's instances, the members' memorization thinned
    (:func:`~.equality.net_equal_null`). The raw differences of the focus rows are shown beside the verdict. Without
    non-members, the focus rows' raw differences are judged as follows.

    Checked, on full-information minus segment-pairs-and-labels memorization per instance: (a) at k >= 25 (the k > 0
    run when none is that large) its interval lies within +-``margin`` points, with the higher setting's level there
    above ``margin`` points (else both are within the margin of each other by the floor, and (a) proves nothing);
    (b) at k = 0 its interval lies above 0 (full information, the paper's upper bound, surfaces more). Reproduced when
    (a) and (b) hold; differs when (a)'s interval lies wholly outside the margin or (b)'s estimate is not positive
    while some zero-shot completion is memorized (with none in either setting, (b) sits at the floor: inconclusive, as
    D4 reads its floor).

    Null: the larger of two rates, one per part made false. (b): the two settings exchanged at k = 0 within every
    instance (the labels swapped at random per instance), k >= 25 as observed. (a): the two settings exchanged at
    k >= 25 within every instance, then one of them thinned (memorized completions dropped at random, as for D4) until,
    in expectation, it lies ``margin`` points below the other, on either side (the claim just false), k = 0 as observed.
    """
    run = set(focus.rows(mem)["setting"])
    if not {UPPER_BOUND_SETTING, ICL_SETTING} <= run:
        return not_testable(
            "D5",
            paper_d5(),
            f"settings run: {', '.join(sorted(run))}",
            "D5 compares the full-information and the segment pairs and labels settings; not both were run.",
        )
    full = memorization_matrix(mem, focus, [UPPER_BOUND_SETTING])
    pl = memorization_matrix(mem, focus, [ICL_SETTING]).reindex(index=full.index, columns=full.columns)
    ks = list(full.columns)
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return not_testable("D5", paper_d5(), f"k run: {ks}", "D5 needs k = 0 and at least one k > 0.")
    late = [k for k in shots if k >= SETTINGS_EQUAL_FROM_K] or shots
    if not (np.nansum(full[late].to_numpy()) + np.nansum(pl[late].to_numpy())) > 0:
        return not_testable(
            "D5",
            paper_d5(),
            f"no memorization at {ks_text(late)} in either setting",
            f"On the {focus.describe()}: nothing is memorized at {ks_text(late)} in either setting, so their "
            "equality is vacuous.",
        )
    d = (full - pl).to_numpy() * 100
    late_cols = [ks.index(k) for k in late]
    d_late, d_zero = np.nanmean(d[:, late_cols], axis=1), d[:, ks.index(0)]
    with quiet():
        lvl = np.stack([np.nanmean(f.to_numpy()[:, late_cols], axis=1) for f in (full, pl)]) * 100  # 2 x instances
    (est_late, est_zero, level), (ci_late, ci_zero, ci_level) = settings_difference(
        d_late, d_zero, lvl, draws.n_boot, draws.seed
    )
    note = (
        ""
        if late[0] >= SETTINGS_EQUAL_FROM_K
        else f" No k >= {SETTINGS_EQUAL_FROM_K} was run: part (a) uses {ks_text(late)}."
    )
    zero_why = directional_why(est_zero, ci_zero, what="full information minus segment pairs and labels")
    late_why = equivalence_why(est_late, ci_late, margin, False, f"the difference at {ks_text(late)}")
    raw_ours = f"full minus seg.+labels: {est_late:+.0f} points at {ks_text(late)}, {est_zero:+.0f} points at k = 0"
    truth = ground_truth(mem, focus)
    if reads_net("D5", truth):
        raw_why = f"(a) {late_why}; (b) {zero_why}"
        return _d5_net(mem, focus, late, draws, margin, note, raw_ours, raw_why)
    same_late, apart_late = margin_agreement(ci_late, margin)
    higher_zero, not_higher_zero = directional_agreement(est_zero, ci_zero)
    present = ci_level is not None and ci_level.lo > margin
    computable = ci_late is not None and ci_zero is not None and ci_level is not None
    agrees = bool(same_late and higher_zero and present) if computable else None
    # (b) at the floor: no zero-shot memorization in either setting, 0 - 0 is no evidence of "no difference" (as D4
    # reads its floor), so it never contradicts the claim
    zero_floor = not (np.nansum(full[0].to_numpy()) + np.nansum(pl[0].to_numpy())) > 0
    contradicted = bool(apart_late or (not_higher_zero and not zero_floor))
    nul = ClaimNull()
    if computable:
        pair = SettingsPair(full.to_numpy(), pl.to_numpy(), late, late_cols, ks.index(0))
        reading = EqualReading(est_late, est_zero, agrees, margin)
        nul = settings_equal_null(pair, d_late, d_zero, lvl, reading, draws)
    floor = equal_floor_text(same_late and not present, ci_level, level, late, margin, zero_floor)
    reason = basis_lead("D5", truth) + (
        f" Checked on the {focus.describe()}, full information minus segment pairs and labels: (a) {late_why}; (b) at "
        f"k = 0 {zero_why}. Reproduced needs (a) equal, with memorization above the margin there, and (b) full "
        f"information higher.{note}{floor}{nul.why}"
    )
    interval = difference_intervals_text(ci_late, ci_zero, ci_level, late) if computable else None
    return judged_record("D5", paper_d5(), raw_ours, reason, (agrees, contradicted), nul, interval)


def _d5_net(
    mem: pd.DataFrame,
    focus: Focus,
    late: list[int],
    draws: ClaimDraws,
    margin: float,
    note: str,
    raw_ours: str,
    raw_why: str,
) -> ClaimResult:
    """D5 read net of non-members (Sec. 5.1, Obs. 5; :func:`claim_d5`): (a) the members' full-information minus
    segment-pairs-and-labels difference at ``late`` minus the non-members', within +-``margin`` points, with the higher
    setting's net level present; (b) the same at k = 0, above 0; its null :func:`~.equality.net_equal_null`."""
    everyone = focus.everyone()
    full_all = memorization_matrix(mem, everyone, [UPPER_BOUND_SETTING])
    pl_all = memorization_matrix(mem, everyone, [ICL_SETTING]).reindex(index=full_all.index, columns=full_all.columns)
    ks = list(full_all.columns)
    late_cols, zero_col = [ks.index(k) for k in late], ks.index(0)
    member = membership(mem, focus, full_all.index)
    f, p = full_all.to_numpy(), pl_all.to_numpy()
    with quiet():
        f_late, p_late = np.nanmean(f[:, late_cols], axis=1), np.nanmean(p[:, late_cols], axis=1)
    ex_late = excess_rise(f_late, p_late, member, draws.n_boot, draws.seed)
    ex_zero = excess_rise(f[:, zero_col], p[:, zero_col], member, draws.n_boot, draws.seed)
    same_late, apart_late = (bool(a) for a in equivalence_answers(ex_late.lo, ex_late.hi, margin))
    higher_zero, not_higher_zero = (bool(a) for a in directional_answers(ex_zero.estimate, ex_zero.lo, ex_zero.hi))
    level = excess_level(mem, focus, [UPPER_BOUND_SETTING, ICL_SETTING], late)
    present = level is not None and level[2] > PRESENCE_FLOOR
    agrees = bool(same_late and higher_zero and present)
    # (b) at the floor: no instance of the model memorizes at k = 0 in either setting (as D4 reads its floor)
    zero_floor = not (np.nansum(f[:, zero_col]) + np.nansum(p[:, zero_col])) > 0
    contradicted = bool(apart_late or (not_higher_zero and not zero_floor))
    pair = SettingsPair(f, p, late, late_cols, zero_col)
    reading = EqualReading(ex_late.estimate, ex_zero.estimate, agrees, margin)
    nul = net_equal_null(pair, member, bool(same_late and present), higher_zero, reading, draws)
    ours = (
        f"members minus non-members, full minus seg.+labels: {ex_late.estimate:+.0f} points at {ks_text(late)}, "
        f"{ex_zero.estimate:+.0f} points at k = 0; raw: {raw_ours}"
    )
    what = "the member-minus-non-member difference of full information and segment pairs and labels"
    reason = (
        basis_lead("D5", True)
        + f" Checked on the {focus.model} model, full information minus segment pairs and labels, members minus "
        f"non-members under the same prompts: (a) "
        f"{equivalence_why(ex_late.estimate, ex_late.interval(), margin, False, f'the difference at {ks_text(late)}')}"
        f"; (b) at k = 0 {excess_why(ex_zero, higher_zero, what)}. Reproduced needs (a) equal, with memorization "
        f"present net of non-members, and (b) full information higher.{note}"
        f"{equal_floor_text(False, None, float('nan'), late, margin, zero_floor)}"
        f"{presence_text(short_level(level))}{nul.why}" + paper_reading(focus.describe(), raw_ours + ": " + raw_why)
    )
    interval = (
        f"{ks_text(late)}: {ex_late.bounds()}; k = 0: {ex_zero.bounds()}"
        + (f"; higher net level at {ks_text(late)}: [{level[2]:+.0f}, {level[3]:+.0f}] points" if level else "")
        + f" ({ex_late.method})"
    )
    return judged_record("D5", paper_d5(), ours, reason, (agrees, contradicted), nul, interval)


def claim_d6(
    mem: pd.DataFrame,
    perf: pd.DataFrame,
    focus: Focus,
    draws: ClaimDraws = DEFAULT_DRAWS,
    threshold: float | None = None,
) -> ClaimResult:
    """D6 (Sec. 5.2, Observation 1): ICL outperforms zero-shot when surfaced memorization reaches about 40%.

    Basis: raw rates, on every build (:data:`~iclmem.chapters.ch06_llm_kshot.basis.BASIS`): the condition is the
    paper's raw level, a level on GPT-4's scale where nothing was subtracted, and the verdict reads accuracy.

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
        return not_testable("D6", paper_d6(), f"k run: {ks}", "D6 needs zero-shot and k > 0 accuracy and memorization.")
    level = {k: mean_pct(m, [k]) for k in shots}
    high = [k for k in shots if level[k] >= threshold]
    top = max(shots, key=lambda k: level[k])
    if not high:
        return not_testable(
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
    ci = instance_interval(len(x), stat, draws.n_boot, draws.seed)
    acc0, acc_high = mean_pct(c, [0]), mean_pct(c, high)
    ours = (
        f"memorization >= {threshold:g}% at {ks_text(high)} ({', '.join(f'{level[k]:.0f}%' for k in high)}); accuracy "
        f"there {acc_high:.0f}% vs zero-shot {acc0:.0f}% ({est:+.0f} points)"
    )
    agrees, contradicted = directional_agreement(est, ci)
    nul = ClaimNull()
    if ci is not None:
        summary = gain_null(x, high_cols, zero_col, est, "D6", draws)
        nul = null_of(
            summary,
            agrees,
            (
                "an instance's classification answers exchangeable across the ks run (the demonstrations do not change "
                f"accuracy), their k labels permuted within every instance; {draws.text}"
            ),
            f"accuracy at {ks_text(high)} minus zero-shot: {est:+.1f} points",
        )
    reason = basis_lead("D6", ground_truth(mem, focus)) + (
        f" Checked on the {focus.describe()}: at the ks > 0 where memorization ({where}) reaches {threshold:g}%, "
        f"k-shot minus zero-shot accuracy of the same instances; {directional_why(est, ci, what='the accuracy gain')}."
        f"{nul.why}"
    )
    return judged_record("D6", paper_d6(), ours, reason, (agrees, contradicted), nul, ci.text() if ci else None)


def claim_d7(
    mem: pd.DataFrame,
    perf: pd.DataFrame,
    focus: Focus,
    draws: ClaimDraws = DEFAULT_DRAWS,
    chance: float | None = None,
    strength: float = VERY_STRONG_R,
) -> ClaimResult:
    """D7 (Sec. 5.2, Observation 3; Tab. 2): when ICL improves performance on zero-shot, performance and memorization
    (exact + near-exact) correlate very strongly across the k regimes ("Pearson coefficients provide very strong
    evidence": WNLI, TREC, DBpedia, r 0.88-1.00). The paper claims nothing where ICL does not help (RTE's negative r is
    reported, not claimed), so neither does the rule.

    Condition (:func:`~iclmem.chapters.ch06_llm_kshot.accuracy.icl_condition`): the focus's mean k > 0 accuracy minus
    its zero-shot accuracy has an interval above 0, **and** some k > 0 has an accuracy interval above ``chance`` (the
    share of the most frequent label, from ``perf``'s ``label`` column when ``None``). Without both, not testable here:
    a model that copies one demonstration label to every instance beats a zero-shot prompt it cannot answer in format,
    at chance, and two curves that both jump from k = 0 correlate whatever links them.

    Basis: net of non-members where the model has them (:data:`~iclmem.chapters.ch06_llm_kshot.basis.BASIS`): the
    claim's memorization is "surfaced memorization", D1's. Read net, the memorization series of a setting is its
    members' rate minus its non-members' at each k and the accuracy series the members' accuracy; the interval is a
    stratified bootstrap, members and non-members resampled apart (:func:`~.correlation.net_setting_correlations`);
    the raw r of the focus rows is shown beside the verdict. Without non-members, the focus rows' raw series.

    Checked: Pearson r across the ks run of the focus's accuracy and memorization, per setting, with a bootstrap
    interval over instances (r recomputed per resample). Reproduced when every setting's interval lies at or above
    ``strength`` (:data:`VERY_STRONG_R`, "very strong"; a threshold of this companion: the paper gives none); differs
    when a setting's interval lies wholly below it; inconclusive otherwise. At least three ks, k = 0 among them.

    Null: memorization's curve over the ks > 0 unrelated to accuracy's, **with k = 0 kept**: each draw permutes the
    k > 0 labels of the memorization within every instance (the same permutation in all its settings), leaving
    k = 0 in place and accuracy as observed. A shared jump from k = 0 survives every draw, so a rule that only sees
    that jump says reproduced under the null too. Read net, every instance's k > 0 labels are permuted, members and
    non-members alike, and the net series recomputed: the claim contrasts the shape of the curve over k, not membership
    (a membership permutation would flatten the net curve and test D1 instead).
    """
    c = correct_matrix(perf, focus)
    run = [s for s in SHORT_SETTINGS if s in set(focus.rows(mem)["setting"])]
    ks = [k for k in c.columns if k in set(focus.rows(mem)["k"])]
    if len(ks) < 3 or 0 not in ks:
        return not_testable(
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
    cond = icl_condition(perf[perf["k"].isin(ks)], focus, chance, draws.n_boot, draws.seed)
    index = c.index
    acc = c.reindex(columns=ks).to_numpy()
    mems = {s: memorization_matrix(mem, focus, [s]).reindex(index=index, columns=ks).to_numpy() for s in run}
    rs, cis, r_shots = setting_correlations(acc, mems, draws.n_boot, draws.seed)
    raw_text = ", ".join(f"{SHORT_SETTINGS[s]} r = {rs[s]:.2f}" for s in run)
    ours = raw_text + f" ({ks_text(ks)}; {cond.text()})"
    truth = ground_truth(mem, focus)
    net_basis = reads_net("D7", truth)
    raw_cis, raw_shots = cis, r_shots
    raw_defined = [s for s in run if np.isfinite(rs[s]) and cis[s] is not None]
    member, checked_on = None, focus.describe()
    if net_basis:
        acc, mems, member, (rs, cis, r_shots) = _d7_net_series(mem, c, focus, run, ks, draws)
        checked_on = f"{focus.model} model (accuracy of its fine-tuning members, memorization of all its instances)"
        ours = (
            "members minus non-members: "
            + ", ".join(f"{SHORT_SETTINGS[s]} r = {rs[s]:.2f}" for s in run)
            + f"; raw: {raw_text} ({ks_text(ks)}; {cond.text()})"
        )
    defined = [s for s in run if np.isfinite(rs[s]) and cis[s] is not None]
    if not cond.met:
        return not_testable(
            "D7",
            paper_d7(),
            ours,
            f"On the {focus.describe()}: {cond.why_not()}. The paper's claim is conditioned on ICL improving "
            "performance, so this build cannot test it.",
        )
    if not defined:
        return not_testable(
            "D7",
            paper_d7(),
            ours,
            f"On the {checked_on}: accuracy or memorization"
            + (" net of non-members" if net_basis else "")
            + " does not vary with k: Pearson's r is undefined in every setting.",
        )
    strong = {s: cis[s].lo >= strength for s in defined}
    weak = {s: cis[s].hi < strength for s in defined}
    agrees = len(defined) == len(run) and all(strong.values())
    contradicted = any(weak.values())
    nul = curve_null(acc, mems, ks, CurveReading(rs, defined, strength, agrees), draws, member=member)
    counts = (sum(strong.values()), sum(weak.values()))
    reason = _d7_reason(truth, checked_on, cond, ks, run, defined, counts, r_shots, strength, net_basis) + nul.why
    if net_basis:
        raw_text += _d7_raw_intervals(raw_cis, raw_shots, run, raw_defined, strength)
        reason += paper_reading(focus.describe(), raw_text)
    return judged_record(
        "D7", paper_d7(), ours, reason, (agrees, contradicted), nul, r_intervals_text(cis, run, defined)
    )


def _d7_net_series(
    mem: pd.DataFrame, c: pd.DataFrame, focus: Focus, run: list[str], ks: list[int], draws: ClaimDraws
) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, tuple[dict[str, float], dict[str, Any], dict[str, float]]]:
    """D7's series read net of non-members (:func:`claim_d7`): the accuracy of the focus's members (``c``: the focus's
    answers, instances x ks), each setting's memorization of all the model's instances, the membership of those
    instances, and per setting r, its stratified interval and r without k = 0
    (:func:`~.correlation.net_setting_correlations`)."""
    index_all = pd.Index(sorted(set(focus.everyone().rows(mem)["instance_id"])))
    member = membership(mem, focus, index_all)
    mems = {
        s: memorization_matrix(mem, focus.everyone(), [s]).reindex(index=index_all, columns=ks).to_numpy() for s in run
    }
    acc = c.reindex(index=index_all[member], columns=ks).to_numpy()
    return acc, mems, member, net_setting_correlations(acc, mems, member, draws.n_boot, draws.seed)


def _d7_reason(
    truth: bool,
    checked_on: str,
    cond: IclCondition,
    ks: list[int],
    run: list[str],
    defined: list[str],
    counts: tuple[int, int],
    r_shots: dict[str, float],
    strength: float,
    net_basis: bool,
) -> str:
    """D7's reason before its null's words (:func:`claim_d7`): the basis, the condition met, and how many settings'
    r intervals lie at or above ``strength`` and wholly below it (``counts``), r without k = 0 beside them."""
    n_strong, n_weak = counts
    series = (
        "the members' accuracy and surfaced memorization net of non-members (the members' rate minus the "
        "non-members' at each k)"
        if net_basis
        else "accuracy and memorization"
    )
    return (
        basis_lead("D7", truth)
        + f" Checked on the {checked_on}: ICL improves on zero-shot and on chance ({cond.text()}), so the claim "
        f"applies. Pearson r across {ks_text(ks)} of {series} per setting; {n_strong} of {len(run)} "
        f"settings have their interval at or above {strength:g} (very strong)"
        + (f", {n_weak} wholly below it" if n_weak else "")
        + ("" if len(defined) == len(run) else "; the others have an undefined r")
        + f". Without k = 0 (the ks > 0 only) r is {r_without_zero_text(r_shots, run)}. Few ks make each r rest on "
        "few points."
    )


def _d7_raw_intervals(
    raw_cis: dict[str, Any], raw_shots: dict[str, float], run: list[str], raw_defined: list[str], strength: float
) -> str:
    """The rest of D7's raw reading, shown beside a verdict read net of non-members (:func:`claim_d7`): the raw
    intervals, how many lie at or above ``strength``, and r without k = 0."""
    raw_strong = sum(raw_cis[s].lo >= strength for s in raw_defined)
    return (
        (f", intervals {r_intervals_text(raw_cis, run, raw_defined)}" if raw_defined else "")
        + f"; {raw_strong} of {len(run)} settings at or above {strength:g}; without k = 0 r is "
        + r_without_zero_text(raw_shots, run)
    )


def claim_d8(
    mem: pd.DataFrame,
    perf: pd.DataFrame,
    focus: Focus,
    draws: ClaimDraws = DEFAULT_DRAWS,
    labels_in_training: bool | None = None,
) -> ClaimResult:
    """D8 (Sec. 5.2, Observation 2): accuracy on memorized instances exceeds accuracy on non-memorized ones.

    ``labels_in_training``: whether the model's training texts held the instances' labels (the controlled fine-tune's
    ``finetune_labels``; None: unknown, as for a hosted model, whose training data are the datasets with their
    labels). With False the claim is not testable here: membership cannot raise accuracy, so the contamination
    D8 reflects cannot occur.

    Basis: raw rates, on every build (:data:`~iclmem.chapters.ch06_llm_kshot.basis.BASIS`): the claim splits instances
    by the judge's memorized label, not by membership, and compares their accuracy; there is no memorization rate to
    take net of non-members.

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
        return not_testable(
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

    def stat(idx: np.ndarray) -> float:
        return memorized_difference(cells, idx)

    n = len(c)
    full = memorized_differences(cells, np.arange(n))
    if not full:
        return not_testable(
            "D8",
            paper_d8(),
            "no (setting, k) cell with both memorized and non-memorized instances",
            f"On the {focus.describe(False)}: no (setting, k) holds both memorized and non-memorized instances.",
        )
    est = stat(np.arange(n))
    ci = instance_interval(n, stat, draws.n_boot, draws.seed)
    by_regime = pd.DataFrame(full, columns=["setting", "k", "d"]).assign(regime=lambda f: f["k"].map(regime))
    per = ", ".join(f"{r} {g['d'].mean():+.0f} points" for r, g in by_regime.groupby("regime", sort=False))
    ours = (
        f"memorized minus non-memorized accuracy {est:+.0f} points (mean of {len(full)} (setting, k) cells; higher in "
        f"{int((by_regime['d'] > 0).sum())} of {len(full)}; by regime: {per})"
    )
    agrees, contradicted = directional_agreement(est, ci)
    nul = ClaimNull()
    if ci is not None:
        nul = memorized_gap_null(cells, est, agrees, draws)
    reason = basis_lead("D8", ground_truth(mem, focus)) + (
        f" Checked on the {focus.describe(False)}: per (setting, k) with both groups, accuracy of memorized minus "
        f"non-memorized instances, averaged; {directional_why(est, ci)}.{nul.why}"
    )
    return judged_record("D8", paper_d8(), ours, reason, (agrees, contradicted), nul, ci.text() if ci else None)


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


def all_claims(
    mem: pd.DataFrame,
    perf: pd.DataFrame,
    focus: Focus,
    agreement: dict[str, Any] | None = None,
    draws: ClaimDraws = DEFAULT_DRAWS,
    review: Any = None,
    labels_in_training: bool | None = None,
) -> list[ClaimResult]:
    """D1-D9 in order (Sec. 4-5; ``mem`` judged, ``perf`` as run; ``draws``: the bootstrap resamples, seed and null
    draws of every claim D1-D8; ``review``: an imported human review, for D9; ``labels_in_training``: whether the focus
    model's training texts held the labels, for D8)."""
    return [
        claim_d1(mem, focus, draws),
        claim_d2(mem, focus, draws),
        claim_d3(mem, focus, draws),
        claim_d4(mem, focus, draws),
        claim_d5(mem, focus, draws),
        claim_d6(mem, perf, focus, draws),
        claim_d7(mem, perf, focus, draws),
        claim_d8(mem, perf, focus, draws, labels_in_training),
        claim_d9(agreement, review),
    ]


__all__ = [
    "claim_d1",
    "claim_d2",
    "claim_d3",
    "claim_d4",
    "claim_d5",
    "claim_d6",
    "claim_d7",
    "claim_d8",
    "D9_NO_NULL",
    "claim_d9",
    "all_claims",
]
