"""Paper 1, Sec. 4.2 ("Context Manipulations"), Sec. 5 ("Perturbation Effectiveness"), App. A.3 (Fig. 4): the
perturbation claims C12a-c with their permutation nulls (notebook 03).

The paper's perturbation effects, the mean Delta AUC of each manipulation group over the baseline under permuted
membership (:func:`effect_draws`, from each configuration's :class:`iclmem.probe.effects.GroupRanks`), the
equivalence rule of C12b and C12c, and the records of the three sub-claims (:func:`perturbation_claims`).
Re-exported by :mod:`iclmem.chapters.ch03_probing.probing`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from iclmem.probe.effects import GroupRanks
from iclmem.probe.manipulations import manipulation_names
from iclmem.report.records import claim_record
from iclmem.report.verdicts import direction_agreement, evidence_verdict, summarize_null
from iclmem.stats.permutation import N_PERMUTATIONS, null_range, permuted_labels, query_set_seed

#: Sec. 5 "Perturbation Effectiveness" and Fig. 4 of the paper (loss-based AUC(Delta S), detectable configurations).
PAPER_PERTURBATION = {
    "baseline_auc": 0.543,
    "skew_true_delta": 0.013,
    "skew_true_2_delta": 0.015,
    "best_single": "mixed_true_5_non_true_5",
    "best_single_delta": 0.017,
    "positional_shuffling_delta": 0.0,
}
#: A perturbation effect this small counts as "about 0" (Fig. 4: positional shuffling, Delta AUC ~ 0; feature
#: reduction and distractors, AUC 0.543-0.546 against the baseline's 0.543): the equivalence margin of C12b and C12c.
NEUTRAL_DELTA = 0.005
#: The manipulation categories of each C12 sub-claim (Tab. 7 keys, :data:`iclmem.probe.manipulations.CATEGORIES`).
SKEW_CATEGORY = "skew_true"
SHUFFLE_CATEGORY = "positional_shuffling"
FEATURE_CATEGORIES: tuple[str, ...] = ("feature_reduction", "distractor_injection")
_NULL_TEXT = (
    "membership permuted across each configuration's probed queries (one permutation for all manipulations of a "
    "configuration, the same for configurations that probe the same queries); Delta AUC = AUC(manipulation) - "
    "AUC(baseline) under the same permuted labels, averaged as the observed one"
)
_REPLAY_TEXT = (
    "; the configurations averaged over (the detectable ones) are selected again under each permutation, from that "
    "draw's outcomes"
)


@dataclass(frozen=True)
class EffectDraws:
    """Mean Delta AUC over configurations per group (a Tab. 7 category, or a named manipulation,
    :class:`iclmem.probe.effects.GroupRanks`): row 0 on the real labels, rows 1.. under permuted membership."""

    values: np.ndarray  # (1 + n_perm, n_groups)
    groups: tuple[str, ...]

    def statistic(self, group: str) -> np.ndarray | None:
        """``(1 + n_perm,)``: ``group``'s mean Delta AUC over the baseline per draw; None if no configuration probed
        it."""
        return self.values[:, self.groups.index(group)] if group in self.groups else None


def effect_draws(
    configs: Sequence[GroupRanks],
    n_perm: int = N_PERMUTATIONS,
    seed: int = 0,
    selected: np.ndarray | None = None,
) -> EffectDraws:
    """The observed and permuted mean Delta AUC per group over ``configs`` (the statistic of Fig. 4 and C12).

    Each configuration's membership is permuted ``n_perm`` times across its probed queries with
    :func:`iclmem.stats.permutation.permuted_labels`, seeded by its query set
    (:func:`iclmem.stats.permutation.query_set_seed`),
    so configurations probing the same queries (epochs of one run, learning rates of one table) are
    permuted alike, as their real membership is the same. A group's mean is over the configurations that probed
    it, each configuration's the mean over its probed manipulations of the group (:meth:`GroupRanks.deltas`: exact
    integer rank sums, one division).

    ``selected``: ``(1 + n_perm, len(configs))`` which configurations each draw averages over (row 0: the real
    labels' selection), as :func:`replayed_selection` gives it: a selection made with the real labels (the detectable
    configurations) is then made again with each draw's permuted labels, so the null pays for the selection too.
    A draw that selects nothing averages over every configuration, as the real rule does.
    """
    if selected is not None:
        selected = np.asarray(selected, dtype=bool)
        if selected.shape != (1 + n_perm, len(configs)):
            raise ValueError(
                f"selected must have shape (1 + n_perm, n_configs) = {(1 + n_perm, len(configs))}, got "
                f"{selected.shape}; pass the selection of the same configurations under the same n_perm."
            )
        selected = np.where(selected.any(axis=1, keepdims=True), selected, True)
    names = list(dict.fromkeys(g for c in configs for g in c.groups))
    pos = {g: i for i, g in enumerate(names)}
    total = np.zeros((1 + n_perm, len(names)))
    count = np.zeros((1 + n_perm, len(names)))
    for j, c in enumerate(configs):
        labels = np.vstack(
            [c.is_member[None, :], permuted_labels(c.is_member, n_perm, query_set_seed(c.query_ids, seed))]
        )
        idx = [pos[g] for g in c.groups]
        weight = np.ones((1 + n_perm, 1)) if selected is None else selected[:, [j]].astype(float)
        total[:, idx] += weight * c.deltas(labels)
        count[:, idx] += weight
    with np.errstate(invalid="ignore", divide="ignore"):
        return EffectDraws(total / count, tuple(names))


def replayed_selection(rows: pd.DataFrame, null: pd.DataFrame, outcome: str = "detectable_memorization") -> np.ndarray:
    """``(1 + n_perm, len(rows))``: whether each configuration (a ``run_key``, ``epoch`` row) has ``outcome``, on the
    real labels (row 0, ``rows.outcome``) and in each permuted summary of ``null``
    (:func:`iclmem.probe.null.null_summaries` with the same reading, seed and draws as :func:`effect_draws`, whose
    permutation ``i`` of a query set is the null's permutation ``i``: both draw it with
    :func:`iclmem.stats.permutation.permuted_labels` seeded by the query set)."""
    keys = pd.MultiIndex.from_frame(rows[["run_key", "epoch"]].astype({"epoch": int}))
    wide = (
        null.assign(hit=null.outcome == outcome, epoch=null.epoch.astype(int))
        .pivot_table(index="perm", columns=["run_key", "epoch"], values="hit", aggfunc="first")
        .reindex(columns=keys)
    )
    if wide.isna().any().any():
        raise ValueError("the null lacks some of the configurations; compute it on the summary these rows come from.")
    real = (rows.outcome == outcome).to_numpy(bool)[None, :]
    return np.vstack([real, wide.to_numpy(dtype=bool)])


def noise_interval(observed: float, null_values: Sequence[float]) -> tuple[float, float]:
    """The observed statistic minus the central 95% range of its permutation null: its 95% noise interval."""
    lo, hi = null_range(null_values)
    return observed - hi, observed - lo


def about_zero_agreement(
    observed: float, null_values: Sequence[float], margin: float = NEUTRAL_DELTA
) -> tuple[bool, bool]:
    """(agrees, contradicted) of an "about 0" claim: the noise interval of ``observed`` inside, or wholly outside,
    +-``margin``.

    The noise interval is :func:`noise_interval` (a two one-sided tests reading: the effect is
    shown smaller than the margin only when both ends of the interval are). So it agrees only when
    ``|observed| < margin`` *and* the noise spans less than ``2 * margin``; it is contradicted when
    even the near end of the interval lies beyond the margin; otherwise the build cannot tell ~0
    from a non-negligible effect.
    """
    a, b = noise_interval(observed, null_values)
    if not (np.isfinite(a) and np.isfinite(b)):
        return False, False
    return bool(-margin < a and b < margin), bool(a > margin or b < -margin)


def equivalence_null_rate(null_values: Sequence[float], margin: float = NEUTRAL_DELTA) -> float:
    """How often :func:`about_zero_agreement` agrees when the effect is exactly +-``margin`` (the null of an "about 0"
    claim).

    Each permuted statistic, shifted to ``+margin`` and to ``-margin``, stands for an observed
    statistic of a build whose true effect is just non-negligible; the rate is the larger of the two
    sides' agreeing shares (about 2.5-3% by construction, 0 when the noise alone is wider than the margin).
    """
    v = np.asarray(null_values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return math.nan
    lo, hi = null_range(v)
    return max(float(np.mean((-margin < v + shift - hi) & (v + shift - lo < margin))) for shift in (margin, -margin))


def _fmt_range(values: np.ndarray) -> str:
    lo, hi = null_range(values)
    return f"[{lo:+.4f}, {hi:+.4f}] over {len(values)} permutations"


def _p_greater(stat: np.ndarray) -> float:
    """One-sided permutation p-value of ``stat[0]`` (observed) against ``stat[1:]`` (null): (1 + #null >= observed) /
    (1 + n)."""
    return (1 + int(np.sum(stat[1:] >= stat[0]))) / len(stat)


def _skew_claim(draws: EffectDraws, paper: str, scope: str, same_as_base: Sequence[str] = ()) -> dict:
    """C12a: the skew_true category's mean Delta AUC above its null's 95% quantile; mixed_true_5_non_true_5 beside
    it, named "the baseline context for this model" when it is one of ``same_as_base``
    (:func:`iclmem.probe.same_context.same_as_baseline`): its Delta AUC is then 0 by construction, no measurement."""
    skew = manipulation_names(SKEW_CATEGORY)
    if skew and all(name in same_as_base for name in skew):
        return claim_record(
            "C12a",
            paper,
            f"every skew_true manipulation is the baseline context for this model ({scope})",
            "holds by construction",
            "the model cannot tell a true-label-skewed context from the baseline, so its Delta AUC is 0 by "
            "construction and says nothing about memorization",
        )
    stat = draws.statistic(SKEW_CATEGORY)
    if stat is None or not np.isfinite(stat[0]):
        return claim_record(
            "C12a",
            paper,
            f"no skew_true manipulation probed ({scope})",
            "not testable here",
            "the probed suite holds no true-label skew manipulation",
        )
    observed, null = float(stat[0]), stat[1:]
    agrees, contradicted = direction_agreement(observed, null, "greater")
    summary = summarize_null(observed, null, [direction_agreement(v, null, "greater")[0] for v in null])
    best = PAPER_PERTURBATION["best_single"]
    mixed = draws.statistic(best)
    mixed_value = "not probed" if mixed is None else f"{mixed[0]:+.3f}"
    mixed_text = mixed_value if mixed is None else f"{mixed_value} (one-sided permutation p = {_p_greater(mixed):.2f})"
    if mixed is not None and best in same_as_base:
        mixed_value = "the baseline context for this model (0 by construction, no measurement)"
        mixed_text = mixed_value
    where = (
        "above the 95% quantile of"
        if agrees
        else "below the 5% quantile of"
        if contradicted
        else "between the 5% and 95% quantiles of"
    )
    a, b = noise_interval(observed, null)
    return claim_record(
        "C12a",
        paper,
        f"skew true {observed:+.3f}, {best} {mixed_value} ({scope})",
        evidence_verdict(agrees, summary.rate, contradicted=contradicted),
        f"the skew_true category's mean Delta AUC {observed:+.4f} lies {where} its membership-permuted null"
        f" (one-sided permutation p = {_p_greater(stat):.2f}); {best} alone: {mixed_text}",
        f"[{a:+.4f}, {b:+.4f}] (95% noise interval: observed minus the null's range)",
        null=_NULL_TEXT + (_REPLAY_TEXT if "re-selected" in scope else ""),
        observed=f"mean Delta AUC of skew_true over baseline: {observed:+.4f}",
        null_range=_fmt_range(null),
        null_rate=summary.rate,
        null_draws=len(null),
    )


def _equivalence_claim(
    claim_id: str, draws: EffectDraws, categories: Sequence[str], paper: str, scope: str, margin: float
) -> dict:
    """C12b / C12c without a declared invariance: every category's mean Delta AUC shown within +-margin
    (equivalence)."""
    stats = {c: s for c in categories if (s := draws.statistic(c)) is not None and np.isfinite(s[0])}
    if not stats:
        return claim_record(
            claim_id,
            paper,
            f"no {' or '.join(categories)} manipulation probed ({scope})",
            "not testable here",
            f"the probed suite holds no {' or '.join(categories)} manipulation",
        )
    answers = {c: about_zero_agreement(float(s[0]), s[1:], margin) for c, s in stats.items()}
    agrees = all(a for a, _ in answers.values())
    contradicted = any(c for _, c in answers.values())
    rate = max(equivalence_null_rate(s[1:], margin) for s in stats.values())  # the worst category at its margin
    parts, noise = [], []
    for c, s in stats.items():
        a, b = noise_interval(float(s[0]), s[1:])
        ok, off = answers[c]
        parts.append(
            f"{c.replace('_', ' ')} {s[0]:+.4f}, noise interval [{a:+.4f}, {b:+.4f}]: "
            + ("within" if ok else ("outside" if off else "not separable from"))
            + f" +-{margin:g}"
        )
        noise.append(f"{c} [{a:+.4f}, {b:+.4f}]")
    missing = [c for c in categories if c not in stats]
    tail = f" ({', '.join(missing)} not probed)" if missing else ""
    verdict = evidence_verdict(agrees, rate, contradicted=contradicted)
    why = "; ".join(parts) + tail
    if verdict == "inconclusive":
        why += f"; at this build's noise ~0 cannot be told from an effect of +-{margin:g}"
    return claim_record(
        claim_id,
        paper,
        ", ".join(f"{c.replace('_', ' ')} {s[0]:+.3f}" for c, s in stats.items()) + f" ({scope})",
        verdict,
        why,
        "; ".join(noise) + " (95% noise intervals)",
        null=f"equivalence: a true effect of exactly +-{margin:g} (the margin), drawn as the statistic under permuted "
        "membership "
        f"(per configuration, as for C12a) shifted to +-{margin:g}; the rate is that of the worse side and category",
        observed="; ".join(f"mean Delta AUC of {c} over baseline: {s[0]:+.4f}" for c, s in stats.items()),
        null_range="; ".join(f"{c} {_fmt_range(s[1:])}" for c, s in stats.items()),
        null_rate=rate,
        null_draws=len(next(iter(stats.values()))) - 1,
    )


def perturbation_claims(
    configs: Sequence[GroupRanks],
    basis: str,
    row_order_invariant: bool,
    *,
    n_perm: int = N_PERMUTATIONS,
    seed: int = 0,
    selected: np.ndarray | None = None,
    same_as_base: Sequence[str] = (),
) -> list[dict]:
    """C12a-c (Sec. 5 "Perturbation Effectiveness", Fig. 4), each tested as stated against its null.

    ``same_as_base``: the manipulations the probed model cannot tell from the baseline
    (:func:`iclmem.probe.same_context.same_as_baseline` of its invariances); C12a names them and holds by construction
    when every true-label skew is one of them.

    ``configs``: the :func:`iclmem.probe.effects.group_ranks` of the configurations averaged over (the paper: its
    detectable-memorization ones); ``basis`` names them for the records; ``row_order_invariant``:
    whether the probed model declares row-order invariance
    (``iclmem.probe.invariances.model_invariances(model).row_order``).

    * **C12a** (true-label skew raises AUC(Delta S)): the skew_true category's mean Delta AUC over
      the baseline is reproduced when it lies above the 95% quantile of its null (membership
      permuted per configuration, :func:`effect_draws`), differs when below the 5% quantile.
      ``mixed_true_5_non_true_5``'s own Delta AUC is reported beside it.
    * **C12b** (positional shuffling ~0): *holds by construction* for a row-order-invariant model
      (its shuffles are the baseline context, scored once); otherwise :func:`about_zero_agreement`
      with the margin :data:`NEUTRAL_DELTA` on the positional_shuffling category.
    * **C12c** (feature reduction and distractors negligible): :func:`about_zero_agreement` on
      each of the feature_reduction and distractor_injection categories (all must agree).

    The null rate of C12a is the share of permuted statistics that pass the same rule (5% by
    construction for ``n_perm`` a multiple of 20); that of C12b / C12c is
    :func:`equivalence_null_rate`.

    ``selected`` (:func:`replayed_selection`): ``configs`` are then every candidate configuration and each draw
    averages over its own selection, so a basis chosen with the real labels (the detectable configurations) is chosen
    again under every permutation.
    """
    paper_a = (
        f"skew true +{PAPER_PERTURBATION['skew_true_delta']:.3f} by category (skew_true_2 "
        f"+{PAPER_PERTURBATION['skew_true_2_delta']:.3f}), best single {PAPER_PERTURBATION['best_single']} "
        f"+{PAPER_PERTURBATION['best_single_delta']:.3f} (baseline AUC {PAPER_PERTURBATION['baseline_auc']:.3f})"
    )
    paper_b = "positional shuffling Delta AUC ~ 0 (AUC ~ 0.543, the baseline's)"
    paper_c = (
        "feature reduction and distractor injection: negligible gains (AUC 0.543-0.546 against the baseline's 0.543)"
    )
    keep = [i for i, c in enumerate(configs) if c.groups]
    configs = [configs[i] for i in keep]
    if selected is not None:
        selected = np.asarray(selected, dtype=bool)[:, keep]
    if not configs:
        why = "no configuration with a baseline manipulation was available for the per-manipulation AUCs"
        return [
            claim_record(i, p, "no configuration to average over", "not testable here", why)
            for i, p in (("C12a", paper_a), ("C12b", paper_b), ("C12c", paper_c))
        ]
    if selected is None:
        scope = f"{len(configs)} {basis} configurations"
    else:
        n_real = int(selected[0].sum()) or len(configs)
        scope = f"{n_real} {basis} configurations, re-selected under every permutation"
    draws = effect_draws(configs, n_perm, seed, selected)
    shuffle = draws.statistic(SHUFFLE_CATEGORY)
    if row_order_invariant and shuffle is not None:
        c12b = claim_record(
            "C12b",
            paper_b,
            f"positional shuffling {shuffle[0]:+.3f} ({scope})",
            "holds by construction",
            "the probed model declares row-order invariance: for it the three positional shuffles are the baseline "
            "context "
            "(merged with it and scored once, iclmem.probe.invariances), so their Delta AUC is 0 whatever the data",
            null="no null: the shuffled contexts are the baseline context for a row-order-invariant model, nothing is "
            "left to chance",
            observed=f"mean Delta AUC of positional_shuffling over baseline: {shuffle[0]:+.4f}",
            null_range=_fmt_range(shuffle[1:]),
        )
    else:
        c12b = _equivalence_claim("C12b", draws, (SHUFFLE_CATEGORY,), paper_b, scope, NEUTRAL_DELTA)
    return [
        _skew_claim(draws, paper_a, scope, same_as_base),
        c12b,
        _equivalence_claim("C12c", draws, FEATURE_CATEGORIES, paper_c, scope, NEUTRAL_DELTA),
    ]
