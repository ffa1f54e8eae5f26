"""Tests of the distributed sweep (Sec. 5, App. D): grid files, tasks, resume, failures, Dask clusters."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

import iclmem
import iclmem.sweep.engine as engine
import iclmem.sweep.tasks as tasks
from iclmem.book.execute import notebook_parameters, read_notebook
from iclmem.cli import main
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer, load_checkpoint
from iclmem.sweep import (
    SweepError,
    collect_sweep,
    connect,
    load_grid,
    parse_grid,
    run_sweep,
    run_task,
    summary_dir,
    sweep_workers,
)
from iclmem.sweep.engine import Cluster
from iclmem.sweep.tasks import SweepContext

torch.set_num_threads(1)  # tiny models: one thread is fastest and shares the machine well

REPO = Path(__file__).resolve().parents[2]
TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)
PROBE = {"max_queries": 4, "manipulations": ["baseline", "shuffle_first"], "n_boot": 10}


@pytest.fixture(autouse=True)
def pinned_code_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec keys hash the code version; pin it so that edits made to ``iclmem`` while the tests
    run (others work on the package concurrently) do not change the keys between two sweeps."""
    monkeypatch.setattr(engine, "sweep_code_version", lambda: "pinned")
    monkeypatch.setattr(tasks, "sweep_code_version", lambda: "pinned")


@pytest.fixture(scope="module")
def reference() -> ReferenceLTM:
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny-sweep-model")


def _csv(folder: Path, name: str, task: str, n: int = 160) -> dict:
    rng = np.random.default_rng(len(name))
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y", "z"], size=n)})
    frame["target"] = (
        (frame.a + rng.normal(size=n) > 0).astype(int) if task == "classification" else frame.a * 2 + rng.normal(size=n)
    )
    frame.to_csv(folder / f"{name}.csv", index=False)
    return {"path": f"{name}.csv", "target": "target", "task": task}


def _grid(folder: Path, name: str = "tiny", **changes) -> Path:
    data = {
        "name": name,
        "datasets": [_csv(folder, "cls", "classification"), _csv(folder, "reg", "regression")],
        "learning_rates": [1e-3],
        "query_sizes": [30],
        "regimes": ["single_task_fixed", "multi_task_random"],
        "epochs": 2,
        "context_size": 30,
        "probe": PROBE,
        **changes,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# --- grid files ---------------------------------------------------------------------------------


def test_shipped_grids_parse_and_book_grid_matches_notebook_05():
    paper = load_grid(REPO / "grids" / "paper.yaml")
    assert len(paper.specs) == 10 * 4 * 2 * 3 + 2  # Tab. 2's grid (label conditions N, M, S) + App. D's two joint runs
    assert {s.label_condition for s in paper.specs if s.regime == "single_task_fixed"} == {"none", "members", "all"}
    joint = [s for s in paper.specs if s.regime != "single_task_fixed"]
    assert {(s.query_size, s.learning_rate, len(s.datasets)) for s in joint} == {(512, 1e-4, 10)}
    book = load_grid(REPO / "grids" / "book.yaml")
    params = {
        k: p.default
        for k, p in notebook_parameters(read_notebook(REPO / "notebooks" / "05_realistic_regimes.py")).items()
    }
    assert params["grid_file"] is None  # the notebook's own parameters are the book grid
    spec = book.specs[0]
    assert params["datasets"] == [
        s.dataset for s in book.specs if s.regime == "single_task_fixed" and s.learning_rate == spec.learning_rate
    ]
    assert sorted(params["single_task_learning_rates"]) == sorted(
        {s.learning_rate for s in book.specs if s.regime == "single_task_fixed"}
    )
    assert (
        params["learning_rates"],
        params["query_sizes"],
        params["epochs"],
        params["context_size"],
        params["seed"],
    ) == ([spec.learning_rate], sorted({s.query_size for s in book.specs}), spec.epochs, spec.context_size, spec.seed)
    assert params["regimes"] == list(dict.fromkeys(s.regime for s in book.specs))
    assert (params["n_candidates"], params["max_queries"], tuple(params["probe_epochs"]), params["n_boot"]) == (
        book.probe.n_candidates,
        book.probe.max_queries,
        book.probe.epochs,
        book.probe.n_boot,
    )


@pytest.mark.parametrize(
    "change, message",
    [
        ({"learning_rate": [1e-3]}, "unknown key(s) 'learning_rate'; valid keys: name, description, datasets"),
        ({"probe": {"max_query": 3}}, "unknown key(s) 'max_query'; valid keys: n_candidates"),
        ({"learning_rates": []}, "axis 'learning_rates' is empty"),
        ({"regimes": None}, "axis 'regimes' is empty"),
        ({"datasets": ["spotify", "no_such_table"]}, "unknown dataset 'no_such_table'; valid names: spotify"),
        ({"datasets": [{"path": "missing.csv", "target": "y"}]}, "missing.csv' does not exist"),
        ({"regimes": ["multi_task_shuffled"]}, "unknown regime 'multi_task_shuffled'"),
        ({"regimes": ["multi_task_random"], "label_conditions": ["none", "members"]}, "use label_conditions [none]"),
        ({"learning_rates": ["fast"]}, "learning_rates must be a number"),
        ({"query_sizes": [0]}, "query_sizes must be >= 1"),
        ({"name": "my grid"}, "name must be a word"),
        ({"parts": []}, "parts must be a non-empty list"),
        ({"parts": [{"epoch": 3}]}, "parts[0]: unknown key(s) 'epoch'"),
        ({"probe": {"epochs": [3]}}, "probe.epochs [3] are not probing epochs"),
        ({"label_conditions": ["shuffled"]}, "unknown label_condition 'shuffled'"),
    ],
)
def test_bad_grid_files_name_the_problem(tmp_path, change, message):
    path = _grid(tmp_path, **change)
    with pytest.raises(SweepError) as err:
        load_grid(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_grid_parts_and_yaml_numbers(tmp_path):
    grid = parse_grid(
        {
            "name": "p",
            "datasets": ["spotify", "wine_pl"],
            "query_sizes": [50],
            "epochs": 5,
            "parts": [{"learning_rates": ["1e-3", 1e-2]}, {"learning_rates": [1e-4], "regimes": ["multi_task_fixed"]}],
        }
    )
    assert [(s.dataset, s.learning_rate, s.regime) for s in grid.specs] == [
        ("spotify", 1e-3, "single_task_fixed"),
        ("spotify", 1e-2, "single_task_fixed"),
        ("wine_pl", 1e-3, "single_task_fixed"),
        ("wine_pl", 1e-2, "single_task_fixed"),
        ("spotify+wine_pl", 1e-4, "multi_task_fixed"),
    ]
    with pytest.raises(SweepError, match="no grid file"):
        load_grid(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("name: [unclosed")
    with pytest.raises(SweepError, match="not valid YAML"):
        load_grid(tmp_path / "bad.yaml")


def test_cli_reports_bad_grid_without_traceback(tmp_path, capsys):
    assert main(["sweep", str(_grid(tmp_path, regimes=["nope"]))]) == 2
    assert "unknown regime 'nope'" in capsys.readouterr().err


def test_cli_model_names_m_ref_of_every_task(tmp_path, capsys):
    """--model tabicl:PATH keys (and would run) every task on that checkpoint; bad specs fail before any worker."""
    from iclmem.adapters.tiny import write_tiny_checkpoint

    grid = str(_grid(tmp_path))
    ckpt = write_tiny_checkpoint("tabicl", tmp_path / "tiny_tabicl.ckpt")
    base = ["sweep", grid, "--results", str(tmp_path / "results"), "--list"]
    assert main([*base, "--model", f"tabicl:{ckpt}"]) == 0
    with_model = capsys.readouterr().out
    assert main(base) == 0
    with_reference = capsys.readouterr().out
    keys = [
        {line.split()[1] for line in out.splitlines() if line.startswith("missing")}
        for out in (with_model, with_reference)
    ]
    assert len(keys[0]) == len(keys[1]) == 3 and not keys[0] & keys[1], "another M_ref, other task keys"
    for model, message in [
        ("tabicl", "model must be 'reference', 'reference-v1', 'tabicl:PATH' or 'tabpfn:PATH'"),
        (f"tabpfn:{tmp_path / 'absent.ckpt'}", "no checkpoint at"),
    ]:
        assert main([*base, "--model", model]) == 2
        assert message in capsys.readouterr().err
    assert main([*base, "--model", f"tabicl:{ckpt}", "--reference", str(ckpt)]) == 2
    assert "keep one" in capsys.readouterr().err


# --- running ------------------------------------------------------------------------------------


def test_sweep_on_a_local_cluster_completes_and_a_rerun_computes_nothing(tmp_path, reference):
    """Threads here (fast); the kill-and-resume test below resumes on a cluster of worker processes."""
    grid = load_grid(_grid(tmp_path))
    result = run_sweep(
        grid, results_dir=tmp_path / "results", cluster=Cluster(2, processes=False), reference=reference, progress=False
    )
    assert result.ran == 3 and not result.failed and "local cluster of 2 threads" in result.engine
    rows = result.rows()
    assert set(rows.dataset) == {"cls", "reg"} and set(rows.regime) == {"single_task_fixed", "multi_task_random"}
    assert sorted(rows.epoch.unique()) == [0, 1, 2]
    random = rows[rows.regime == "multi_task_random"]
    assert (random.members_logged > 30).all()  # every sampled query is a member: more than Q
    assert len(_summaries(summary_dir("tiny", tmp_path / "results"))) == 3
    again = run_sweep(grid, results_dir=tmp_path / "results", cluster=Cluster(1), reference=reference, progress=False)
    assert (again.from_store, again.ran, again.engine) == (3, 0, "store")  # no cluster started, nothing re-run
    pd.testing.assert_frame_equal(again.rows(), rows)
    assert collect_sweep(grid, tmp_path / "results", reference).rows().equals(rows)


def test_the_largest_tasks_go_first_one_at_a_time_per_worker(tmp_path, reference, monkeypatch):
    """A multi-task task (two tables) is submitted before the single-table ones, and a one-thread worker
    holds one task at a time, so two workers start on the two largest tasks (notebook 05)."""
    grid = load_grid(_grid(tmp_path))
    assert [s.regime for s in grid.specs][-1] == "multi_task_random"  # last in the grid's own order
    order = tmp_path / "order.txt"
    original = engine._task

    def recording(spec, ref, key, kwargs):  # appends to a file: works whatever Dask serializes
        with order.open("a") as f:
            f.write(f"{spec.regime} {spec.work}\n")
        return original(spec, ref, key, kwargs)

    monkeypatch.setattr(engine, "_task", recording)
    result = run_sweep(
        grid, results_dir=tmp_path / "results", cluster=Cluster(1, processes=False), reference=reference, progress=False
    )
    assert result.ran == 3 and not result.failed
    started = order.read_text().split("\n")[:-1]
    assert started[0].startswith("multi_task_random") and len(started) == 3
    assert [int(line.split()[1]) for line in started] == sorted((s.work for s in grid.specs), reverse=True)
    client = engine.local_client(1, processes=False)
    try:
        assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.WORKER_SATURATION) == 1.0
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()


@pytest.mark.parametrize(
    ("given", "env", "expected"), [(None, None, 0), (None, "1", 0), (None, "2", 2), (0, "2", 0), (3, None, 3)]
)
def test_notebook_05_takes_its_workers_from_the_environment(monkeypatch, given, env, expected):
    """``make book`` sets ICLMEM_WORKERS=2: notebook 05's sweep then runs on a local cluster of two processes."""
    if env is None:
        monkeypatch.delenv("ICLMEM_WORKERS", raising=False)
    else:
        monkeypatch.setenv("ICLMEM_WORKERS", env)
    assert sweep_workers(given) == expected


def test_local_workers_start_without_the_malloc_trim_threshold():
    """Dask's default MALLOC_TRIM_THRESHOLD_ made every task 1.3-1.45x slower (iclmem.sweep.engine); local
    workers start without it and keep its one-thread limits."""
    client = engine.local_client(1)
    try:
        environ = next(iter(client.run(lambda: dict(os.environ)).values()))
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    assert "MALLOC_TRIM_THRESHOLD_" not in environ and environ.get("OMP_NUM_THREADS") == "1"


def test_a_failing_configuration_is_reported_and_the_others_finish(tmp_path, reference):
    path = _grid(
        tmp_path,
        regimes=["single_task_fixed"],
        datasets=[_csv(tmp_path, "ok", "classification"), _csv(tmp_path, "small", "classification", n=50)],
    )
    grid = load_grid(path)
    result = run_sweep(
        grid, results_dir=tmp_path / "results", cluster=Cluster(1, processes=False), reference=reference, progress=False
    )
    assert len(result.failed) == 1 and result.failed[0]["spec"]["dataset"] == "small"
    assert "PoolSizeError" in result.failed[0]["error"] and "Traceback" in result.failed[0]["traceback"]
    assert set(result.rows().dataset) == {"ok"}
    assert "FAILED single_task_fixed-small" in result.report()
    again = run_sweep(grid, results_dir=tmp_path / "results", cluster=Cluster(0), reference=reference, progress=False)
    assert (again.from_store, again.ran, len(again.failed)) == (
        1,
        1,
        1,
    )  # failed tasks are retried, finished ones are not
    # a task never raises: the error goes to its summary file
    spec = next(s for s in grid.specs if s.dataset == "small")
    out = run_task(spec, SweepContext("direct", grid.probe, grid.sources, tmp_path / "r2"), reference=reference)
    assert out["status"] == "error" and (summary_dir("direct", tmp_path / "r2") / f"{out['key']}.json").is_file()
    # a worker whose code is not the code the sweep keyed its tasks with (restarted after an edit) refuses the task
    fine = next(s for s in grid.specs if s.dataset != "small")
    stale = SweepContext("direct", grid.probe, grid.sources, tmp_path / "r3", version="0123456789abcdef")
    out = run_task(fine, stale, reference=reference)
    assert out["status"] == "error" and "the code changed under the running sweep" in out["error"]
    assert not list((tmp_path / "r3").glob("finetune/*")), "nothing computed"


@pytest.mark.slow
def test_unreachable_scheduler_fails_fast_with_a_clear_error(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    started = time.perf_counter()
    with pytest.raises(SweepError, match=f"could not reach the Dask scheduler at 'tcp://127.0.0.1:{port}' within 2 s"):
        connect(f"tcp://127.0.0.1:{port}", timeout=2)
    assert time.perf_counter() - started < 15
    ckpt = tmp_path / "tiny.pt"
    torch.save({"config": TINY.to_dict(), "model": TabularICLTransformer(TINY).state_dict()}, ckpt)
    args = [
        "sweep",
        str(_grid(tmp_path)),
        "--scheduler",
        f"tcp://127.0.0.1:{port}",
        "--timeout",
        "1",
        "--reference",
        str(ckpt),
        "--results",
        str(tmp_path / "results"),
        "--no-progress",
    ]
    assert main(args) == 2
    assert f"could not reach the Dask scheduler at 'tcp://127.0.0.1:{port}'" in capsys.readouterr().err
    assert not (tmp_path / "results" / "sweep").exists()  # nothing ran


def _frozen_package(folder: Path) -> dict[str, str]:
    """An environment whose ``iclmem`` is a snapshot of the package (its code version cannot change
    under concurrent edits between the three sweeps of the test)."""
    src = Path(iclmem.__file__).parent
    shutil.copytree(src, folder / "iclmem", ignore=shutil.ignore_patterns("__pycache__", "weights"))
    return {**os.environ, "PYTHONPATH": str(folder), "OMP_NUM_THREADS": "1"}


def _sweep_cmd(grid: Path, results: Path, ckpt: Path, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "iclmem.cli",
        "sweep",
        str(grid),
        "--results",
        str(results),
        "--reference",
        str(ckpt),
        "--workers",
        str(workers),
        "--no-progress",
    ]


def _group_gone(pgid: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def _summaries(folder: Path) -> list[Path]:
    """The finished summaries of a grid's folder: those whose completion record is written (it follows the file)."""
    return sorted(p.with_name(p.name.removesuffix(".complete.json")) for p in folder.glob("*.json.complete.json"))


def _by_spec(summaries: list[dict]) -> dict[tuple, pd.DataFrame]:
    return {(s["spec"]["regime"], s["spec"]["dataset"]): pd.DataFrame(s["rows"]) for s in summaries}


@pytest.mark.slow
def test_killed_sweep_resumes_to_the_same_results(tmp_path, reference):
    """Kill a sweep (its whole process group) once its first task is done, resume it on a local cluster
    of worker processes, and compare with an uninterrupted sweep in another results folder."""
    ckpt = tmp_path / "tiny.pt"
    torch.save({"config": TINY.to_dict(), "model": reference.state_dict()}, ckpt)
    path = _grid(tmp_path, regimes=["single_task_fixed", "multi_task_random"], epochs=3)
    uninterrupted = run_sweep(
        load_grid(path), results_dir=tmp_path / "a", cluster=Cluster(0), reference=load_checkpoint(ckpt), progress=False
    )
    assert uninterrupted.ran == 3 and not uninterrupted.failed
    env = _frozen_package(tmp_path / "src")
    folder = tmp_path / "b" / "sweep" / "tiny"
    proc = subprocess.Popen(
        _sweep_cmd(path, tmp_path / "b", ckpt, 0),
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while not _summaries(folder) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        _group_gone(proc.pid)
    finished = len(_summaries(folder))
    assert 1 <= finished < 3, "the sweep was not killed midway"
    resumed = subprocess.run(
        _sweep_cmd(path, tmp_path / "b", ckpt, 1), env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{finished} from the store, {3 - finished} ran (dask local cluster of 1 processes)" in resumed.stdout, (
        resumed.stdout
    )
    a = _by_spec(uninterrupted.summaries)
    b = _by_spec([json.loads(p.read_text()) for p in _summaries(folder)])
    assert sorted(a) == sorted(b)
    for spec in a:
        pd.testing.assert_frame_equal(a[spec], b[spec], check_exact=False, rtol=1e-5)


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the live child processes of ``pid`` (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(
                    (int(stat.parent.name), (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
                )
        except (OSError, IndexError, ValueError):
            continue
    return out


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_the_sweep_finishes_with_the_same_results(tmp_path, reference):
    """SIGKILL one Dask worker process (not the sweep) while both workers are busy: its nanny starts a
    new one, the scheduler runs the lost task again, the sweep ends with every task and the results of an
    uninterrupted sweep; the summary finished before the kill is neither rewritten nor run again."""
    ckpt = tmp_path / "tiny.pt"
    torch.save({"config": TINY.to_dict(), "model": reference.state_dict()}, ckpt)
    path = _grid(tmp_path, regimes=["single_task_fixed"], learning_rates=[1e-3, 1e-2], epochs=6)
    uninterrupted = run_sweep(
        load_grid(path), results_dir=tmp_path / "a", cluster=Cluster(0), reference=load_checkpoint(ckpt), progress=False
    )
    assert uninterrupted.ran == 4 and not uninterrupted.failed
    folder = tmp_path / "b" / "sweep" / "tiny"
    proc = subprocess.Popen(
        _sweep_cmd(path, tmp_path / "b", ckpt, 2),
        env=_frozen_package(tmp_path / "src"),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while len(_summaries(folder)) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        before = {p.name: p.stat().st_mtime_ns for p in _summaries(folder)}
        workers = [pid for pid, cmd in _children(proc.pid) if "spawn_main" in cmd]
        # 4 tasks on 2 workers: with 1 or 2 done (two finishing at once), both workers hold a task
        assert 1 <= len(before) <= 2 and len(workers) == 2, (before, _children(proc.pid))
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _group_gone(proc.pid)
    assert proc.returncode == 0, err
    assert "0 from the store, 4 ran" in out and "failed" not in out.replace("0 failed", ""), out
    summaries = [json.loads(p.read_text()) for p in _summaries(folder)]
    assert len(summaries) == 4 and all(s["status"] == "ok" for s in summaries), [s.get("error") for s in summaries]
    assert {name: (folder / name).stat().st_mtime_ns for name in before} == before, "a finished task ran again"

    def by_spec(found: list[dict]) -> dict[str, pd.DataFrame]:
        return {json.dumps(s["spec"], sort_keys=True): pd.DataFrame(s["rows"]) for s in found}

    a, b = by_spec(uninterrupted.summaries), by_spec(summaries)
    assert len(a) == 4 and sorted(a) == sorted(b)
    for spec in a:
        pd.testing.assert_frame_equal(a[spec], b[spec], check_exact=False, rtol=1e-5)
