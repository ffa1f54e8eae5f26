"""Appendix A3 (no paper section): bad tables, targets, splits and manifests (Sec. 4.1's data path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from iclmem.book.execute import UsageError, read_parameters_file
from iclmem.book.table_parameters import TableFitError, fitting_query_sizes
from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
    tiny_config,
    tiny_csv,
    tiny_frame,
    tiny_manifest,
    tiny_reference,
    tiny_table,
)
from iclmem.data import (
    DataError,
    DataFileNotFoundError,
    ManifestError,
    MissingColumnError,
    PoolSizeError,
    SplitManifest,
    TargetError,
    UnknownDatasetError,
    UnreadableFileError,
    deduplicate,
    load_dataset,
    prepared_table,
    split_manifest,
)
from iclmem.training.finetune import finetune


def load(folder: Path, frame: pd.DataFrame, **kw) -> object:
    return load_dataset(tiny_csv(folder, frame), **kw)


def manifest_file(folder: Path) -> Path:
    path = folder / "manifest.json"
    path.write_text('{"format_version": 1, "pools": ')
    return path


def other_table(folder: Path) -> object:
    table = tiny_table(folder)
    return finetune(
        tiny_manifest(folder, table),
        tiny_table(folder, n=90, name="other.csv"),
        tiny_config(),
        tiny_reference(),
        folder / "results",
        progress=False,
    )


def parameters_file(folder: Path, content: bytes) -> object:
    (folder / "params.yaml").write_bytes(content)
    return read_parameters_file(folder / "params.yaml")


def regression(folder: Path) -> object:
    frame = tiny_frame().assign(y=lambda f: f.a * 2)
    return deduplicate(load_dataset(tiny_csv(folder, frame), target="y", task="regression"))


load_e, split_e = "iclmem.data.load_dataset", "iclmem.data.split_manifest"
# the only 'no' row shares its features (a = 0) with 18 'yes' rows: deduplication drops all 19 as conflicting
one_class_left = pd.DataFrame({"a": [0.0] * 18 + [1.0, 2.0, 3.0, 0.0], "y": ["yes"] * 21 + ["no"]})
infinite = tiny_frame().assign(y=lambda f: f.a.where(f.index > 0, np.inf))
single = tiny_frame().assign(y="red")
nan = tiny_frame().assign(y=lambda f: f.y.where(f.index % 10 > 0))
text = tiny_frame().assign(y=lambda f: np.where(f.index % 2, "high", "low"))
#: The data path's cases (Sec. 4.1): bad tables, targets, splits, manifests, parameter files (catalogue order).
DATA_CASES: list[BadInput] = [
    BadInput(
        "dataset-unknown",
        "Asked for the dataset `winepl` (a typo of wine_pl).",
        load_e,
        lambda d: load_dataset("winepl"),
        UnknownDatasetError,
        r"unknown dataset 'winepl'",
        r"valid names are .*wine_pl.*or set data_path to a \.csv/\.parquet file and target",
    ),
    BadInput(
        "data-file-missing",
        "Gave the path of a CSV file that does not exist.",
        load_e,
        lambda d: load_dataset(d / "nope.csv", target="y"),
        DataFileNotFoundError,
        r"no data file at .*nope\.csv",
        r"check the path",
    ),
    BadInput(
        "data-file-unreadable",
        "Gave a .parquet file that is not parquet inside.",
        load_e,
        lambda d: (d / "t.parquet").write_bytes(b"not parquet") and load_dataset(d / "t.parquet", target="y"),
        UnreadableFileError,
        r"could not read .*t\.parquet' as parquet",
        r"check that the file is a valid parquet file",
    ),
    BadInput(
        "data-file-wrong-format",
        "Gave a .txt file as the table.",
        load_e,
        lambda d: (d / "t.txt").write_text("a,b\n") and load_dataset(d / "t.txt", target="y"),
        DataError,
        r"is not a \.csv or \.parquet file",
        r"convert the table to one of these",
    ),
    BadInput(
        "target-not-given",
        "Loaded a CSV file without naming its target column.",
        load_e,
        lambda d: load(d, tiny_frame()),
        MissingColumnError,
        r"name the target column",
        r"target= in Python\); the columns are: a, b, c, y",
    ),
    BadInput(
        "target-missing",
        "Named a target column (`label`) that the table does not have.",
        load_e,
        lambda d: load(d, tiny_frame(), target="label"),
        MissingColumnError,
        r"no target column 'label'",
        r"the columns are: a, b, c, y\. Set target to one of them",
    ),
    BadInput(
        "no-feature-columns",
        "Loaded a CSV whose only column is the target.",
        load_e,
        lambda d: load(d, tiny_frame()[["y"]], target="y"),
        DataError,
        r"no feature columns besides the target 'y'",
        r"check target .* or add the feature columns",
    ),
    BadInput(
        "target-single-class",
        "Chose a target with one class in every row.",
        load_e,
        lambda d: load(d, single, target="y", task="classification"),
        TargetError,
        r"has a single class \('red' in all 80 rows\)",
        r"choose another target column",
    ),
    BadInput(
        "target-nan",
        "Loaded a table whose target is missing in some rows.",
        load_e,
        lambda d: load(d, nan, target="y"),
        TargetError,
        r"missing in 8 of 80 rows",
        r"drop those rows from the file, or set missing_target: drop",
    ),
    BadInput(
        "target-text-for-regression",
        "Asked for regression on a text target.",
        load_e,
        lambda d: load(d, text, target="y", task="regression"),
        TargetError,
        r"has non-numeric values",
        r"convert the column or set task: classification",
    ),
    BadInput(
        "task-unknown",
        "Gave `task='classify'`.",
        load_e,
        lambda d: load(d, tiny_frame(), target="y", task="classify"),
        DataError,
        r"not 'classify'",
        r"task must be 'classification' or 'regression'",
    ),
    BadInput(
        "carte-dir-missing",
        "Pointed carte_dir at a folder that does not exist.",
        load_e,
        lambda d: load_dataset("coffee_ratings", carte_dir=d / "carte"),
        DataFileNotFoundError,
        r"the CARTE folder .*carte' does not exist",
        r"check carte_dir / ICLMEM_CARTE_DIR",
    ),
    BadInput(
        "carte-table-missing",
        "Pointed carte_dir at a folder without the table's file.",
        load_e,
        lambda d: load_dataset("coffee_ratings", carte_dir=d),
        DataFileNotFoundError,
        r"no file for CARTE table 'coffee_ratings'",
        r"Put CARTE's raw table .* there",
    ),
    BadInput(
        "table-too-small-for-q",
        "Asked for Q=50 members and non-members from a 60-row table.",
        split_e,
        lambda d: split_manifest(prepared_table(tiny_csv(d, tiny_frame(60)), target="y"), 50, results_dir=d),
        PoolSizeError,
        r"need 100 \+ 1 = 101 rows, but the deduplicated table has 60",
        r"use query_size <= 29",
    ),
    BadInput(
        "classes-too-small-for-q",
        "Asked for Q=14 from 30 rows spread over 10 classes of 3.",
        split_e,
        lambda d: split_manifest(tiny_table(d, 30, 10), 14, results_dir=d),
        PoolSizeError,
        r"the classes allow only 10 \(half of each class's rows\)",
        r"use a smaller query size \(the notebook parameter query_sizes",
    ),
    BadInput(
        "query-size-zero",
        "Asked for Q=0.",
        split_e,
        lambda d: split_manifest(tiny_table(d), 0, results_dir=d),
        DataError,
        r"not 0",
        r"query_size must be a positive integer",
    ),
    BadInput(
        "label-condition-unknown",
        "Gave `label_condition='random'`.",
        split_e,
        lambda d: split_manifest(tiny_table(d), 10, label_condition="random", results_dir=d),
        DataError,
        r"unknown label_condition 'random'",
        r"use one of none, members, non-members, all",
    ),
    BadInput(
        "manifest-corrupt",
        "Loaded a split manifest file that was cut off.",
        "iclmem.data.SplitManifest.load",
        lambda d: SplitManifest.load(manifest_file(d)),
        ManifestError,
        r"could not read manifest",
        r"delete it and rebuild",
    ),
    BadInput(
        "manifest-other-table",
        "Fine-tuned on a table with the split manifest of another table.",
        "iclmem.training.finetune.finetune",
        other_table,
        ManifestError,
        r"is not the one manifest 'table' was drawn from",
        r"rebuild the manifest with split_manifest\(\.\.\., refresh=True\)",
    ),
    # found by tests/data/test_generated_inputs.py (generated tables), each shrunk to its smallest table
    BadInput(
        "table-no-rows",
        "Loaded a CSV file that holds its header line only.",
        load_e,
        lambda d: load(d, tiny_frame().iloc[:0], target="y"),
        TargetError,
        r"table: the table has no rows",
        r"check the file \(is it the right one\?\) or add rows",
    ),
    BadInput(
        "query-size-not-positive",
        "Checked query_sizes=[0] against a regression table before any compute.",
        "iclmem.book.table_parameters.fitting_query_sizes",
        lambda d: fitting_query_sizes({"table": regression(d)}, [0]),
        TableFitError,
        r"query sizes must be positive integers, got \[0\]",
        r"set query_sizes to a non-empty list of sizes of at least 1",
    ),
    BadInput(
        "one-class-after-dedup",
        "Split a table whose only `no` row has the features of `yes` rows, so deduplication leaves one class.",
        split_e,
        lambda d: split_manifest(load(d, one_class_left, target="y"), 1, results_dir=d),
        TargetError,
        r"after deduplication \(22 rows, 0 exact duplicates and 19 conflicting rows dropped\) the target 'y' has a "
        r"single class \('yes' in all 3 rows\)",
        r"choose another target column",
    ),
    BadInput(
        "target-inf-regression",
        "Asked for regression on a target with an infinite value.",
        load_e,
        lambda d: load(d, infinite, target="y", task="regression"),
        TargetError,
        r"target 'y' is infinite in 1 of 80 rows",
        r"replace those values in the file with finite numbers",
    ),
    # found by tests/book/test_generated_parameters.py (generated parameter files, -f)
    BadInput(
        "parameters-file-not-utf8",
        "Gave a parameters file (-f) saved in another encoding than UTF-8.",
        "iclmem.book.execute.read_parameters_file",
        lambda d: parameters_file(d, "task: régression\n".encode("latin-1")),
        UsageError,
        r"params\.yaml is not UTF-8 text \(invalid continuation byte at byte 7\)",
        r"save it as UTF-8 text",
    ),
    BadInput(
        "parameters-file-too-deep",
        "Gave a parameters file (-f) whose value is a list nested 1000 levels deep.",
        "iclmem.book.execute.read_parameters_file",
        lambda d: parameters_file(d, b"query_sizes: " + b"[" * 1000 + b"]" * 1000 + b"\n"),
        UsageError,
        r"params\.yaml nests its values too deeply to be read",
        r"write one `name: value` per line with flat lists",
    ),
]


def data_cases() -> list[BadInput]:
    """The data path's cases (Sec. 4.1): bad tables, targets, splits, manifests, parameter files (catalogue order)."""
    return list(DATA_CASES)


__all__ = ["DATA_CASES", "data_cases"]
