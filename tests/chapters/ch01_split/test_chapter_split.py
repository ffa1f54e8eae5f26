"""Chapter 1's module (notebook 01) on top of the engine's split validation: our Tab. 6, the glued values."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd

from iclmem.chapters.ch01_split.numbers import glue_values, summary_numbers
from iclmem.chapters.ch01_split.tables import validation_table
from iclmem.data import Dataset, dedup_frame, deduplicate
from iclmem.data.validation import make_splits, split_statistics_frame

ENGINE_FILES = [
    "iclmem/data/validation.py",
    "iclmem/data/__init__.py",
    "iclmem/ltm/quality.py",
    "iclmem/ltm/reference.py",
]


def _tables() -> list[Dataset]:
    rng = np.random.default_rng(0)
    reg = Dataset(
        "reg", pd.DataFrame({"x": np.arange(200)}), pd.Series(rng.normal(size=200), name="y"), "regression", "t"
    )
    cls = Dataset(
        "coffee_ratings",
        pd.DataFrame({"x": np.arange(200)}),
        pd.Series(rng.choice(["bad", "good"], 200), name="Rating"),
        "classification",
        "t",
    )
    return [deduplicate(reg), deduplicate(cls)]


def test_engine_statistics_have_no_paper_column_and_the_chapter_adds_it_last(tmp_path):
    manifests = make_splits(_tables(), [25, 50], seed=0, results_dir=tmp_path)
    engine, chapter = split_statistics_frame(manifests), validation_table(manifests)
    assert list(engine.columns) == ["dataset", "task", "Q", "KS stat", "KS p", "W", "TVD", "seed", "seed used", "draws"]
    assert list(chapter.columns) == [*engine.columns, "paper (Tab. 6)"]
    pd.testing.assert_frame_equal(chapter[engine.columns], engine)
    assert chapter.loc[3, "paper (Tab. 6)"] == "TVD 0.043"  # coffee_ratings, Q=50 in the paper's Tab. 6
    assert chapter.loc[1, "paper (Tab. 6)"] == "not in paper; its KS at Q=50: 0.020-0.044, p >= 0.622"
    assert chapter.loc[0, "paper (Tab. 6)"] == "not in paper (Q = 50, 512 only); criterion KS < 0.05"


def test_glue_values_are_the_summary_then_rows_per_table(tmp_path):
    tables = _tables()
    dedup = dedup_frame(tables)
    tab6 = validation_table(make_splits(tables, [50], results_dir=tmp_path))
    values = glue_values(tab6, dedup)
    summary = summary_numbers(tab6, dedup)
    assert list(values) == [*summary, "n_reg", "n_coffee_ratings"]
    assert all(values[k] == v and type(values[k]) is type(v) for k, v in summary.items())
    assert values["n_reg"] == 200 and type(values["n_reg"]) is int
    assert values["max_tvd"] == "0.0000" and values["n_datasets"] == "2"


def test_engine_modules_do_not_import_the_chapters():
    repo = Path(__file__).resolve().parents[3]
    for name in ENGINE_FILES:
        tree = ast.parse((repo / name).read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if "chapters" in m], name
