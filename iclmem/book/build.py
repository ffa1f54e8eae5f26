"""Build the Jupyter Book: execute the notebooks listed in ``_toc.yml`` (cached), then render.

Layout under the build folder (default ``<root>/_build``, git-ignored)::

    executed/<page>.ipynb             executed copy of each notebook page of the toc
    executed/<page>.ipynb.cache.json  its completion record: its cache key (notebook source +
                                      parameters + iclmem code, + the other executed notebooks for a
                                      reader page) and the executed copy's sha256 (issue 41)
    book_src/                         staging folder Sphinx reads: _config.yml, _toc.yml, book/**,
                                      toc pages, and the executed notebooks as <page>.ipynb
    html/                             the rendered book (html/index.html)
    .doctrees/                        Sphinx's incremental-build state

A notebook is executed again only when its cache key changes, so a second build with nothing
changed executes nothing. An executed copy is served only while it matches the sha256 its record holds: a
damaged copy or record is moved to ``<build>/quarantine/`` (one line names the file) and the notebook is
executed again. Files are copied into ``book_src/`` only when their bytes differ, so
Sphinx's own incremental build re-reads nothing either.

A *reader* page, one whose parameters cell declares ``executed_dir`` (the claims scorecard,
``notebooks/00_scorecard``), reads the other executed notebooks: it is executed after every other
notebook of the toc wherever the toc lists it, gets this build's executed folder as
``executed_dir``, and its cache key also holds a hash of each other executed notebook, so it runs
again whenever one of them changed. Jupyter Book runs with notebook execution
off: it only renders what papermill produced.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import nbformat
import yaml

import iclmem
from iclmem.book.execute import (
    SHARED_DEFAULTS,
    UsageError,
    book_root,
    check_parameters,
    execute,
    notebook_parameters,
    read_notebook,
    read_shared_defaults,
    shared_defaults_of,
    with_shared_defaults,
)
from iclmem.book.lanes import group_by_lane, read_lanes, run_lanes
from iclmem.book.page_view import load_glossary, reader_view
from iclmem.runtime.progress import duration
from iclmem.store.atomic import remove_dead_leftovers, remove_leftovers
from iclmem.store.integrity import read_record, seal, served

#: Extensions tried, in order, for a toc entry given without one. ``.md`` pages are copied as
#: they are; ``.py`` (jupytext percent) and ``.ipynb`` pages are notebooks and get executed.
PAGE_SUFFIXES = (".md", ".py", ".ipynb")
NOTEBOOK_SUFFIXES = (".py", ".ipynb")
BOOK_ASSETS = "book"  # everything under this folder is staged (pages, images, bibliography)
#: A notebook whose parameters cell declares this name reads the other executed notebooks (a
#: *reader* page, such as the claims scorecard): it runs last and its key covers theirs.
READER_PARAMETER = "executed_dir"


class BookBuildError(Exception):
    """Sphinx / Jupyter Book failed to render the staged sources."""


@dataclass(frozen=True)
class Page:
    """One entry of ``_toc.yml``: its name there (``notebooks/01_split_validation``) and source file."""

    name: str
    source: Path

    @property
    def is_notebook(self) -> bool:
        return self.source.suffix in NOTEBOOK_SUFFIXES

    @property
    def staged_name(self) -> str:
        """Relative path of the page inside the staging folder."""
        return f"{self.name}.ipynb" if self.is_notebook else f"{self.name}{self.source.suffix}"


@dataclass
class BookResult:
    """What a build did: where the html is, which notebooks ran and which came from the cache."""

    html: Path
    executed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    #: wall seconds per executed notebook, and ``"render"`` for the html
    seconds: dict[str, float] = field(default_factory=dict)
    #: wall seconds of executing the notebooks (less than their sum when lanes ran side by side)
    wall_s: float = 0.0

    def timing(self) -> str:
        """Where this build's time went: one line per executed notebook, the render and the total."""
        if not self.seconds:
            return "nothing executed or rendered"
        width = max(len(name) for name in self.seconds)
        width = max(width, len("notebooks, wall"))
        lines = [f"  {name:<{width}}  {_minutes(s)}" for name, s in self.seconds.items()]
        lines.append(f"  {'total':<{width}}  {_minutes(sum(self.seconds.values()))}")
        notebooks = sum(s for name, s in self.seconds.items() if name != "render")
        if self.wall_s and abs(self.wall_s - notebooks) > 1.0:  # lanes ran side by side
            lines.append(f"  {'notebooks, wall':<{width}}  {_minutes(self.wall_s)}")
        return "\n".join(lines)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60):3d} min {seconds % 60:4.1f} s"


# --- the table of contents ----------------------------------------------------------------------


def _toc_entries(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if "glob" in node:
            raise UsageError(f"_toc.yml: list files explicitly instead of glob {node['glob']!r}")
        for key in ("root", "file"):
            if key in node:
                yield str(node[key])
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []) or []:
                yield from _toc_entries(child)
    elif isinstance(node, list):
        for child in node:
            yield from _toc_entries(child)


def toc_pages(root: str | Path) -> list[Page]:
    """The pages of ``<root>/_toc.yml`` in order, each resolved to its source file."""
    root = Path(root)
    toc_path = root / "_toc.yml"
    if not toc_path.is_file():
        raise UsageError(
            f"no _toc.yml in {root}; run from the project folder or pass --root the folder that holds _config.yml and "
            "_toc.yml"
        )
    try:
        toc = yaml.safe_load(toc_path.read_text())
    except yaml.YAMLError as exc:
        raise UsageError(f"{toc_path} is not valid YAML: {exc}") from exc
    pages = []
    for entry in _toc_entries(toc):
        name = entry
        candidates = [root / entry]
        if Path(entry).suffix in PAGE_SUFFIXES:
            name = str(Path(entry).with_suffix(""))
        else:
            candidates = [root / f"{entry}{suffix}" for suffix in PAGE_SUFFIXES]
        source = next((c for c in candidates if c.is_file()), None)
        if source is None:
            raise UsageError(
                f"_toc.yml lists {entry!r} but none of {', '.join(str(c) for c in candidates)} exists; "
                "create the page or remove its entry from _toc.yml"
            )
        pages.append(Page(name, source))
    return pages


def notebook_pages(root: str | Path) -> dict[str, Page]:
    """The notebook pages of the toc, by toc name."""
    return {page.name: page for page in toc_pages(root) if page.is_notebook}


def resolve_notebook_key(pages: Mapping[str, Page], key: str) -> str:
    """Map a notebook given by toc name, stem or path to its toc name."""
    stem = Path(key).with_suffix("").name if Path(key).suffix in NOTEBOOK_SUFFIXES else Path(key).name
    for name, page in pages.items():
        if key in (name, str(page.source)) or stem == Path(name).name:
            return name
    raise UsageError(f"{key!r} is not a notebook in _toc.yml; notebooks: {', '.join(pages) or '(none)'}")


# --- cache keys ---------------------------------------------------------------------------------


#: Committed data the notebooks read besides the package, relative to the repository root: the benchmark results
#: (appendix A2 renders them; notebook 04 prices its "What it would take" table from ``paper_shipped_cost.json``).
#: They are part of every notebook's cache key, so a re-run benchmark shows on the next build.
BOOK_DATA: tuple[str, ...] = ("benchmarks/results",)


def package_fingerprint() -> str:
    """Hash of every file of the ``iclmem`` package (code and package data; no bytecode) and of :data:`BOOK_DATA`
    (where the repository holds it: not in an installed package)."""
    package = Path(iclmem.__file__).parent
    digest = hashlib.sha256()
    folders = [(package, "")] + [(package.parent / data, f"../{data}/") for data in BOOK_DATA]
    for folder, prefix in folders:
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digest.update((prefix + path.relative_to(folder).as_posix()).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def cache_key(
    source: bytes, parameters: Mapping[str, Any], package: str, inputs: Mapping[str, str] | None = None
) -> str:
    """Key of an executed notebook: its source bytes, the parameters passed, the package hash.

    ``inputs`` (reader pages only) maps each other notebook to :func:`executed_digest` of its
    executed copy, so the key changes whenever one of those changed; ``None`` (any other page)
    leaves the key as it is without reader pages.
    """
    content: dict[str, Any] = {
        "source": hashlib.sha256(source).hexdigest(),
        "parameters": dict(sorted(parameters.items())),
        "package": package,
    }
    if inputs is not None:
        content["inputs"] = dict(sorted(inputs.items()))
    payload = json.dumps(content, sort_keys=True, default=repr)
    return hashlib.sha256(payload.encode()).hexdigest()


def executed_digest(path: Path) -> str:
    """sha256 of an executed notebook's bytes (what a reader page's key records of it)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def is_reader(nb: Any) -> bool:
    """Whether a notebook reads the other executed notebooks (its parameters declare ``executed_dir``)."""
    return READER_PARAMETER in notebook_parameters(nb)


def results_store(root: Path) -> Path:
    """The results store the kernels of a build write to (``$ICLMEM_RESULTS``, else ``results`` under ``root``, where
    the notebooks run)."""
    store = Path(os.environ.get("ICLMEM_RESULTS") or "results")
    return store if store.is_absolute() else root / store


def execution_order(readers: Mapping[str, bool]) -> list[str]:
    """Notebook names (toc order, ``name -> is reader``) in execution order: readers after all others."""
    return [name for name, reader in readers.items() if not reader] + [
        name for name, reader in readers.items() if reader
    ]


def reader_executed_dir(executed_dir: Path, root: Path) -> str:
    """The ``executed_dir`` value passed to reader pages: relative to ``root`` (their working directory) when inside
    it."""
    try:
        return executed_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(executed_dir.resolve())


def cache_record(executed: Path) -> Path:
    """``<page>.ipynb.cache.json``: the executed copy's completion record (:func:`iclmem.store.integrity.seal`), which
    holds its cache key and the sha256 of the executed notebook."""
    return executed.with_name(executed.name + ".cache.json")


def _cached(executed: Path, key: str, build: Path) -> bool:
    """Whether ``executed`` may be served for ``key``: its record is intact, the executed copy matches the sha256
    the record holds (a damaged copy or record goes to ``<build>/quarantine/`` with one line, and the notebook is
    executed again), and the record's key is ``key``."""
    if not served(executed, build, cache_record(executed)):
        return False
    return (read_record(executed, cache_record(executed)) or {}).get("key") == key


def reader_inputs(executed_dir: Path, notebooks: Mapping[str, Page], readers: Mapping[str, bool]) -> dict[str, str]:
    """What a reader page's key records of the other pages: :func:`executed_digest` of each executed copy."""
    return {
        other: executed_digest(executed_dir / notebooks[other].staged_name) for other in notebooks if not readers[other]
    }


@dataclass(frozen=True)
class NotebookTask:
    """One notebook of a build: its place in the order, source, staged name, parameters (and a reader's inputs)."""

    number: int
    source: Path
    staged_name: str
    parameters: dict[str, Any]
    inputs: dict[str, str] | None = None


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of every child it has waited for.

    A notebook's kernel is a child of the process that executes it, and the worker processes the
    kernel starts (``$ICLMEM_WORKERS``, a sweep's Dask workers) are the kernel's children: once the
    kernel has shut down, their CPU time is in this process's ``RUSAGE_CHILDREN``. The difference
    around one notebook is therefore all the CPU time it used; against its wall time it says how many
    cores it kept busy (``book/reproduce.md``).
    """
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass
class NotebookRun:
    """Executes a build's notebooks by name (picklable, so that a lane's process can run it: :mod:`iclmem.book.lanes`).

    Each call executes one notebook into ``executed_dir``, writes its cache record next to it (with
    its wall and CPU seconds, :func:`cpu_seconds`) and returns its wall seconds.
    """

    root: Path
    executed_dir: Path
    package: str
    progress: bool
    total: int
    todo: dict[str, NotebookTask]

    def key(self, name: str) -> str:
        task = self.todo[name]
        return cache_key(task.source.read_bytes(), task.parameters, self.package, task.inputs)

    def __call__(self, name: str) -> float:
        task, key = self.todo[name], self.key(name)
        out = self.executed_dir / task.staged_name
        where = f"[{task.number}/{self.total}]"
        print(f"{where} executing {task.source.relative_to(self.root)} {task.parameters or ''}".rstrip(), flush=True)
        started, cpu_started = time.perf_counter(), cpu_seconds()
        execute(
            read_notebook(task.source),
            out,
            task.parameters,
            cwd=self.root,
            progress=self.progress,
            label=task.source.stem,
        )
        seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu_started
        cores = f", {duration(cpu)} CPU ({cpu / seconds:.1f} cores)" if seconds > 0 else ""
        print(f"{where} {task.source.stem} done in {duration(seconds)}{cores}", flush=True)
        meta = {
            "key": key,
            "source": str(task.source.relative_to(self.root)),
            "parameters": task.parameters,
            "wall_s": round(seconds, 1),
            "cpu_s": round(cpu, 1),
        }
        if task.inputs is not None:
            meta["inputs"] = task.inputs
        seal(out, __name__, self.package, meta=meta, record=cache_record(out))
        return seconds


# --- staging ------------------------------------------------------------------------------------


#: The glossary of the chapters' parameters, relative to the book's root (:mod:`iclmem.book.page_view`).
GLOSSARY = "book/parameters.yaml"


def _staged_bytes(src: Path, glossary: dict[str, dict[str, str]] | None = None) -> bytes:
    """What the book renders of ``src``: an executed notebook in its reader view
    (:func:`iclmem.book.page_view.reader_view`)."""
    if src.suffix != ".ipynb":
        return src.read_bytes()
    nb = nbformat.read(src, as_version=4)
    return nbformat.writes(reader_view(nb, show_code=not is_reader(nb), glossary=glossary)).encode()


def _sync_file(src: Path, dst: Path, glossary: dict[str, dict[str, str]] | None = None) -> None:
    """Write what :func:`_staged_bytes` makes of ``src`` to ``dst`` unless identical bytes are already there (keeps
    mtimes stable)."""
    data = _staged_bytes(src, glossary)
    if dst.is_file() and dst.read_bytes() == data:
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(dst)


def _stage(root: Path, staging: Path, files: Mapping[str, Path]) -> None:
    """Make ``staging`` hold exactly ``files`` (relative name -> source), touching only changes."""
    glossary = load_glossary(root / GLOSSARY)
    for rel, src in files.items():
        _sync_file(src, staging / rel, glossary)
    wanted = {staging / rel for rel in files}
    for path in sorted(staging.rglob("*"), reverse=True):
        if path.is_file() and path not in wanted:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _staged_files(root: Path, pages: list[Page], executed_dir: Path) -> dict[str, Path]:
    files: dict[str, Path] = {"_config.yml": root / "_config.yml", "_toc.yml": root / "_toc.yml"}
    if not files["_config.yml"].is_file():
        raise UsageError(f"no _config.yml in {root}")
    assets = root / BOOK_ASSETS
    if assets.is_dir():
        for path in assets.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                files[path.relative_to(root).as_posix()] = path
    for page in pages:
        files[page.staged_name] = executed_dir / page.staged_name if page.is_notebook else page.source
    return files


# --- rendering ----------------------------------------------------------------------------------


def render(staging: Path, html: Path, *, strict: bool = False, quiet: bool = False) -> None:
    """Run Jupyter Book's Sphinx build on ``staging`` into ``html`` (notebook execution off)."""
    from jupyter_book.sphinx import build_sphinx

    result = build_sphinx(
        staging,
        html,
        use_external_toc=True,
        noconfig=True,
        path_config=str(staging / "_config.yml"),
        confoverrides={
            "external_toc_path": (staging / "_toc.yml").as_posix(),
            "latex_individualpages": False,
            "nb_execution_mode": "off",
        },
        builder="html",
        doctreedir=html.parent / ".doctrees",
        warningiserror=strict,
        keep_going=strict,
        quiet=quiet,
    )
    if result != 0:
        raise BookBuildError(f"jupyter-book could not render {staging}: {result}")


# --- the whole build ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildOptions:
    """How a book build runs (``iclmem book``'s flags): ``force`` re-executes every notebook; ``render_html`` renders
    the pages (else the notebooks only); ``strict`` fails the render on a warning; ``progress`` shows papermill's and
    Sphinx's progress; ``jobs`` > 1 executes the lanes of ``book/lanes.yaml`` side by side (:mod:`iclmem.book.lanes`),
    each notebook as it would alone."""

    force: bool = False
    render_html: bool = True
    strict: bool = False
    progress: bool = True
    jobs: int = 1


#: The defaults of ``iclmem book``: execute what changed, render, one notebook at a time, with progress.
DEFAULT_BUILD = BuildOptions()


def build_book(
    root: str | Path | None = None,
    build_dir: str | Path | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: BuildOptions = DEFAULT_BUILD,
) -> BookResult:
    """Execute the toc's notebooks where their cache key changed, stage the sources, render html (``options``).

    ``overrides`` maps a notebook (toc name such as ``notebooks/01_split_validation``, or its
    stem) to parameter values; they are checked like ``iclmem run``'s, all before anything runs, and
    win over the shared defaults of ``<root>/book/parameters.yaml`` (:func:`iclmem.book.execute.with_shared_defaults`).
    Notebooks run with the project root as working directory (``root`` None: :func:`~iclmem.book.execute.book_root`).
    Reader pages (see :data:`READER_PARAMETER`) run after all other notebooks, with
    ``executed_dir`` set to this build's executed folder unless an override sets it (it is passed
    only where it differs from the notebook's default).
    """
    root = Path(root).resolve() if root is not None else book_root()
    build = Path(build_dir).resolve() if build_dir is not None else root / "_build"
    pages = toc_pages(root)
    notebooks = {p.name: p for p in pages if p.is_notebook}
    wanted = {resolve_notebook_key(notebooks, key): dict(values) for key, values in (overrides or {}).items()}

    executed_dir = build / "executed"
    sources = {name: read_notebook(page.source) for name, page in notebooks.items()}
    readers = {name: is_reader(nb) for name, nb in sources.items()}
    parameters = {}
    shared = read_shared_defaults(root / SHARED_DEFAULTS)
    for name, nb in sources.items():
        declared = notebook_parameters(nb)
        values = with_shared_defaults(declared, shared_defaults_of(shared, Path(name).name), wanted.get(name, {}))
        if readers[name] and READER_PARAMETER not in values:
            here = reader_executed_dir(executed_dir, root)
            values = values if here == declared[READER_PARAMETER].default else {**values, READER_PARAMETER: here}
        parameters[name] = check_parameters(declared, values)

    result = BookResult(html=build / "html" / "index.html")
    remove_leftovers(executed_dir)  # of a build killed mid-notebook; never read, but not kept either
    remove_dead_leftovers(results_store(root))  # of a kill mid-write into the store (a run, a manifest, a probe)
    package = package_fingerprint()
    order = execution_order(readers)
    run = NotebookRun(root, executed_dir, package, options.progress, len(order), {})
    for number, name in enumerate(order, 1):
        page = notebooks[name]
        run.todo[name] = NotebookTask(number, page.source, page.staged_name, parameters[name])

    def stale(name: str) -> bool:
        if options.force or not _cached(executed_dir / notebooks[name].staged_name, run.key(name), build):
            return True
        result.cached.append(name)
        return False

    writers = [name for name in order if not readers[name] and stale(name)]
    lanes = group_by_lane(writers, read_lanes(root, list(notebooks)))
    started = time.perf_counter()
    result.seconds.update(run_lanes(lanes, run, options.jobs))
    for name in (n for n in order if readers[n]):  # after every other notebook: their executed copies are its input
        run.todo[name] = replace(run.todo[name], inputs=reader_inputs(executed_dir, notebooks, readers))
        if stale(name):
            result.seconds[name] = run(name)
    result.executed = [name for name in order if name in result.seconds]
    result.seconds = {name: result.seconds[name] for name in result.executed}
    result.wall_s = time.perf_counter() - started

    staging = build / "book_src"
    _stage(root, staging, _staged_files(root, pages, executed_dir))
    if options.render_html:
        started = time.perf_counter()
        render(staging, build / "html", strict=options.strict, quiet=not options.progress)
        result.seconds["render"] = time.perf_counter() - started
    return result


# --- Sphinx extension -----------------------------------------------------------------------------


def _dedup_scripts(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """Drop repeated inline scripts from a page.

    Sphinx 7.4 registers a body-only script added after the builder started twice (once with
    filename ``None``, once with ``""``), so sphinx-thebe's ``const THEBE_JS_URL`` is declared
    twice and every page raises a SyntaxError in the browser.
    """
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        filename = getattr(script, "filename", script) or ""
        attributes = getattr(script, "attributes", {})
        key = (str(filename), getattr(script, "priority", 0), tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``sphinx: extra_extensions: [iclmem.book.build]`` in ``_config.yml``); also registers the
    ``paper`` role of the chapters' quoted values (:mod:`iclmem.book.roles`)."""
    from iclmem.book.roles import ROLE, paper_role

    app.connect("html-page-context", _dedup_scripts)
    app.add_role(ROLE, paper_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
