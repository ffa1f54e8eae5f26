"""Golchin et al. 2024, "Memorization In In-Context Learning", Sec. 3-5, Tab. 1-3, Fig. 2-4; claims D1-D9.

The memorization claims D1-D5 of notebook 06 (``notebooks/06_llm_kshot_replication.py``): what only that chapter needs,
apart from the engine (:mod:`iclmem.llm`, which never imports from here). Four parts:

* **the paper's reference values**: Tab. 2-3 (:data:`TABLE2`, :data:`TABLE3`), the memorization levels of
  Sec. 5.1 (:data:`MEMORIZATION_RANGES`, :data:`MEMORIZATION_NOTES`) and the constants the claims D1-D9 are
  formatted and checked with. Only numbers the paper states in its text and tables are here (GPT-4, 200
  instances per dataset); its figures are not digitized. The protocol (the k regimes, sizes, token budgets)
  is the engine's, in :mod:`iclmem.llm.protocol`;
* **the claims D1-D9** computed on this build's frames (below);
* **the figures**, the companions of the paper's Fig. 2-4 (:func:`plot_memorization`,
  :func:`plot_match_composition`, :func:`plot_performance_vs_memorization`);
* **the notebook's summaries**: the tables and glued numbers of the chapter's sections (sample, context
  window, judges, members vs non-members, correlations, claims, run).

The claims. Pure functions over the notebook's frames: ``mem`` (one judged memorization completion per model,
setting, k and instance: columns ``model, setting, k, instance_id, member, match``;
:func:`~iclmem.llm.replication.run_memorization` then :func:`~iclmem.llm.replication.add_judgement`) and ``perf``
(one classification answer per model, k and instance: ``model, k, instance_id, member, correct, error``;
:func:`~iclmem.llm.replication.run_performance`). Each ``claim_dN`` returns a :class:`ClaimResult`, the fields of
:func:`iclmem.report.glue.glue_claim`; the paper's values are formatted from the reference values above.

What is checked. The paper measured GPT-4 on WNLI, RTE, TREC and DBpedia; this build runs another model on
other data, so its *levels* are not comparable and each claim is checked for its **direction** (or equality)
on the rows of one :class:`Focus`: by default the fine-tuned model on its fine-tuning members (the rows a
model is known to have seen, the controlled analogue of GPT-4's training data).

How a verdict is decided (uniformly; the five words of :data:`iclmem.report.glue.VERDICTS`, chosen by
:func:`iclmem.report.verdicts.evidence_verdict` from what the claim's rule says on the build and under its null):

* **the rule on the build.** A directional claim (an effect > 0) *agrees* when its 95% percentile bootstrap interval
  over instances lies above 0; it is *contradicted* when the estimate does not have the claimed sign; in between (the
  claimed sign, but the interval includes 0: not distinguishable from no effect at this many instances) it is inside
  the noise. An equality claim (D4, D5 at k >= 25) agrees when the interval of the difference lies within
  +-:data:`EQUIVALENCE_MARGIN` percentage points (a margin of this companion, not of the paper), is contradicted when
  it lies wholly outside, and is inside the noise when it straddles the margin. An equality also needs memorization
  to be there: when the compared level's interval does not lie above the margin, every setting is within the margin of
  the others by the floor (two settings at 0% are trivially "equal"), and the claim is ``inconclusive``;
* **the rule under the claim's null.** Each claim has a null, a world in which the claim is false, built from this
  build's instances: the labels the claim contrasts made exchangeable within an instance (the ks for D1-D3 and D6-D7,
  the settings for D5 at k = 0), or between instances where the claim contrasts instances (D8: memorized vs not); for
  an equality the settings are exchanged within an instance and one of them is then thinned (memorized completions
  dropped at random) until it lies a margin below the other (D4, D5 at k >= 25), since exchangeable settings are what
  an equality claims. :data:`~iclmem.stats.N_PERMUTATIONS` draws
  (``n_perm``), seeded by the claim's ``seed``; each draw is judged by the claim's own rule with a
  :data:`NULL_BOOT`-resample bootstrap. The *null rate* is the share of draws in which the rule says "reproduced";
* **the verdict.** ``reproduced`` when the rule agrees and its null rate is at most 5%; ``inconclusive`` when it
  agrees but the null rate is higher (chance alone gives that answer), or when the disagreement lies inside the
  noise; ``differs`` when the build clearly contradicts the claim; ``not testable here`` when the frames lack what
  the claim needs (a k, a setting, a human review; the reason names it). D9 (a single share) has no groups to
  exchange: no null applies, and its Wilson interval decides. No D claim holds by construction.

Bootstraps resample instances with replacement (paired: an instance keeps all its k, settings and answers),
seeded, :data:`N_BOOT` resamples; replicates where the statistic is undefined are dropped and the interval is
undefined when fewer than half remain. Each record carries its null: what is exchangeable, the observed statistic,
its central 95% under the null and the null rate (:class:`ClaimResult`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.contrast import (
    Excess,
    excess_rise,
    excess_rise_null,
    has_ground_truth,
    membership,
    raw_reading,
)
from iclmem.chapters.ch06_llm_kshot.nulls import (
    _directional_null,
    _draws_text,
    _gain_null,
    _Null,
    _null_boot,
    _null_of,
    _null_rng,
    _permute_within,
    _row_permutations,
)
from iclmem.chapters.ch06_llm_kshot.paper import (
    MEMORIZATION_AT_200_SHOT,
    MEMORIZATION_PLATEAU_AFTER_25_SHOT,
    MEMORIZATION_RANGES,
    NEAR_TO_EXACT_TRANSITIONS,
    SHARP_RISE_K,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    MEMORIZED,
    N_BOOT,
    Focus,
    _directional_why,
    _ks_text,
    _mean_pct,
    _needs,
    _quiet,
    bootstrap,
    directional_agreement,
    icl_settings,
    memorization_matrix,
)
from iclmem.llm.protocol import BELOW_FEW_SHOT, regime
from iclmem.report.records import ClaimResult
from iclmem.report.verdicts import directional_answers, evidence_verdict, summarize_null
from iclmem.stats import N_PERMUTATIONS

# -- D1, D2 with membership ground truth: members minus non-members ------------------------------------------------
#: The reason's sentence when a model has no non-members (no ground truth, e.g. a hosted model): which reading is used.
MEMBERS_ONLY_READING = (
    " No membership ground truth for this model (no non-members, e.g. a hosted model): the "
    "members-only reading is used, the raw rates of the focus rows, as the paper reads GPT-4's."
)


def _excess_why(ex: Excess, agrees: bool, what: str) -> str:
    if agrees:
        return f"{what} is positive and its interval lies above 0"
    if ex.estimate > 0:
        return (
            f"{what} has the claimed sign but its interval includes 0: not distinguishable from no effect with "
            f"{ex.n_members} members and {ex.n_non_members} non-members"
        )
    return f"{what} is {ex.estimate:+.2g} points, not in the claimed direction"


def _rise_excess(
    claim_id: str,
    mem: pd.DataFrame,
    focus: Focus,
    settings: list[str] | None,
    shot_ks: Sequence[int],
    n_boot: int,
    seed: int,
    n_perm: int,
) -> tuple[Excess, bool, bool, _Null] | None:
    """Memorization at ``shot_ks`` (mean) minus zero-shot, members minus non-members of the focus model, with its
    rule's answers and membership-permutation null; ``None`` when the model has no membership ground truth."""
    m = memorization_matrix(mem, focus, settings, members_only=False)
    member = membership(mem, focus, m.index)
    if not has_ground_truth(member) or 0 not in m.columns:
        return None
    x = m.to_numpy()
    with _quiet():
        after = np.nanmean(x[:, [list(m.columns).index(k) for k in shot_ks]], axis=1)
    before = x[:, list(m.columns).index(0)]
    ex = excess_rise(after, before, member, n_boot, seed)
    agrees, contradicted = (bool(a) for a in directional_answers(ex.estimate, ex.lo, ex.hi))
    null_est, null_agrees = excess_rise_null(after, before, member, _null_rng(seed, claim_id), n_perm)
    summary = summarize_null(ex.estimate, null_est, null_agrees)
    nul = _null_of(
        summary,
        agrees,
        (
            "membership exchangeable across the model's instances (which rows were fine-tuned on carries nothing): the "
            f"member labels permuted across its {ex.n_members + ex.n_non_members} instances, group sizes kept; "
            f"{n_perm} draws "
            f"(seed {seed}), each judged by the same rule and interval"
        ),
        f"members minus non-members, rise: {ex.estimate:+.1f} points",
    )
    return ex, agrees, contradicted, nul


# -- D1, D2: ICL raises memorization over zero-shot ---------------------------------------------------------------
def paper_d1() -> str:
    r = MEMORIZATION_RANGES
    return (
        ", ".join(f"{name} {lo:g}-{hi:g}%" for name, (lo, hi) in r.items()) + " memorized (exact + near-exact, GPT-4)"
    )


def claim_d1(
    mem: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0, n_perm: int = N_PERMUTATIONS
) -> ClaimResult:
    """D1 (Sec. 5.1, Observation 1): ICL surfaces more memorization than zero-shot; levels per regime.

    Checked: memorization (exact + near-exact) with k > 0 (mean of the ks run) minus zero-shot, per instance of the
    focus, in the standard-ICL setting; the paper's levels (GPT-4, four datasets) are quoted, not compared. The rule:
    the bootstrap interval of the mean difference lies above 0.

    Null: an instance's memorization is exchangeable across the ks run (k = 0 included), i.e. the demonstrations
    change nothing; each draw permutes the k labels within every instance (``n_perm`` draws, seeded by ``seed``).
    """
    settings, where = icl_settings(mem)
    m = memorization_matrix(mem, focus, settings)
    ks = list(m.columns)
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return _needs("D1", paper_d1(), f"k run: {ks}", "D1 needs the zero-shot regime (k = 0) and at least one k > 0.")
    x = m.to_numpy()
    zero_col, shot_cols = ks.index(0), [ks.index(k) for k in shots]
    zero, icl = x[:, zero_col], np.nanmean(x[:, shot_cols], axis=1)

    def stat(idx: np.ndarray) -> float:
        return float(np.nanmean(icl[idx] - zero[idx]) * 100)

    est = stat(np.arange(len(x)))
    ci = bootstrap(len(x), stat, n_boot, seed)
    levels = []
    below = [BELOW_FEW_SHOT] if any(regime(k) == BELOW_FEW_SHOT for k in ks) else []  # k in 1-24: no paper regime
    for name in ["zero-shot", *below, *(r for r in MEMORIZATION_RANGES if r != "zero-shot")]:
        rk = [k for k in ks if regime(k) == name]
        if not rk:
            levels.append(f"{name}: no k run")
            continue
        per_k = [_mean_pct(m, [k]) for k in rk]
        spread = f" ({_ks_text(rk)}: {min(per_k):.0f}-{max(per_k):.0f}%)" if len(rk) > 1 else f" (k = {rk[0]})"
        levels.append(f"{name} {_mean_pct(m, rk):.0f}%{spread}")
    ours = "; ".join(levels) + f"; k > 0 minus zero-shot {est:+.0f} points"
    if focus.members_only:
        nm = memorization_matrix(mem, focus, settings, members_only=False)
        nm = nm.loc[nm.index.difference(m.index)]
        if len(nm):
            ours += f" (non-members: zero-shot {_mean_pct(nm, [0]):.0f}%, k > 0 {_mean_pct(nm, shots):.0f}%)"
    missing = [name for name in ("few-shot", "many-shot") if not any(regime(k) == name for k in shots)]
    unrun = f"; no k of the {' and '.join(missing)} regime was run" if missing else ""
    excess = _rise_excess("D1", mem, focus, settings, shots, n_boot, seed, n_perm)
    if excess is not None:
        ex, agrees, contradicted, nul = excess
        ours += (
            f"; members minus non-members: k > 0 minus zero-shot {ex.estimate:+.0f} points (members "
            f"{ex.member_rise:+.0f}, non-members {ex.non_member_rise:+.0f})"
        )
        reason = (
            f"Direction checked on the {focus.model} model, members minus non-members under the same prompt (the "
            f"memorization the demonstrations surface beyond what never-seen rows get), {where}: the rise from "
            f"zero-shot to k > 0 ({_ks_text(shots)}); {_excess_why(ex, agrees, 'the member-minus-non-member rise')}. "
            f"The paper's levels are GPT-4's on WNLI/RTE/TREC/DBpedia and are not compared{unrun}.{nul.why}"
        )
        return ClaimResult(
            "D1",
            paper_d1(),
            ours,
            evidence_verdict(agrees, nul.null_rate, contradicted=contradicted),
            reason,
            ex.text(),
            **nul.fields(),
        )
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        summary = _gain_null(x, shot_cols, zero_col, est, seed, "D1", n_perm)
        nul = _null_of(
            summary,
            agrees,
            (
                "memorization exchangeable across the ks of an instance (k = 0 included: the demonstrations change "
                f"nothing), its k labels permuted within every instance; {_draws_text(n_perm, seed, n_boot)}"
            ),
            f"k > 0 minus zero-shot: {est:+.1f} points",
        )
    reason = (
        f"Direction checked on the {focus.describe()}, {where}: memorization with k > 0 ({_ks_text(shots)}) minus "
        f"zero-shot; {_directional_why(est, ci)}. The paper's levels are GPT-4's on WNLI/RTE/TREC/DBpedia and are "
        f"not compared{unrun}.{nul.why}{MEMBERS_ONLY_READING}"
    )
    return ClaimResult(
        "D1",
        paper_d1(),
        ours,
        evidence_verdict(agrees, nul.null_rate, contradicted=contradicted),
        reason,
        ci.text() if ci else None,
        **nul.fields(),
    )


def paper_d2() -> str:
    top = ", ".join(f"{d} {v:g}%" for d, v in MEMORIZATION_AT_200_SHOT.items())
    flat = ", ".join(f"{d} ~{v:g}%" for d, v in MEMORIZATION_PLATEAU_AFTER_25_SHOT.items())
    return f"{SHARP_RISE_K} shots sharply raise memorization over zero-shot; at 200-shot {top}; after 25-shot {flat}"


def claim_d2(
    mem: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0, n_perm: int = N_PERMUTATIONS
) -> ClaimResult:
    """D2 (Sec. 5.1, Observation 2): a few demonstrations (25 shots) sharply raise memorization over zero-shot.

    Checked: memorization at k = 25 (the smallest k > 0 run when 25 is not) minus k = 0, per instance of the focus,
    standard-ICL setting; the rule: its bootstrap interval lies above 0. The per-dataset levels are GPT-4's and not
    comparable.

    Null: an instance's memorization at k = 25 and at k = 0 are exchangeable; each draw swaps the two labels at random
    within every instance (a random sign of its difference).
    """
    settings, where = icl_settings(mem)
    m = memorization_matrix(mem, focus, settings)
    ks = list(m.columns)
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return _needs("D2", paper_d2(), f"k run: {ks}", "D2 needs k = 0 and at least one k > 0.")
    k1 = SHARP_RISE_K if SHARP_RISE_K in shots else shots[0]
    x = m.to_numpy()
    diff = x[:, ks.index(k1)] - x[:, ks.index(0)]

    def stat(idx: np.ndarray) -> float:
        return float(np.nanmean(diff[idx]) * 100)

    est = stat(np.arange(len(x)))
    ci = bootstrap(len(x), stat, n_boot, seed)
    curve = ", ".join(f"{_mean_pct(m, [k]):.0f}% at k = {k}" for k in ks)
    ours = f"k = 0 to k = {k1}: {est:+.0f} points ({curve})"
    note = "" if k1 == SHARP_RISE_K else f" No k = {SHARP_RISE_K} was run: the smallest k > 0 run (k = {k1}) is used."
    excess = _rise_excess("D2", mem, focus, settings, [k1], n_boot, seed, n_perm)
    if excess is not None:
        ex, agrees, contradicted, nul = excess
        ours += (
            f"; members minus non-members: {ex.estimate:+.0f} points (members {ex.member_rise:+.0f}, non-members "
            f"{ex.non_member_rise:+.0f})"
        )
        reason = (
            f"Direction checked on the {focus.model} model, members minus non-members under the same prompt, "
            f"{where}: the rise from zero-shot to k = {k1}; "
            f"{_excess_why(ex, agrees, 'the member-minus-non-member rise')}.{note} The dataset levels (WNLI, RTE, "
            f"TREC, DBpedia with GPT-4) are not comparable.{nul.why}"
        )
        return ClaimResult(
            "D2",
            paper_d2(),
            ours,
            evidence_verdict(agrees, nul.null_rate, contradicted=contradicted),
            reason,
            ex.text(),
            **nul.fields(),
        )
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        rng = _null_rng(seed, "D2")
        signs = rng.choice((-1.0, 1.0), (n_perm, len(x)))
        null_est, null_agrees = _directional_null(signs * diff * 100, _null_boot(rng, n_perm, len(x)))
        summary = summarize_null(est, null_est, null_agrees)
        nul = _null_of(
            summary,
            agrees,
            (
                f"memorization at k = {k1} and at k = 0 exchangeable within an instance (the two labels swapped at "
                "random "
                f"per instance); {_draws_text(n_perm, seed, n_boot)}"
            ),
            f"k = {k1} minus k = 0: {est:+.1f} points",
        )
    reason = (
        f"Direction checked on the {focus.describe()}, {where}: memorization at k = {k1} minus zero-shot; "
        f"{_directional_why(est, ci)}.{note} The dataset levels (WNLI, RTE, TREC, DBpedia with GPT-4) are not "
        f"comparable.{nul.why}{MEMBERS_ONLY_READING}"
    )
    return ClaimResult(
        "D2",
        paper_d2(),
        ours,
        evidence_verdict(agrees, nul.null_rate, contradicted=contradicted),
        reason,
        ci.text() if ci else None,
        **nul.fields(),
    )


# -- D3: near-exact matches turn exact as k grows ----------------------------------------------------------------
def paper_d3() -> str:
    steps = ", ".join(f"{d} {a}->{b}-shot" for d, (a, b) in NEAR_TO_EXACT_TRANSITIONS.items())
    return f"near-exact matches turn exact as k grows (Tab. 1: {steps})"


_MATCH_CODES = {"exact": 2, "near-exact": 1}  # any other judged label: 0; no row: -1


def _match_cube(
    mem: pd.DataFrame, focus: Focus, ks: Sequence[int] | None = None, column: str = "match"
) -> tuple[pd.Index, list[list[tuple[int, int]]], np.ndarray]:
    """The focus's judged matches as codes (instances x settings x ks: 2 exact, 1 near-exact, 0 other, -1 none) and,
    per setting, the consecutive pairs of the ks it was run at (column positions), over the ``ks`` given (all:
    ``None``)."""
    df = focus.rows(mem)
    df = df[df[column].notna()]
    wide = df.pivot_table(index="instance_id", columns=["setting", "k"], values=column, aggfunc="first")
    settings = list(dict.fromkeys(wide.columns.get_level_values(0)))
    use = sorted(k for k in set(wide.columns.get_level_values(1)) if ks is None or k in set(ks))
    codes = np.full((len(wide), len(settings), len(use)), -1, dtype=np.int8)
    pairs: list[list[tuple[int, int]]] = []
    for s, setting in enumerate(settings):
        present = [k for k in sorted(wide[setting].columns) if k in use]
        for k in present:
            col = wide[(setting, k)]
            codes[:, s, use.index(k)] = np.where(col.isna(), -1, col.map(_MATCH_CODES).fillna(0)).astype(np.int8)
        pairs.append([(use.index(a), use.index(b)) for a, b in zip(present, present[1:], strict=False)])
    return wide.index, pairs, codes


def _transition_counts(codes: np.ndarray, pairs: Sequence[Sequence[tuple[int, int]]]) -> tuple[np.ndarray, np.ndarray]:
    """(up, down) over ``codes`` (... x settings x ks): near-exact -> exact and exact -> near-exact between the
    consecutive ks of each setting."""
    up = np.zeros(codes.shape[:-2], dtype=np.int64)
    down = np.zeros(codes.shape[:-2], dtype=np.int64)
    for s, setting_pairs in enumerate(pairs):
        for a, b in setting_pairs:
            ca, cb = codes[..., s, a], codes[..., s, b]
            up += (ca == 1) & (cb == 2)
            down += (ca == 2) & (cb == 1)
    return up, down


def transitions(
    mem: pd.DataFrame, focus: Focus, ks: Sequence[int] | None = None, column: str = "match"
) -> pd.DataFrame:
    """Per instance of the focus: ``up`` = (setting, consecutive k pair) where a near-exact match at the smaller k is
    an exact match at the larger k, ``down`` = the reverse; over the ``ks`` given (all when ``None``)."""
    index, pairs, codes = _match_cube(mem, focus, ks, column)
    up, down = _transition_counts(codes, pairs)
    return pd.DataFrame({"up": up, "down": down}, index=index)


def claim_d3(
    mem: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0, n_perm: int = N_PERMUTATIONS
) -> ClaimResult:
    """D3 (Sec. 5.1, Observation 3; Tab. 1): as demonstrations increase, near-exact matches become exact matches.

    Checked: over consecutive k > 0 (k = 0 included when fewer than two k > 0 were run) and all settings, the number
    of near-exact -> exact transitions of an instance minus exact -> near-exact ones; also the exact share of the
    memorized matches at the first and last of those ks. The rule: the bootstrap interval of the net count lies above 0.

    Null: the order of an instance's ks carries nothing (its matches exchangeable across k); each draw permutes the k
    labels within every instance, the same permutation for all its settings.
    """
    rows = focus.rows(mem)
    ks_all = sorted(set(rows["k"]))
    shots = [k for k in ks_all if k > 0]
    ks = shots if len(shots) >= 2 else ks_all
    if len(ks) < 2:
        return _needs("D3", paper_d3(), f"k run: {ks_all}", "D3 needs at least two values of k.")
    judged = rows[rows["match"].notna() & rows["k"].isin(ks)]
    if not judged["match"].isin(MEMORIZED).any():
        return _needs(
            "D3",
            paper_d3(),
            f"no exact or near-exact match at {_ks_text(ks)}",
            f"On the {focus.describe()}: no memorized completion at {_ks_text(ks)}, so no match can turn exact.",
        )
    _, pairs, codes = _match_cube(mem, focus, ks)
    up, down = _transition_counts(codes, pairs)
    net = up - down

    def stat(idx: np.ndarray) -> float:
        return float(net[idx].sum())

    n = len(net)
    est = stat(np.arange(n))
    ci = bootstrap(n, stat, n_boot, seed)

    def exact_share(k: int) -> str:
        hit = judged[(judged["k"] == k) & judged["match"].isin(MEMORIZED)]
        return f"{(hit['match'] == 'exact').mean() * 100:.0f}% at k = {k}" if len(hit) else f"none memorized at k = {k}"

    ours = (
        f"{int(up.sum())} near-exact -> exact, {int(down.sum())} exact -> near-exact transitions (net {est:+.0f}); "
        f"exact share of memorized matches {exact_share(ks[0])}, {exact_share(ks[-1])}"
    )
    note = "" if ks == shots else " Fewer than two k > 0 were run, so the transitions include k = 0."
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        rng = _null_rng(seed, "D3")
        perms = _row_permutations(rng, n_perm, n, codes.shape[2])
        permuted = _permute_within(codes.transpose(0, 2, 1), perms).transpose(
            0, 1, 3, 2
        )  # draws x instances x settings x ks
        p_up, p_down = _transition_counts(permuted, pairs)
        null_est, null_agrees = _directional_null((p_up - p_down).astype(float), _null_boot(rng, n_perm, n), total=True)
        summary = summarize_null(est, null_est, null_agrees)
        nul = _null_of(
            summary,
            agrees,
            (
                "an instance's matches exchangeable across its ks (the order of k carries nothing), its k labels "
                "permuted "
                f"within every instance, the same permutation in all its settings; {_draws_text(n_perm, seed, n_boot)}"
            ),
            f"net near-exact -> exact transitions: {est:+.0f}",
            unit=" transitions",
        )
    reason = (
        f"Checked on the {focus.describe()}, all settings, consecutive {_ks_text(ks)}: near-exact -> exact minus "
        f"exact -> near-exact transitions of the same instance and setting; "
        f"{_directional_why(est, ci, what='the net count')}.{note}{nul.why}"
        + raw_reading(mem, focus, "a transition is a change of one instance's match, not a rate to subtract")
    )
    return ClaimResult(
        "D3",
        paper_d3(),
        ours,
        evidence_verdict(agrees, nul.null_rate, contradicted=contradicted),
        reason,
        ci.text("{:+.0f}", " transitions") if ci else None,
        **nul.fields(),
    )
