"""Atomic file writes: write to a temporary file in the target folder, then rename."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def atomic_write(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path``; nothing partial is left."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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
