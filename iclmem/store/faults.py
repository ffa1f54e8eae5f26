"""Simulated store faults (issue 41): a full disk and a read-only mount, for appendix A3's store cases and the tests.

Where a test or the appendix cannot mount a small tmpfs or a read-only bind mount (no root), the same faults are
made by patching the calls a write into the store goes through, for paths inside ``store`` only:

* ``full``: ``Path.write_bytes`` (what :func:`iclmem.store.atomic.atomic_write_bytes` writes with) writes the part that
  still fits under ``limit`` bytes of the store's files and then fails with ``ENOSPC``, as a full disk does, and
  ``shutil.disk_usage`` of the store says a disk of ``limit`` bytes;
* ``read-only``: ``os.open`` for writing, ``os.mkdir``, ``os.replace`` and ``os.unlink`` fail with ``EROFS``.

:func:`faulty_store` patches this process for a block; :func:`install_from_environ` patches it for good, from
``ICLMEM_TEST_STORE``, ``ICLMEM_TEST_FAULT`` and ``ICLMEM_TEST_LIMIT`` (a ``sitecustomize`` module on a kernel's
``PYTHONPATH`` calls it, so that ``iclmem run``'s kernel sees the fault).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MODES = ("full", "read-only")


def _inside(store: str, path: Any) -> bool:
    try:
        return os.path.abspath(os.fspath(path)).startswith(store + os.sep)
    except TypeError:  # a file descriptor
        return False


def _used(store: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(store) for f in files)


def _patches(store: str | Path, mode: str, limit: int = 0) -> list[tuple[Any, str, Callable]]:
    """``(owner, name, replacement)`` for each call the fault replaces."""
    if mode not in MODES:
        raise ValueError(f"unknown store fault {mode!r}; one of {', '.join(MODES)}")
    root = os.path.abspath(os.fspath(store))
    if mode == "full":
        real_write = pathlib.Path.write_bytes

        def write_bytes(self: pathlib.Path, data: bytes) -> int:
            if _inside(root, self) and _used(root) + len(data) > limit:
                with open(self, "wb") as f:  # a part is written, then the disk is full
                    f.write(data[: max(0, limit - _used(root))])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
            return real_write(self, data)

        real_usage = shutil.disk_usage

        def disk_usage(path: Any) -> Any:
            usage = real_usage(path)
            if os.path.abspath(os.fspath(path)) == root or _inside(root, path):
                free = max(0, limit - _used(root))
                return type(usage)(limit, limit - free, free)
            return usage

        return [(pathlib.Path, "write_bytes", write_bytes), (shutil, "disk_usage", disk_usage)]

    def refuse(real: Callable, writes: Callable[..., bool]) -> Callable:
        def wrapped(path: Any, *args: Any, **kwargs: Any) -> Any:
            if _inside(root, path) and writes(*args):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return real(path, *args, **kwargs)

        return wrapped

    def opens_for_writing(flags: int = 0, *_: Any) -> bool:
        return bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))

    # Path.mkdir(exist_ok=True) accepts EROFS for a folder that is there, as on a read-only mount
    return [
        (os, "open", refuse(os.open, opens_for_writing)),
        (os, "mkdir", refuse(os.mkdir, lambda *_: True)),
        (os, "replace", refuse(os.replace, lambda *_: True)),
        (os, "unlink", refuse(os.unlink, lambda *_: True)),
    ]


@contextlib.contextmanager
def faulty_store(store: str | Path, mode: str, limit: int = 0) -> Iterator[None]:
    """For the block, writes into ``store`` fail as on a full disk (``mode="full"``, past ``limit`` bytes) or a
    read-only mount (``mode="read-only"``); everything is restored afterwards."""
    patches = _patches(store, mode, limit)
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, real in saved:
            setattr(owner, name, real)


def install_from_environ() -> None:
    """Patch this process for good from ``ICLMEM_TEST_STORE``, ``ICLMEM_TEST_FAULT`` and ``ICLMEM_TEST_LIMIT``."""
    patches = _patches(
        os.environ["ICLMEM_TEST_STORE"], os.environ["ICLMEM_TEST_FAULT"], int(os.environ.get("ICLMEM_TEST_LIMIT", "0"))
    )
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)


__all__ = ["MODES", "faulty_store", "install_from_environ"]
