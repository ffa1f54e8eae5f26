"""The membership null's bootstrap lower bounds by matrix products equal the histogram reference bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from iclmem.probe.null import auc_lower_bounds
from iclmem.stats.permutation import permuted_auc_lower_bounds, permuted_labels


@pytest.mark.parametrize(("n", "decimals", "members"), [(100, None, 50), (60, 1, 30), (37, 0, 18), (24, 2, 5)])
def test_batched_bounds_equal_the_reference(n: int, decimals: int | None, members: int) -> None:
    rng = np.random.default_rng(n)
    score = rng.normal(size=n)
    if decimals is not None:  # ties, counted half by both
        score = np.round(score, decimals)
    labels = permuted_labels(np.arange(n) < members, 120, 7)
    np.testing.assert_array_equal(
        auc_lower_bounds(score, labels, 50, 3), permuted_auc_lower_bounds(score, labels, 50, 3)
    )
    assert not np.array_equal(auc_lower_bounds(score, labels, 50, 3), auc_lower_bounds(score, labels, 50, 4))


@pytest.mark.parametrize(("n", "decimals", "members"), [(400, None, 200), (330, 1, 180), (90, 0, 40)])
def test_sorted_score_path_equals_the_matrix_path_bit_for_bit(monkeypatch, n, decimals, members) -> None:
    """Above RANK_PATH_PAIRS the wins are counted from sorted scores; forced either way, the bounds are equal."""
    from iclmem.probe import null

    rng = np.random.default_rng(n)
    score = rng.normal(size=n)
    if decimals is not None:  # ties, within and across the pools
        score = np.round(score, decimals)
    labels = permuted_labels(np.arange(n) < members, 40, 5)
    if members * (n - members) > null.RANK_PATH_PAIRS:  # the default path here: equal to the reference's bounds
        np.testing.assert_array_equal(
            auc_lower_bounds(score, labels, 60, 2), permuted_auc_lower_bounds(score, labels, 60, 2)
        )
    bounds = {}
    for path, pairs in (("ranks", 0), ("matrix", 10**9)):
        monkeypatch.setattr(null, "RANK_PATH_PAIRS", pairs)
        bounds[path] = auc_lower_bounds(score, labels, 60, 2)
    np.testing.assert_array_equal(bounds["ranks"], bounds["matrix"])
