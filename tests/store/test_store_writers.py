"""One writer per key (issue 41): two processes started on the same run at once, one computes, the other waits
for it and reads its result; a dead writer's lock is taken over; another host's lock is waited for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tiny_store import BUILD

from iclmem.store.atomic import _HOST
from iclmem.store.errors import StoreLockTimeout
from iclmem.store.integrity import lock_path, writer_lock

CHILD = (
    textwrap.dedent("""
    import hashlib, json, os, sys, time
    results, log, barrier, name = sys.argv[1:5]
    lr, table_csv = 1e-2, os.path.join(os.path.dirname(results), name, "table.csv")  # one table name: one key
    os.makedirs(os.path.dirname(table_csv), exist_ok=True)

    import iclmem.training.finetune as finetune_module
    compute = finetune_module._finetune
    def counted(*args, **kwargs):
        with open(log, "a") as f:
            f.write(json.dumps({"computed": name}) + "\\n")
        time.sleep(1.0)  # long enough for the other process to find the lock taken
        return compute(*args, **kwargs)
    finetune_module._finetune = counted

    open(os.path.join(barrier, name), "w").close()  # both start the run at the same moment
    while len(os.listdir(barrier)) < 2:
        time.sleep(0.01)
""")
    + BUILD
    + textwrap.dedent("""
    with open(log, "a") as f:
        f.write(json.dumps({"done": name, "metrics": run.metrics.to_csv(), "key": run.key}) + "\\n")
""")
)


@pytest.mark.slow
def test_two_processes_on_one_run_compute_it_once(tmp_path: Path) -> None:
    results, log, barrier = tmp_path / "results", tmp_path / "log", tmp_path / "barrier"
    results.mkdir()
    barrier.mkdir()
    env = {**os.environ, "ICLMEM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(results), str(log), str(barrier), name],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    computed = [e["computed"] for e in entries if "computed" in e]
    done = [e for e in entries if "done" in e]
    assert len(computed) == 1, entries  # the work was done once
    assert len(done) == 2 and done[0]["metrics"] == done[1]["metrics"] and done[0]["key"] == done[1]["key"]
    waiter = "b" if computed == ["a"] else "a"
    assert "iclmem store: waiting for" in errs["ab".index(waiter)], errs  # the other one waited, then read
    assert not list((results / "locks").iterdir())  # the lock is gone once the writer is done


def test_a_dead_writers_lock_is_taken_over(tmp_path: Path) -> None:
    artifact = tmp_path / "results" / "probe" / "k"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = lock_path(artifact)
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"host": _HOST, "pid": dead.pid}))
    started = time.monotonic()
    with writer_lock(artifact, timeout=5) as held:
        assert json.loads(held.read_text())["pid"] == os.getpid()
    assert time.monotonic() - started < 2 and not lock.exists()


def test_another_hosts_lock_is_waited_for(tmp_path: Path, capfd) -> None:
    artifact = tmp_path / "results" / "probe" / "k"
    lock = lock_path(artifact)
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"host": "elsewhere", "pid": 1}))
    with pytest.raises(StoreLockTimeout, match="held for more than"):
        with writer_lock(artifact, what="probe/k", timeout=0.3):
            pass
    assert "waiting for elsewhere pid 1, which computes probe/k" in capfd.readouterr().err
    assert lock.exists()  # not ours to remove
