"""Results bundles (issue 55): made from a sweep's store, checked by recomputing a sample, served read-only to the
engine, refused when damaged, rejected when the code moves a number, kept when it moves none."""

# ruff: noqa: F811
# (the test functions take the fixtures imported from tiny_sweep by name)
from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from tiny_sweep import made, move_a_number, reference  # noqa: F401 (the shared fixtures)

from iclmem.bundle import lookup, read_bundle, serve
from iclmem.bundle.check import check_bundle, detection_probability, sample_draws
from iclmem.bundle.collect import make_bundle
from iclmem.bundle.command import verify_bundle
from iclmem.bundle.layout import ITEMS, MANIFEST
from iclmem.cli import main
from iclmem.ltm import ReferenceLTM
from iclmem.probe.settings import ProbeSettings
from iclmem.store.imports import PACKAGE_ROOT
from iclmem.store.keys import code_version
from iclmem.sweep import collect_sweep, run_sweep
from iclmem.sweep.engine import Cluster
from iclmem.training.grid import probe_grid, probe_views, run_grid, run_spec

pytestmark = pytest.mark.slow


@pytest.fixture
def in_use(made: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The bundle named by ICLMEM_BUNDLE, a fresh cache (no check record yet) and an empty results store."""
    monkeypatch.setenv("ICLMEM_BUNDLE", str(made["bundle"].root))
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ICLMEM_RESULTS", str(tmp_path / "results"))
    serve.reset()
    yield {**made, "results": tmp_path / "results"}
    serve.reset()


def test_a_bundle_holds_every_task_without_weights_and_names_its_making(made: dict):
    bundle = made["bundle"]
    assert made["report"] == {"bundled": 3, "already": 0, "pending": 0}
    kinds = pd.Series([e["kind"] for e in bundle.items.values()]).value_counts().to_dict()
    # per probed run (2 single-task runs, the joint run's 2 views): M_ref + M_theta at epochs 0, 1 and 2
    assert kinds == {"probe": 16, "sweep": 3, "finetune": 2, "multitask": 1}
    files = [p.name for p in (bundle.root / ITEMS).rglob("*") if p.is_file()]
    assert files and not [f for f in files if f.endswith(".pt")]
    made_by = bundle.manifest["made"][-1]
    assert made_by["command"] == "t" and made_by["date"] and made_by["machine"]["cpus"] >= 1
    assert bundle.manifest["cpu_seconds"] > 0 and bundle.manifest["tasks_bundled"] == 3  # tiny tasks: < 0.001 h
    assert verify_bundle(bundle) == []


def test_making_again_adds_nothing_and_rewrites_nothing(made: dict, reference: ReferenceLTM):
    before = {k: dict(v) for k, v in made["bundle"].items.items()}
    again, report = make_bundle(
        made["grid"], made["bundle"].root, results_dir=made["tmp"] / "store", reference=reference, command="again"
    )
    assert report == {"bundled": 0, "already": 3, "pending": 0}
    assert again.items == before
    assert [m["command"] for m in again.manifest["made"]] == ["t", "again"]
    made["bundle"] = again


def test_an_unchecked_bundle_is_not_served(in_use: dict):
    key = next(e["key"] for e in in_use["bundle"].items.values() if e["kind"] == "finetune")
    assert lookup("finetune", key) is None


def test_a_check_recomputes_one_draw_per_stratum_and_lands_exactly_here(in_use: dict, reference: ReferenceLTM):
    bundle = read_bundle(in_use["bundle"].root)
    draws = sample_draws(bundle, n=2, seed=3)  # every stratum, even past n
    # classification, regression and the joint run, each trained and at epoch 0
    assert len(draws) == len({d.stratum for d in draws}) == 6
    assert {d.epoch for d in draws if d.regime == "multi_task_fixed"} <= {0, 1}  # a joint draw stops at epoch 1
    assert sample_draws(bundle, n=2, seed=3) == draws  # the seed fixes the draw
    report = check_bundle(bundle, n=2, seed=3, workers=1, reference=reference, progress=False)
    assert report.verdict == "accepted"
    # one machine, one thread count: the recomputation lands bitwise (train(stop_after=e) is the full run to e)
    assert all(v == 0.0 for x in report.landings for v in x.max_abs.values())
    record = json.loads(serve.check_path(bundle).read_text())
    assert record["verdict"] == "accepted" and record["seed"] == 3 and record["draws"] == 6
    assert record["detection_probability_share_0.1"] == pytest.approx(detection_probability(6))
    key = next(e["key"] for e in bundle.items.values() if e["kind"] == "finetune")
    assert lookup("finetune", key) == bundle.item_dir("finetune", key)


def _accept(in_use: dict, reference: ReferenceLTM) -> None:
    bundle = read_bundle(in_use["bundle"].root)
    assert check_bundle(bundle, n=2, workers=1, reference=reference, progress=False).verdict == "accepted"


def test_an_accepted_bundle_serves_runs_scores_and_summaries_computing_nothing(
    in_use: dict, reference: ReferenceLTM, monkeypatch: pytest.MonkeyPatch
):
    _accept(in_use, reference)
    grid = in_use["grid"]
    monkeypatch.setattr("iclmem.training.finetune._finetune", lambda *a, **k: pytest.fail("a bundled run was trained"))
    monkeypatch.setattr("iclmem.probe.run._Suite.scores", lambda *a, **k: pytest.fail("bundled scores were computed"))
    tables = {name: source.load() for name, source in grid.sources.items()}
    specs = [s for s in grid.specs if s.regime == "single_task_fixed"]
    runs = run_grid(specs, reference, in_use["results"], progress=False, tables=tables, workers=1)
    assert all(r.path.is_relative_to(in_use["bundle"].root) for r in runs)
    summary, scores = probe_grid(
        specs, runs, reference, ProbeSettings(max_queries=4, n_boot=10), results_dir=in_use["results"],
        progress=False, tables=tables, workers=1,
    )  # fmt: skip
    assert len(summary) == 2 * 3 and all(len(s) for s in scores.values())
    assert not list((in_use["bundle"].root).rglob("probe/*/*.parquet.tmp*"))
    assert verify_bundle(read_bundle(in_use["bundle"].root)) == []  # nothing was written into it
    [joint_spec] = [s for s in grid.specs if s.regime == "multi_task_fixed"]
    joint = run_spec(joint_spec, reference, in_use["results"], tables=tables)  # App. D's joint run, both views
    assert joint.path.is_relative_to(in_use["bundle"].root)
    views = probe_views(
        joint, tables, reference, ProbeSettings(max_queries=4, epochs=(0, 1, 2), n_boot=10), in_use["results"]
    )
    assert [len(summary) for _, summary, _ in views] == [3, 3]
    swept = collect_sweep(grid, results_dir=in_use["results"], reference=reference)
    assert swept.from_store == 3 and [s["status"] for s in swept.summaries] == ["ok"] * 3


def test_weights_a_bundle_lacks_are_computed_here(in_use: dict, reference: ReferenceLTM):
    _accept(in_use, reference)
    grid = in_use["grid"]
    tables = {name: source.load() for name, source in grid.sources.items()}
    spec = next(s for s in grid.specs if s.dataset == "cls")
    [served] = run_grid([spec], reference, in_use["results"], progress=False, tables=tables, workers=1)
    run = pickle.loads(pickle.dumps(served))  # as probe_grid sends it to a worker process (a lambda did not pickle)
    model = run.model(2, reference)  # the bundle keeps no weights: the run is fine-tuned in the reader's store
    assert list((in_use["results"] / "finetune").glob("*/weights_epoch0002.pt"))
    fine_tuned, pretrained = model.state_dict(), reference.state_dict()
    assert not all(torch.equal(fine_tuned[k], pretrained[k]) for k in pretrained)


def test_a_change_that_moves_a_number_is_rejected_and_the_build_computes(
    in_use: dict, reference: ReferenceLTM, monkeypatch: pytest.MonkeyPatch
):
    move_a_number(monkeypatch)  # one number of the engine changed: the step size
    bundle = read_bundle(in_use["bundle"].root)
    report = check_bundle(bundle, n=9, workers=1, reference=reference, progress=False)
    assert report.verdict == "rejected"
    lines = report.disagreements()
    assert lines and all("epoch" in line and "x the tolerance" in line for line in lines)
    assert any("train loss" in line or "M_theta" in line for line in lines)
    assert not any(x.draw.epoch == 0 and not x.within for x in report.landings)  # M_ref's scores did not move
    key = next(e["key"] for e in bundle.items.values() if e["kind"] == "finetune")
    assert lookup("finetune", key) is None
    assert collect_sweep(in_use["grid"], results_dir=in_use["results"], reference=reference).from_store == 0
    assert any(x.draw.regime == "multi_task_fixed" and x.draw.epoch == 1 and not x.within for x in report.landings)


def test_a_change_that_moves_no_number_keeps_the_bundle(
    in_use: dict, reference: ReferenceLTM, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    _accept(in_use, reference)
    bundle = read_bundle(in_use["bundle"].root)
    # a docstring edited in a copy of the package: the store's code version moves, the bundle's input keys do not
    copy = tmp_path / "pkg" / "iclmem"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    source = copy / "training" / "loop.py"
    source.write_text(source.read_text().replace('"""', '"""Edited. ', 1))
    assert code_version("iclmem.training.finetune", copy) != code_version("iclmem.training.finetune")
    # the installed code "moved": its check record no longer holds, so the bundle waits for a check
    monkeypatch.setattr(serve, "engine_version", lambda: "moved-code")
    serve.reset()
    key = next(e["key"] for e in bundle.items.values() if e["kind"] == "finetune")
    assert lookup("finetune", key) is None
    assert check_bundle(bundle, n=4, workers=1, reference=reference, progress=False).verdict == "accepted"
    assert lookup("finetune", key) == bundle.item_dir("finetune", key)


def test_flipped_bits_are_refused_never_served(in_use: dict, reference: ReferenceLTM, capsys):
    _accept(in_use, reference)
    root = in_use["bundle"].root
    bundle = read_bundle(root)
    item_of = {}
    for entry in bundle.items.values():
        for path in bundle.item_dir(entry["kind"], entry["key"]).iterdir():
            item_of[path] = (entry["kind"], entry["key"])
    files = sorted(item_of) + [root / MANIFEST]
    rng = np.random.default_rng(0)
    served = 0
    for _ in range(200):
        path = files[rng.integers(len(files))]
        data = bytearray(path.read_bytes())
        at = int(rng.integers(len(data) * 8))
        data[at // 8] ^= 1 << (at % 8)
        original = path.read_bytes()
        path.write_bytes(bytes(data))
        serve.reset()
        kind, key = item_of.get(path, ("finetune", next(iter(item_of.values()))[1]))
        served += lookup(kind, key) is not None if path in item_of else bool(serve.served_bundles())
        path.write_bytes(original)
    assert served == 0
    assert "refused" in capsys.readouterr().err
    serve.reset()
    assert verify_bundle(read_bundle(root)) == []


def test_the_command_line_verifies_and_checks(in_use: dict, reference: ReferenceLTM, capsys):
    root = in_use["bundle"].root
    assert main(["bundle", "verify", "--bundle", str(root)]) == 0
    assert "22 of 22 items intact" in capsys.readouterr().out
    victim = next((root / ITEMS / "probe").glob("*/scores.parquet"))
    original = victim.read_bytes()
    victim.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    try:
        assert main(["bundle", "verify", "--bundle", str(root)]) == 1
        assert "sha256 differs" in capsys.readouterr().err
        assert main(["store", "verify"]) == 1  # the store's verify covers the bundles in use
    finally:
        victim.write_bytes(original)
    assert main(["bundle", "verify", "--bundle", str(root)]) == 0


def test_the_book_checks_each_bundle_once_per_code_version_or_serves_none(
    in_use: dict, reference: ReferenceLTM, monkeypatch: pytest.MonkeyPatch
):
    import iclmem.bundle.check as recheck
    from iclmem.bundle.command import ensure_checked
    from iclmem.cli import _bundles_for_build

    monkeypatch.setattr(recheck, "task_reference", lambda _: reference)
    first = ensure_checked(progress=False)
    assert len(first) == 1 and "accepted" in first[0] and "draws recomputed" in first[0]
    again = ensure_checked(progress=False)  # the record holds for this code: nothing is recomputed
    assert again == ["bundle bundle: accepted (checked under this code: 8 draws)"]  # every draw of the tiny bundle
    key = next(e["key"] for e in in_use["bundle"].items.values() if e["kind"] == "finetune")
    assert lookup("finetune", key) is not None
    _bundles_for_build(recompute=True)  # iclmem book --recompute: the kernels inherit ICLMEM_BUNDLE=off
    serve.reset()
    assert lookup("finetune", key) is None


def test_bundled_scores_decode_to_the_stores_frames_bit_for_bit(made: dict):
    from iclmem.bundle.scores import decode, encode

    files = sorted((made["tmp"] / "store" / "probe").glob("*/scores.parquet"))
    assert len(files) >= 16
    for path in files:
        stored = pd.read_parquet(path)
        model = json.loads((path.parent / "params.json").read_text())["model"]
        data = encode(stored)
        pd.testing.assert_frame_equal(decode(data, model, template=stored), stored, check_exact=True)
        assert len(data) < path.stat().st_size  # derived columns and float64 padding are not kept
    bundled = {p.read_bytes() for p in (made["bundle"].root / ITEMS / "probe").glob("*/scores.parquet")}
    assert bundled <= {encode(pd.read_parquet(p)) for p in files}  # the bundle holds the store's scores, encoded
    with pytest.raises(ValueError, match="float32"):
        encode(pd.read_parquet(files[0]).assign(loss=lambda f: f.loss + 1e-12))


MOVED_CHECK = """
import json, os, sys
import torch
from iclmem.bundle import lookup, read_bundle
from iclmem.bundle.check import check_bundle
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.sweep import collect_sweep, load_grid
import iclmem.runtime.bars  # the moved module
assert not os.path.exists(os.path.join(os.path.dirname(iclmem.__file__), "runtime", "progress.py"))
torch.manual_seed(0)
cfg = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=128)
reference = ReferenceLTM(TabularICLTransformer(cfg).eval(), checkpoint_sha256="tiny-bundle-model")
bundle = read_bundle(sys.argv[1])
verdict = check_bundle(bundle, n=2, workers=1, reference=reference, progress=False).verdict
swept = collect_sweep(load_grid(sys.argv[2]), results_dir=sys.argv[3], reference=reference)
print(json.dumps({"verdict": verdict, "from_bundle": swept.from_store}))
"""


def test_a_moved_module_keeps_the_bundle_served(in_use: dict, tmp_path: Path):
    """A real move in a copy of the package (iclmem/runtime/progress.py -> iclmem/runtime/bars.py, every import
    rewritten): its store keys move, the bundle's input keys do not, its check passes and the bundle is served."""
    import re
    import subprocess
    import sys

    copy = tmp_path / "pkg" / "iclmem"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "runtime" / "progress.py").rename(copy / "runtime" / "bars.py")
    for source in copy.rglob("*.py"):
        text = source.read_text()
        moved = re.sub(r"(from \.+(runtime\.)?)progress import", r"\1bars import", text)
        moved = moved.replace("iclmem.runtime.progress", "iclmem.runtime.bars")
        if moved != text:
            source.write_text(moved)
    assert code_version("iclmem.training.finetune", copy) != code_version("iclmem.training.finetune")
    env = {**__import__("os").environ, "PYTHONPATH": str(copy.parent), "ICLMEM_CACHE": str(tmp_path / "cache")}
    args = [str(in_use["bundle"].root), str(in_use["tmp"] / "tiny.yaml"), str(tmp_path / "empty")]
    out = subprocess.run(
        [sys.executable, "-c", MOVED_CHECK, *args], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path
    )  # cwd: not the repository, whose iclmem/ would come first on the path
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"verdict": "accepted", "from_bundle": 3}


def test_a_sweep_resumes_from_a_checked_bundle_on_another_store(in_use: dict, reference: ReferenceLTM):
    _accept(in_use, reference)
    result = run_sweep(
        in_use["grid"], results_dir=in_use["results"], cluster=Cluster(0), reference=reference, progress=False
    )
    assert (result.ran, result.from_store, len(result.failed)) == (0, 3, 0)


def test_draws_of_chaotic_and_joint_runs_stop_where_another_machine_can_recompute_them(tmp_path: Path):
    from iclmem.bundle.check import all_draws
    from iclmem.bundle.layout import Bundle

    def task(lr: float, regime: str) -> dict:
        spec = {"dataset": "t", "query_size": 50, "regime": regime, "learning_rate": lr}
        return {"kind": "sweep", "spec": spec, "task": "classification", "epochs": [0, 1, 50, 100]}

    items = {
        "sweep/a": task(1e-1, "single_task_fixed"),
        "sweep/b": task(1e-3, "single_task_fixed"),
        "sweep/c": task(1e-4, "multi_task_fixed"),
        "sweep/d": task(1e-2, "single_task_fixed"),
    }
    draws = all_draws(Bundle(tmp_path, {"name": "x", "digest": "0" * 64, "items": items}))
    epochs = {key: sorted(d.epoch for d in draws if d.task == key) for key in "abcd"}
    # chaotic past epoch 1 at lr 1e-1 and past epoch 10 at 1e-2 (benchmarks/bundle_drift.py); joint: cost
    assert epochs == {"a": [0, 1], "b": [0, 1, 50, 100], "c": [0, 1], "d": [0, 1]}
