"""Lanes of a book build (iclmem/book/lanes.py): chapters that share nothing execute side by side."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest

from iclmem.book.build import BuildOptions, build_book, toc_pages
from iclmem.book.execute import NotebookExecutionError, UsageError
from iclmem.book.lanes import MAIN_LANE, group_by_lane, read_lanes, run_lanes

REPO = Path(__file__).resolve().parents[2]

TOC = """\
format: jb-book
root: intro
parts:
  - caption: Notebooks
    chapters:
      - file: notebooks/a1
      - file: notebooks/a2
      - file: notebooks/b1
"""

#: A notebook that records when it ran, in which process, and the environment the build gave its kernel.
STAMPING = """\
# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
seconds = 1.0
fail = False

# %%
import json, os, time
from pathlib import Path

started = time.time()
time.sleep(seconds)
if fail:
    raise RuntimeError("this notebook fails on purpose")
stamp = {{"start": started, "end": time.time(), "pid": os.getppid(),
         "threads": os.environ.get("ICLMEM_THREADS"), "lines": os.environ.get("ICLMEM_PROGRESS_LINES")}}
Path("stamps").mkdir(exist_ok=True)
Path("stamps/{name}.json").write_text(json.dumps(stamp))
"""


@pytest.fixture
def project(tmp_path: Path, make_notebook: Callable[..., Path]) -> Path:
    """Three stamping notebooks; ``b1`` in the lane ``other``, ``a1`` and ``a2`` in the main lane."""
    root = tmp_path / "proj"
    (root / "book").mkdir(parents=True)
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text(TOC)
    (root / "intro.md").write_text("# Intro\n")
    for name in ("a1", "a2", "b1"):
        make_notebook(root / "notebooks" / f"{name}.py", STAMPING.format(name=name))
    (root / "book" / "lanes.yaml").write_text("lanes:\n  other: [b1]\n")
    return root


def stamps(root: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (root / "stamps").glob("*.json")}


def test_lanes_file_places_notebooks(project: Path) -> None:
    names = [p.name for p in toc_pages(project) if p.is_notebook]
    lanes = read_lanes(project, names)
    assert lanes == {MAIN_LANE: ["notebooks/a1", "notebooks/a2"], "other": ["notebooks/b1"]}
    assert group_by_lane(names, lanes) == [["notebooks/a1", "notebooks/a2"], ["notebooks/b1"]]
    assert group_by_lane(["notebooks/b1", "notebooks/a2"], lanes) == [["notebooks/a2"], ["notebooks/b1"]]
    assert group_by_lane(["notebooks/b1"], lanes) == [["notebooks/b1"]]
    (project / "book" / "lanes.yaml").write_text("lanes:\n  late: [a1]\n  early: [a2]\n")
    assert list(read_lanes(project, names)) == [MAIN_LANE, "late", "early"]  # main, then the file's order
    (project / "book" / "lanes.yaml").unlink()
    assert read_lanes(project, names) == {MAIN_LANE: names}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lanes:\n  other: [b9]\n", "'b9', which is not a notebook"),
        ("lanes:\n  x: [b1]\n  y: [notebooks/b1]\n", "in two lanes"),
        ("lanes: [b1]\n", "expected 'lanes:' mapping"),
        ("lanes:\n  x: b1\n", "expected 'lanes:' mapping"),
        ("lanes: {x: [b1\n", "not valid YAML"),
    ],
)
def test_bad_lanes_file_is_a_usage_error(project: Path, text: str, message: str) -> None:
    (project / "book" / "lanes.yaml").write_text(text)
    with pytest.raises(UsageError, match=message):
        read_lanes(project, ["notebooks/a1", "notebooks/a2", "notebooks/b1"])


def test_jobs_must_be_positive() -> None:
    with pytest.raises(UsageError, match="at least 1"):
        run_lanes([["a"]], len, jobs=0)


@pytest.mark.slow
def test_two_jobs_run_the_lanes_side_by_side(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ICLMEM_THREADS", raising=False)
    result = build_book(project, tmp_path / "out", options=BuildOptions(render_html=False, progress=False, jobs=2))
    assert result.executed == ["notebooks/a1", "notebooks/a2", "notebooks/b1"]  # the build's order, whatever ran first
    s = stamps(project)
    assert s["b1"]["start"] < s["a2"]["end"]  # the other lane did not wait for the main one (one at a time: after a2)
    assert s["a1"]["end"] <= s["a2"]["start"]  # a lane keeps its order
    assert s["a1"]["pid"] == s["a2"]["pid"] != s["b1"]["pid"]  # a process per lane
    assert {v["threads"] for v in s.values()} == {"1"} and {v["lines"] for v in s.values()} == {"1"}
    assert result.wall_s < sum(result.seconds.values()) - 1.0
    assert "notebooks, wall" in result.timing()
    again = build_book(project, tmp_path / "out", options=BuildOptions(render_html=False, progress=False, jobs=2))
    assert again.executed == [] and again.cached == result.executed  # the cache records of the lanes' processes


@pytest.mark.slow
def test_one_job_runs_one_notebook_at_a_time_in_this_process(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ICLMEM_THREADS", raising=False)
    monkeypatch.delenv("ICLMEM_PROGRESS_LINES", raising=False)
    result = build_book(project, tmp_path / "out", options=BuildOptions(render_html=False, progress=False, jobs=1))
    s = stamps(project)
    ordered = [s[name] for name in ("a1", "a2", "b1")]
    assert all(a["end"] <= b["start"] for a, b in pairwise(ordered))
    assert {v["threads"] for v in s.values()} == {None} and {v["lines"] for v in s.values()} == {None}
    assert "notebooks, wall" not in result.timing()


@pytest.mark.slow
def test_a_failing_lane_stops_the_build(project: Path, tmp_path: Path) -> None:
    """b1 fails at once: the main lane finishes a1, which it had started, and never starts a2."""
    overrides = {"b1": {"seconds": 0.0, "fail": True}, "a1": {"seconds": 6.0}}
    with pytest.raises(NotebookExecutionError, match="fails on purpose"):
        build_book(
            project, tmp_path / "out", overrides, options=BuildOptions(render_html=False, progress=False, jobs=2)
        )
    assert set(stamps(project)) == {"a1"}
    executed = tmp_path / "out" / "executed" / "notebooks"
    assert (executed / "a1.ipynb").is_file() and not (executed / "a2.ipynb").exists()
    assert (executed / "b1.failed.ipynb").is_file()
