"""Training contexts with a uniform label distribution (Sec. 4.1; Tab. 2, max context 512 rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.data import DataError, draw_training_context
from iclmem.data.context import fair_allocation


def test_balanced_classes_from_skewed_pool():
    target = pd.Series(np.r_[np.zeros(900), np.ones(300), np.full(100, 2)].astype(int))
    ctx = draw_training_context(target, np.arange(len(target)), "classification", size=240, seed=0)
    assert len(ctx.ids) == 240 and len(set(ctx.ids)) == 240
    assert np.bincount(target.to_numpy()[ctx.ids]).tolist() == [80, 80, 80]
    assert ctx.counts == {"0": 80, "1": 80, "2": 80}


def test_rare_class_gives_all_rows_and_others_share_the_rest():
    target = pd.Series(np.r_[np.zeros(500), np.ones(500), np.full(10, 2)].astype(int))
    ctx = draw_training_context(target, np.arange(len(target)), "classification", size=512, seed=1)
    assert np.bincount(target.to_numpy()[ctx.ids]).tolist() == [251, 251, 10]
    strict = draw_training_context(target, np.arange(len(target)), "classification", size=512, seed=1, strict=True)
    assert np.bincount(target.to_numpy()[strict.ids]).tolist() == [10, 10, 10]


def test_context_only_from_pool_and_bounded_by_it():
    target = pd.Series(np.arange(100) % 2)
    pool = np.arange(50, 70)
    ctx = draw_training_context(target, pool, "classification", size=512)
    assert sorted(ctx.ids.tolist()) == pool.tolist()  # smaller pool than size: all of it


def test_more_classes_than_slots():
    alloc = fair_allocation(np.array([5] * 10), 4, np.random.default_rng(0))
    assert alloc.sum() == 4 and alloc.max() == 1


def test_regression_uniform_over_equal_width_bins():
    rng = np.random.default_rng(0)
    target = pd.Series(rng.exponential(size=5000))  # most mass at small values
    ctx = draw_training_context(target, np.arange(5000), "regression", size=200, n_bins=4, seed=0)
    assert len(ctx.ids) <= 200
    values = target.to_numpy()[ctx.ids]
    assert np.median(values) > np.median(target)  # flattened towards the upper range
    edges = np.linspace(target.min(), target.max(), 5)
    available = np.histogram(target, bins=edges)[0]
    taken = np.array([ctx.counts[f"bin{b:02d}"] for b in range(4)])
    assert taken.sum() == 200 and available[3] < 50  # the top bin cannot fill its share of 200 / 4 ...
    short = taken == available
    assert short[3]  # ... so it gives all its rows,
    assert taken[~short].max() - taken[~short].min() <= 1  # and the bins with rows to spare get equal counts
    assert (taken[short] <= taken[~short].min()).all()  # max-min fair
    quant = draw_training_context(target, np.arange(5000), "regression", size=200, n_bins=4, binning="quantile")
    assert list(quant.counts.values()) == [50, 50, 50, 50]


def test_context_errors():
    with pytest.raises(DataError, match="empty"):
        draw_training_context(pd.Series([0, 1]), np.array([], dtype=int), "classification")
    with pytest.raises(DataError, match="binning"):
        draw_training_context(pd.Series([0.0, 1.0]), np.arange(2), "regression", binning="log")
