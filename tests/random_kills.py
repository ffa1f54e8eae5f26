"""SIGKILL a tiny real book at random instants and compare it with an uninterrupted build (shared by
``tests/book/test_kill_random.py``, 3 instants, and ``benchmarks/kill_random.py``, 20 instants).

The tiny book is notebooks 01 and 02 of this repository (copied when :meth:`TinyBook.create` runs) on
tiny parameters given to ``iclmem book -f`` as a user would: breast_cancer, Q = 20, one learning
rate, 3 epochs, a 32-row context. It writes a split manifest and one fine-tuning run to its results
store (``$ICLMEM_RESULTS``). ``iclmem book --no-html`` (execute and stage, no Sphinx render) runs in a
session of its own; a kill stops that process group and every descendant (the notebook kernel,
which jupyter starts in a session of its own), notes where the build was, and SIGKILLs them all.
The same command then runs again to its end, and the build folder, the results store and the cache
(``$ICLMEM_CACHE``) must equal the uninterrupted build's, with no temporary file anywhere.

What the comparison ignores (:data:`IGNORED`): papermill's timings and the kernel's message
timestamps in the notebooks' metadata, the cell ids (random: jupytext gives a notebook new ones
each time it converts the ``.py``, an uninterrupted build too; papermill keeps a copy of the source
notebook, ids included, in its metadata), the glued ``wall_minutes`` of
notebook 02 (its fine-tuning wall time, 0 when the run came from the store) and ``wall_s`` of the
build's ``.cache.json`` records, with the executed copy's sha256 and the record's digest (both read those
timings; the executed copy itself is compared). Execution counts are compared. No store file carries a timestamp
(:data:`TIMESTAMPED_STORE_FILES` is empty): every store file is compared byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = ("01_split_validation", "02_controlled_finetuning")
#: The tiny book's parameters, as ``iclmem book -f`` reads them (notebook -> {name: value}).
PARAMETERS: dict[str, dict[str, Any]] = {
    "01_split_validation": {"datasets": ["breast_cancer"], "query_sizes": [20]},
    "02_controlled_finetuning": {
        "datasets": ["breast_cancer"],
        "learning_rates": [0.01],
        "query_sizes": [20],
        "label_conditions": ["none"],
        "epochs": 3,
        "context_size": 32,
    },
}
TOC = "format: jb-book\nroot: intro\nparts:\n  - caption: Notebooks\n    chapters:\n" + "".join(
    f"      - file: notebooks/{name}\n" for name in CHAPTERS
)
#: Copied from the repository into the tiny project (besides the notebooks).
PROJECT_FILES = ("_config.yml", "book/parameters.yaml", "book/favicon.svg")
#: Exactly what the comparison leaves out, and why (module docstring).
IGNORED = {
    "notebook metadata.papermill": ["duration", "start_time", "end_time"],
    "cell metadata.papermill": ["duration", "start_time", "end_time"],
    "cell metadata": ["execution (the kernel's iopub/shell timestamps)"],
    "cell": ["id (random per jupytext conversion; also in the source copy in metadata.papermill.input_path)"],
    "glue": ["02_controlled_finetuning:wall_minutes (fine-tuning wall time), also its output in the notebook"],
    "<notebook>.ipynb.cache.json": [
        "wall_s",
        "cpu_s",
        "files and digest (the executed copy's sha256: its timing fields)",
    ],
}
TIMING_FIELDS = ("duration", "start_time", "end_time")
TIMING_GLUES = {"02_controlled_finetuning:wall_minutes"}
TIMING_GLUE_NAMES = {key.split(":")[1] for key in TIMING_GLUES}
TIMESTAMPED_STORE_FILES: tuple[str, ...] = ()


@dataclass
class TinyBook:
    """The tiny book's folders under ``base``: ``src/`` (a copy of the ``iclmem`` package and the parameters file it
    reads, so that edits to the working tree while it runs change no key), ``proj/`` (the book), ``results/``,
    ``cache/``, and ``runtime/`` (jupyter's connection files)."""

    base: Path
    files: dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def create(cls, base: Path) -> TinyBook:
        """Copy the package, the two notebooks and the project files as they are now."""
        base.mkdir(parents=True, exist_ok=True)
        shutil.copytree(REPO / "iclmem", base / "src" / "iclmem", ignore=shutil.ignore_patterns("__pycache__"))
        (base / "src" / "book").mkdir()  # the package reads its parameters' ranges beside it, as in a checkout
        shutil.copy(REPO / "book" / "parameters.yaml", base / "src" / "book" / "parameters.yaml")
        files = {rel: (REPO / rel).read_bytes() for rel in PROJECT_FILES}
        files |= {f"notebooks/{name}.py": (REPO / "notebooks" / f"{name}.py").read_bytes() for name in CHAPTERS}
        files["_toc.yml"] = TOC.encode()
        files["intro.md"] = b"# A tiny book\n"
        files["params.yaml"] = json.dumps(PARAMETERS).encode()  # JSON is YAML
        return cls(base, files)

    @property
    def root(self) -> Path:
        return self.base / "proj"

    @property
    def areas(self) -> dict[str, Path]:
        """The folders compared and searched for temporary files."""
        return {"project": self.root, "results": self.base / "results", "cache": self.base / "cache"}

    @property
    def log(self) -> Path:
        return self.base / "build.log"

    def reset(self) -> None:
        """A fresh project with nothing built, an empty store and cache."""
        for folder in [*self.areas.values(), self.base / "runtime"]:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
        for rel, data in self.files.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_bytes(data)

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(self.base / "src"),
            "ICLMEM_RESULTS": str(self.areas["results"]),
            "ICLMEM_CACHE": str(self.areas["cache"]),
            "JUPYTER_RUNTIME_DIR": str(self.base / "runtime"),
            "ICLMEM_THREADS": "1",
            "ICLMEM_WORKERS": "1",
            "ICLMEM_PROGRESS": "0",
        }

    def command(self) -> list[str]:
        """``iclmem book`` as a user types it, execute-only."""
        return [sys.executable, "-m", "iclmem.cli", "book", "--root", "proj", "-f", "proj/params.yaml", "--no-html"]

    def start(self) -> subprocess.Popen:
        """Start the build in a session (and process group) of its own, its output to :attr:`log`."""
        with self.log.open("w") as out:
            return subprocess.Popen(
                self.command(),
                cwd=self.base,
                env=self.env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def run(self, timeout: float = 900) -> tuple[int, float, str]:
        """Run the build to its end: exit status, wall seconds, output."""
        started = time.monotonic()
        proc = self.start()
        try:
            code = proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                kill_tree(proc)
        return code, time.monotonic() - started, self.log.read_text()


# --- processes ----------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process from /proc, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[0], int(fields[1])


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = stat[1]
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def stop_tree(proc: subprocess.Popen) -> list[int]:
    """SIGSTOP the build's process group, then every descendant (the kernel is in a session of its own), so
    nothing moves while the caller looks; returns the descendants."""
    try:
        os.killpg(proc.pid, signal.SIGSTOP)
    except ProcessLookupError:
        return []
    below = descendants(proc.pid)  # the group is stopped: it starts no new process now
    _signal_all(below, signal.SIGSTOP)
    return below


def kill_tree(proc: subprocess.Popen, below: list[int] | None = None) -> None:
    """SIGKILL the build's process group and every process below it, and wait until all are gone."""
    below = stop_tree(proc) if below is None else below
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _signal_all(below, signal.SIGKILL)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while any((stat := _stat(pid)) is not None and stat[0] != "Z" for pid in below):
        assert time.monotonic() < deadline, f"processes {below} outlived SIGKILL"
        time.sleep(0.02)


# --- where a kill landed ------------------------------------------------------------------------


def stage(book: TinyBook) -> str:
    """Where a stopped build is: which notebook, and for notebook 02 whether its fine-tuning run had
    started (``run.json`` in the store), finished (its completion record ``complete.json``) or neither."""
    output = book.log.read_text() if book.log.exists() else ""
    results = book.areas["results"]
    if f"{CHAPTERS[1]} done" in output:
        return "after the notebooks (cache key, staging)"
    if f"executing notebooks/{CHAPTERS[1]}" in output:
        runs = list((results / "finetune").glob("*/run.json")) if (results / "finetune").is_dir() else []
        if not runs:
            return f"{CHAPTERS[1]}: before fine-tuning"
        if not (runs[0].parent / "complete.json").exists():
            return f"{CHAPTERS[1]}: fine-tuning"
        return f"{CHAPTERS[1]}: after fine-tuning"
    if f"executing notebooks/{CHAPTERS[0]}" in output:
        written = any((results / "manifests").glob("*.json")) if (results / "manifests").is_dir() else False
        return f"{CHAPTERS[0]}: {'after' if written else 'before'} the manifest"
    return "startup (before any notebook)"


# --- what a build leaves ------------------------------------------------------------------------


def _drop_cell_ids(node: Any) -> None:
    """Remove ``id`` from every cell, also from the copy of the source notebook papermill keeps in its metadata."""
    if isinstance(node, dict):
        if "cell_type" in node:
            node.pop("id", None)
        for value in node.values():
            _drop_cell_ids(value)
    elif isinstance(node, list):
        for value in node:
            _drop_cell_ids(value)


def _notebook(data: bytes) -> str:
    """An executed notebook without what :data:`IGNORED` lists, as canonical JSON."""
    nb = json.loads(data)
    for key in TIMING_FIELDS:
        nb.get("metadata", {}).get("papermill", {}).pop(key, None)
    _drop_cell_ids(nb)
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {})
        meta.pop("execution", None)
        for key in TIMING_FIELDS:
            meta.get("papermill", {}).pop(key, None)
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("scrapbook", {}).get("name") in TIMING_GLUE_NAMES:
                output["data"] = "<a wall time>"
    return json.dumps(nb, sort_keys=True, indent=1)


def _comparable(rel: str, data: bytes) -> str:
    """What is compared of one file: a digest of its bytes, or of its JSON without the ignored fields."""
    if rel.endswith(".ipynb"):
        data = _notebook(data).encode()
    elif rel.endswith(".ipynb.cache.json"):
        meta = json.loads(data)
        for key in ("wall_s", "cpu_s", "files", "digest"):
            meta.pop(key, None)
        data = json.dumps(meta, sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()


def artifacts(book: TinyBook) -> dict[str, str]:
    """Every file of the project (build folder included), the results store and the cache: ``area/path -> digest``."""
    found = {}
    for area, folder in book.areas.items():
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                rel = f"{area}/{path.relative_to(folder).as_posix()}"
                found[rel] = _comparable(rel, path.read_bytes())
    return found


def glued(book: TinyBook) -> dict[str, Any]:
    """The myst_nb ``glue`` outputs of the executed notebooks: ``<notebook>:<name> -> data``."""
    values = {}
    for name in CHAPTERS:
        path = book.root / "_build" / "executed" / "notebooks" / f"{name}.ipynb"
        if not path.is_file():
            continue
        for cell in json.loads(path.read_text())["cells"]:
            for output in cell.get("outputs", []):
                scrap = output.get("metadata", {}).get("scrapbook")
                if scrap:
                    values[f"{name}:{scrap['name']}"] = output["data"]
    return values


def is_temporary(name: str) -> bool:
    """A temporary file's name: ``.<name>.<random>.tmp`` (:mod:`iclmem.store.atomic`), ``.<name>.tmp`` (staging), or
    any other ``*.tmp`` / ``*.part`` / ``tmp*``."""
    return name.endswith((".tmp", ".part")) or ".tmp." in name or name.startswith("tmp")


def temporary_files(book: TinyBook) -> list[str]:
    """Temporary files anywhere in the project, the results store and the cache."""
    return sorted(
        f"{area}/{path.relative_to(folder).as_posix()}"
        for area, folder in book.areas.items()
        for path in folder.rglob("*")
        if is_temporary(path.name)
    )


@dataclass
class Baseline:
    """An uninterrupted build: its wall seconds, its files and its glued values."""

    seconds: float
    files: dict[str, str]
    glue: dict[str, Any]


def baseline(book: TinyBook) -> Baseline:
    """Build the tiny book once without a kill."""
    book.reset()
    code, seconds, output = book.run()
    assert code == 0, output
    return Baseline(seconds, artifacts(book), glued(book))


@dataclass
class Trial:
    """One kill: when, where it landed, the resume, and how the result compares with the baseline."""

    instant_s: float
    landed: str
    temporary_after_kill: list[str]
    resume_s: float
    resume_exit: int
    resume_summary: str
    differing_files: list[str]
    differing_glue: list[str]
    temporary_left: list[str]
    kernel_files_left: int

    @property
    def equal(self) -> bool:
        return self.resume_exit == 0 and not self.differing_files and not self.differing_glue

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "equal": self.equal}


def kill_at(book: TinyBook, instant: float, reference: Baseline) -> Trial:
    """Start a fresh build, SIGKILL it ``instant`` seconds in, run it again to its end and compare."""
    book.reset()
    proc = book.start()
    try:
        proc.wait(timeout=instant)  # the instant counts from the start, as the baseline's time does
        landed = "after the build ended"
    except subprocess.TimeoutExpired:
        below = stop_tree(proc)
        landed = stage(book)
        kill_tree(proc, below)
    after_kill = temporary_files(book)
    code, resume_s, output = book.run()
    summary = next((line for line in output.splitlines() if line.startswith("executed:")), output[-2000:])
    files = artifacts(book)
    differing = sorted(
        rel
        for rel in files.keys() | reference.files.keys()
        if files.get(rel) != reference.files.get(rel) and rel.removeprefix("results/") not in TIMESTAMPED_STORE_FILES
    )
    glue = glued(book)
    differing_glue = sorted(
        k for k in glue.keys() | reference.glue.keys() if k not in TIMING_GLUES and glue.get(k) != reference.glue.get(k)
    )
    return Trial(
        instant_s=round(instant, 2),
        landed=landed,
        temporary_after_kill=after_kill,
        resume_s=round(resume_s, 1),
        resume_exit=code,
        resume_summary=summary,
        differing_files=differing,
        differing_glue=differing_glue,
        temporary_left=temporary_files(book),
        kernel_files_left=len(list((book.base / "runtime").glob("kernel-*.json"))),
    )


def instants(n: int, seconds: float, seed: int) -> list[float]:
    """``n`` kill instants drawn uniformly over ``[0, seconds)`` with a seeded RNG."""
    rng = random.Random(seed)
    return [rng.uniform(0, seconds) for _ in range(n)]
