"""A damaged artifact is never served (issue 41): 320 seeded faults, bit flips and truncations, over every artifact
kind (weights, logs, completion records, probe scores, manifests, the LLM completion cache, a sweep's summaries and
the book's executed notebooks with their ``.cache.json`` records). Each one is set aside to quarantine/ with one
line naming the damaged file, and computed again to the bytes of the undamaged store (a sweep summary: to its rows;
its wall time and host differ); for one case in ten of the fine-tuning kinds and of the executed notebooks the tiny
pipeline (manifest, run, probe scores) or the tiny book is rebuilt and equals the uninterrupted one. Also:
``iclmem store verify [--repair]`` and ``iclmem store gc``.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import write_tiny_notebook
from random_kills import _comparable
from tiny_store import CONFIG, build, inputs

import iclmem.book.build as book
from iclmem.cli import main
from iclmem.llm.cache import CachedBackend
from iclmem.llm.chat import ChatRequest, Completion, Decoding
from iclmem.store.integrity import QUARANTINE, RECORD, inspect, read_record, seal
from iclmem.sweep import load_grid, run_sweep
from iclmem.sweep.engine import Cluster
from iclmem.training.finetune import finetune

CASES_PER_KIND = 40  # 8 kinds: 320 cases, half bit flips, half truncations
#: The tiny executed notebook of the tiny book (``<root>/book/_build/executed/``).
EXECUTED = Path("book/_build/executed/notebooks/tiny.ipynb")


class CountingBackend:
    """Answers with the reversed prompt and counts the requests it receives."""

    name, model_id, context_window, base_url = "counting", "toy/model:1", None, None

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, request: ChatRequest) -> int:
        return 1

    def complete_batch(self, requests):
        self.calls += len(requests)
        return [Completion(r.messages[-1][1][::-1], 3, 2) for r in requests]


REQUESTS = [ChatRequest.user(f"prompt {i}", Decoding(8)) for i in range(5)]


def _tiny_sweep(root: Path, inp) -> object:
    """A one-task grid on the tiny table (``<root>/grid/``), its store ``<root>/sweep_results``."""
    folder = root / "grid"
    folder.mkdir()
    shutil.copy(root / "table.csv", folder / "tiny.csv")
    grid = {
        "name": "tiny",
        "datasets": [{"path": "tiny.csv", "target": "target", "task": "classification"}],
        "learning_rates": [1e-2],
        "query_sizes": [10],
        "regimes": ["single_task_fixed"],
        "epochs": 1,
        "context_size": 20,
        "probe": {"max_queries": 4, "manipulations": ["baseline"], "n_boot": 10},
    }
    (folder / "grid.yaml").write_text(yaml.safe_dump(grid))
    return load_grid(folder / "grid.yaml")


def _sweep(case_root: Path, grid, inp):
    return run_sweep(
        grid, results_dir=case_root / "sweep_results", cluster=Cluster(0), reference=inp.reference, progress=False
    )


def _tiny_book(root: Path) -> Path:
    """A book of one tiny notebook (``<root>/book``), built (no html) into ``<root>/book/_build``."""
    project = root / "book"
    project.mkdir()
    (project / "_config.yml").write_text("title: tiny\n")
    (project / "_toc.yml").write_text("format: jb-book\nroot: notebooks/tiny\n")
    write_tiny_notebook(project / "notebooks" / "tiny.py")
    book.build_book(project, project / "_build", options=book.BuildOptions(render_html=False, progress=False))
    return project


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The undamaged store, built once: manifest, run, probe scores; a completion cache of 5 records; a one-task
    sweep; and a tiny book of one executed notebook."""
    root = tmp_path_factory.mktemp("pristine")
    inp = inputs(root)
    manifest, run, scores = build(inp, root / "results")
    CachedBackend(CountingBackend(), root=root / "cache").complete_batch(REQUESTS)
    grid = _tiny_sweep(root, inp)
    swept = _sweep(root, grid, inp)
    assert swept.ran == 1 and swept.summaries[0]["status"] == "ok", swept.summaries
    _tiny_book(root)
    files = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".tmp" not in p.name}
    return {
        "root": root,
        "inp": inp,
        "manifest": manifest,
        "run": run,
        "scores": scores,
        "files": files,
        "grid": grid,
        "sweep_rows": swept.summaries[0]["rows"],
        "book_key": read_record(root / EXECUTED, book.cache_record(root / EXECUTED))["key"],
    }


def _damage(path: Path, rng: np.random.Generator, flip: bool) -> str:
    data = bytearray(path.read_bytes())
    if flip:
        offset = int(rng.integers(len(data)))
        data[offset] ^= 1 << int(rng.integers(8))
        what = f"bit flip at {offset}"
    else:
        size = int(rng.integers(len(data)))
        data = data[:size]
        what = f"truncated to {size} of {len(path.read_bytes())}"
    path.write_bytes(bytes(data))
    return what


def _copy(pristine: dict, dest: Path) -> Path:
    shutil.copytree(pristine["root"], dest)
    return dest


def _quarantined(store: Path) -> list[Path]:
    q = store / QUARANTINE
    return sorted(q.iterdir()) if q.is_dir() else []


def _target(case_root: Path, kind: str, rng: np.random.Generator) -> Path:
    results = case_root / "results"
    if kind in ("weights", "logs", "records"):
        run = next((results / "finetune").iterdir())
        name = {"weights": f"weights_epoch000{int(rng.integers(3))}.pt", "logs": "log.json.gz", "records": RECORD}
        return run / name[kind]
    if kind == "scores":
        folders = sorted((results / "probe").iterdir())
        return folders[int(rng.integers(len(folders)))] / "scores.parquet"
    if kind == "manifests":
        return next(p for p in (results / "manifests").iterdir() if not p.name.endswith(RECORD))
    if kind == "sweep summaries":
        summaries = sorted((case_root / "sweep_results" / "sweep" / "tiny").iterdir())  # the summary and its record
        return summaries[int(rng.integers(len(summaries)))]
    if kind == "executed notebooks":
        executed = case_root / EXECUTED
        return [executed, book.cache_record(executed)][int(rng.integers(2))]
    records = sorted(p for p in (case_root / "cache").rglob("*.json") if QUARANTINE not in p.parts)
    return records[int(rng.integers(len(records)))]


def _same_as_pristine(pristine: dict, case_root: Path, under: str = "results") -> None:
    """Every file of the pristine store ``under`` is there again with its bytes (quarantine/ and locks/ aside)."""
    for rel, data in pristine["files"].items():
        if rel.parts[0] == under:
            assert (case_root / rel).read_bytes() == data, rel


KINDS = [
    "weights",
    "logs",
    "records",
    "scores",
    "manifests",
    "completion cache",
    "sweep summaries",
    "executed notebooks",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow
def test_a_damaged_artifact_is_never_served(pristine, tmp_path, capfd, kind):
    inp, counts = pristine["inp"], {"recomputed": 0, "reported": 0}
    started = time.perf_counter()
    for case in range(CASES_PER_KIND):
        seed = sum(map(ord, kind)) * 1000 + case
        rng = np.random.default_rng(seed)
        case_root = _copy(pristine, tmp_path / f"case{case}")
        target = _target(case_root, kind, rng)
        what = _damage(target, rng, flip=case % 2 == 0)
        results = case_root / "results"
        if kind in ("weights", "logs", "records"):
            # the run is not served: finetune(load_only=True) finds nothing it may serve
            assert (
                finetune(
                    pristine["manifest"], inp.table, CONFIG, inp.reference, results, progress=False, load_only=True
                )
                is None
            ), what
            line = capfd.readouterr().err
            assert f"damaged {target.parent}" in line and target.name in line, (what, line)
            assert [q.name.startswith("finetune-") for q in _quarantined(results)] == [True], what
            counts["reported"] += 1
            if case % 10 == 0:  # the tiny pipeline rebuilt equals the uninterrupted one
                _, _, scores = build(inp, results)
                pd.testing.assert_frame_equal(scores, pristine["scores"])
                _same_as_pristine(pristine, case_root)
                counts["recomputed"] += 1
        elif kind == "scores":
            _, run, scores = build(inp, results)
            pd.testing.assert_frame_equal(scores, pristine["scores"])
            assert target.name in capfd.readouterr().err, what
            assert [q.name.startswith("probe-") for q in _quarantined(results)] == [True], what
            _same_as_pristine(pristine, case_root)
            counts["recomputed"] += 1
        elif kind == "manifests":
            build(inp, results, load_only=True)
            assert target.name in capfd.readouterr().err, what
            assert len(_quarantined(results)) == 1, what
            _same_as_pristine(pristine, case_root)
            counts["recomputed"] += 1
        elif kind == "sweep summaries":
            again = _sweep(case_root, pristine["grid"], inp)  # the summary is not served: the task runs again
            assert (again.from_store, again.ran) == (0, 1), what
            assert again.summaries[0]["rows"] == pristine["sweep_rows"], what
            assert target.name in capfd.readouterr().err, what
            assert [q.name.startswith("sweep-tiny-") for q in _quarantined(case_root / "sweep_results")] == [True]
            summary = next(p for p in target.parent.iterdir() if not p.name.endswith(RECORD))
            assert inspect(summary, verify=False).state == "ok", what  # written and sealed again
            counts["recomputed"] += 1
        elif kind == "executed notebooks":
            executed, build_dir = case_root / EXECUTED, case_root / "book" / "_build"
            assert not book._cached(executed, pristine["book_key"], build_dir), what  # never served for its key
            assert target.name in capfd.readouterr().err, what
            assert [q.name.startswith("executed-notebooks-tiny.ipynb-") for q in _quarantined(build_dir)] == [True]
            counts["reported"] += 1
            if case % 10 == 0:  # the tiny book rebuilt: the notebook executed again, the same as the undamaged one
                built = book.build_book(
                    case_root / "book", build_dir, options=book.BuildOptions(render_html=False, progress=False)
                )
                assert built.executed == ["notebooks/tiny"], what
                rel = str(EXECUTED)
                assert _comparable(rel, executed.read_bytes()) == _comparable(rel, pristine["files"][EXECUTED])
                assert book._cached(executed, read_record(executed, book.cache_record(executed))["key"], build_dir)
                counts["recomputed"] += 1
        else:
            backend = CountingBackend()
            out = CachedBackend(backend, root=case_root / "cache").complete_batch(REQUESTS)
            assert backend.calls == 1, what  # only the damaged record was requested again
            assert [c.text for c in out] == [f"prompt {i}"[::-1] for i in range(5)], what
            assert target.name in capfd.readouterr().err, what
            assert len(_quarantined(case_root / "cache")) == 1, what
            counts["recomputed"] += 1
        shutil.rmtree(case_root)
    seconds = time.perf_counter() - started
    print(f"{kind}: {CASES_PER_KIND} cases, {counts} in {seconds:.1f} s")
    assert counts["recomputed"] + counts["reported"] >= CASES_PER_KIND


def test_verification_is_once_per_process_and_sees_a_later_change(pristine, tmp_path):
    store = _copy(pristine, tmp_path / "s") / "results"
    run = next((store / "finetune").iterdir())
    assert inspect(run).state == "ok"
    started = time.perf_counter()
    for _ in range(100):
        assert inspect(run).state == "ok"
    cached = (time.perf_counter() - started) / 100
    started = time.perf_counter()
    assert inspect(run, verify=False).state == "ok"
    hashed = time.perf_counter() - started
    print(f"verification: first read {hashed * 1e3:.2f} ms, later reads {cached * 1e3:.3f} ms")
    weights = run / "weights_epoch0002.pt"
    data = bytearray(weights.read_bytes())
    data[-100] ^= 4
    weights.write_bytes(bytes(data))  # same size, new mtime: hashed again
    assert inspect(run).state == "damaged"


def test_a_folder_without_a_record_is_incomplete_and_sealing_covers_each_file(tmp_path):
    folder = tmp_path / "kind" / "key"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("a")
    assert inspect(folder).state == "incomplete"
    assert inspect(tmp_path / "kind" / "other").state == "absent"
    seal(folder, "iclmem.training.finetune", "v")
    assert inspect(folder).state == "ok"
    (folder / "a.txt").unlink()
    assert inspect(folder).detail == "a.txt: missing"


def test_store_verify_lists_and_repairs_damaged_and_incomplete(pristine, tmp_path, capsys):
    store = _copy(pristine, tmp_path / "s") / "results"
    probe = sorted((store / "probe").iterdir())
    (probe[0] / "scores.parquet").write_bytes(b"not parquet")
    (probe[1] / RECORD).unlink()
    assert main(["store", "verify", "--results", str(store)]) == 1
    out = capsys.readouterr().out
    assert "2 damaged or incomplete" in out and "scores.parquet" in out and "incomplete" in out
    assert probe[0].exists()  # nothing moved without --repair
    assert main(["store", "verify", "--results", str(store), "--repair"]) == 0
    assert not probe[0].exists() and not probe[1].exists() and len(_quarantined(store)) == 2
    assert main(["store", "verify", "--results", str(store)]) == 0


def test_store_gc_is_a_dry_run_unless_yes_and_keeps_what_current_keys_reach(pristine, tmp_path, capsys):
    store = _copy(pristine, tmp_path / "s") / "results"
    old = store / "probe" / "0000000000000000"
    shutil.copytree(next((store / "probe").iterdir()), old)
    record = (old / RECORD).read_text().replace('"code_version": "', '"code_version": "old')
    (old / RECORD).write_text(record)  # a record of other code (its digest no longer matters to gc)
    (store / QUARANTINE / "x").mkdir(parents=True)
    (store / QUARANTINE / "x" / "f").write_bytes(b"1" * 1000)
    kept = [p for p in (store / "probe").iterdir() if p != old]
    assert main(["store", "gc", "--results", str(store)]) == 0
    out = capsys.readouterr().out
    assert "would free" in out and "0000000000000000" in out and "quarantined" in out and "KiB" in out
    assert old.exists()
    assert main(["store", "gc", "--results", str(store), "--yes"]) == 0
    assert not old.exists() and not (store / QUARANTINE / "x").exists()
    assert all(p.exists() for p in kept) and next((store / "finetune").iterdir()).exists()
    assert main(["store", "verify", "--results", str(store)]) == 0


def test_store_verify_and_gc_cover_a_sweeps_summaries(pristine, tmp_path, capsys):
    store = _copy(pristine, tmp_path / "s") / "sweep_results"
    summary = next(p for p in (store / "sweep" / "tiny").iterdir() if not p.name.endswith(RECORD))
    assert main(["store", "verify", "--results", str(store)]) == 0
    assert "0 damaged or incomplete" in capsys.readouterr().out
    assert main(["store", "gc", "--results", str(store)]) == 0
    assert "sweep/" not in capsys.readouterr().out  # made by the current code: kept
    summary.write_text(summary.read_text().replace('"ok"', '"OK"', 1))
    assert main(["store", "verify", "--results", str(store), "--repair"]) == 0
    out = capsys.readouterr().out
    assert f"sweep/tiny/{summary.name}" in out and "sha256 differs" in out and not summary.exists()
