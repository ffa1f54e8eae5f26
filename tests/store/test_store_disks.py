"""Full and read-only stores, end to end through ``iclmem run`` (issue 41).

A full disk: the store is a 96 KiB tmpfs, which holds the manifest and the first kept weights of a tiny run but
not the second; the run stops with exit status 2 and one line naming the store and the space the write needed,
and leaves no partial or temporary file. A read-only store: a store built by a first run is mounted read-only
(a bind mount); a second run of the same parameters is served from it, one with another learning rate exits
with status 2 naming what it would have to compute.

Where this process may not mount (not root, no CAP_SYS_ADMIN), the same faults are made by a ``sitecustomize``
module on the kernel's ``PYTHONPATH`` that makes writes into the store fail with ``ENOSPC`` (past the same
96 KiB) or ``EROFS`` (:mod:`iclmem.store.faults`; ``ICLMEM_TEST_NO_MOUNT=1`` forces it, to test it where mounting
works).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from conftest import write_tiny_notebook
from tiny_store import BUILD

from iclmem.cli import main

LIMIT = 96 * 1024

NOTEBOOK = (
    textwrap.dedent("""\
    # ---
    # jupyter:
    #   kernelspec:
    #     display_name: Python 3
    #     language: python
    #     name: python3
    # ---

    # %% tags=["parameters"]
    lr = 0.01
    table_csv = "table.csv"

    # %%
    import os
    results = os.environ["ICLMEM_RESULTS"]
    """)
    + BUILD
    + '\nprint("METRICS", run.key, run.metrics.to_csv().replace("\\n", "|"))\n'
)

#: The kernel's ``sitecustomize``: the fault of :mod:`iclmem.store.faults`, from the environment.
FAULTS = "from iclmem.store.faults import install_from_environ\n\ninstall_from_environ()\n"


def _mount(*args: str) -> bool:
    if os.environ.get("ICLMEM_TEST_NO_MOUNT"):
        return False
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@contextlib.contextmanager
def _mounted(target: Path, *args: str) -> Iterator[bool]:
    ok = _mount(*args, str(target))
    try:
        yield ok
    finally:
        if ok:
            subprocess.run(["umount", str(target)], check=True)


def _faults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, store: Path, mode: str) -> None:
    """Make the kernel's writes into ``store`` fail (``full`` past :data:`LIMIT`, or ``read-only``)."""
    folder = tmp_path / "faults"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(FAULTS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("ICLMEM_TEST_STORE", str(store))
    monkeypatch.setenv("ICLMEM_TEST_FAULT", mode)
    monkeypatch.setenv("ICLMEM_TEST_LIMIT", str(LIMIT))


def _run(notebook: Path, out: Path, lr: float, table: Path) -> int:
    args = ["run", str(notebook), "-p", "lr", str(lr), "-p", "table_csv", str(table), "-o", str(out), "--no-progress"]
    return main(args)


def _metrics(out: Path) -> str:
    nb = nbformat.read(out, as_version=4)
    text = "".join("".join(o.get("text", "")) for c in nb.cells for o in c.get("outputs", []))
    return next(line for line in text.splitlines() if line.startswith("METRICS"))


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ICLMEM_THREADS", "1")
    return write_tiny_notebook(tmp_path / "store_run.py", NOTEBOOK)


@pytest.mark.slow
def test_a_full_store_stops_the_run_with_one_line_and_no_partial_file(notebook, tmp_path, monkeypatch, capsys):
    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("ICLMEM_RESULTS", str(store))
    with _mounted(store, "-t", "tmpfs", "-o", f"size={LIMIT // 1024}k", "tmpfs") as mounted:
        if not mounted:
            _faults(monkeypatch, tmp_path, store, "full")
        code = _run(notebook, tmp_path / "out.ipynb", 0.01, tmp_path / "table.csv")
        err = capsys.readouterr().err
        first = err.splitlines()[0]
        assert code == 2, err
        assert first.startswith(f"iclmem run: error: no space left in the store {store}: writing finetune/"), err
        assert "weights_epoch0001.pt needs 51.8 KiB" in first and "free" in first, first
        assert "Traceback" not in err
        left = [p.name for p in store.rglob("*") if p.is_file()]
        assert "weights_epoch0000.pt" in left and "weights_epoch0001.pt" not in left, left
        assert not [n for n in left if n.endswith(".tmp")], left  # nothing partial
        assert not (store / "locks").exists() or not list((store / "locks").iterdir())
    print("full store:", "tmpfs" if mounted else "patched write", first)


@pytest.mark.slow
def test_a_read_only_store_serves_what_it_holds_and_names_what_it_would_compute(
    notebook, tmp_path, monkeypatch, capsys
):
    store, table = tmp_path / "store", tmp_path / "table.csv"
    store.mkdir()
    monkeypatch.setenv("ICLMEM_RESULTS", str(store))
    assert _run(notebook, tmp_path / "built.ipynb", 0.01, table) == 0
    built = _metrics(tmp_path / "built.ipynb")
    files = sorted(p.relative_to(store) for p in store.rglob("*"))
    with _mounted(store, "--bind", "-o", "ro", str(store)) as mounted:
        if not mounted:
            _faults(monkeypatch, tmp_path, store, "read-only")
        capsys.readouterr()
        assert _run(notebook, tmp_path / "served.ipynb", 0.01, table) == 0, capsys.readouterr().err
        assert _metrics(tmp_path / "served.ipynb") == built  # served from the read-only store
        assert _run(notebook, tmp_path / "missing.ipynb", 0.1, table) == 2
        first = capsys.readouterr().err.splitlines()[0]
        assert first.startswith(f"iclmem run: error: the store {store} is read-only"), first
        assert "Would have to compute: the fine-tuning run finetune/" in first and "lr=0.1)" in first, first
        assert sorted(p.relative_to(store) for p in store.rglob("*")) == files  # nothing written
    print("read-only store:", "bind mount" if mounted else "patched os", first)
    assert json.loads(json.dumps(first))  # one line
