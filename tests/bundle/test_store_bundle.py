"""A bundle of a whole results store (issue 55): the book's own runs and scores, collected without a grid, checked by
retraining drawn runs from the split and configuration they keep, served so that the engine computes nothing."""

# ruff: noqa: F811
# (the test functions take the fixtures imported from tiny_sweep by name)
from __future__ import annotations

import gzip
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
from tiny_sweep import made, move_a_number, reference  # noqa: F401 (the shared fixtures)

from iclmem.bundle import lookup, read_bundle, serve
from iclmem.bundle.check import check_bundle, check_bundles, draw_cost, sample_draws
from iclmem.bundle.command import verify_bundle
from iclmem.bundle.layout import ITEMS
from iclmem.bundle.recheck import Draw
from iclmem.bundle.store_runs import RUN_FILE, collect_store
from iclmem.ltm import ReferenceLTM
from iclmem.probe.settings import ProbeSettings
from iclmem.probe.theta_outputs import predicted, tasks_digest, theta_outputs
from iclmem.training.finetune import prepare_run_data
from iclmem.training.grid import probe_grid, probe_views, run_grid, run_spec

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def collected(made: dict, reference: ReferenceLTM, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The tiny sweep's store collected as a whole (its two single-task runs and their scores)."""
    out = tmp_path_factory.mktemp("store-bundle") / "book"
    bundle, report = collect_store(
        out, results_dir=made["tmp"] / "store", reference=reference, command="t", sources=made["grid"].sources
    )
    return {**made, "store_bundle": bundle, "store_report": report}


@pytest.fixture
def serving(collected: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("ICLMEM_BUNDLE", str(collected["store_bundle"].root))
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ICLMEM_RESULTS", str(tmp_path / "results"))
    serve.reset()
    yield {**collected, "results": tmp_path / "results"}
    serve.reset()


def test_a_store_bundle_keeps_each_runs_split_and_scores_without_weights(collected: dict, reference: ReferenceLTM):
    bundle, report = collected["store_bundle"], collected["store_report"]
    runs = [e for e in bundle.items.values() if e["kind"] == "finetune"]
    assert report["runs"] == len(runs) == 2 and {e["dataset"] for e in runs} == {"cls", "reg"}
    assert report["joint_runs"] == 1 and report["unowned_scores"] == 0  # App. D's joint run and its views' scores
    assert not list((bundle.root / ITEMS).rglob("*.pt"))
    for entry in runs:
        folder = bundle.item_dir("finetune", entry["key"])
        stored = json.loads(gzip.decompress((folder / RUN_FILE).read_bytes()))
        assert stored["manifest"]["dataset"] == entry["dataset"] and entry["epochs"] == [0, 1, 2]
        assert entry["probe"]["max_queries"] == 4 and len(entry["probe"]["manipulations"]) == 48
    again, report = collect_store(
        bundle.root, results_dir=collected["tmp"] / "store", reference=reference, sources=collected["grid"].sources
    )
    assert again.items == bundle.items and verify_bundle(again) == []


def test_a_checked_store_bundle_serves_the_grid_computing_nothing(
    serving: dict, reference: ReferenceLTM, monkeypatch: pytest.MonkeyPatch
):
    bundle = read_bundle(serving["store_bundle"].root)
    draws = sample_draws(bundle, n=3)
    assert {(d.kind, d.epoch > 0) for d in draws} >= {("classification", True), ("regression", True)}
    report = check_bundle(bundle, n=3, workers=1, reference=reference, progress=False)
    assert report.verdict == "accepted" and all(x.draw.source == "store" for x in report.landings)
    assert all(x.excess["M_theta loss"] <= 1 for x in report.landings)
    monkeypatch.setattr("iclmem.training.finetune._finetune", lambda *a, **k: pytest.fail("a bundled run was trained"))
    monkeypatch.setattr("iclmem.probe.run._Suite.scores", lambda *a, **k: pytest.fail("bundled scores were computed"))
    monkeypatch.setattr("iclmem.training.regimes.joint_schedule", lambda *a, **k: pytest.fail("a joint run trained"))
    grid = serving["grid"]
    tables = {name: source.load() for name, source in grid.sources.items()}
    specs = [s for s in grid.specs if s.regime == "single_task_fixed"]
    runs = run_grid(specs, reference, serving["results"], progress=False, tables=tables, workers=1)
    assert all(r.path.is_relative_to(bundle.root) for r in runs)
    summary, scores = probe_grid(
        specs, runs, reference, ProbeSettings(max_queries=4, n_boot=10), results_dir=serving["results"],
        progress=False, tables=tables, workers=1,
    )  # fmt: skip
    assert len(summary) == 2 * 3 and all(len(s) for s in scores.values())
    [joint_spec] = [s for s in grid.specs if s.regime == "multi_task_fixed"]
    joint = run_spec(joint_spec, reference, serving["results"], tables=tables)  # App. D's joint run, both views
    assert joint.path.is_relative_to(bundle.root)
    assert pickle.loads(pickle.dumps(joint)).input_key == joint.input_key  # as probe_grid sends it to a worker
    views = probe_views(
        joint, tables, reference, ProbeSettings(max_queries=4, epochs=(0, 1, 2), n_boot=10), serving["results"]
    )
    assert [len(summary) for _, summary, _ in views] == [3, 3]
    assert verify_bundle(read_bundle(bundle.root)) == []  # nothing was written into it


def test_a_store_bundle_is_rejected_when_the_engine_moves_a_number(
    serving: dict, reference: ReferenceLTM, monkeypatch: pytest.MonkeyPatch
):
    move_a_number(monkeypatch)  # one number of the engine changed: the step size
    bundle = read_bundle(serving["store_bundle"].root)
    report = check_bundle(bundle, n=4, workers=1, reference=reference, progress=False)
    assert report.verdict == "rejected"
    assert any("M_theta" in line or "train loss" in line for line in report.disagreements())
    assert not any(x.draw.epoch == 0 and not x.within for x in report.landings)  # M_ref's scores did not move
    key = next(e["key"] for e in bundle.items.values() if e["kind"] == "finetune")
    assert lookup("finetune", key) is None


def test_a_store_bundle_records_what_its_build_cost(collected: dict, reference: ReferenceLTM, tmp_path: Path):
    executed = tmp_path / "executed" / "notebooks"
    executed.mkdir(parents=True)
    for name, cpu in (("02_controlled_finetuning", 1012.7), ("03_multiple_choice_probing", 787.3)):
        (executed / f"{name}.ipynb.cache.json").write_text(json.dumps({"cpu_s": cpu, "wall_s": 2 * cpu}))
    bundle, _ = collect_store(
        tmp_path / "book", results_dir=collected["tmp"] / "store", reference=reference, executed=executed.parent,
        sources=collected["grid"].sources,
    )  # fmt: skip
    assert bundle.manifest["cpu_seconds"] == 1800.0 and bundle.manifest["cpu_hours"] == 0.5
    assert bundle.manifest["cpu_notebooks"] == {"02_controlled_finetuning": 1012.7, "03_multiple_choice_probing": 787.3}


def test_theta_outputs_are_stored_collected_and_served_without_weights(
    collected: dict, reference: ReferenceLTM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    shutil.copytree(collected["tmp"] / "store", tmp_path / "store")
    grid = collected["grid"]
    tables = {name: source.load() for name, source in grid.sources.items()}
    spec = next(s for s in grid.specs if s.dataset == "cls")
    monkeypatch.setenv("ICLMEM_BUNDLE", "off")
    [run] = run_grid([spec], reference, tmp_path / "store", progress=False, tables=tables, workers=1)
    data = prepare_run_data(run.manifest, tables["cls"], run.config)
    tasks = [data.task_for(data.non_member_x, data.non_member_y), data.task_for(data.member_x, data.member_y)]
    first = theta_outputs(run, 2, reference, tasks)
    direct = run.model(2, reference).predict(tasks)
    assert np.array_equal(predicted(first, 1)[0], np.asarray(direct[1].loss(), dtype=np.float64))
    assert np.array_equal(predicted(first, 0)[1], direct[0].point())
    scored = theta_outputs(run, 2, reference, tasks[:1], "score")["scores"]
    assert scored.shape == (1, 3) and tasks_digest(tasks[:1]) != tasks_digest(tasks)
    bundle, report = collect_store(
        tmp_path / "bundle", results_dir=tmp_path / "store", reference=reference, sources=grid.sources
    )
    assert report["outputs"] == 2
    monkeypatch.setenv("ICLMEM_BUNDLE", str(bundle.root))
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path / "cache"))
    serve.reset()
    assert check_bundle(read_bundle(bundle.root), n=2, workers=1, reference=reference, progress=False).verdict == (
        "accepted"
    )
    monkeypatch.setattr("iclmem.training.finetune._finetune", lambda *a, **k: pytest.fail("a bundled run was trained"))
    [served] = run_grid([spec], reference, tmp_path / "reader", progress=False, tables=tables, workers=1)
    assert served.path.is_relative_to(bundle.root)
    again = theta_outputs(served, 2, reference, tasks)
    assert again.keys() == first.keys() and all(np.array_equal(again[k], first[k]) for k in first)
    serve.reset()


def test_bundles_are_checked_together_longest_draw_first(serving: dict, reference: ReferenceLTM):
    design, store = read_bundle(serving["bundle"].root), read_bundle(serving["store_bundle"].root)
    reports = check_bundles([design, store], n=2, workers=1, reference=reference, progress=False)
    assert [r.bundle for r in reports] == [design.name, store.name]
    assert {x.draw.source for x in reports[0].landings} == {"sweep"}
    assert {x.draw.source for x in reports[1].landings} == {"store"}
    assert all(
        r.verdict == "accepted" and serve.read_check(b) is not None
        for r, b in zip(reports, (design, store), strict=True)
    )
    dp = Draw("a", "d", "classification", 50, "dp", 0.003, 20, "store")
    big = Draw("b", "d", "regression", 512, "single_task_fixed", 1e-4, 100, "store")
    talk = Draw("c:k", "llm", "completion", 0, "inprocess", 0.0, 0, "completion")
    assert draw_cost(dp) > draw_cost(big) > draw_cost(talk)
