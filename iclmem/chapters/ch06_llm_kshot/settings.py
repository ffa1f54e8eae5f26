"""Golchin et al. 2024, Sec. 5.1, Observations 5 and 7: the settings claims D4 and D5 (notebook 06).

Equality claims, read with the rules of :mod:`iclmem.chapters.ch06_llm_kshot.rules` and the nulls of
:mod:`iclmem.chapters.ch06_llm_kshot.nulls`; how a verdict is decided: :mod:`iclmem.chapters.ch06_llm_kshot.claims`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclmem import stats as _stats
from iclmem.chapters.ch06_llm_kshot.contrast import PRESENCE_FLOOR, excess_level, presence_text
from iclmem.chapters.ch06_llm_kshot.nulls import (
    _chunks,
    _directional_null,
    _draws_text,
    _keep_share,
    _Null,
    _null_boot,
    _null_of,
    _null_rng,
    _permute_within,
    _present,
    _range_text,
    _rate_why,
    _reduce_rows,
    _row_intervals,
    _row_permutations,
    _thin,
)
from iclmem.chapters.ch06_llm_kshot.paper import (
    ICL_SETTING,
    KEY_ELEMENT_SETTING,
    SETTINGS_EQUAL_FROM_K,
    UPPER_BOUND_SETTING,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    EQUIVALENCE_MARGIN,
    N_BOOT,
    NULL_BOOT,
    SHORT_SETTINGS,
    Focus,
    _answers_directional,
    _answers_equivalence,
    _directional_why,
    _equivalence_why,
    _ks_text,
    _needs,
    _quiet,
    bootstrap,
    directional_agreement,
    equivalence_agreement,
    memorization_matrix,
)
from iclmem.report.records import ClaimResult
from iclmem.report.verdicts import evidence_verdict, summarize_null
from iclmem.stats import N_PERMUTATIONS


# -- D4, D5: settings ------------------------------------------------------------------------------------------
def _short(net: tuple[str, float, float, float] | None) -> tuple[str, float, float, float] | None:
    return None if net is None else (SHORT_SETTINGS[net[0]], *net[1:])


def paper_d4() -> str:
    return "segment pairs alone (no labels, no instruction) reach ~the maximum memorization of the settings (Obs. 7)"


def _setting_stats(world: np.ndarray, key: int, boot: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """D4's statistics on each null draw of ``world`` (draws x settings x instances x ks), on all its instances
    (``boot`` None: arrays over draws) or on each of the draw's resamples ``boot`` (draws x resamples x instances):
    the gap (key setting minus the highest setting, mean over k) and the level (the highest setting, mean over k), in
    points."""
    if boot is None:
        picked = world[:, :, None]  # draws x settings x 1 x instances x ks
    else:
        p, s = world.shape[:2]
        picked = world[np.arange(p)[:, None, None, None], np.arange(s)[None, :, None, None], boot[:, None]]
    with _quiet():
        means = np.nanmean(picked, axis=-2) * 100  # draws x settings x resamples x ks
    top = means.max(axis=1)
    gap, level = np.mean(means[:, key] - top, axis=-1), np.mean(top, axis=-1)
    return (gap[:, 0], level[:, 0]) if boot is None else (gap, level)


def claim_d4(
    mem: pd.DataFrame,
    focus: Focus,
    n_boot: int = N_BOOT,
    seed: int = 0,
    margin: float = EQUIVALENCE_MARGIN,
    n_perm: int = N_PERMUTATIONS,
) -> ClaimResult:
    """D4 (Sec. 5.1, Observation 7): maximum memorization is reached with only segment pairs in the prompt.

    Checked: for each k > 0, memorization of the only-segment-pairs setting minus the largest memorization of the
    settings run (the maximum, full information being the paper's upper bound), averaged over k. The rule: the gap's
    interval lies above -``margin`` points (exceeding the maximum counts as reaching it) *and* the maximum's interval
    lies above ``margin`` points: below that every setting is within the margin of the maximum, so equality would hold
    by
    the floor (two settings at 0% are trivially "equal"); then the verdict is inconclusive.

    Null: the claim is false by the margin. The settings are exchanged within every instance (its setting labels
    permuted, the same permutation at all its ks), then the only-segment-pairs setting's memorized completions are
    dropped at random until, in expectation, it lies ``margin`` points below the highest other setting at each k: a
    build where segment pairs alone fall just a margin short. Thinning, not a shift, keeps the data 0/1, so ties between
    settings stay as likely as in such a build (a percentile bootstrap over tied instances is [0, 0] and would otherwise
    look certain). Exchanging the settings alone would not do: equal settings are what the claim says.
    """
    run = [s for s in SHORT_SETTINGS if s in set(focus.rows(mem)["setting"])]
    if KEY_ELEMENT_SETTING not in run or len(run) < 2:
        return _needs(
            "D4",
            paper_d4(),
            f"settings run: {', '.join(run)}",
            "D4 compares the only-segment-pairs setting with the other settings; not all of them were run.",
        )
    mats = [memorization_matrix(mem, focus, [s]) for s in run]
    index = mats[0].index
    shots = [k for k in mats[0].columns if k > 0]
    if not shots:
        return _needs("D4", paper_d4(), "no k > 0 run", "D4 concerns prompts with demonstrations; no k > 0 was run.")
    cube = np.stack([mt.reindex(index=index, columns=shots).to_numpy() for mt in mats])  # settings x instances x ks
    key = run.index(KEY_ELEMENT_SETTING)
    if not np.nansum(cube) > 0:
        return _needs(
            "D4",
            paper_d4(),
            f"no memorization at {_ks_text(shots)} in any setting",
            f"On the {focus.describe()}: nothing is memorized at {_ks_text(shots)} in any setting, so there is no "
            "maximum to reach.",
        )

    def stat(idx: np.ndarray) -> float:
        means = np.nanmean(cube[:, idx, :], axis=1) * 100  # settings x ks
        return float(np.mean(means[key] - means.max(axis=0)))

    def level_stat(idx: np.ndarray) -> float:
        return float(np.mean(np.nanmean(cube[:, idx, :], axis=1).max(axis=0)) * 100)

    n = len(index)
    est, level = stat(np.arange(n)), level_stat(np.arange(n))
    ci, level_ci = bootstrap(n, stat, n_boot, seed), bootstrap(n, level_stat, n_boot, seed)
    means = np.nanmean(cube, axis=1) * 100
    best = [SHORT_SETTINGS[run[i]] for i in means.argmax(axis=0)]
    ours = (
        f"seg. only {means[key].mean():.0f}% vs the maximum {means.max(axis=0).mean():.0f}% (mean of "
        f"{_ks_text(shots)}; "
        f"highest setting per k: {', '.join(best)}); gap {est:+.0f} points"
    )
    gap_agrees, contradicted = equivalence_agreement(ci, margin, one_sided=True)
    net = excess_level(mem, focus, run, shots)
    present = level_ci is not None and level_ci.lo > margin and (net is None or net[2] > PRESENCE_FLOOR)
    agrees = None if ci is None or level_ci is None else bool(gap_agrees and present)
    nul = _Null()
    if agrees is not None:
        rng = _null_rng(seed, "D4")
        perms = _row_permutations(rng, n_perm, n, len(run))
        world = _permute_within(cube.transpose(1, 0, 2), perms).transpose(
            0, 2, 1, 3
        )  # draws x settings x instances x ks
        with _quiet():
            means = np.nanmean(world, axis=2)  # draws x settings x ks
        others = np.delete(means, key, axis=1).max(axis=1)  # draws x ks: the highest other setting
        world[:, key] = _thin(rng, world[:, key], _keep_share(means[:, key], others - margin / 100)[:, None, :])
        boot = _null_boot(rng, n_perm, n)
        null_gap, _ = _setting_stats(world, key)
        gaps, levels = np.empty((n_perm, NULL_BOOT)), np.empty((n_perm, NULL_BOOT))
        for sl in _chunks(n_perm, cube.size * NULL_BOOT):
            gaps[sl], levels[sl] = _setting_stats(world[sl], key, boot[sl])
        null_agrees = _answers_equivalence(*_row_intervals(gaps), margin, one_sided=True)[0] & (
            _row_intervals(levels)[0] > margin
        )
        summary = summarize_null(est, null_gap, null_agrees)
        nul = _null_of(
            summary,
            agrees,
            (
                f"segment pairs alone {margin:g} points short of the maximum (the claim just false): the settings "
                "exchanged "
                "within every instance (its setting labels permuted, the same at all its ks), then the "
                "only-segment-pairs "
                f"setting's memorized completions dropped at random until, in expectation, it lies {margin:g} points "
                "below the "
                f"highest other setting at each k; {_draws_text(n_perm, seed, n_boot)}"
            ),
            f"seg. only minus the maximum: {est:+.1f} points",
        )
    floor = ""
    if gap_agrees and not present and level_ci is not None:
        floor = (
            f" But the maximum's own interval {level_ci.bounds('{:.0f}', '%')} does not lie above the {margin:g}-point "
            "margin: below it every setting is within the margin of the maximum, so 'reaching the maximum' would hold "
            "by "
            "the floor, whatever the prompt; memorization too low to tell, so inconclusive."
        )
    reason = (
        f"Checked on the {focus.describe()}: only-segment-pairs memorization minus the highest setting per k "
        f"({_ks_text(shots)}); {_equivalence_why(est, ci, margin, True, 'the gap')}; the maximum is {level:.0f}%."
        f"{floor}{presence_text(_short(net))}{nul.why}"
    )
    interval = None if ci is None else ci.text() + (f"; maximum {level_ci.bounds('{:.0f}', '%')}" if level_ci else "")
    return ClaimResult(
        "D4",
        paper_d4(),
        ours,
        evidence_verdict(agrees, nul.null_rate, contradicted=contradicted),
        reason,
        interval,
        **nul.fields(),
    )


def paper_d5() -> str:
    return (
        f"full information equals segment pairs + labels from k >= {SETTINGS_EQUAL_FROM_K}; "
        "the two differ only at zero-shot (Obs. 5)"
    )


def claim_d5(
    mem: pd.DataFrame,
    focus: Focus,
    n_boot: int = N_BOOT,
    seed: int = 0,
    margin: float = EQUIVALENCE_MARGIN,
    n_perm: int = N_PERMUTATIONS,
) -> ClaimResult:
    """D5 (Sec. 5.1, Observation 5): with k >= 25 the segment pairs and labels setting reaches the full-information
    level; the two settings differ at zero-shot.

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
        return _needs(
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
        return _needs("D5", paper_d5(), f"k run: {ks}", "D5 needs k = 0 and at least one k > 0.")
    late = [k for k in shots if k >= SETTINGS_EQUAL_FROM_K] or shots
    if not (np.nansum(full[late].to_numpy()) + np.nansum(pl[late].to_numpy())) > 0:
        return _needs(
            "D5",
            paper_d5(),
            f"no memorization at {_ks_text(late)} in either setting",
            f"On the {focus.describe()}: nothing is memorized at {_ks_text(late)} in either setting, so their "
            "equality is vacuous.",
        )
    d = (full - pl).to_numpy() * 100
    late_cols = [ks.index(k) for k in late]
    d_late, d_zero = np.nanmean(d[:, late_cols], axis=1), d[:, ks.index(0)]
    with _quiet():
        lvl = np.stack([np.nanmean(f.to_numpy()[:, late_cols], axis=1) for f in (full, pl)]) * 100  # 2 x instances

    def stat_late(idx: np.ndarray) -> float:
        return float(np.nanmean(d_late[idx]))

    def stat_zero(idx: np.ndarray) -> float:
        return float(np.nanmean(d_zero[idx]))

    def stat_level(idx: np.ndarray) -> float:
        return float(np.max(np.nanmean(lvl[:, idx], axis=1)))

    n = len(d)
    est_late, est_zero, level = stat_late(np.arange(n)), stat_zero(np.arange(n)), stat_level(np.arange(n))
    ci_late, ci_zero = bootstrap(n, stat_late, n_boot, seed), bootstrap(n, stat_zero, n_boot, seed)
    ci_level = bootstrap(n, stat_level, n_boot, seed)
    same_late, apart_late = equivalence_agreement(ci_late, margin)
    higher_zero, not_higher_zero = directional_agreement(est_zero, ci_zero)
    net = excess_level(mem, focus, [UPPER_BOUND_SETTING, ICL_SETTING], late)
    present = ci_level is not None and ci_level.lo > margin and (net is None or net[2] > PRESENCE_FLOOR)
    computable = ci_late is not None and ci_zero is not None and ci_level is not None
    agrees = bool(same_late and higher_zero and present) if computable else None
    # (b) at the floor: no zero-shot memorization in either setting, 0 - 0 is no evidence of "no difference" (as D4
    # reads its floor), so it never contradicts the claim
    zero_floor = not (np.nansum(full[0].to_numpy()) + np.nansum(pl[0].to_numpy())) > 0
    contradicted = bool(apart_late or (not_higher_zero and not zero_floor))
    nul = _Null()
    if computable:
        rng = _null_rng(seed, "D5")
        boot = _null_boot(rng, n_perm, n)
        # each part as observed, on every draw's own resamples (the other part is the one made false)
        _, late_reps = _reduce_rows(np.broadcast_to(d_late, (n_perm, n)), boot)
        _, zero_reps = _reduce_rows(np.broadcast_to(d_zero, (n_perm, n)), boot)
        present_obs = _present(lvl, boot, margin)
        late_obs = _answers_equivalence(*_row_intervals(late_reps), margin)[0] & present_obs
        zero_obs = _answers_directional(est_zero, *_row_intervals(zero_reps))[0]
        # (b) false: the two settings swapped at random at k = 0 within each instance
        zero_est, zero_agrees = _directional_null(rng.choice((-1.0, 1.0), (n_perm, n)) * d_zero, boot)
        rate_b = float(np.mean(zero_agrees & late_obs))
        # (a) false: the settings swapped at k >= 25 within each instance, then one of them thinned to a margin below
        # the other
        swap = (rng.random((n_perm, n)) < 0.5)[..., None]
        late_f, late_p = full.to_numpy()[:, late_cols], pl.to_numpy()[:, late_cols]
        world_f, world_p = np.where(swap, late_p, late_f), np.where(swap, late_f, late_p)  # draws x instances x late ks
        with _quiet():
            mean_f, mean_p = np.nanmean(world_f, axis=(1, 2)), np.nanmean(world_p, axis=(1, 2))
        rate_a, edge_est = 0.0, []
        for edge in (margin, -margin):
            if edge > 0:  # full information `margin` points above: segment pairs and labels thinned
                wf, wp = world_f, _thin(rng, world_p, _keep_share(mean_p, mean_f - margin / 100)[:, None, None])
            else:
                wf, wp = _thin(rng, world_f, _keep_share(mean_f, mean_p - margin / 100)[:, None, None]), world_p
            with _quiet():
                e, reps = _reduce_rows(np.nanmean(wf - wp, axis=2) * 100, boot)
                world_present = _present(np.stack([np.nanmean(w, axis=2) for w in (wf, wp)]) * 100, boot, margin)
            edge_agrees = _answers_equivalence(*_row_intervals(reps), margin)[0] & world_present & zero_obs
            rate_a = max(rate_a, float(np.mean(edge_agrees)))
            edge_est.append(e)
        rate = max(rate_a, rate_b)
        zero_summary = summarize_null(est_zero, zero_est, zero_agrees)
        lo_a, hi_a = _stats.null_range(np.concatenate(edge_est))
        null = (
            "the larger of two rates: (b) the two settings exchanged at k = 0 within every instance (labels swapped "
            "at "
            f"random), {_ks_text(late)} as observed: {rate_b:.0%}; (a) the two settings exchanged at {_ks_text(late)} "
            "within every instance, then one setting's memorized completions dropped at random until, in expectation, "
            "it "
            f"lies {margin:g} points below the other (either side; equality just false), k = 0 as observed: "
            f"{rate_a:.0%}; "
            f"{_draws_text(n_perm, seed, n_boot)}"
        )
        observed = (
            f"full minus seg.+labels: {est_late:+.1f} points at {_ks_text(late)}, {est_zero:+.1f} points at k = 0"
        )
        null_range = (
            f"k = 0, settings swapped: {_range_text(zero_summary)}; {_ks_text(late)}, {margin:g} points apart: "
            f"[{lo_a:+.0f}, {hi_a:+.0f}] points"
        )
        nul = _Null(null, observed, null_range, rate, _rate_why(agrees, rate, n_perm))
    ours = f"full minus seg.+labels: {est_late:+.0f} points at {_ks_text(late)}, {est_zero:+.0f} points at k = 0"
    note = (
        ""
        if late[0] >= SETTINGS_EQUAL_FROM_K
        else f" No k >= {SETTINGS_EQUAL_FROM_K} was run: part (a) uses {_ks_text(late)}."
    )
    zero_why = _directional_why(est_zero, ci_zero, what="full information minus segment pairs and labels")
    floor = ""
    if same_late and not present and ci_level is not None:
        floor = (
            f" The higher setting's level at {_ks_text(late)} ({level:.0f}%, interval "
            f"{ci_level.bounds('{:.0f}', '%')}) "
            f"does not lie above the {margin:g}-point margin: below it the two settings are within the margin of each "
            "other by the floor, so (a) proves nothing (memorization too low to tell)."
        )
    if zero_floor:
        floor += (
            " At k = 0 neither setting memorizes any instance: (b) sits at the floor, where 0 - 0 tells nothing about "
            "the difference the claim predicts, so it reads inconclusive, never differs."
        )
    reason = (
        f"Checked on the {focus.describe()}, full information minus segment pairs and labels: (a) "
        f"{_equivalence_why(est_late, ci_late, margin, False, f'the difference at {_ks_text(late)}')}; (b) at k = 0 "
        f"{zero_why}. Reproduced needs (a) equal, with memorization above the margin there, and (b) full information "
        f"higher.{note}{floor}{presence_text(_short(net))}{nul.why}"
    )
    interval = (
        None
        if not computable
        else f"{_ks_text(late)}: {ci_late.bounds()}; k = 0: {ci_zero.bounds()}; higher level at {_ks_text(late)}: "
        f"{ci_level.bounds('{:.0f}', '%')} ({ci_late.method()})"
    )
    return ClaimResult(
        "D5",
        paper_d5(),
        ours,
        evidence_verdict(agrees, nul.null_rate, contradicted=contradicted),
        reason,
        interval,
        **nul.fields(),
    )
