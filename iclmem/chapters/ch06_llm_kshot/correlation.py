"""Golchin et al. 2024, Sec. 5.2 (Observations 2 and 3), Tab. 2: the steps of the claims D7 (Pearson r of accuracy and
memorization across k, per setting) and D8 (accuracy on memorized vs non-memorized instances), notebook 06.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from iclmem.chapters.ch06_llm_kshot.nulls import (
    row_permutations,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    quiet,
)

#: D7's "very strong" correlation (Obs. 3: "Pearson coefficients provide very strong evidence"): r >= 0.8, the usual
#: lower bound of "very strong" (Evans 1996). The paper states no number; its positive Tab. 2 values are 0.88-1.00.
VERY_STRONG_R = 0.8


def k0_kept_permutations(rng: np.random.Generator, n_perm: int, n: int, ks: Sequence[int]) -> np.ndarray:
    """``(n_perm, n, len(ks))`` column orders that keep the k = 0 column in place and permute the ks > 0 within each
    instance (a uniform permutation per draw and instance)."""
    zero = list(ks).index(0)
    shots = [j for j in range(len(ks)) if j != zero]
    inner = row_permutations(rng, n_perm, n, len(shots))
    out = np.empty((n_perm, n, len(ks)), dtype=inner.dtype)
    out[..., zero] = zero
    out[..., shots] = np.asarray(shots)[inner]
    return out


def memorized_gap(
    cells: Sequence[tuple[np.ndarray, np.ndarray]], mem_idx: np.ndarray, acc_idx: np.ndarray
) -> np.ndarray:
    """D8's statistic for index arrays ``mem_idx`` (draws x resamples x instances, rows of the memorization) and
    ``acc_idx`` (the same shape, rows of the accuracy, paired with them): the mean over the (setting, k) cells
    holding both groups of accuracy on memorized minus non-memorized instances, in points (NaN when no cell has
    both)."""
    total = np.zeros(mem_idx.shape[:-1])
    count = np.zeros(mem_idx.shape[:-1])
    with quiet():
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


__all__ = ["VERY_STRONG_R", "k0_kept_permutations", "memorized_gap"]
