"""Disjoint pools, stratified draws, and the redraw logic of split validation (Sec. 4.1, App. A.2, Tab. 6)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.data import DataError, Dataset, PoolSizeError, SplitValidationError, make_split
from iclmem.data.split import allocate_classes, draw_pools
from iclmem.data.stats import total_variation_distance


def _classification(n: int = 400, p: float = 0.5, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    feats = pd.DataFrame({"x": np.arange(n), "c": rng.choice(["a", "b", "c"], n)})
    return Dataset("cls", feats, pd.Series((rng.random(n) < p).astype(int), name="y"), "classification", "test")


def _regression(n: int = 400, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    feats = pd.DataFrame({"x": np.arange(n)})
    return Dataset("reg", feats, pd.Series(rng.lognormal(size=n), name="y"), "regression", "test")


@pytest.mark.parametrize("make", [_classification, _regression])
def test_pools_are_disjoint_and_sized(make):
    m = make_split(make(), 50, seed=3)
    members, non_members, context = set(m.members), set(m.non_members), set(m.context)
    assert len(members) == len(non_members) == 50
    assert not members & non_members and not members & context and not non_members & context
    assert members | non_members | context == set(range(400))
    assert m.seed_requested == 3 and m.seed_used == 3 and m.draws == 1


def test_same_seed_same_pools_other_seed_other_pools():
    ds = _regression()
    assert make_split(ds, 25, seed=1).pools == make_split(ds, 25, seed=1).pools
    assert make_split(ds, 25, seed=1).pools["members"] != make_split(ds, 25, seed=2).pools["members"]


def test_stratified_classification_has_identical_class_counts():
    ds = _classification(p=0.3)
    m = make_split(ds, 50)
    y = ds.target.to_numpy()
    assert np.bincount(y[m.members]).tolist() == np.bincount(y[m.non_members]).tolist()
    assert m.statistics["tvd"] == 0.0
    assert abs(np.bincount(y[m.members])[1] - 50 * y.mean()) <= 1  # source distribution, largest remainder


def test_stratified_regression_ks_at_most_one_over_q():
    for seed in range(5):
        m = make_split(_regression(), 40, seed=seed)
        assert m.statistics["ks_stat"] <= 1 / 40 + 1e-12
        assert m.statistics["ks_pvalue"] > 0.05
    # Q = 20 gives KS = 1/20 = 0.05 at best, which fails the strict "< 0.05" of Sec. 4.1
    with pytest.raises(SplitValidationError, match="KS statistic 0.0500"):
        make_split(_regression(), 20, max_redraws=2)


def test_allocation_respects_half_of_each_class():
    take = allocate_classes(np.array([90, 6, 4]), 20)
    assert take.sum() == 20 and take[1] <= 3 and take[2] <= 2
    assert allocate_classes(np.array([50, 50]), 10).tolist() == [5, 5]
    with pytest.raises(PoolSizeError, match="half of each class"):
        allocate_classes(np.array([3, 3]), 4)


def test_context_pool_size_bounds_the_rest():
    m = make_split(_regression(), 50, context_pool_size=30)
    assert len(m.context) == 30
    assert not set(m.context) & (set(m.members) | set(m.non_members))


def test_failing_draw_is_redrawn_with_next_seed_and_seed_recorded():
    ds = _classification(n=400)
    y = ds.target.to_numpy()

    def passes(seed: int) -> bool:
        pools = draw_pools(y, "classification", 50, np.random.default_rng(seed), stratify=False)
        return total_variation_distance(y[pools["members"]], y[pools["non_members"]]) < 0.05

    start = next(s for s in range(100) if not passes(s))  # a seed whose first draw fails
    expected = next(s for s in range(start, start + 100) if passes(s))
    m = make_split(ds, 50, seed=start, stratify=False)
    assert m.seed_requested == start
    assert m.seed_used == expected > start
    assert m.draws == expected - start + 1
    assert m.statistics["tvd"] < 0.05


def test_impossible_validation_names_statistic_and_margin():
    # Q=5 members vs 5 non-members of distinct values: KS is a multiple of 0.2, never < 0.05
    with pytest.raises(SplitValidationError) as err:
        make_split(_regression(n=40), 5, seed=7, max_redraws=3)
    text = str(err.value)
    assert "KS statistic 0.2000 >= 0.05 (over by 0.1500)" in text
    assert "4 draws" in text and "seeds 7..10" in text and "max_redraws" in text


def test_max_redraws_zero_means_one_draw():
    with pytest.raises(SplitValidationError, match="in 1 draws"):
        make_split(_classification(), 50, stratify=False, max_redraws=0, tvd_threshold=0.0)


def test_bad_query_size_and_redraws():
    with pytest.raises(DataError, match="positive integer"):
        make_split(_classification(), 0)
    with pytest.raises(DataError, match="max_redraws"):
        make_split(_classification(), 10, max_redraws=-1)


def test_pools_larger_than_table_say_the_sizes():
    ds = _classification(n=100)
    with pytest.raises(PoolSizeError) as err:
        make_split(ds, 50)
    text = str(err.value)
    assert "101 rows" in text and "has 100" in text and "query_size <= 49" in text


def test_pool_size_counts_rows_after_dedup():
    feats = pd.DataFrame({"x": [0, 0, 1, 2, 3, 4]})
    ds = Dataset("dups", feats, pd.Series([0, 0, 1, 0, 1, 0], name="y"), "classification", "test")
    with pytest.raises(PoolSizeError, match="has 5 .*1 exact duplicates"):
        make_split(ds, 3)
