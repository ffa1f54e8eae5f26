"""Atomic writes (iclmem/store/atomic.py): a temporary file names its writer, so the leftover of a writer killed
mid-write is removed by the next build or run while live writers' files are kept (issue 32, "kills at random
points")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from iclmem.store.atomic import _writer, atomic_write, atomic_write_text, remove_dead_leftovers


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_temporary_file_names_its_writer_and_is_gone_after_the_write(tmp_path: Path) -> None:
    seen: list[str] = []
    atomic_write(tmp_path / "a" / "x.txt", lambda p: (seen.append(p.name), p.write_text("1")))
    assert seen[0].startswith(f".x.txt.{_writer()}-") and seen[0].endswith(".tmp")
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["x.txt"]


def test_only_leftovers_of_dead_writers_of_this_host_are_removed(tmp_path: Path) -> None:
    host = _writer().rsplit("-", 1)[0]
    dead = tmp_path / "run" / f".weights.pt.{host}-{_dead_pid()}-abc123.tmp"
    live = tmp_path / "run" / f".metrics.csv.{_writer()}-def456.tmp"  # this process: alive, still writing
    other_host = tmp_path / "manifests" / f".m.json.otherhost-{_dead_pid()}-x1.tmp"  # may be alive over there
    unnamed = tmp_path / ".old.json.q1w2e3.tmp"  # written before writers were named: its writer is unknown
    for path in (dead, live, other_host, unnamed):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("partial")
    atomic_write_text(tmp_path / "run" / "done.txt", "ok")
    assert remove_dead_leftovers(tmp_path) == [dead]
    assert not dead.exists() and live.exists() and other_host.exists() and unnamed.exists()
    assert (tmp_path / "run" / "done.txt").read_text() == "ok"
    assert remove_dead_leftovers(tmp_path / "missing") == []
