"""Table encoding shared by pretraining, real tables and probing contexts (issue: reference LTM)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.ltm.encoding import CLIP, TableEncoder, subsample_features


def test_numbers_are_robust_standardized_and_clipped():
    values = np.r_[np.arange(1.0, 10.0), 1000.0]  # one far outlier
    enc = TableEncoder().fit(pd.DataFrame({"x": values}))
    out = enc.transform(pd.DataFrame({"x": values}))[:, 0]
    q75, q25 = np.percentile(values, [75, 25])
    assert out[0] == pytest.approx((1.0 - np.median(values)) / ((q75 - q25) / 1.349), rel=1e-5)
    assert out[-1] == CLIP


def test_categories_are_ordinal_by_frequency_ties_by_value_unseen_is_missing():
    frame = pd.DataFrame({"c": ["b", "a", "b", "c", "c", "b", "a", "c"]})  # b: 3, c: 3, a: 2
    enc = TableEncoder().fit(frame)
    assert enc.categories["c"] == {"b": 0, "c": 1, "a": 2}
    out = enc.transform(pd.DataFrame({"c": ["b", "c", "a", "zzz", None]}))[:, 0]
    assert out[0] < out[1] < out[2] and np.isnan(out[3]) and np.isnan(out[4])


def test_text_columns_of_numbers_are_read_as_numbers():
    years = ["2015", "2016", " 2017", "2018"] * 5 + ["N.V."]  # 20 of 21 parse
    mixed = ["2015", "16-18", "9", "8-10"] * 5 + ["12"]  # half ranges: stays categorical
    frame = pd.DataFrame({"year": years, "temperature": mixed, "flag": [True, False] * 10 + [True]})
    enc = TableEncoder().fit(frame)
    assert enc.numeric == ["year"] and enc.categorical == ["temperature", "flag"]
    out = enc.transform(pd.DataFrame({"year": ["2015", "2018", "N.V."], "temperature": ["9"] * 3, "flag": [True] * 3}))
    assert out[0, 0] < out[1, 0] and np.isnan(out[2, 0])  # order kept; non-numbers missing
    assert TableEncoder(numeric_text_share=None).fit(frame).categorical == ["year", "temperature", "flag"]


def test_bad_tables_are_clear_errors():
    with pytest.raises(ValueError, match="no feature columns"):
        TableEncoder().fit(pd.DataFrame(index=range(3)))
    enc = TableEncoder().fit(pd.DataFrame({"x": [1.0, 2.0], "y": ["a", "b"]}))
    with pytest.raises(ValueError, match=r"columns \['y'\] are missing"):
        enc.transform(pd.DataFrame({"x": [1.0]}))
    with pytest.raises(ValueError, match="inf values"):
        enc.transform(pd.DataFrame({"x": [np.inf], "y": ["a"]}))
    with pytest.raises(RuntimeError, match="before fit"):
        TableEncoder().transform(pd.DataFrame({"x": [1.0]}))


def test_feature_subsample_is_fixed_by_seed_and_keeps_order():
    keep = subsample_features(64, 32, seed=3)
    assert len(keep) == 32 and np.all(np.diff(keep) > 0)
    assert np.array_equal(keep, subsample_features(64, 32, seed=3))
    assert not np.array_equal(keep, subsample_features(64, 32, seed=4))
    assert np.array_equal(subsample_features(10, 32), np.arange(10))
