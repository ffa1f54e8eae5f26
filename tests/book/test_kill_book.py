"""A real SIGKILL of ``iclmem book`` inside a notebook: nothing half-written is kept or rendered, and
the same command then finishes, executing only what had not finished (issue 17, "real kills")."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

TOC = """\
format: jb-book
root: intro
parts:
  - caption: Notebooks
    chapters:
      - file: notebooks/first
      - file: notebooks/second
"""

#: While ``$HANG_IN`` names this notebook it writes its kernel's pid to ``$MARKER`` and waits to be
#: killed; otherwise it finishes at once. The environment does not enter the book's cache key.
NOTEBOOK = """\
# %% [markdown]
# # {name}

# %% tags=["parameters"]
n = 2

# %%
import os, time
if os.environ.get("HANG_IN") == "{name}":
    with open(os.environ["MARKER"] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.environ["MARKER"] + ".tmp", os.environ["MARKER"])
    while True:
        time.sleep(0.1)
print("{name} finished with n =", n)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "notebooks").mkdir(parents=True)
    (root / "book").mkdir()
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    shutil.copy(REPO / "book" / "favicon.svg", root / "book" / "favicon.svg")
    (root / "_toc.yml").write_text(TOC)
    (root / "intro.md").write_text("# Intro\n")
    for name in ("first", "second"):
        (root / "notebooks" / f"{name}.py").write_text(NOTEBOOK.format(name=name))
    return root


def _book(root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "iclmem.cli", "book", "--root", str(root), *extra]


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.parametrize("hang_in", ["first", "second"])
@pytest.mark.slow
def test_book_killed_inside_a_notebook_keeps_nothing_partial_and_the_rerun_executes_only_the_rest(
    project: Path, tmp_path: Path, hang_in: str
) -> None:
    marker = tmp_path / "kernel.pid"
    env = {**os.environ, "HANG_IN": hang_in, "MARKER": str(marker), "ICLMEM_PROGRESS": "0"}
    proc = subprocess.Popen(
        _book(project, "--no-html"),
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    kernel = None
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the notebook never started"
            time.sleep(0.05)
        kernel = int(marker.read_text())
        os.killpg(proc.pid, signal.SIGKILL)  # the build (and whatever shares its group) ...
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if kernel is not None:
            _kill(kernel)  # ... and the kernel, which jupyter starts in a session of its own
    executed = project / "_build" / "executed" / "notebooks"
    assert not (executed / f"{hang_in}.ipynb").exists(), "a killed notebook was stored as executed"
    assert (executed / "first.ipynb").exists() == (hang_in == "second"), "the finished notebook was not kept"
    assert not (project / "_build" / "html").exists()

    rerun = subprocess.run(
        _book(project), env={**os.environ, "ICLMEM_PROGRESS": "0"}, capture_output=True, text=True, timeout=300
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    expected = (
        "executed: notebooks/second; from cache: notebooks/first"
        if hang_in == "second"
        else "executed: notebooks/first, notebooks/second; from cache: nothing"
    )
    assert expected in rerun.stdout, rerun.stdout
    assert sorted(p.name for p in executed.iterdir() if p.name.startswith(".")) == [], "leftover temporary files"
    page = (project / "_build" / "html" / "notebooks" / f"{hang_in}.html").read_text()
    assert f"{hang_in} finished with n = 2" in page
