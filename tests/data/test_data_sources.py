"""Table sources: shipped carte-ai tables, the local CARTE folder recipes (App. A.2, Tab. 5), CSV/parquet files, bad
input."""

from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd
import pytest

from iclmem.data import (
    DataError,
    DataFileNotFoundError,
    MissingColumnError,
    TargetError,
    UnknownDatasetError,
    UnreadableFileError,
    dataset_names,
    load_dataset,
)
from iclmem.data.recipes import carte_names, recipes


# -- shipped tables --------------------------------------------------------------------------------
def test_spotify_is_binary_classification_without_importing_carte_ai():
    ds = load_dataset("spotify")
    assert ds.task == "classification" and ds.target_name == "popularity"
    assert sorted(ds.target.unique().tolist()) == [0, 1]
    assert ds.n == 41099 and "popularity" not in ds.features.columns
    assert "carte_ai" not in sys.modules


@pytest.mark.parametrize(
    ("name", "target"), [("wine_pl", "price"), ("wine_vivino_price", "Price"), ("wine_dot_com_prices", "Prices")]
)
def test_wine_tables_are_regression_on_log_prices(name, target):
    ds = load_dataset(name)
    assert ds.task == "regression" and ds.target_name == target
    assert ds.target.dtype.kind == "f"
    assert 0 < ds.target.min() and ds.target.max() < 10  # already log-transformed in the shipped files


def test_task_override_treats_values_as_classes():
    ds = load_dataset("wine_pl", task="classification")
    assert ds.task == "classification" and ds.target.nunique() == 420  # k of the card, cf. Tab. 9


def test_names_cover_shipped_and_paper_tables():
    names = dataset_names()
    assert names[:4] == ["spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices"]
    assert len(carte_names()) == 10 and set(carte_names()) <= set(names)
    tasks = {n: recipes()["carte"][n]["task"] for n in carte_names()}
    assert {n for n, t in tasks.items() if t == "classification"} == {"chocolate_bar_ratings", "coffee_ratings"}


# -- local CARTE folder ----------------------------------------------------------------------------
def _raw_chocolate() -> pd.DataFrame:
    n = 8
    return pd.DataFrame(
        {
            "Company \n(Maker-if known)": [f"maker{i % 3}" for i in range(n)],
            "Specific Bean Origin\nor Bar Name": [f"bar {i}" for i in range(n)],
            "REF": list(range(n)),
            "Review\nDate": [2006 + i for i in range(n)],
            "Cocoa\nPercent": ["70%", "65%", "72.5%", "70%", "80%", "64%", "70%", "75%"],
            "Rating": [3.0, 3.25, 3.5, 2.75, 4.0, np.nan, 3.75, 3.2],
            "Bean\nType": [None] * 6 + ["Criollo", "Trinitario"],  # more than half missing -> dropped
            "Constant": ["same"] * n,  # single value -> dropped
        }
    )


def test_chocolate_recipe_on_raw_parquet(tmp_path):
    _raw_chocolate().to_parquet(tmp_path / "chocolate_bar_ratings.parquet")
    ds = load_dataset("chocolate_bar_ratings", carte_dir=tmp_path)
    assert ds.task == "classification" and ds.target_name == "Rating"
    assert ds.target.tolist() == [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]  # >= 3.25 is 1; the NaN row is gone
    cols = set(ds.features.columns)
    assert "REF" not in cols and "Bean_Type" not in cols and "Constant" not in cols
    assert {"Specific_Bean_Origin_or_Bar_Name", "Review_Date", "Cocoa_Percent"} <= cols
    assert ds.features["Cocoa_Percent"].tolist()[:3] == [70.0, 65.0, 72.5]
    assert ds.features["Review_Date"].iloc[0] == "2006"
    assert any("missing target" in n for n in ds.notes)
    assert "raw + recipe" in ds.source


def test_bikewale_recipe_filters_and_logs_from_env_folder(tmp_path, monkeypatch):
    (tmp_path / "data_raw").mkdir()
    pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "bike_name": ["a", "b", "c", "d"],
            "price": [100.0, 1000.0, 10000.0, 500.0],
            "model_year": [2019, 2020, 2021, 2020],
            "km_driven": [10, 20, 30, 40],
        }
    ).to_csv(tmp_path / "data_raw" / "bikewale.csv", index=False)
    monkeypatch.setenv("ICLMEM_CARTE_DIR", str(tmp_path))
    ds = load_dataset("bikewale")
    assert ds.target.tolist() == pytest.approx([3.0, 4.0, math.log10(500)])  # price < 500 dropped, log10
    assert "id" not in ds.features.columns
    assert ds.features["model_year"].tolist() == ["2020", "2021", "2020"]
    assert ds.features["km_driven"].dtype.kind == "f"


def test_processed_carte_layout_is_used_as_is(tmp_path):
    (tmp_path / "coffee_ratings").mkdir()
    pd.DataFrame({"name": ["a", "b", "c"], "roaster": ["r", "s", "r"], "rating": [0.0, 1.0, 1.0]}).to_parquet(
        tmp_path / "coffee_ratings" / "raw.parquet"
    )
    ds = load_dataset("coffee_ratings", carte_dir=tmp_path)
    assert ds.target.tolist() == [0.0, 1.0, 1.0] and "processed" in ds.source


def test_carte_folder_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("ICLMEM_CARTE_DIR", raising=False)
    with pytest.raises(DataFileNotFoundError, match="ICLMEM_CARTE_DIR"):
        load_dataset("cardekho")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_dataset("cardekho", carte_dir=tmp_path / "nope")
    with pytest.raises(DataFileNotFoundError, match=r"cardekho\.csv"):
        load_dataset("cardekho", carte_dir=tmp_path)


# -- files (the adapt-a-notebook path) -------------------------------------------------------------
def test_csv_path_with_target_and_inferred_task(tmp_path):
    path = tmp_path / "my table.csv"
    pd.DataFrame({"a": range(30), "b": list("xy") * 15, "y": [0.5 * i for i in range(30)]}).to_csv(path, index=False)
    ds = load_dataset(str(path), target="y")
    assert ds.name == "my_table" and ds.task == "regression" and ds.features.columns.tolist() == ["a", "b"]
    assert any("inferred" in n for n in ds.notes)
    assert load_dataset(path, target="b", task="classification").task == "classification"


def test_bad_input_errors(tmp_path):
    with pytest.raises(UnknownDatasetError, match="spotify.*cardekho"):
        load_dataset("no_such_table")
    path = tmp_path / "t.csv"
    pd.DataFrame({"a": [1, 2, 3, 4], "y": [1.0, np.nan, np.nan, 2.0], "one": [1, 1, 1, 1], "s": list("abcd")}).to_csv(
        path, index=False
    )
    with pytest.raises(MissingColumnError, match="columns are: a, y, one, s"):
        load_dataset(path, target="label")
    with pytest.raises(MissingColumnError, match="target="):
        load_dataset(path)
    with pytest.raises(TargetError, match="missing in 2 of 4 rows.*missing_target: drop"):
        load_dataset(path, target="y", task="regression")
    assert load_dataset(path, target="y", task="regression", dropna=True).n == 2
    with pytest.raises(TargetError, match="single class"):
        load_dataset(path, target="one", task="classification")
    with pytest.raises(TargetError, match="non-numeric.*task: classification"):
        load_dataset(path, target="s", task="regression")
    with pytest.raises(DataError, match="'classification' or 'regression'"):
        load_dataset(path, target="s", task="ranking")


def test_unreadable_and_missing_files(tmp_path):
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"this is not parquet")
    with pytest.raises(UnreadableFileError, match="valid parquet"):
        load_dataset(bad, target="y")
    with pytest.raises(DataFileNotFoundError) as err:
        load_dataset(tmp_path / "missing.csv", target="y")
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, ValueError)


def test_sklearn_tables_load_offline_with_their_task():
    from iclmem.data import dataset_names, load_dataset

    bc = load_dataset("breast_cancer")
    assert bc.task == "classification" and bc.n == 569 and bc.target.nunique() == 2
    assert load_dataset("diabetes").task == "regression"
    assert {"breast_cancer", "iris", "wine", "digits", "diabetes"} <= set(dataset_names())
