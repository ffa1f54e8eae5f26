"""Deduplication before any split (Sec. 4.1; Tab. 4 "Feature contamination")."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclmem.data import Dataset, dedup_frame, deduplicate


def _dataset(features: dict, target: list, task: str = "classification") -> Dataset:
    return Dataset("toy", pd.DataFrame(features), pd.Series(target, name="y"), task, "test")


def test_exact_duplicates_keep_first_conflicting_drop_all():
    ds = _dataset(
        {"a": [1, 1, 2, 2, 3, 1, 4], "b": ["x", "x", "y", "y", "z", "x", None]},
        [0, 0, 0, 1, 1, 0, 1],
    )
    out = deduplicate(ds)
    # rows 0,1,5 identical features & label -> keep row 0; rows 2,3 conflict -> both dropped
    assert out.dedup.n_input == 7
    assert out.dedup.n_exact_duplicates_dropped == 2
    assert out.dedup.n_conflicting_dropped == 2
    assert out.dedup.n_output == 3
    assert out.features["a"].tolist() == [1, 3, 4]
    assert out.target.tolist() == [0, 1, 1]
    assert out.features.index.tolist() == [0, 1, 2]  # ids = positions in the deduplicated table


def test_missing_values_compare_equal_and_conflict_group_of_three():
    ds = _dataset({"a": [np.nan, np.nan, 5.0, 5.0, 5.0]}, [1.0, 1.0, 2.0, 2.0, 3.0], "regression")
    out = deduplicate(ds)
    assert out.dedup.n_exact_duplicates_dropped == 1
    assert out.dedup.n_conflicting_dropped == 3  # one feature vector, labels {2, 3}: all three go
    assert out.n == 1 and np.isnan(out.features["a"].iloc[0])


def test_no_duplicates_is_identity_and_idempotent():
    ds = _dataset({"a": [1, 2, 3], "b": [1, 1, 1]}, [0, 1, 0])
    out = deduplicate(ds)
    assert out.dedup.n_output == 3 and out.dedup.n_exact_duplicates_dropped == 0
    assert deduplicate(out) is out
    frame = dedup_frame([out])
    assert frame.loc["toy", "n_output"] == 3


def test_dedup_is_deterministic_for_ids():
    rng = np.random.default_rng(0)
    feats = {"a": rng.integers(0, 4, 300), "b": rng.integers(0, 3, 300)}
    labels = rng.integers(0, 2, 300).tolist()
    one, two = deduplicate(_dataset(feats, labels)), deduplicate(_dataset(feats, labels))
    pd.testing.assert_frame_equal(one.features, two.features)
    # every surviving feature vector is unique
    assert not one.features.duplicated().any()
