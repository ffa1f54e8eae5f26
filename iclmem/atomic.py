"""Atomic file writes: write to a temporary file in the target folder, then rename."""

from __future__ import annotations

import os
import re
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def atomic_write(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path``; nothing partial is left."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{_writer()}-", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


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
    return atomic_write(path, lambda p: p.write_text(text))


def atomic_torch_save(obj: Any, path: str | Path) -> Path:
    """``torch.save`` through :func:`atomic_write`, with bytes that depend on ``obj`` only.

    ``torch.save`` to a *path* names the zip archive's records after the file, here the random
    temporary name, so each save of the same object gave other bytes; saved to an open file, the
    records are always named ``archive/...``."""
    import torch

    def save(p: Path) -> None:
        with p.open("wb") as f:
            torch.save(obj, f)

    return atomic_write(path, save)
