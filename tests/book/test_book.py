"""The book build: toc resolution, the execution cache, staging, and the real book's content."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

import iclmem.book.build as book
from iclmem.book.build import BuildOptions, build_book, cache_key, toc_pages
from iclmem.book.execute import ParameterError, UsageError

REPO = Path(__file__).resolve().parents[2]

TOC = """\
format: jb-book
root: intro
parts:
  - caption: Notebooks
    chapters:
      - file: notebooks/tiny
"""


@pytest.fixture
def project(tmp_path: Path, make_notebook: Callable[..., Path]) -> Path:
    """A small book project: the repository's _config.yml, an intro page and the tiny notebook."""
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    (root / "book").mkdir()
    shutil.copy(REPO / "book" / "favicon.svg", root / "book" / "favicon.svg")
    (root / "_toc.yml").write_text(TOC)
    (root / "intro.md").write_text("# Intro\n\nSee {doc}`notebooks/tiny`.\n")
    make_notebook(root / "notebooks" / "tiny.py")
    return root


@pytest.fixture
def executions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every notebook papermill executes during a build.

    The package fingerprint is pinned, so that edits to ``iclmem`` made while the tests run do not
    invalidate the cache in the middle of a test.
    """
    monkeypatch.setattr(book, "package_fingerprint", lambda: "pinned package")
    calls: list[str] = []
    real = book.execute

    def counting(nb, output, parameters, **kwargs):
        calls.append(output.name)
        return real(nb, output, parameters, **kwargs)

    monkeypatch.setattr(book, "execute", counting)
    return calls


def _mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


# --- the table of contents --------------------------------------------------------------------


def test_toc_pages_resolve_to_sources(project: Path) -> None:
    pages = toc_pages(project)
    assert [(p.name, p.source.name, p.is_notebook) for p in pages] == [
        ("intro", "intro.md", False),
        ("notebooks/tiny", "tiny.py", True),
    ]
    assert pages[1].staged_name == "notebooks/tiny.ipynb"


def test_repository_toc_lists_existing_pages() -> None:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    assert toc["format"] == "jb-book" and toc["root"] == "book/intro"
    names = [p.name for p in toc_pages(REPO)]
    assert names[0] == "book/intro"
    assert {"book/reproduce", "book/adapt", "notebooks/01_split_validation"} <= set(names)


def test_missing_toc_entry_and_glob_are_errors(project: Path) -> None:
    (project / "_toc.yml").write_text(TOC + "      - file: notebooks/absent\n")
    with pytest.raises(UsageError, match="notebooks/absent"):
        toc_pages(project)
    (project / "_toc.yml").write_text(TOC + "      - glob: notebooks/*\n")
    with pytest.raises(UsageError, match="glob"):
        toc_pages(project)


# --- the execution cache ----------------------------------------------------------------------


def test_cache_key_depends_on_source_parameters_and_package() -> None:
    base = cache_key(b"x = 1", {"n": 1}, "pkg")
    assert base == cache_key(b"x = 1", {"n": 1}, "pkg")
    assert (
        len(
            {
                base,
                cache_key(b"x = 2", {"n": 1}, "pkg"),
                cache_key(b"x = 1", {"n": 2}, "pkg"),
                cache_key(b"x = 1", {"n": 1}, "pkg2"),
            }
        )
        == 4
    )


def test_second_build_executes_and_rewrites_nothing(project: Path, tmp_path: Path, executions: list[str]) -> None:
    build = tmp_path / "out"
    first = build_book(project, build, {"tiny": {"n": 5}}, options=BuildOptions(progress=False))
    assert first.executed == ["notebooks/tiny"] and executions == ["tiny.ipynb"]
    assert first.html == build / "html" / "index.html" and first.html.is_file()
    assert set(first.seconds) == {"notebooks/tiny", "render"} and all(s > 0 for s in first.seconds.values())
    assert [line.split()[0] for line in first.timing().splitlines()] == ["notebooks/tiny", "render", "total"]
    assert json.loads((build / "executed" / "notebooks" / "tiny.ipynb.cache.json").read_text())["wall_s"] >= 0
    page = (build / "html" / "notebooks" / "tiny.html").read_text()
    assert "RESULT n=5 rate=0.5" in page
    staged = _mtimes(build / "book_src")
    assert set(staged) == {"_config.yml", "_toc.yml", "book/favicon.svg", "intro.md", "notebooks/tiny.ipynb"}

    start = time.monotonic()
    second = build_book(project, build, {"notebooks/tiny": {"n": 5}}, options=BuildOptions(progress=False))
    assert time.monotonic() - start < 60
    assert second.executed == [] and second.cached == ["notebooks/tiny"] and set(second.seconds) == {"render"}
    assert executions == ["tiny.ipynb"]  # papermill was not called again
    assert _mtimes(build / "book_src") == staged  # so Sphinx's incremental build has nothing to re-read


@pytest.mark.slow
def test_changes_invalidate_the_cache(
    project: Path, tmp_path: Path, executions: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    build = tmp_path / "out"

    def run(overrides: dict | None = None) -> list[str]:
        return build_book(project, build, overrides, options=BuildOptions(render_html=False, progress=False)).executed

    assert run() == ["notebooks/tiny"]
    assert run() == []
    assert run({"tiny": {"n": 4}}) == ["notebooks/tiny"]  # other parameters
    assert run({"tiny": {"n": 4}}) == []
    nb = project / "notebooks" / "tiny.py"
    nb.write_text(nb.read_text() + "\n# %%\nprint('more')\n")  # other source
    assert run({"tiny": {"n": 4}}) == ["notebooks/tiny"]
    monkeypatch.setattr(book, "package_fingerprint", lambda: "changed package")  # other iclmem code
    assert run({"tiny": {"n": 4}}) == ["notebooks/tiny"]
    assert run({"tiny": {"n": 4}}) == []
    assert build_book(
        project, build, {"tiny": {"n": 4}}, options=BuildOptions(force=True, render_html=False, progress=False)
    ).executed == ["notebooks/tiny"]
    meta = json.loads((build / "executed" / "notebooks" / "tiny.ipynb.cache.json").read_text())
    assert meta["parameters"] == {"n": 4} and meta["source"] == "notebooks/tiny.py"


def test_package_fingerprint_tracks_package_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert re.fullmatch(r"[0-9a-f]{64}", book.package_fingerprint())
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "recipes.yaml").write_text("a: 1\n")
    monkeypatch.setattr(book.iclmem, "__file__", str(package / "__init__.py"))
    first = book.package_fingerprint()
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"bytecode")
    assert book.package_fingerprint() == first  # bytecode does not count
    (package / "sub" / "recipes.yaml").write_text("a: 2\n")
    assert book.package_fingerprint() != first  # package data does
    second = book.package_fingerprint()
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "roofline.json").write_text("{}")
    assert book.package_fingerprint() != second  # the benchmark results A2 and 04 read do (a re-run benchmark)
    third = book.package_fingerprint()
    (results / "roofline.json").write_text('{"peak": 1}')
    assert book.package_fingerprint() != third


def test_overrides_are_checked_before_anything_runs(project: Path, tmp_path: Path, executions: list[str]) -> None:
    with pytest.raises(ParameterError, match="unknown parameter 'nn'"):
        build_book(project, tmp_path / "out", {"tiny": {"nn": 1}}, options=BuildOptions(render_html=False))
    with pytest.raises(UsageError, match="not a notebook in _toc.yml"):
        build_book(project, tmp_path / "out", {"other": {"n": 1}}, options=BuildOptions(render_html=False))
    assert executions == []


def test_pages_removed_from_the_toc_leave_the_staging_folder(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "out"
    build_book(project, build, options=BuildOptions(render_html=False, progress=False))
    assert (build / "book_src" / "notebooks" / "tiny.ipynb").is_file()
    (project / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    build_book(project, build, options=BuildOptions(render_html=False, progress=False))
    assert sorted(_mtimes(build / "book_src")) == ["_config.yml", "_toc.yml", "book/favicon.svg", "intro.md"]
