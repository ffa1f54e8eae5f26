"""The content-addressed results store: every artifact keyed by everything that determines it.

Every artifact lives in ``<results>/<kind>/<key>/`` where ``key`` hashes everything that
determines it: inputs (a manifest, hyperparameters), the model checkpoint hash and the
version of the code that makes it. Writes go through :mod:`iclmem.store.atomic`, so an
interrupted write never leaves a half-written file behind.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .imports import PACKAGE_ROOT, import_closure


def results_root(results_dir: str | Path | None = None) -> Path:
    """``results_dir`` if given, else ``$ICLMEM_RESULTS``, else ``results`` (git-ignored)."""
    return Path(results_dir or os.environ.get("ICLMEM_RESULTS") or "results")


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def content_key(*parts: Any, length: int = 16) -> str:
    """Short sha256 of the canonical JSON of ``parts``."""
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()[:length]


def input_key(*parts: Any, length: int = 16) -> str:
    """The key of an artifact by its inputs alone, without the code that computes it: how a results bundle names
    it (:mod:`iclmem.bundle`), so that a change that moves no number finds it again. ``parts``: what
    :func:`content_key` hashes for the store, less the code version."""
    return content_key("inputs", *parts, length=length)


def code_version(module: str, root: str | Path = PACKAGE_ROOT) -> str:
    """Hash of every file of the package that ``module`` can depend on (its import closure).

    ``module`` is the dotted name of the module whose function produces the artifact, e.g.
    ``code_version("iclmem.training.finetune")``; the files come from :func:`iclmem.store.imports.import_closure`,
    so no list of files is kept by hand. ``root``: the package folder (a copy in tests).
    """
    root = Path(root).resolve()
    h = hashlib.sha256()
    for f in import_closure(module, root):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def artifact_dir(kind: str, key: str, results_dir: str | Path | None = None) -> Path:
    return results_root(results_dir) / kind / key
