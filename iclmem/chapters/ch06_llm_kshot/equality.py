"""Golchin et al. 2024, Sec. 5.1 Observations 5 and 7: the steps of the equality claims D4 and D5 (notebook 06), the
statistics of their thinned-settings nulls and their sentences.
"""

from __future__ import annotations

import numpy as np

from iclmem.chapters.ch06_llm_kshot.nulls import (
    ClaimNull,
    draw_chunks,
    draws_text,
    keep_share,
    null_boot,
    null_of,
    null_rng,
    permute_within,
    row_intervals,
    row_permutations,
    thin,
)
from iclmem.chapters.ch06_llm_kshot.paper import (
    SHORT_SETTINGS,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    NULL_BOOT,
    quiet,
)
from iclmem.report.verdicts import equivalence_answers, summarize_null


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
    seed: int,
    n_perm: int,
    n_boot: int,
) -> ClaimNull:
    """D4's null (Sec. 5.1, Obs. 7): the settings of ``cube`` (settings x instances x ks) exchanged within every
    instance, then the key setting thinned to ``margin`` points below the highest other one; each draw judged by
    D4's rule."""
    n = cube.shape[1]
    rng = null_rng(seed, "D4")
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
            f"highest other setting at each k; {draws_text(n_perm, seed, n_boot)}"
        ),
        f"seg. only minus the maximum: {est:+.1f} points",
    )


__all__ = ["settings_gap_null", "short_level", "setting_stats"]
