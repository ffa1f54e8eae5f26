"""Notebook helpers: the split manifests per label condition, our Tab. 6 beside the paper's, the ECDF figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from iclmem.chapters.ch01_split.figures import plot_pool_ecdfs, pool_targets  # noqa: E402
from iclmem.chapters.ch01_split.manifests import split_manifests  # noqa: E402
from iclmem.chapters.ch01_split.paper import paper_reference, paper_table6  # noqa: E402
from iclmem.chapters.ch01_split.tables import validation_table  # noqa: E402
from iclmem.data import Dataset, deduplicate  # noqa: E402
from iclmem.data.validation import make_splits  # noqa: E402


def _tables() -> list[Dataset]:
    rng = np.random.default_rng(0)
    reg = Dataset(
        "reg", pd.DataFrame({"x": np.arange(200)}), pd.Series(rng.normal(size=200), name="y"), "regression", "t"
    )
    cls = Dataset(
        "chocolate_bar_ratings",
        pd.DataFrame({"x": np.arange(200)}),
        pd.Series(rng.choice(["bad", "good"], 200), name="Rating"),
        "classification",
        "t",
    )
    return [deduplicate(reg), deduplicate(cls)]


def test_split_manifests_validate_the_first_label_condition_and_randomize_every_one(tmp_path):
    tables = _tables()
    validated, every = split_manifests(tables, [25], 0, ["none", "members"], results_dir=tmp_path)
    assert [(m.dataset, m.label_condition) for m in validated] == [("reg", "none"), ("chocolate_bar_ratings", "none")]
    assert [m.label_condition for m in every] == ["none", "none", "members", "members"]
    assert all(not m.randomized_labels for m in validated) and all("members" in m.randomized_labels for m in every[2:])
    with pytest.raises(ValueError, match="label_conditions is empty"):
        split_manifests(tables, [25], 0, [], results_dir=tmp_path)


def test_paper_table6_quotes_the_paper():
    tab = paper_table6()
    assert len(tab) == 20
    row = tab[(tab.dataset == "buy_buy_baby") & (tab.Q == 512)].iloc[0]
    assert (row["KS stat"], row["KS p"], row["W"]) == (0.035, 0.530, 0.065)
    assert tab[tab.task == "classification"]["TVD"].max() == 0.056
    assert paper_reference("coffee_ratings", "classification", 512) == "TVD 0.056"
    assert "0.021-0.035" in paper_reference("wine_pl", "regression", 512)


def test_validation_table_and_figure(tmp_path):
    tables = _tables()
    manifests = make_splits(tables, [25, 50], seed=1, results_dir=tmp_path)
    assert len([p for p in (tmp_path / "manifests").iterdir() if not p.name.endswith(".complete.json")]) == 4
    tab = validation_table(manifests)
    assert tab[["dataset", "Q"]].values.tolist() == [
        ["reg", 25],
        ["reg", 50],
        ["chocolate_bar_ratings", 25],
        ["chocolate_bar_ratings", 50],
    ]
    assert (tab.loc[tab.task == "regression", "KS stat"] < 0.05).all()
    assert (tab.loc[tab.task == "classification", "TVD"] == 0).all()
    assert tab.loc[2, "paper (Tab. 6)"] == "not in paper (Q = 50, 512 only); criterion TVD < 0.05"
    assert tab.loc[3, "paper (Tab. 6)"] == "TVD 0.005"
    long = pool_targets(manifests[2], tables[1])
    assert sorted(long["target"].unique().tolist()) == [0.0, 1.0]  # label codes of "bad"/"good"
    fig = plot_pool_ecdfs(manifests, tables)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 4


def test_randomization_table(tmp_path):
    from iclmem.data.validation import randomization_table

    tables = _tables()
    manifests = make_splits(tables, [50], label_condition="all", results_dir=tmp_path)
    tab = randomization_table(manifests, tables)
    assert tab[["dataset", "pool"]].values.tolist() == [
        ["reg", "members"],
        ["reg", "non_members"],
        ["chocolate_bar_ratings", "members"],
        ["chocolate_bar_ratings", "non_members"],
    ]
    assert (tab["rows"] == 50).all()
    assert (tab.loc[tab.dataset == "reg", "labels changed"] == 1.0).all()  # distinct values, cyclic permutation
    assert (tab["labels changed"] > 0.3).all()
    assert randomization_table(make_splits(tables, [50], results_dir=tmp_path), tables).empty


def test_summary_numbers_marks_missing_task(tmp_path):
    from iclmem.chapters.ch01_split.numbers import summary_numbers
    from iclmem.data import dedup_frame

    tables = _tables()[:1]  # regression only
    numbers = summary_numbers(validation_table(make_splits(tables, [50], results_dir=tmp_path)), dedup_frame(tables))
    assert numbers["max_tvd"] == "-" and numbers["n_datasets"] == "1"
    assert float(numbers["max_ks_stat"]) <= 0.02 and numbers["max_redraws_used"] == "0"
    from IPython.lib.pretty import pretty

    assert pretty(numbers["max_tvd"]) == "-" and repr(numbers["n_datasets"]) == "1"  # glued without quotes
