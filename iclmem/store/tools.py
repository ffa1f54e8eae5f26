"""``iclmem store verify`` and ``iclmem store gc``: check every artifact of a results store, and free what no
current key reaches (issue 41).

**verify** checks each artifact (``finetune/``, ``multitask/`` and ``probe/`` folders, ``manifests/`` files,
``sweep/<grid name>/`` summaries)
against its completion record (:func:`iclmem.store.integrity.inspect`, every file hashed) and lists the damaged
and the incomplete ones; ``repair=True`` moves them to ``<store>/quarantine/`` (an incomplete artifact
whose writer still holds its lock is left alone: it is being written).

**gc** plans what to delete. Reachability: every store key holds the code version of the module that
produces the artifact (:func:`iclmem.store.keys.code_version`), and the completion record names that module
and version. An artifact is *reachable* when its record's version equals the producer's current code
version: the current code computes that key again for the same inputs. Unreachable: artifacts made by
older code, incomplete artifacts (no record) whose writer holds no lock, everything in ``quarantine/``
and stale lock files. Manifests are keyed by their inputs only (no code version) and are always kept.
Nothing is deleted unless asked (``dry_run=False``, ``--yes`` on the command line).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .atomic import size_text
from .integrity import LOCKS, QUARANTINE, _holder, _stale, inspect, lock_path, quarantine, read_record
from .keys import code_version, results_root

#: The kinds of folder artifacts and file artifacts a store holds; a sweep's summaries are files one level down
#: (``sweep/<grid name>/<spec key>.json``).
FOLDER_KINDS = ("finetune", "multitask", "probe")
FILE_KINDS = ("manifests",)
SUMMARY_KIND = "sweep"


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.endswith(".complete.json"))


def artifacts(store: Path) -> list[Path]:
    """Every artifact of ``store``: the key folders of :data:`FOLDER_KINDS`, the files of :data:`FILE_KINDS` and the
    sweep summaries (their completion records aside)."""
    found: list[Path] = []
    for kind in FOLDER_KINDS:
        folder = store / kind
        found += sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    for kind in FILE_KINDS:
        found += _files(store / kind)
    sweeps = store / SUMMARY_KIND
    for grid in sorted(p for p in sweeps.iterdir() if p.is_dir()) if sweeps.is_dir() else []:
        found += _files(grid)
    return found


def kind_of(artifact: Path, store: Path) -> str:
    """The kind of an artifact: the first folder of its path below the store."""
    return artifact.relative_to(store).parts[0]


def size_of(path: Path) -> int:
    """Bytes under ``path`` (a file or a folder)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _being_written(artifact: Path, store: Path) -> bool:
    lock = lock_path(artifact, store)
    if not lock.exists():
        return False
    return not _stale(lock, _holder(lock)[1])


@dataclass
class Verified:
    """What :func:`verify_store` found: ``problems`` as ``(artifact, state, detail)``, and where repaired ones went."""

    checked: int = 0
    problems: list[tuple[Path, str, str]] = field(default_factory=list)
    moved: list[Path] = field(default_factory=list)


def verify_store(results_dir: str | Path | None = None, repair: bool = False) -> Verified:
    """Check every artifact of the store against its completion record; ``repair``: quarantine the bad ones."""
    store = results_root(results_dir)
    out = Verified()
    for artifact in artifacts(store):
        out.checked += 1
        check = inspect(artifact, verify=False)
        if check.state in ("ok", "absent"):
            continue
        out.problems.append((artifact, check.state, check.detail))
        if repair and not (check.state == "incomplete" and _being_written(artifact, store)):
            out.moved.append(quarantine(artifact, check.detail, store))
    return out


@dataclass
class GcPlan:
    """What :func:`gc_plan` would delete: ``(path, bytes, why)``, and how much the store keeps."""

    remove: list[tuple[Path, int, str]] = field(default_factory=list)
    kept: int = 0
    kept_bytes: int = 0

    @property
    def bytes(self) -> int:
        return sum(n for _, n, _ in self.remove)


def gc_plan(results_dir: str | Path | None = None) -> GcPlan:
    """What no current key reaches (see the module docstring), with sizes."""
    store = results_root(results_dir)
    plan, versions = GcPlan(), {}
    for artifact in artifacts(store):
        kind = kind_of(artifact, store)
        record = read_record(artifact)
        why = None
        if kind in FILE_KINDS:
            why = None
        elif record is None:
            why = None if _being_written(artifact, store) else "incomplete (no completion record)"
        else:
            producer = record.get("producer") or ""
            if producer not in versions:
                try:
                    versions[producer] = code_version(producer) if producer else None
                except Exception:  # noqa: BLE001 - a producer this code no longer has: nothing reaches it
                    versions[producer] = None
            if versions[producer] is None or record.get("code_version") != versions[producer]:
                why = f"made by other code ({producer or 'unknown'} {str(record.get('code_version'))[:8]})"
        if why is None:
            plan.kept += 1
            plan.kept_bytes += size_of(artifact)
        else:
            plan.remove.append((artifact, size_of(artifact), why))
    quarantined = store / QUARANTINE
    for path in sorted(quarantined.iterdir()) if quarantined.is_dir() else []:
        plan.remove.append((path, size_of(path), "quarantined"))
    locks = store / LOCKS
    for lock in sorted(locks.glob("*.lock")) if locks.is_dir() else []:
        if _stale(lock, _holder(lock)[1]):
            plan.remove.append((lock, size_of(lock), "lock of a dead writer"))
    return plan


def remove(plan: GcPlan) -> None:
    """Delete what ``plan`` lists (a folder with its files, and a file artifact's completion record)."""
    for path, _, _ in plan.remove:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
            path.with_name(path.name + ".complete.json").unlink(missing_ok=True)


def format_verified(found: Verified, store: Path) -> str:
    lines = [f"{store}: {found.checked} artifacts checked, {len(found.problems)} damaged or incomplete"]
    lines += [f"  {state:10s} {a.relative_to(store)}  {detail}" for a, state, detail in found.problems]
    lines += [f"  moved to {m}" for m in found.moved]
    return "\n".join(lines)


def format_plan(plan: GcPlan, store: Path, dry_run: bool) -> str:
    lines = [f"  {size_text(n):>10s}  {p.relative_to(store)}  ({why})" for p, n, why in plan.remove]
    verb = "would free" if dry_run else "freed"
    lines.append(
        f"{store}: {verb} {size_text(plan.bytes)} in {len(plan.remove)} entries; "
        f"keeps {plan.kept} artifacts ({size_text(plan.kept_bytes)})"
        + ("; run with --yes to delete" if dry_run else "")
    )
    return "\n".join(lines)


__all__ = ["GcPlan", "Verified", "artifacts", "format_plan", "format_verified", "gc_plan", "remove", "verify_store"]
