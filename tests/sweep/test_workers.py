"""``$ICLMEM_WORKERS``: a grid's runs in worker processes give the runs of the in-process loop (Sec. 5, Tab. 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from iclmem.data import deduplicate, load_dataset
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.probe.settings import ProbeSettings
from iclmem.runtime import workers as workers_module
from iclmem.runtime.workers import WORKERS_ENV, worker_count
from iclmem.training.grid import GridAxes, expand_grid, probe_grid, run_grid


def test_worker_count_from_the_argument_or_the_environment(monkeypatch):
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert worker_count() == 1 and worker_count(3) == 3
    monkeypatch.setenv(WORKERS_ENV, "2")
    assert worker_count() == 2
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(WORKERS_ENV, bad)
        with pytest.raises(ValueError, match=f"{WORKERS_ENV}=.* is not a positive integer"):
            worker_count()


def _toy(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=100), "b": rng.normal(size=100)})
    frame["target"] = (frame.a > 0).astype(int)
    frame.to_csv(tmp_path / "toy.csv", index=False)
    tables = {"toy": deduplicate(load_dataset(str(tmp_path / "toy.csv"), target="target", task="classification"))}
    torch.manual_seed(0)
    reference = ReferenceLTM(
        TabularICLTransformer(LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)).eval(),
        checkpoint_sha256="tiny-workers",
    )
    torch.set_num_threads(1)  # the workers' thread count on this machine (2 cores / 2 workers): same summation order
    return tables, reference


def _probed(specs, runs, reference, tables, store, workers):
    """``probe_grid`` of the toy runs at epochs 0 and 2, 4 + 4 queries, 5 resamples, stored in ``store``."""
    return probe_grid(
        specs,
        runs,
        reference,
        ProbeSettings(max_queries=4, epochs=(0, 2), n_boot=5),
        results_dir=store,
        progress=False,
        tables=tables,
        workers=workers,
    )


@pytest.mark.slow
def test_runs_in_two_workers_equal_the_in_process_runs(tmp_path):
    tables, reference = _toy(tmp_path)
    specs = expand_grid(GridAxes(["toy"], [1e-3, 1e-2], [10], ["none"]), epochs=3, seed=0, context_size=16)
    here = run_grid(specs, reference, tmp_path / "here", progress=False, tables=tables, workers=1)
    there = run_grid(specs, reference, tmp_path / "there", progress=False, tables=tables, workers=2)
    assert [r.key for r in here] == [r.key for r in there]
    assert all(
        (tmp_path / "there" / "finetune" / r.key / "metrics.csv").is_file() for r in there
    )  # the workers wrote them
    for a, b in zip(here, there, strict=True):
        pd.testing.assert_frame_equal(a.metrics, b.metrics, check_exact=False, atol=1e-6)


@pytest.mark.slow
def test_probing_in_two_workers_equals_probing_in_process_and_scores_m_ref_once_per_manifest(tmp_path, monkeypatch):
    tables, reference = _toy(tmp_path)
    axes = GridAxes(["toy"], [1e-3, 1e-2, 1e-1], [10], ["none", "members"])
    specs = expand_grid(axes, epochs=2, seed=0, context_size=16)
    results = {}
    for where, n in (("here", 1), ("there", 2)):
        runs = run_grid(specs, reference, tmp_path / where, progress=False, tables=tables, workers=1)
        results[where] = _probed(specs, runs, reference, tables, tmp_path / where, n)
    (summary_here, scores_here), (summary_there, scores_there) = results["here"], results["there"]
    pd.testing.assert_frame_equal(summary_here, summary_there, check_exact=False, atol=1e-6)
    assert scores_here.keys() == scores_there.keys()
    for key in scores_here:
        pd.testing.assert_frame_equal(scores_here[key], scores_there[key], check_exact=False, atol=1e-5)
    # M_ref's scores: one set per manifest (2 label conditions), not one per run (6), in both stores
    for where in ("here", "there"):
        params = [p.read_text() for p in (tmp_path / where / "probe").glob("*/params.json")]
        assert sum('"model": "ref"' in p for p in params) == 2

    # the workers' first pass scores M_ref once per manifest, before any run is probed
    calls = []
    monkeypatch.setattr(
        workers_module,
        "in_workers",
        lambda fn, args, *a, **k: calls.append((fn.__name__, len(args))) or [fn(*x) for x in args],
    )
    monkeypatch.setattr("iclmem.training.grid.in_workers", workers_module.in_workers)
    runs = run_grid(specs, reference, tmp_path / "third", progress=False, tables=tables, workers=1)
    _probed(specs, runs, reference, tables, tmp_path / "third", 2)
    assert calls == [("_probe_reference", 2), ("probe_views", 6)]


@pytest.mark.slow
def test_the_member_only_control_in_two_workers_equals_the_control_in_process(tmp_path):
    """P3's control (notebook 04) scores the M runs' non-members again: in workers, as the probe itself."""
    from iclmem.probe.label_control import control_grid

    tables, reference = _toy(tmp_path)
    specs = expand_grid(GridAxes(["toy"], [1e-3, 1e-2], [10], ["members"]), epochs=2, seed=0, context_size=16)
    controls = {}
    for where, n in (("here", 1), ("there", 2)):
        runs = run_grid(specs, reference, tmp_path / where, progress=False, tables=tables, workers=1)
        _, scores = _probed(specs, runs, reference, tables, tmp_path / where, 1)
        four = ProbeSettings(max_queries=4, epochs=(2,))  # the probe's own settings, at epoch 2
        controls[where] = control_grid(runs, tables, scores, reference, four, workers=n, progress=False)
        params = [p.read_text() for p in (tmp_path / where / "probe").glob("*/params.json")]
        # in the store: M_ref once (the two runs differ in learning rate only: the same queries) and epoch 2 of each run
        assert sum("second permutation" in p for p in params) == 1 + 2
    here, there = controls["here"], controls["there"]
    assert list(here) == list(there) == [r.key for r in runs]
    for key in here:
        assert (here[key].epoch == 2).any() and (~here[key].is_member.astype(bool)).any()
        pd.testing.assert_frame_equal(here[key], there[key], check_exact=False, atol=1e-5)


def test_probe_order_takes_the_largest_query_size_first_and_keeps_a_score_set_together():
    from iclmem.training.grid import RunSpec, probe_order

    specs = [RunSpec("a", lr, q, "none", 10) for q in (50, 512) for lr in (1e-2, 1e-3)]
    owners = ["a-50", "a-50", "a-512", "a-512"]  # runs that differ in learning rate share M_ref's scores
    order = probe_order(specs, owners)
    assert [specs[i].query_size for i in order] == [512, 512, 50, 50]
    assert [owners[i] for i in order] == ["a-512", "a-512", "a-50", "a-50"]
    more = owners + ["b-512"]
    mixed = probe_order(specs + [RunSpec("b", 1e-2, 512, "none", 10)], more)
    assert [more[i] for i in mixed] == ["a-512", "a-512", "b-512", "a-50", "a-50"]  # a set's runs one after another
