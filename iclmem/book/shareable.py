"""Executed notebooks a user can share: their own files appear by name and content fingerprint, not by absolute path.

A run on the user's table passes ``data_path = "/home/<user>/projects/my_table.csv"``; papermill
writes it into the notebook's injected cell and metadata, and outputs repeat it (a table's
source, an error's "looked for"). :func:`make_shareable` rewrites an executed notebook so that
each path parameter's file or folder appears as its name (``my_table.csv``), and the parameter
values recorded for the page's parameters table read ``my_table.csv (sha256 1a2b3c4d5e6f)``. The
absolute path is not lost: :func:`record_input` keeps it in the results store
(``<results>/inputs/<fingerprint>.json``), on the machine that built the page.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import nbformat

from iclmem.store.atomic import atomic_write_text

#: Parameters holding a path (relative paths are read against the directory a command runs in).
PATH_PARAMETERS: tuple[str, ...] = ("data_path", "carte_dir", "grid_file")
#: Where the store keeps the absolute path of each input file, by fingerprint.
INPUTS_FOLDER = "inputs"
FINGERPRINT_CHARS = 12


def file_fingerprint(path: str | Path) -> str:
    """The first :data:`FINGERPRINT_CHARS` hex digits of the sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:FINGERPRINT_CHARS]


def shareable_label(path: str | Path) -> str:
    """How a page names a file: ``my_table.csv (sha256 1a2b3c4d5e6f)``; a folder by its name."""
    path = Path(path)
    return f"{path.name} (sha256 {file_fingerprint(path)})" if path.is_file() else path.name


def path_values(parameters: Mapping[str, Any], cwd: str | Path) -> dict[str, Path]:
    """The path parameters among ``parameters`` (the user's own files, :data:`PATH_PARAMETERS`) that name an existing
    file or folder, resolved against ``cwd``. Other paths (a reader page's ``executed_dir``, in the build) stay."""
    found: dict[str, Path] = {}
    for name, value in parameters.items():
        if not isinstance(value, str) or not value:
            continue
        path = Path(value).expanduser()
        if name in PATH_PARAMETERS:
            resolved = (Path(cwd) / path).resolve()
            if resolved.exists() and resolved.parent != resolved:
                found[name] = resolved
    return found


def record_input(path: Path, store: Path) -> Path:
    """Keep where a file was (its absolute path on this machine) in ``<store>/inputs/<fingerprint>.json``."""
    fingerprint = file_fingerprint(path)
    entry = {"file": path.name, "sha256_prefix": fingerprint, "path": str(path)}
    return atomic_write_text(store / INPUTS_FOLDER / f"{fingerprint}.json", json.dumps(entry, indent=2) + "\n")


def _replacer(pairs: list[tuple[str, str]]):
    def replace(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    return replace


def _scrub(value: Any, replace) -> Any:
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, list):
        return [_scrub(v, replace) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v, replace) for k, v in value.items()}
    return value


def make_shareable(nb: nbformat.NotebookNode, parameters: Mapping[str, Any], cwd: str | Path, store: Path | None):
    """Rewrite ``nb`` in place: the absolute (and given) form of each path parameter becomes its name in every cell
    source and output; the recorded parameter values become :func:`shareable_label`. Files are recorded in
    ``store`` (when given). Returns the names rewritten."""
    paths = path_values(parameters, cwd)
    if not paths:
        return []
    pairs: list[tuple[str, str]] = []
    for name, path in paths.items():
        given = str(parameters[name])
        for form in {str(path), given, given.rstrip(os.sep)}:
            if form and (os.sep in form or form.startswith("~")) and form != path.name:
                pairs.append((form, path.name))
        if store is not None and path.is_file():
            record_input(path, store)
    pairs.sort(key=lambda pair: -len(pair[0]))  # the longest first: a folder's path is a prefix of its files'
    replace = _replacer(pairs)
    for cell in nb.cells:
        cell.source = replace(cell.source)
        for output in cell.get("outputs", []):
            for key in ("text", "data", "evalue", "traceback"):
                if key in output:
                    output[key] = _scrub(output[key], replace)
    recorded = nb.metadata.get("papermill", {}).get("parameters")
    if isinstance(recorded, dict):
        for name, path in paths.items():
            if name in recorded:
                recorded[name] = shareable_label(path)
    return sorted(paths)
