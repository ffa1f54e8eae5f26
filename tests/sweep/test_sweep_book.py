"""The book from a sweep's store (Sec. 5, Tab. 2): the notebooks find a sweep's runs and scores and compute nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

import iclmem.probe.run
import iclmem.training.finetune
import iclmem.training.loop
from iclmem.book.table_parameters import notebook_tables
from iclmem.cli import main
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.probe.settings import ProbeSettings
from iclmem.sweep import SweepError, collect_sweep, load_grid, run_sweep
from iclmem.sweep.book_values import GRID_CHAPTERS, grid_book_values
from iclmem.sweep.engine import Cluster
from iclmem.training.grid import GridAxes, expand_grid, probe_grid, run_grid

torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[2]
TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)
#: one shipped table, one learning rate, Q = 30, two label conditions, 2 epochs, 3 + 3 probed queries
TINY_GRID = {
    "name": "tiny_book",
    "datasets": ["wine_pl"],
    "learning_rates": [1.0e-3],
    "query_sizes": [30],
    "label_conditions": ["none", "members"],
    "epochs": 2,
    "seed": 0,
    "context_size": 30,
    "probe": {"n_candidates": 5, "max_queries": 3, "seed": 0, "n_boot": 10},
}


@pytest.fixture(scope="module")
def reference() -> ReferenceLTM:
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny-sweep-book-model")


def _write(folder: Path, **changes) -> Path:
    path = folder / "grid.yaml"
    path.write_text(yaml.safe_dump({**TINY_GRID, **changes}))
    return path


def _files(store: Path) -> dict[str, int]:
    return {str(p.relative_to(store)): p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file()}


def test_notebooks_02_to_05_read_a_sweep_store_without_recomputing(tmp_path, monkeypatch, reference):
    grid_file = _write(tmp_path)
    grid = load_grid(grid_file)
    store = tmp_path / "store"
    swept = run_sweep(grid, results_dir=store, cluster=Cluster(0), reference=reference, progress=False)
    assert swept.ran == len(grid.specs) == 2 and not swept.failed
    before = _files(store)

    def computes(*_args, **_kwargs):
        raise AssertionError("the notebooks computed something the sweep's store holds")

    monkeypatch.setattr(iclmem.training.loop, "train", computes)  # every run, single-task and joint, trains there
    monkeypatch.setattr(iclmem.training.finetune, "prepare_run_data", computes)
    monkeypatch.setattr(iclmem.probe.run._Suite, "scores", computes)
    monkeypatch.setenv("ICLMEM_RESULTS", str(store))  # as `iclmem book --results` sets it for the kernels

    v = grid_book_values(grid, grid_file)
    # notebooks 02-04's compute cells, with the grid's values
    tables = notebook_tables(v["datasets"])
    axes = GridAxes(list(tables), v["learning_rates"], v["query_sizes"], v["label_conditions"])
    specs = expand_grid(axes, v["epochs"], v["seed"], v["context_size"])
    runs = run_grid(specs, reference, tables=tables, progress=False, workers=1)
    probe = ProbeSettings(
        n_candidates=v["n_candidates"],
        max_queries=v["max_queries"],
        epochs=v["probe_epochs"],
        seed=v["seed"],
        n_boot=v["n_boot"],
    )
    summary, _ = probe_grid(specs, runs, reference, probe, progress=False, tables=tables, workers=1)
    # notebook 05: the grid file, read from the store
    again = collect_sweep(load_grid(v["grid_file"]), reference=reference)
    assert _files(store) == before  # nothing written: no manifest, run or score was made again
    assert [s["status"] for s in again.summaries] == ["ok", "ok"]
    assert {r.key for r in runs} == {s["run_key"] for s in swept.summaries}
    rows = swept.rows()
    assert len(summary) == len(rows) == 2 * 3  # 2 runs x probing epochs 0, 1, 2
    merged = summary.merge(rows, on=["label_condition", "epoch"], suffixes=("", "_sweep"))
    assert merged["auc_loss"].tolist() == pytest.approx(merged["auc_loss_sweep"].tolist())


def test_iclmem_book_grid_renders_the_grids_chapters_from_its_store(tmp_path, monkeypatch, capsys):
    calls = {}

    def build(root, values, chapters, out, results, **kwargs):
        calls.update(values=values, chapters=chapters, out=out, results=results)
        raise SystemExit(0)

    monkeypatch.setattr("iclmem.book.own_book.build_own_book", build)
    paper = REPO / "grids" / "paper_shipped.yaml"
    with pytest.raises(SystemExit):
        main(["book", "--grid", str(paper), "--results", str(tmp_path / "store"), "--no-html"])
    v = calls["values"]
    assert calls["chapters"] == list(GRID_CHAPTERS) and calls["results"] == (tmp_path / "store").resolve()
    assert calls["out"].name == "paper_shipped"
    assert v["datasets"] == ["spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices"]
    assert v["learning_rates"] == [0.1, 0.01, 0.001, 0.0001] and v["query_sizes"] == [50, 512]
    assert v["label_conditions"] == ["none", "members", "all"]
    assert (v["epochs"], v["context_size"], v["seed"]) == (500, 512, 0)
    assert v["probe_epochs"] == [0, 1, 2, 5, 10, 50, 100, 250, 500]
    assert (v["n_candidates"], v["max_queries"], v["n_boot"]) == (10, 512, 1000)
    assert v["grid_file"] == str(paper.resolve())


def test_paper_shipped_is_tab_2_on_the_shipped_tables():
    grid = load_grid(REPO / "grids" / "paper_shipped.yaml")
    single = [s for s in grid.specs if s.regime == "single_task_fixed"]
    assert len(single) == 4 * 4 * 2 * 3 and len(grid.specs) == len(single) + 2
    joint = {(s.regime, s.query_size, s.learning_rate, len(s.datasets)) for s in grid.specs} - {
        (s.regime, s.query_size, s.learning_rate, 1) for s in single
    }
    assert joint == {("multi_task_fixed", 512, 1e-4, 4), ("multi_task_random", 512, 1e-4, 4)}
    paper = load_grid(REPO / "grids" / "paper.yaml")
    assert {(s.learning_rate, s.query_size, s.label_condition, s.epochs, s.context_size) for s in single} == {
        (s.learning_rate, s.query_size, s.label_condition, s.epochs, s.context_size)
        for s in paper.specs
        if s.regime == "single_task_fixed"
    }


@pytest.mark.parametrize(
    "change, message",
    [
        ({"probe": {"max_queries": None}}, "probe.max_queries is unset"),
        ({"probe": {"max_queries": 3, "manipulations": ["baseline"]}}, "the notebooks probe all 48"),
        ({"probe": {"max_queries": 3, "seed": 1}}, "probe.seed 1 differs from seed 0"),
        ({"regimes": ["multi_task_fixed"], "datasets": ["wine_pl", "spotify"]}, "no single_task_fixed runs"),
        (
            {
                "parts": [
                    {"query_sizes": [30], "learning_rates": [1e-3]},
                    {"query_sizes": [40], "learning_rates": [1e-4]},
                ]
            },
            "not one product",
        ),
        ({"parts": [{"epochs": 2}, {"epochs": 3, "query_sizes": [40]}]}, "several values of epochs"),
    ],
)
def test_a_grid_the_notebooks_cannot_render_is_refused(tmp_path, capsys, change, message):
    grid_file = _write(tmp_path, **change)
    with pytest.raises(SweepError, match=message.replace("(", r"\(").replace("[", r"\[")):
        grid_book_values(load_grid(grid_file), grid_file)
    assert main(["book", "--grid", str(grid_file), "--no-html"]) == 2
    assert message in capsys.readouterr().err
