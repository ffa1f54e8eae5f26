"""Label randomization (Sec. 4.1, Annamalai et al. 2024): marginals preserved exactly, labels actually moved."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from iclmem.data import DataError, Dataset, make_split, normalize_label_condition, randomize_labels
from iclmem.data.randomize import cyclic_permutation


def _dataset(n: int = 600) -> Dataset:
    rng = np.random.default_rng(1)
    feats = pd.DataFrame({"x": np.arange(n)})
    return Dataset("toy", feats, pd.Series(rng.integers(0, 3, n), name="y"), "classification", "test")


def test_cyclic_permutation_has_no_fixed_points():
    rng = np.random.default_rng(0)
    for n in (2, 3, 10, 257):
        perm = cyclic_permutation(n, rng)
        assert sorted(perm.tolist()) == list(range(n))
        assert (perm != np.arange(n)).all()


def test_randomize_preserves_marginal_and_moves_labels():
    labels = np.repeat([0, 1], 100)
    out = randomize_labels(labels, seed=5)
    assert Counter(out.tolist()) == Counter(labels.tolist())
    assert (out != labels).mean() > 0.3  # a random permutation of a 50/50 pool changes about half
    assert np.array_equal(out, randomize_labels(labels, seed=5))
    assert not np.array_equal(out, randomize_labels(labels, seed=6))


@pytest.mark.parametrize(
    ("condition", "randomized"),
    [("none", set()), ("members", {"members"}), ("non-members", {"non_members"}), ("all", {"members", "non_members"})],
)
def test_split_randomizes_only_the_chosen_pools(condition, randomized):
    ds = _dataset()
    base = make_split(ds, 100, seed=2)
    m = make_split(ds, 100, seed=2, label_condition=condition)
    assert m.pools == base.pools  # same membership under every label condition
    assert set(m.randomized_labels) == randomized
    assert m.label_seed == (m.seed_used if randomized else None)
    y = ds.target.to_numpy()
    for pool, labels in m.randomized_labels.items():
        original = y[m.ids(pool)]
        assert Counter(labels) == Counter(original.tolist())
        assert (np.asarray(labels) != original).mean() > 0.3
    assert m.statistics == base.statistics


def test_label_condition_aliases_and_errors():
    assert normalize_label_condition("non_members") == "non-members"
    assert normalize_label_condition("ALL") == "all"
    with pytest.raises(DataError, match="none, members, non-members, all, flip"):
        normalize_label_condition("context")


@pytest.mark.parametrize("n_classes", [2, 3, 7])
def test_flip_moves_every_member_and_non_member_label_to_another_class(n_classes):
    """The instrument's alternative control: no member keeps its true label (issue 27)."""
    rng = np.random.default_rng(3)
    n = 500
    ds = Dataset(
        "toy",
        pd.DataFrame({"x": np.arange(n)}),
        pd.Series(rng.integers(0, n_classes, n), name="y"),
        "classification",
        "test",
    )
    m = make_split(ds, 100, seed=2, label_condition="flip")
    assert m.pools == make_split(ds, 100, seed=2).pools
    y = ds.target.to_numpy()
    for pool in ("members", "non_members"):
        flipped, original = np.asarray(m.randomized_labels[pool]), y[m.ids(pool)]
        assert (flipped != original).all() and set(flipped) <= set(ds.classes)
        if n_classes == 2:
            assert (flipped == 1 - original).all()
        elif n_classes == 3:  # uniform among the other classes: both other classes are used
            for c in range(n_classes):
                assert set(flipped[original == c]) == set(range(n_classes)) - {c}
    assert m.randomized_labels == make_split(ds, 100, seed=2, label_condition="flip").randomized_labels


def test_flip_needs_a_classification_table():
    n = 300
    ds = Dataset(
        "reg", pd.DataFrame({"x": np.arange(n)}), pd.Series(np.linspace(0, 1, n), name="y"), "regression", "test"
    )
    with pytest.raises(DataError, match="classification"):
        make_split(ds, 50, seed=0, label_condition="flip")


def test_under_all_both_pools_agree_with_the_truth_only_at_the_chance_rate():
    """The control's condition ``all``: a kept label is a coincidence both pools share alike.

    Under ``all`` a row keeps its true label only by chance, at the rate sum_c p_c^2 of its pool's
    marginal, for members and non-members alike; only memorization can separate the pools. (Under
    ``members`` the non-members keep every true label.)
    """
    rng = np.random.default_rng(4)
    n = 4000
    ds = Dataset(
        "toy",
        pd.DataFrame({"x": np.arange(n)}),
        pd.Series((rng.random(n) < 0.37).astype(int), name="y"),
        "classification",
        "test",
    )
    y = ds.target.to_numpy()
    kept = {pool: [] for pool in ("members", "non_members")}
    for seed in range(20):
        m = make_split(ds, 200, seed=seed, label_condition="all")
        for pool in kept:
            kept[pool].append((np.asarray(m.randomized_labels[pool]) == y[m.ids(pool)]).mean())
    chance = 0.37**2 + 0.63**2
    for pool, shares in kept.items():
        assert abs(np.mean(shares) - chance) < 0.03, (pool, np.mean(shares), chance)
    assert abs(np.mean(kept["members"]) - np.mean(kept["non_members"])) < 0.03
