"""Golchin et al. 2024, Sec. 5.1 Observations 5 and 7: the steps of the equality claims D4 and D5 (notebook 06), the
statistics of their thinned-settings nulls and their sentences.
"""

from __future__ import annotations

import numpy as np

from iclmem.chapters.ch06_llm_kshot.paper import (
    SHORT_SETTINGS,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    quiet,
)


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


__all__ = ["short_level", "setting_stats"]
