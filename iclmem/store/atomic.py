"""Atomic file writes: write to a temporary file in the target folder, then rename.

A write that fails because the disk is full (``ENOSPC``, ``EDQUOT``) or read-only (``EROFS``, or no
permission to write) leaves no partial file and raises :class:`StoreFullError` or
:class:`StoreReadOnlyError`: one line naming the store (the results store, the cache, or the folder) and,
for a full disk, the space the write needed and the space that is free.
"""

from __future__ import annotations

import errno
import io
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import StoreFullError, StoreReadOnlyError

_FULL = (errno.ENOSPC, errno.EDQUOT)
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def size_text(n: float) -> str:
    """``n`` bytes in B, KiB, MiB, GiB or TiB, e.g. ``'1.5 MiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def store_of(path: str | Path) -> Path:
    """The store ``path`` lies in: the results store (``$ICLMEM_RESULTS`` or ``results``), the cache
    (``$ICLMEM_CACHE`` or ``~/.cache/iclmem``), else its own folder."""
    path = Path(path).absolute()
    cache = os.environ.get("ICLMEM_CACHE")
    for root in (
        Path(os.environ.get("ICLMEM_RESULTS") or "results"),
        Path(cache).expanduser() if cache else Path.home() / ".cache" / "iclmem",
    ):
        root = root.absolute()
        if path == root or root in path.parents:
            return root
    return path.parent


def disk_error(err: OSError, path: str | Path, needed: int | None = None, at_least: bool = False) -> OSError:
    """The store error an ``OSError`` of writing ``path`` means (full or read-only disk), else ``err`` itself."""
    path, store = Path(path), store_of(path)
    if err.errno in _FULL:
        try:
            free = size_text(shutil.disk_usage(store if store.exists() else path.parent).free)
        except OSError:
            free = "unknown"
        need = "an unknown amount" if needed is None else ("at least " if at_least else "") + size_text(needed)
        return StoreFullError(
            f"no space left in the store {store}: writing {_inside(path, store)} needs {need}, {free} free; "
            "nothing partial was left. Free some space (iclmem store gc) or point the store at a larger disk, "
            "then run again: what is stored is kept."
        )
    if err.errno in _READ_ONLY:
        return StoreReadOnlyError(
            f"the store {store} is read-only: cannot write {_inside(path, store)} ({os.strerror(err.errno)}). "
            "It serves what it holds; make it writable or point the store at a writable copy to compute the rest."
        )
    return err


def _inside(path: Path, store: Path) -> str:
    try:
        return str(path.absolute().relative_to(store))
    except ValueError:
        return str(path)


def atomic_write(path: str | Path, write: Callable[[Path], Any], size: int | None = None) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path``; nothing partial is left.

    ``size``: the bytes the write needs, if known (the message of a full disk names it; else it names what
    was written before the disk filled). A full or read-only disk raises :class:`StoreFullError` or
    :class:`StoreReadOnlyError` (see the module docstring)."""
    path = Path(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{_writer()}-", suffix=".tmp")
        os.close(fd)
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)
    except OSError as err:
        written = _size(tmp)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        mapped = disk_error(err, path, size if size is not None else written, at_least=size is None)
        if mapped is err:
            raise
        raise mapped from None
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _size(tmp: str | None) -> int:
    try:
        return os.path.getsize(tmp) if tmp is not None else 0
    except OSError:
        return 0


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through :func:`atomic_write` (a full disk's message names its size)."""
    return atomic_write(path, lambda p: p.write_bytes(data), size=len(data))


def remove_leftovers(folder: str | Path) -> list[Path]:
    """Delete the temporary files :func:`atomic_write` left under ``folder`` when its process was
    killed (SIGKILL runs no cleanup); only for folders one process writes at a time. Returns them."""
    found = sorted(Path(folder).rglob(".*.tmp")) if Path(folder).is_dir() else []
    for path in found:
        path.unlink(missing_ok=True)
    return found


def _writer() -> str:
    """Who writes a temporary file: ``<host>-<pid>``, so a later process can tell a dead writer's leftover."""
    return f"{_HOST}-{os.getpid()}"


_HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname()) or "host"
_LEFTOVER = re.compile(r"\.(?P<host>[A-Za-z0-9]+)-(?P<pid>\d+)-[^.]*\.tmp$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_dead_leftovers(folder: str | Path) -> list[Path]:
    """Delete the temporary files under ``folder`` whose writer, a process of this host, is dead (killed mid-write:
    SIGKILL runs no cleanup). Safe while other processes write there: a live writer's file, and any file of
    another host or without a writer in its name, is kept. Returns what it deleted."""
    folder = Path(folder)
    found = []
    for path in sorted(folder.rglob(".*.tmp")) if folder.is_dir() else []:
        match = _LEFTOVER.search(path.name)
        if match and match["host"] == _HOST and not _alive(int(match["pid"])):
            path.unlink(missing_ok=True)
            found.append(path)
    return found


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_write`."""
    return atomic_write_bytes(path, text.encode())


def atomic_torch_save(obj: Any, path: str | Path) -> Path:
    """``torch.save`` through :func:`atomic_write`, with bytes that depend on ``obj`` only.

    ``torch.save`` to a *path* names the zip archive's records after the file, here the random
    temporary name, so each save of the same object gave other bytes; saved to an open file, the
    records are always named ``archive/...``."""
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return atomic_write_bytes(path, buffer.getvalue())
