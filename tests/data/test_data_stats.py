"""Split statistics against hand-computed cases (Sec. 4.1, App. A.2, Tab. 6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclmem.data.stats import (
    SplitStatistics,
    ks_test,
    label_codes,
    split_statistics,
    total_variation_distance,
    wasserstein,
)


def test_tvd_hand_computed():
    # frequencies (1/2, 1/2) vs (1/4, 3/4): 0.5 * (1/4 + 1/4) = 0.25
    assert total_variation_distance([0, 0, 1, 1], [0, 1, 1, 1]) == pytest.approx(0.25)
    # disjoint supports -> 1; identical -> 0; labels only on one side count
    assert total_variation_distance(["a", "a"], ["b", "b"]) == pytest.approx(1.0)
    assert total_variation_distance([1, 2, 3], [3, 2, 1]) == pytest.approx(0.0)
    assert total_variation_distance(["a", "b", "c", "c"], ["a", "b", "b", "b"]) == pytest.approx(0.5)


def test_tvd_rejects_empty():
    with pytest.raises(ValueError):
        total_variation_distance([], [1])


def test_ks_hand_computed():
    # ECDFs of {1,2,3} and {2,3,4} differ by at most 1/3
    stat, p = ks_test([1, 2, 3], [2, 3, 4])
    assert stat == pytest.approx(1 / 3)
    assert 0.05 < p <= 1
    # fully separated samples of 2: statistic 1, exact two-sided p = 2 / C(4, 2) = 1/3
    stat, p = ks_test([0, 1], [2, 3])
    assert stat == pytest.approx(1.0)
    assert p == pytest.approx(1 / 3)
    assert ks_test([5, 6, 7], [7, 6, 5]) == (pytest.approx(0.0), pytest.approx(1.0))


def test_wasserstein_hand_computed():
    assert wasserstein([0, 1], [2, 3]) == pytest.approx(2.0)  # every unit of mass moves by 2
    assert wasserstein([0, 0, 1], [0, 1, 1]) == pytest.approx(1 / 3)
    assert wasserstein([1.5, 2.5], [2.5, 1.5]) == pytest.approx(0.0)


def test_label_codes_and_classification_statistics():
    assert label_codes(["b", "a", "c"], ["a", "b", "c"]).tolist() == [1.0, 0.0, 2.0]
    s = split_statistics(["a", "a", "b", "b"], ["a", "b", "b", "b"], "classification", classes=["a", "b"])
    assert s.tvd == pytest.approx(0.25)
    assert s.wasserstein == pytest.approx(0.25)  # codes {0,0,1,1} vs {0,1,1,1}
    assert s.ks_stat is None and s.ks_pvalue is None


def test_regression_statistics_and_failures():
    s = split_statistics(np.arange(10.0), np.arange(10.0) + 8, "regression")
    assert s.tvd is None
    assert s.ks_stat == pytest.approx(0.8)
    assert s.ks_pvalue < 0.01
    assert s.wasserstein == pytest.approx(8.0)
    failures = s.failures()
    assert any("KS statistic 0.8000 >= 0.05 (over by 0.7500)" in f for f in failures)
    assert any("KS p-value" in f for f in failures)
    assert s.badness()[0] == pytest.approx(0.8)
    # a small shift: KS 0.5 with p above 0.05 fails on the statistic only
    shifted = split_statistics(np.arange(10.0), np.arange(10.0) + 5, "regression")
    assert shifted.ks_pvalue > 0.05 and len(shifted.failures()) == 1


def test_failures_classification_threshold_is_strict():
    at = SplitStatistics("classification", 0.05, None, None, 0.0)
    below = SplitStatistics("classification", 0.0499, None, None, 0.0)
    assert at.failures() == ["TVD 0.0500 >= 0.05 (over by 0.0000)"]
    assert below.failures() == []
    assert math.isclose(at.badness()[0], 0.05)
