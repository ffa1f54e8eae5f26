"""Golchin et al. 2024, Sec. 5.1 Observations 5 and 7: the steps of the equality claims D4 and D5 (notebook 06), the
statistics of their thinned-settings nulls and their sentences.

Both claims are read net of non-members where the model has them (:mod:`~iclmem.chapters.ch06_llm_kshot.basis`):
each setting's level is its members' memorization minus its non-members'
(:mod:`~iclmem.chapters.ch06_llm_kshot.contrast`), and their nulls (:func:`net_gap_null`, :func:`net_equal_null`) thin
the members' memorization until the settings lie a margin apart net of non-members. Without non-members the raw
levels are compared (:func:`settings_gap_null`, :func:`settings_equal_null`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclmem.chapters.ch06_llm_kshot.contrast import Excess, excess_draws, excess_rise, net_presence_draws
from iclmem.chapters.ch06_llm_kshot.nulls import (
    ClaimNull,
    directional_null,
    draw_chunks,
    keep_share,
    null_boot,
    null_of,
    null_rng,
    permute_within,
    present_above,
    range_text,
    rate_why,
    reduce_rows,
    row_intervals,
    row_permutations,
    thin,
)
from iclmem.chapters.ch06_llm_kshot.paper import (
    SHORT_SETTINGS,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    NULL_BOOT,
    ClaimDraws,
    Interval,
    instance_interval,
    ks_text,
    quiet,
)
from iclmem.report.verdicts import directional_answers, equivalence_answers, summarize_null
from iclmem.stats import permutation as _stats


@dataclass(frozen=True)
class SettingsPair:
    """D5's two settings on the same instances (Sec. 5.1, Obs. 5): memorization (0-1, instances x ks) with full
    information (``full``) and with segment pairs and labels (``pl``), the ks >= 25 compared (``late``), their columns
    (``late_cols``) and the column of k = 0 (``zero_col``)."""

    full: np.ndarray
    pl: np.ndarray
    late: list[int]
    late_cols: list[int]
    zero_col: int


@dataclass(frozen=True)
class EqualReading:
    """D5's reading on the build that its null is set against (Sec. 5.1, Obs. 5): full information minus segment pairs
    and labels at the ks >= 25 (``late``) and at k = 0 (``zero``), in points; the rule's answer on the build
    (``agrees``; ``None``: no interval); and the equality margin, in points."""

    late: float
    zero: float
    agrees: bool | None
    margin: float


def short_level(net: tuple[str, float, float, float] | None) -> tuple[str, float, float, float] | None:
    return None if net is None else (SHORT_SETTINGS[net[0]], *net[1:])


def setting_stats(world: np.ndarray, key: int, boot: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """D4's statistics on each null draw of ``world`` (draws x settings x instances x ks), on all its instances
    (``boot`` None: arrays over draws) or on each of the draw's resamples ``boot`` (draws x resamples x instances):
    the gap (key setting minus the highest setting, mean over k) and the level (the highest setting, mean over k), in
    points."""
    if boot is None:
        picked = world[:, :, None]  # draws x settings x 1 x instances x ks
    else:
        p, s = world.shape[:2]
        picked = world[np.arange(p)[:, None, None, None], np.arange(s)[None, :, None, None], boot[:, None]]
    with quiet():
        means = np.nanmean(picked, axis=-2) * 100  # draws x settings x resamples x ks
    top = means.max(axis=1)
    gap, level = np.mean(means[:, key] - top, axis=-1), np.mean(top, axis=-1)
    return (gap[:, 0], level[:, 0]) if boot is None else (gap, level)


def settings_gap_null(
    cube: np.ndarray,
    key: int,
    est: float,
    agrees: bool | None,
    margin: float,
    draws: ClaimDraws,
) -> ClaimNull:
    """D4's null (Sec. 5.1, Obs. 7): the settings of ``cube`` (settings x instances x ks) exchanged within every
    instance, then the key setting thinned to ``margin`` points below the highest other one; each draw judged by
    D4's rule (``draws.n_perm`` draws seeded by ``draws.seed``)."""
    n, n_perm = cube.shape[1], draws.n_perm
    rng = null_rng(draws.seed, "D4")
    perms = row_permutations(rng, n_perm, n, cube.shape[0])
    world = permute_within(cube.transpose(1, 0, 2), perms).transpose(0, 2, 1, 3)  # draws x settings x instances x ks
    with quiet():
        means = np.nanmean(world, axis=2)  # draws x settings x ks
    others = np.delete(means, key, axis=1).max(axis=1)  # draws x ks: the highest other setting
    world[:, key] = thin(rng, world[:, key], keep_share(means[:, key], others - margin / 100)[:, None, :])
    boot = null_boot(rng, n_perm, n)
    null_gap, _ = setting_stats(world, key)
    gaps, levels = np.empty((n_perm, NULL_BOOT)), np.empty((n_perm, NULL_BOOT))
    for sl in draw_chunks(n_perm, cube.size * NULL_BOOT):
        gaps[sl], levels[sl] = setting_stats(world[sl], key, boot[sl])
    null_agrees = equivalence_answers(*row_intervals(gaps), margin, one_sided=True)[0] & (
        row_intervals(levels)[0] > margin
    )
    summary = summarize_null(est, null_gap, null_agrees)
    return null_of(
        summary,
        agrees,
        (
            f"segment pairs alone {margin:g} points short of the maximum (the claim just false): the settings "
            "exchanged "
            "within every instance (its setting labels permuted, the same at all its ks), then the "
            "only-segment-pairs "
            f"setting's memorized completions dropped at random until, in expectation, it lies {margin:g} points "
            "below the "
            f"highest other setting at each k; {draws.text}"
        ),
        f"seg. only minus the maximum: {est:+.1f} points",
    )


def settings_equal_null(
    pair: SettingsPair,
    d_late: np.ndarray,
    d_zero: np.ndarray,
    lvl: np.ndarray,
    reading: EqualReading,
    draws: ClaimDraws,
) -> ClaimNull:
    """D5's null (Sec. 5.1, Obs. 5): the larger of two rates, (b) the settings swapped at k = 0 within every instance,
    (a) the settings swapped at k >= 25 and one thinned to ``reading.margin`` points below the other, either side; each
    draw judged by D5's rule (``pair``: the two settings' memorization; ``d_*``: their difference per instance, in
    points; ``lvl``: their levels at k >= 25, 2 x instances)."""
    n, n_perm, margin, est_zero = len(d_late), draws.n_perm, reading.margin, reading.zero
    late, late_cols = pair.late, pair.late_cols
    rng = null_rng(draws.seed, "D5")
    boot = null_boot(rng, n_perm, n)
    # each part as observed, on every draw's own resamples (the other part is the one made false)
    _, late_reps = reduce_rows(np.broadcast_to(d_late, (n_perm, n)), boot)
    _, zero_reps = reduce_rows(np.broadcast_to(d_zero, (n_perm, n)), boot)
    present_obs = present_above(lvl, boot, margin)
    late_obs = equivalence_answers(*row_intervals(late_reps), margin)[0] & present_obs
    zero_obs = directional_answers(est_zero, *row_intervals(zero_reps))[0]
    # (b) false: the two settings swapped at random at k = 0 within each instance
    zero_est, zero_agrees = directional_null(rng.choice((-1.0, 1.0), (n_perm, n)) * d_zero, boot)
    rate_b = float(np.mean(zero_agrees & late_obs))
    # (a) false: the settings swapped at k >= 25 within each instance, then one of them thinned to a margin below
    # the other
    swap = (rng.random((n_perm, n)) < 0.5)[..., None]
    late_f, late_p = pair.full[:, late_cols], pair.pl[:, late_cols]
    world_f, world_p = np.where(swap, late_p, late_f), np.where(swap, late_f, late_p)  # draws x instances x late ks
    with quiet():
        mean_f, mean_p = np.nanmean(world_f, axis=(1, 2)), np.nanmean(world_p, axis=(1, 2))
    rate_a, edge_est = 0.0, []
    for edge in (margin, -margin):
        if edge > 0:  # full information `margin` points above: segment pairs and labels thinned
            wf, wp = world_f, thin(rng, world_p, keep_share(mean_p, mean_f - margin / 100)[:, None, None])
        else:
            wf, wp = thin(rng, world_f, keep_share(mean_f, mean_p - margin / 100)[:, None, None]), world_p
        with quiet():
            e, reps = reduce_rows(np.nanmean(wf - wp, axis=2) * 100, boot)
            world_present = present_above(np.stack([np.nanmean(w, axis=2) for w in (wf, wp)]) * 100, boot, margin)
        edge_agrees = equivalence_answers(*row_intervals(reps), margin)[0] & world_present & zero_obs
        rate_a = max(rate_a, float(np.mean(edge_agrees)))
        edge_est.append(e)
    rate = max(rate_a, rate_b)
    zero_summary = summarize_null(est_zero, zero_est, zero_agrees)
    lo_a, hi_a = _stats.null_range(np.concatenate(edge_est))
    null = (
        "the larger of two rates: (b) the two settings exchanged at k = 0 within every instance (labels swapped "
        "at "
        f"random), {ks_text(late)} as observed: {rate_b:.0%}; (a) the two settings exchanged at {ks_text(late)} "
        "within every instance, then one setting's memorized completions dropped at random until, in expectation, "
        "it "
        f"lies {margin:g} points below the other (either side; equality just false), k = 0 as observed: "
        f"{rate_a:.0%}; "
        f"{draws.text}"
    )
    observed = f"full minus seg.+labels: {reading.late:+.1f} points at {ks_text(late)}, {est_zero:+.1f} points at k = 0"
    null_range = (
        f"k = 0, settings swapped: {range_text(zero_summary)}; {ks_text(late)}, {margin:g} points apart: "
        f"[{lo_a:+.0f}, {hi_a:+.0f}] points"
    )
    return ClaimNull(null, observed, null_range, rate, rate_why(reading.agrees, rate, n_perm))


def settings_difference(
    d_late: np.ndarray, d_zero: np.ndarray, lvl: np.ndarray, n_boot: int, seed: int
) -> tuple[tuple[float, float, float], tuple[Interval | None, Interval | None, Interval | None]]:
    """D5's statistics (Sec. 5.1, Obs. 5) and their intervals over instances: the mean difference of the two settings
    at k >= 25 (``d_late``) and at k = 0 (``d_zero``), in points, and the higher setting's mean level at k >= 25
    (``lvl``: 2 x instances)."""

    def stat_late(idx: np.ndarray) -> float:
        return float(np.nanmean(d_late[idx]))

    def stat_zero(idx: np.ndarray) -> float:
        return float(np.nanmean(d_zero[idx]))

    def stat_level(idx: np.ndarray) -> float:
        return float(np.max(np.nanmean(lvl[:, idx], axis=1)))

    n = len(d_late)
    est_late, est_zero, level = stat_late(np.arange(n)), stat_zero(np.arange(n)), stat_level(np.arange(n))
    ci_late, ci_zero = instance_interval(n, stat_late, n_boot, seed), instance_interval(n, stat_zero, n_boot, seed)
    ci_level = instance_interval(n, stat_level, n_boot, seed)
    return (est_late, est_zero, level), (ci_late, ci_zero, ci_level)


def maximum_floor_text(at_floor: bool, level_ci: Interval | None, margin: float) -> str:
    """D4's sentence (Sec. 5.1, Obs. 7) when the gap is within the margin but the maximum's interval is not above it
    (``at_floor``): equality by the floor, inconclusive; "" otherwise."""
    floor = ""
    if at_floor and level_ci is not None:
        floor = (
            f" But the maximum's own interval {level_ci.bounds('{:.0f}', '%')} does not lie above the {margin:g}-point "
            "margin: below it every setting is within the margin of the maximum, so 'reaching the maximum' would hold "
            "by "
            "the floor, whatever the prompt; memorization too low to tell, so inconclusive."
        )
    return floor


def equal_floor_text(
    at_floor: bool, ci_level: Interval | None, level: float, late: list[int], margin: float, zero_floor: bool
) -> str:
    """D5's floor sentences (Sec. 5.1, Obs. 5): part (a) equal only by the floor (``at_floor``: the higher level's
    interval not above the margin), and part (b) at the floor (``zero_floor``: no zero-shot memorization)."""
    floor = ""
    if at_floor and ci_level is not None:
        floor = (
            f" The higher setting's level at {ks_text(late)} ({level:.0f}%, interval "
            f"{ci_level.bounds('{:.0f}', '%')}) "
            f"does not lie above the {margin:g}-point margin: below it the two settings are within the margin of each "
            "other by the floor, so (a) proves nothing (memorization too low to tell)."
        )
    if zero_floor:
        floor += (
            " At k = 0 neither setting memorizes any instance: (b) sits at the floor, where 0 - 0 tells nothing about "
            "the difference the claim predicts, so it reads inconclusive, never differs."
        )
    return floor


def difference_intervals_text(ci_late: Interval, ci_zero: Interval, ci_level: Interval, late: list[int]) -> str:
    """D5's interval field (Sec. 5.1, Obs. 5): the difference's interval at k >= 25 and at k = 0, the higher level's."""
    return (
        f"{ks_text(late)}: {ci_late.bounds()}; k = 0: {ci_zero.bounds()}; higher level at {ks_text(late)}: "
        f"{ci_level.bounds('{:.0f}', '%')} ({ci_late.method()})"
    )


def _gap_shares(world: np.ndarray, member: np.ndarray, key: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """D4's net reading on each draw of ``world`` (draws x settings x instances x ks, all instances): per instance the
    key setting's share over the ks (``after``, draws x instances), the share of the setting with the highest net
    level at each k (``before``), and the net levels (members minus non-members, draws x settings x ks, points)."""
    with quiet():
        net = (np.nanmean(world[:, :, member], axis=2) - np.nanmean(world[:, :, ~member], axis=2)) * 100
        top = np.argmax(np.where(np.isfinite(net), net, -np.inf), axis=1)  # draws x ks
        p, _, n, k = world.shape
        picked = world[np.arange(p)[:, None, None], top[:, None, :], np.arange(n)[None, :, None], np.arange(k)]
        return np.nanmean(world[:, key], axis=-1), np.nanmean(picked, axis=-1), net


def net_gap(cube: np.ndarray, member: np.ndarray, key: int, n_boot: int, seed: int) -> tuple[Excess, np.ndarray]:
    """D4's gap net of non-members (Sec. 5.1, Obs. 7) on ``cube`` (settings x instances x ks, all instances of the
    model): the key setting's memorization minus that of the setting with the highest net level at each k, members
    minus non-members (:func:`~iclmem.chapters.ch06_llm_kshot.contrast.excess_rise`), and the net levels (settings x
    ks, points)."""
    after, before, net = _gap_shares(cube[None], member, key)
    return excess_rise(after[0], before[0], member, n_boot, seed), net[0]


def net_gap_null(
    cube: np.ndarray,
    member: np.ndarray,
    key: int,
    est: float,
    agrees: bool | None,
    margin: float,
    draws: ClaimDraws,
) -> ClaimNull:
    """D4's null read net of non-members (Sec. 5.1, Obs. 7): the settings of ``cube`` (settings x instances x ks, all
    instances) exchanged within every instance, then the members' memorization in the key setting thinned until, in
    expectation, its net level lies ``margin`` points below the highest other setting's at each k; each draw judged by
    D4's net rule (the gap's interval above -``margin``, and memorization present net of non-members;
    ``draws.n_perm`` draws seeded by ``draws.seed``)."""
    n, n_perm, seed = cube.shape[1], draws.n_perm, draws.seed
    rng = null_rng(seed, "D4")
    perms = row_permutations(rng, n_perm, n, cube.shape[0])
    world = permute_within(cube.transpose(1, 0, 2), perms).transpose(0, 2, 1, 3)  # draws x settings x instances x ks
    with quiet():
        on, off = np.nanmean(world[:, :, member], axis=2), np.nanmean(world[:, :, ~member], axis=2)  # draws x S x ks
        others = np.nanmax(np.delete(on - off, key, axis=1), axis=1)  # draws x ks: the highest other net level
    key_world = world[:, key]  # a view: thinning it thins the world
    keep = keep_share(on[:, key], off[:, key] + others - margin / 100)
    key_world[:, member] = thin(rng, key_world[:, member], keep[:, None, :])
    after, before, _ = _gap_shares(world, member, key)
    ok = np.isfinite(after).all(axis=0) & np.isfinite(before).all(axis=0)
    null_est, lo, hi = excess_draws(after[:, ok], before[:, ok], member[ok], rng)
    with quiet():
        present = net_presence_draws(np.nanmean(world, axis=-1), member)
    null_agrees = equivalence_answers(lo, hi, margin, one_sided=True)[0] & present
    summary = summarize_null(est, null_est, null_agrees)
    return null_of(
        summary,
        agrees,
        (
            f"segment pairs alone {margin:g} points short of the maximum net of non-members (the claim just false): "
            "the settings exchanged within every instance, members and non-members alike (its setting labels "
            "permuted, the same at all its ks), then the members' memorized completions in the only-segment-pairs "
            f"setting dropped at random until, in expectation, its net level lies {margin:g} points below the highest "
            f"other setting's at each k; {n_perm} draws (seed {seed}), each judged by the same net rule and interval "
            "and the presence floor"
        ),
        f"seg. only minus the maximum, members minus non-members: {est:+.1f} points",
    )


def net_equal_null(
    pair: SettingsPair,
    member: np.ndarray,
    late_obs: bool,
    zero_obs: bool,
    reading: EqualReading,
    draws: ClaimDraws,
) -> ClaimNull:
    """D5's null read net of non-members (Sec. 5.1, Obs. 5): the larger of two rates, each part made false with the
    other as observed on the build (``late_obs``: part (a)'s answer, presence included; ``zero_obs``: part (b)'s).
    (b) the two settings swapped at k = 0 within every instance; (a) the two settings swapped at k >= 25 within every
    instance, then the members' memorization in one of them thinned until, in expectation, its net level lies
    ``reading.margin`` points below the other's, either side. ``pair``: all instances of the model."""
    n, n_perm, seed, margin, est_zero = len(member), draws.n_perm, draws.seed, reading.margin, reading.zero
    full, pl, late, late_cols, zero_col = pair.full, pair.pl, pair.late, pair.late_cols, pair.zero_col
    rng = null_rng(seed, "D5")
    # (b) false: the two settings swapped at random at k = 0 within each instance
    f0, p0 = full[:, zero_col], pl[:, zero_col]
    ok0 = np.isfinite(f0) & np.isfinite(p0)
    swap0 = rng.random((n_perm, n)) < 0.5
    w_f0, w_p0 = np.where(swap0, p0, f0)[:, ok0], np.where(swap0, f0, p0)[:, ok0]
    zero_est, lo0, hi0 = excess_draws(w_f0, w_p0, member[ok0], rng)
    zero_agrees = directional_answers(zero_est, lo0, hi0)[0]
    rate_b = float(np.mean(zero_agrees & late_obs))
    # (a) false: the settings swapped at k >= 25 within each instance, then one of them thinned to a margin below
    swap = (rng.random((n_perm, n)) < 0.5)[..., None]
    late_f, late_p = full[:, late_cols], pl[:, late_cols]
    world_f, world_p = np.where(swap, late_p, late_f), np.where(swap, late_f, late_p)  # draws x instances x late ks
    with quiet():
        on_f, off_f = np.nanmean(world_f[:, member], axis=(1, 2)), np.nanmean(world_f[:, ~member], axis=(1, 2))
        on_p, off_p = np.nanmean(world_p[:, member], axis=(1, 2)), np.nanmean(world_p[:, ~member], axis=(1, 2))
    rate_a, edge_est = 0.0, []
    for edge in (margin, -margin):
        wf, wp = world_f.copy(), world_p.copy()
        if edge > 0:  # full information `margin` points above, net: the members of segment pairs and labels thinned
            keep = keep_share(on_p, off_p + (on_f - off_f) - margin / 100)
            wp[:, member] = thin(rng, world_p[:, member], keep[:, None, None])
        else:
            keep = keep_share(on_f, off_f + (on_p - off_p) - margin / 100)
            wf[:, member] = thin(rng, world_f[:, member], keep[:, None, None])
        with quiet():
            after, before = np.nanmean(wf, axis=2), np.nanmean(wp, axis=2)  # draws x instances
            present = net_presence_draws(np.stack([after, before], axis=1), member)
        ok = np.isfinite(after).all(axis=0) & np.isfinite(before).all(axis=0)
        e, lo, hi = excess_draws(after[:, ok], before[:, ok], member[ok], rng)
        edge_agrees = equivalence_answers(lo, hi, margin)[0] & present & zero_obs
        rate_a = max(rate_a, float(np.mean(edge_agrees)))
        edge_est.append(e)
    rate = max(rate_a, rate_b)
    zero_summary = summarize_null(est_zero, zero_est, zero_agrees)
    lo_a, hi_a = _stats.null_range(np.concatenate(edge_est))
    null = (
        "net of non-members, the larger of two rates: (b) the two settings exchanged at k = 0 within every instance "
        f"(labels swapped at random), {ks_text(late)} as observed: {rate_b:.0%}; (a) the two settings exchanged at "
        f"{ks_text(late)} within every instance, then the members' memorized completions in one setting dropped at "
        f"random until, in expectation, its net level lies {margin:g} points below the other's (either side; "
        f"equality just false), k = 0 as observed: {rate_a:.0%}; {n_perm} draws (seed {seed}), each judged by the "
        "same net rules and intervals and the presence floor"
    )
    observed = (
        f"full minus seg.+labels, members minus non-members: {reading.late:+.1f} points at {ks_text(late)}, "
        f"{est_zero:+.1f} points at k = 0"
    )
    null_range = (
        f"k = 0, settings swapped: {range_text(zero_summary)}; {ks_text(late)}, {margin:g} points apart: "
        f"[{lo_a:+.0f}, {hi_a:+.0f}] points"
    )
    return ClaimNull(null, observed, null_range, rate, rate_why(reading.agrees, rate, n_perm))


__all__ = [
    "SettingsPair",
    "EqualReading",
    "net_gap",
    "net_gap_null",
    "net_equal_null",
    "difference_intervals_text",
    "equal_floor_text",
    "maximum_floor_text",
    "settings_difference",
    "settings_equal_null",
    "settings_gap_null",
    "short_level",
    "setting_stats",
]
