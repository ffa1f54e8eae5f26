"""The store's integrity: checksummed completion records, quarantine, and one writer per key (issue 41).

**Completion record.** An artifact is a folder ``<store>/<kind>/<key>/`` (a fine-tuning run, probe
scores) or a single file with a suffix (a manifest, ``<store>/manifests/<name>.json``). Its completion
record, written last and atomically, holds the sha256 and size of each file it covers, the module that
produced it and that module's code version, and a digest of all that::

    <store>/<kind>/<key>/complete.json          a folder's record (covers every file of the folder)
    <store>/manifests/<name>.json.complete.json  a single file's record

No record, no artifact: a folder without one is *incomplete* (being written, or killed mid-write) and is
computed (or resumed) again. A reader never trusts a record alone: :func:`served` checks every covered
file against it, once per process per artifact (the check is kept with the size, mtime and inode of each
file, so a file changed later is hashed again). A mismatch is never served: the artifact is moved aside to
``<store>/quarantine/<kind>-<key>-<time>/``, one line on stderr names the damaged file, and the caller
computes it again. On a read-only store nothing can be moved: :class:`~iclmem.store.errors.DamagedArtifactError`.

**One writer per key.** :func:`writer_lock` holds ``<store>/locks/<kind>-<key>.lock``, created with
``O_CREAT | O_EXCL`` (atomic on a local disk and on NFS-style shared folders) and holding the writer's
host and pid. A second process waits for the first (one line says for whom) and then reads its result:
:func:`produce` checks the store again once it holds the lock. A lock whose writer is a dead process of
this host is taken over; one of another host is waited for (``ICLMEM_LOCK_TIMEOUT`` seconds, default: no
limit). On a read-only store the lock cannot be created: what would have to be computed is named in
one line (:class:`~iclmem.store.errors.StoreReadOnlyError`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .atomic import _HOST, _alive, _writer, atomic_write_text, disk_error
from .errors import DamagedArtifactError, StoreLockTimeout

RECORD = "complete.json"
QUARANTINE = "quarantine"
LOCKS = "locks"
FORMAT = 1
LOCK_TIMEOUT_ENV = "ICLMEM_LOCK_TIMEOUT"
#: A lock file left empty (its writer died between creating and filling it) is taken over after this many seconds.
EMPTY_LOCK_S = 30.0

T = TypeVar("T")


def is_file_artifact(artifact: Path) -> bool:
    """A single-file artifact has a suffix (``manifests/<name>.json``); a folder artifact's key has none."""
    return bool(Path(artifact).suffix)


def record_path(artifact: str | Path, record: str | Path | None = None) -> Path:
    """Where ``artifact``'s completion record lives: ``record`` when given (a caller's own record file, e.g. an
    executed notebook's ``.cache.json``), else as the module docstring says."""
    if record is not None:
        return Path(record)
    artifact = Path(artifact)
    return artifact.with_name(artifact.name + "." + RECORD) if is_file_artifact(artifact) else artifact / RECORD


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _covered(artifact: Path, exclude: Iterable[str]) -> list[Path]:
    if is_file_artifact(artifact):
        return [artifact]
    skip = {RECORD, *exclude}
    return sorted(p for p in artifact.iterdir() if p.is_file() and not p.name.startswith(".") and p.name not in skip)


def _digest(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def seal(
    artifact: str | Path,
    producer: str = "",
    version: str = "",
    exclude: Iterable[str] = (),
    meta: Mapping[str, Any] | None = None,
    record: str | Path | None = None,
) -> Path:
    """Write ``artifact``'s completion record (last, atomically): sha256 and size of every file it covers
    (a folder's files but ``exclude`` and hidden temporary files; a file artifact's file), ``producer`` (the
    dotted module whose function made it) and ``version`` (that module's code version, see
    :func:`iclmem.store.tools.gc_plan`); ``meta``: further fields the caller keeps in the record (the digest covers
    them too); ``record``: where the record goes (default :func:`record_path`)."""
    artifact = Path(artifact)
    files = {p.name: {"sha256": file_sha256(p), "size": p.stat().st_size} for p in _covered(artifact, exclude)}
    body = {**(meta or {}), "format": FORMAT, "producer": producer, "code_version": version, "files": files}
    body = json.loads(json.dumps(body, default=repr))  # what the record reads back (the digest is of that)
    path = record_path(artifact, record)
    atomic_write_text(path, json.dumps({**body, "digest": _digest(body)}, indent=1, sort_keys=True) + "\n")
    _VERIFIED[str(artifact.absolute())] = _stamp(artifact, files, path)
    return path


@dataclass(frozen=True)
class Check:
    """What :func:`inspect` found: ``state`` is ``ok``, ``absent``, ``incomplete`` or ``damaged``; ``detail``
    names the damaged file and how it differs."""

    state: str
    detail: str = ""


_VERIFIED: dict[str, tuple] = {}


def _stamp(artifact: Path, files: Iterable[str], record: Path) -> tuple:
    folder = artifact.parent if is_file_artifact(artifact) else artifact
    out = []
    for path in (record, *(folder / name for name in sorted(files))):
        st = path.stat()
        out.append((path.name, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def read_record(artifact: str | Path, record: str | Path | None = None) -> dict | None:
    """The completion record of ``artifact`` as stored, or None when it is missing or not JSON."""
    try:
        data = json.loads(record_path(artifact, record).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def inspect(artifact: str | Path, verify: bool = True, record: str | Path | None = None) -> Check:
    """Check ``artifact`` against its completion record (hashing only what changed since this process last
    checked it; ``verify=False`` hashes everything again); ``record``: see :func:`record_path`."""
    artifact = Path(artifact)
    record = record_path(artifact, record)
    if not record.exists():
        there = artifact.exists()
        return Check("incomplete" if there else "absent", "no completion record" if there else "")
    try:
        data = json.loads(record.read_bytes())
        body = {k: v for k, v in data.items() if k != "digest"}
        files = data["files"]
        ok = (
            isinstance(body.get("format"), int)
            and data["digest"] == _digest(body)
            and isinstance(files, dict)
            and all(
                isinstance(v, dict) and isinstance(v.get("sha256"), str) and isinstance(v.get("size"), int)
                for v in files.values()
            )
        )
    except (OSError, ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        return Check("damaged", f"{record.name}: not a valid completion record")
    folder = artifact.parent if is_file_artifact(artifact) else artifact
    for name, expected in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            return Check("damaged", f"{name}: missing")
        if path.stat().st_size != expected["size"]:
            return Check("damaged", f"{name}: {path.stat().st_size} bytes, the record says {expected['size']}")
    key = str(artifact.absolute())
    stamp = _stamp(artifact, files, record)
    if verify and _VERIFIED.get(key) == stamp:
        return Check("ok")
    for name, expected in sorted(files.items()):
        if file_sha256(folder / name) != expected["sha256"]:
            _VERIFIED.pop(key, None)
            return Check("damaged", f"{name}: sha256 differs from the completion record")
    _VERIFIED[key] = stamp
    return Check("ok")


def _store_and_name(artifact: Path, store: str | Path | None) -> tuple[Path, str]:
    """The store of ``artifact`` (given, else two levels up: ``<store>/<kind>/<key>``) and the artifact's flat name
    there (``<kind>-<key>``, the parts of its path below the store), which its quarantine folder and lock take."""
    store = Path(store) if store is not None else artifact.parents[1]
    try:
        return store, "-".join(artifact.absolute().relative_to(store.absolute()).parts)
    except ValueError:
        return store, artifact.name


def quarantine(
    artifact: str | Path, detail: str = "", store: str | Path | None = None, record: str | Path | None = None
) -> Path:
    """Move ``artifact`` (and a file artifact's record) to ``<store>/quarantine/<kind>-<key>-<time>-<pid>/``
    (``store`` defaults to the folder two levels up: ``<store>/<kind>/<key>``); return where it went."""
    artifact = Path(artifact)
    store, name = _store_and_name(artifact, store)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    dest = store / QUARANTINE / f"{name}-{stamp}-{os.getpid()}"
    try:
        dest.mkdir(parents=True, exist_ok=True)
        if is_file_artifact(artifact):
            for path in (artifact, record_path(artifact, record)):
                if path.exists():
                    os.replace(path, dest / path.name)
        else:
            os.replace(artifact, dest / artifact.name)
    except OSError as err:
        mapped = disk_error(err, artifact)
        raise DamagedArtifactError(
            f"{artifact} is damaged ({detail or 'see iclmem store verify'}) and cannot be moved aside: {mapped}"
        ) from None
    _VERIFIED.pop(str(artifact.absolute()), None)
    return dest


def served(artifact: str | Path, store: str | Path | None = None, record: str | Path | None = None) -> bool:
    """True when ``artifact`` is complete and matches its record. A damaged one is quarantined (one line on
    stderr names the file) and False is returned, so the caller computes it again; so is an incomplete one.
    ``record``: see :func:`record_path`."""
    check = inspect(artifact, record=record)
    if check.state == "damaged":
        dest = quarantine(artifact, check.detail, store, record)
        print(
            f"iclmem store: damaged {artifact} ({check.detail}); moved to {dest}, computing it again", file=sys.stderr
        )
    return check.state == "ok"


def lock_path(artifact: str | Path, store: str | Path | None = None) -> Path:
    """``<store>/locks/<kind>-<key>.lock`` for ``artifact`` = ``<store>/<kind>/<key>``."""
    store, name = _store_and_name(Path(artifact), store)
    return store / LOCKS / f"{name}.lock"


def _holder(lock: Path) -> tuple[str, dict | None]:
    try:
        text = lock.read_text()
    except OSError:
        return "", None
    try:
        data = json.loads(text)
    except ValueError:
        return text, None
    return text, data if isinstance(data, dict) else None


def _stale(lock: Path, holder: dict | None) -> bool:
    if holder is None:
        try:
            return time.time() - lock.stat().st_mtime > EMPTY_LOCK_S
        except OSError:
            return False
    return holder.get("host") == _HOST and isinstance(holder.get("pid"), int) and not _alive(holder["pid"])


def _take_over(lock: Path, seen: str) -> None:
    """Remove a dead writer's lock, unless someone replaced it meanwhile (then put that one back)."""
    moved = lock.with_name(f".{lock.name}.{_writer()}.stale")
    try:
        os.replace(lock, moved)
    except FileNotFoundError:
        return
    try:
        if moved.read_text() != seen:
            with contextlib.suppress(FileExistsError):
                os.link(moved, lock)
    finally:
        moved.unlink(missing_ok=True)


@contextlib.contextmanager
def writer_lock(
    artifact: str | Path,
    store: str | Path | None = None,
    what: str = "",
    timeout: float | None = None,
    poll: float = 0.05,
) -> Iterator[Path]:
    """Hold ``artifact``'s lock for the block (see the module docstring); ``what`` names the work in the line a
    waiter prints and in a read-only store's error; ``timeout`` (default ``$ICLMEM_LOCK_TIMEOUT``, else none)."""
    lock = lock_path(artifact, store)
    if timeout is None and os.environ.get(LOCK_TIMEOUT_ENV):
        timeout = float(os.environ[LOCK_TIMEOUT_ENV])
    mine = json.dumps({"host": _HOST, "pid": os.getpid(), "since": time.time(), "artifact": str(artifact)})
    started, told = time.monotonic(), False
    while True:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            seen, holder = _holder(lock)
            if _stale(lock, holder):
                _take_over(lock, seen)
                continue
            if not told:
                who = f"{holder.get('host')} pid {holder.get('pid')}" if holder else "another writer"
                print(
                    f"iclmem store: waiting for {who}, which computes {what or artifact} (lock {lock})", file=sys.stderr
                )
                told = True
            if timeout is not None and time.monotonic() - started > timeout:
                raise StoreLockTimeout(
                    f"{lock} was held for more than {timeout:g} s; if its writer is gone (another host), delete it"
                ) from None
            time.sleep(poll)
            continue
        except OSError as err:
            mapped = disk_error(err, lock)
            if mapped is err:
                raise
            raise type(mapped)(f"{mapped} Would have to compute: {what or artifact}.") from None
        try:
            os.write(fd, mine.encode())
        finally:
            os.close(fd)
        break
    try:
        yield lock
    finally:
        if _holder(lock)[0] == mine:
            lock.unlink(missing_ok=True)


def produce(
    artifact: str | Path,
    load: Callable[[], T],
    compute: Callable[[], T],
    store: str | Path | None = None,
    what: str = "",
) -> T:
    """``load()`` when the store serves ``artifact``; else, holding its lock, ``load()`` if another writer made it
    meanwhile, or ``compute()`` (which writes it and calls :func:`seal` last)."""
    if served(artifact, store):
        return load()
    with writer_lock(artifact, store, what):
        if served(artifact, store):
            return load()
        return compute()


__all__ = [
    "LOCKS",
    "QUARANTINE",
    "RECORD",
    "Check",
    "file_sha256",
    "inspect",
    "lock_path",
    "produce",
    "quarantine",
    "read_record",
    "record_path",
    "seal",
    "served",
    "writer_lock",
]
