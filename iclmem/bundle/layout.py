"""A results bundle on disk: a read-only, content-addressed copy of what the book reads from a design (issue 55).

A bundle is a folder (``bundle/<name>/`` in the repository) holding::

    BUNDLE.json                        the manifest: who made it, how, and every item with its sha256s
    items/<kind>/<input key>/...       one folder per item, each with its completion record (complete.json)

An item is one store artifact without what the book never reads (model weights, the run's copy of its
manifest): a fine-tuning run's log, metrics and curve (``finetune``), one model's probe scores (``probe``), a
sweep task's summary (``sweep``). A design too large to keep its scores keeps, instead of ``probe`` items, each
probed run's membership null (``null``, :mod:`iclmem.bundle.null_codec`), its manipulation effects (``effects``,
:mod:`iclmem.bundle.effect_codec`) and each model's scores of the few queries a
check probes again (``witness``, :func:`iclmem.bundle.collect.witness_ids`); the engine never serves a witness.
An item is named by its *input key*: the hash of everything that determines it
except the code (:func:`iclmem.store.keys.input_key`). A bundle is therefore found again after a change that moves
no number (a module moved, a function renamed); that the code still computes its numbers is shown by recomputing
a sample of it on every build (:mod:`iclmem.bundle.check`), not by hashes.

The manifest names the code version (git commit) that made the bundle, the machine, the date, the command and
the CPU-hours it took; its ``digest`` covers all of that and every item's record, so a bundle is identified by
one hash.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.atomic import atomic_write_text
from ..store.integrity import RECORD
from ..user_errors import UserError

MANIFEST = "BUNDLE.json"
ITEMS = "items"
FORMAT = 1
#: The kinds of item a bundle holds, and what of the store's artifact each keeps (Sec. 4.1-4.2's outputs).
KINDS: dict[str, tuple[str, ...]] = {
    "finetune": ("log.json.gz", "metrics.csv", "train_curve.csv"),
    "multitask": ("log.json.gz", "metrics.csv", "train_curve.csv"),
    "probe": ("params.json", "scores.parquet"),
    "witness": ("scores.parquet",),
    "null": ("null.parquet",),
    "effects": ("ranks.parquet", "aucs.parquet"),
    "sweep": ("summary.json",),
    "completions": ("completions.jsonl.gz",),
    "theta_outputs": ("outputs.npz",),
}


class BundleError(UserError):
    """A bundle that cannot be read or written: a missing or damaged manifest, an unknown kind of item."""


def _digest(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class Bundle:
    """A bundle folder and its manifest (as read and checked by :func:`read_bundle`)."""

    root: Path
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.manifest.get("name", self.root.name))

    @property
    def digest(self) -> str:
        return str(self.manifest["digest"])

    @property
    def items(self) -> dict[str, dict]:
        """``"<kind>/<input key>"`` -> the item's entry (its kind, key, files with sha256 and size, and meta)."""
        return self.manifest.get("items", {})

    def item_dir(self, kind: str, key: str) -> Path:
        return self.root / ITEMS / kind / key

    def holds(self, kind: str, key: str) -> bool:
        return f"{kind}/{key}" in self.items


def read_bundle(root: str | Path) -> Bundle:
    """The bundle at ``root``; a :class:`BundleError` naming the problem when its manifest is missing or damaged."""
    root = Path(root)
    path = root / MANIFEST
    try:
        data = json.loads(path.read_text())
        body = {k: v for k, v in data.items() if k != "digest"}
        ok = data.get("format") == FORMAT and data.get("digest") == _digest(body) and isinstance(data["items"], dict)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise BundleError(
            f"{path} is missing or damaged (not a format-{FORMAT} bundle manifest whose digest matches): restore it "
            "with `git checkout -- bundle/`, or build without it (ICLMEM_BUNDLE=off)"
        )
    return Bundle(root, data)


def write_manifest(root: Path, body: dict[str, Any]) -> Bundle:
    """Write ``body`` (without its digest) as ``root``'s manifest, atomically, with its digest."""
    body = json.loads(json.dumps({**body, "format": FORMAT}, default=str))
    atomic_write_text(root / MANIFEST, json.dumps({**body, "digest": _digest(body)}, indent=1, sort_keys=True) + "\n")
    return read_bundle(root)


def item_entry(kind: str, key: str, folder: Path, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest's entry of an item folder: its record's digest (the record covers every file), and ``meta``."""
    record = json.loads((folder / RECORD).read_text())
    return {"kind": kind, "key": key, "record_digest": record["digest"], **(meta or {})}


__all__ = [
    "FORMAT",
    "ITEMS",
    "KINDS",
    "MANIFEST",
    "Bundle",
    "BundleError",
    "item_entry",
    "read_bundle",
    "write_manifest",
]
