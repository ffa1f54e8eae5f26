"""Dataset cards: the columns of Tab. 5 and Tab. 9 (n, feature types, k, alpha, n/k)."""

from __future__ import annotations

import pandas as pd
import pytest

from iclmem.data import Dataset, cards_frame, dataset_card, feature_kind


def test_feature_kinds():
    assert feature_kind(pd.Series([1.0, 2.0, 2.0])) == "numeric"
    assert feature_kind(pd.Series([True, False, True])) == "categorical"
    assert feature_kind(pd.Series(["a", "b", "a", "a"])) == "categorical"
    assert feature_kind(pd.Series(["a red bike", "a blue car", "the green van", None])) == "text"
    assert feature_kind(pd.Series(["2015", "2016", "2015", None])) == "numeric"  # years stored as text
    assert feature_kind(pd.Series(["16-18", "9", "9", "12", "12", "12", "16-18", "9"])) == "categorical"  # half ranges


def test_card_values_and_frame():
    ds = Dataset(
        "toy",
        pd.DataFrame({"n1": [1, 2, 3, 4, 5], "n2": [0.1] * 5, "cat": list("aabba"), "title": list("vwxyz")}),
        pd.Series([0, 0, 0, 1, 2], name="y"),
        "classification",
        "test",
    )
    card = dataset_card(ds)
    assert (card.n, card.n_features, card.n_numeric, card.n_categorical, card.n_text) == (5, 4, 2, 1, 1)
    assert card.k == 3 and card.alpha == pytest.approx(0.6) and card.label_density == pytest.approx(5 / 3)
    assert card.to_dict()["target"] == "y"
    frame = cards_frame([card, dataset_card(ds.with_(name="other", task="regression"))])
    assert frame.index.tolist() == ["toy", "other"] and frame.loc["other", "task"] == "regression"
    assert frame.loc["toy", "k"] == 3
