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
    with pytest.raises(DataError, match="none, members, non-members, all"):
        normalize_label_condition("context")
