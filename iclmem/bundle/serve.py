"""Serving a checked bundle to the engine: which bundles are in use, and one item of them (issue 55).

The engine asks :func:`lookup` for an artifact by its input key (:func:`iclmem.store.keys.input_key`) when its own
store does not hold it: :func:`iclmem.training.finetune.finetune` for a run, :func:`iclmem.probe.probe_run` for a
model's scores, :func:`iclmem.sweep.read_summary` for a task. Nothing is ever written into a bundle here.

A bundle is served only when a recomputed sample of it agreed with it under the code now installed: a *check
record* ``$ICLMEM_CACHE/bundle-checks/<bundle>-<digest>-<code>.json`` (a check is of this machine and this code,
not of one results store) (:mod:`iclmem.bundle.check`, which ``iclmem
book`` runs first) says ``accepted``. Without one, or with one that says ``rejected``, the bundle is not served
and everything is computed, as without a bundle. An item whose files do not match their completion record is
refused in one line on stderr and computed instead; the rest of the bundle is still served.

``ICLMEM_BUNDLE``: unset, the bundles under ``<project>/bundle/``; ``off``, none; else a folder (one bundle, or a
folder of bundles).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from ..store.imports import PACKAGE_ROOT
from ..store.integrity import inspect, read_record
from ..store.keys import code_version, content_key
from .layout import MANIFEST, Bundle, BundleError, read_bundle

ENV = "ICLMEM_BUNDLE"
OFF = ("off", "0", "no", "none", "false")
#: The modules whose code computes a bundle's items: the check is keyed by their code versions together.
PRODUCERS: tuple[str, ...] = (
    "iclmem.training.finetune",
    "iclmem.probe.run",
    "iclmem.sweep.tasks",
    "iclmem.training.regimes",
)
CHECKS = "bundle-checks"


def default_folder() -> Path:
    """``<project>/bundle``: beside the package in a clone of the repository."""
    return PACKAGE_ROOT.parent / "bundle"


def bundle_roots(setting: str | None = None) -> list[Path]:
    """The bundle folders ``ICLMEM_BUNDLE`` (or ``setting``) names: see the module docstring."""
    value = os.environ.get(ENV, "") if setting is None else setting
    if value.strip().lower() in OFF:
        return []
    folder = Path(value) if value.strip() else default_folder()
    if (folder / MANIFEST).is_file():
        return [folder]
    return sorted(p.parent for p in folder.glob(f"*/{MANIFEST}")) if folder.is_dir() else []


def engine_version() -> str:
    """The code version a bundle check holds for: the producers' code versions, together."""
    return content_key([code_version(m) for m in PRODUCERS])


def checks_folder() -> Path:
    """``$ICLMEM_CACHE/bundle-checks`` (default ``~/.cache/iclmem``): this machine's check records."""
    env = os.environ.get("ICLMEM_CACHE")
    return (Path(env).expanduser() if env else Path.home() / ".cache" / "iclmem") / CHECKS


def check_path(bundle: Bundle, version: str | None = None) -> Path:
    """Where the check record of ``bundle`` under the code now installed (or ``version``) lives."""
    return checks_folder() / f"{bundle.name}-{bundle.digest[:16]}-{version or engine_version()}.json"


def read_check(bundle: Bundle) -> dict | None:
    """The check record of ``bundle`` under the installed code, or None when it has not been checked under it."""
    try:
        return json.loads(check_path(bundle).read_text())
    except (OSError, ValueError):
        return None


@lru_cache(maxsize=8)
def _served(setting: str, cache: str) -> tuple[Bundle, ...]:
    out = []
    for root in bundle_roots(setting):
        try:
            bundle = read_bundle(root)
        except BundleError as err:
            print(f"iclmem bundle: {err}", file=sys.stderr)
            continue
        check = read_check(bundle)
        if check is not None and check.get("verdict") == "accepted":
            out.append(bundle)
    return tuple(out)


def served_bundles() -> tuple[Bundle, ...]:
    """The bundles in use: named by ``ICLMEM_BUNDLE`` and accepted by a check under the installed code."""
    return _served(os.environ.get(ENV, ""), os.environ.get("ICLMEM_CACHE", ""))


_REFUSED: set[str] = set()


def item_problem(bundle: Bundle, kind: str, key: str) -> str | None:
    """Why item ``kind/key`` of ``bundle`` cannot be read: its files do not match its completion record, or its record
    is not the one the manifest names; None when it is intact."""
    folder = bundle.item_dir(kind, key)
    check = inspect(folder)
    record = read_record(folder) or {}
    if check.state == "ok" and record.get("digest") == bundle.items[f"{kind}/{key}"].get("record_digest"):
        return None
    return check.detail or "its completion record is not the one the bundle's manifest names"


def _intact(bundle: Bundle, kind: str, key: str) -> bool:
    """The item is intact (:func:`item_problem`); else one line, once."""
    problem = item_problem(bundle, kind, key)
    if problem is None:
        return True
    name = f"{bundle.name}:{kind}/{key}"
    if name not in _REFUSED:
        _REFUSED.add(name)
        print(f"iclmem bundle: refused {name} ({problem}); computing it instead", file=sys.stderr)
    return False


def lookup(kind: str, key: str) -> Path | None:
    """The folder of item ``kind/key`` in a bundle in use, if one holds it intact; else None (compute it)."""
    if not key:
        return None
    for bundle in served_bundles():
        if bundle.holds(kind, key) and _intact(bundle, kind, key):
            return bundle.item_dir(kind, key)
    return None


@contextlib.contextmanager
def bundles_off() -> Iterator[None]:
    """Within the block, no bundle is served (a recomputation, or a run that needs what a bundle lacks)."""
    old = os.environ.get(ENV)
    os.environ[ENV] = "off"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


def reset() -> None:
    """Forget what this process read of bundles and checks (after a check record is written)."""
    _served.cache_clear()
    _REFUSED.clear()


__all__ = [
    "CHECKS",
    "ENV",
    "PRODUCERS",
    "bundle_roots",
    "bundles_off",
    "check_path",
    "checks_folder",
    "default_folder",
    "engine_version",
    "item_problem",
    "lookup",
    "read_check",
    "reset",
    "served_bundles",
]
