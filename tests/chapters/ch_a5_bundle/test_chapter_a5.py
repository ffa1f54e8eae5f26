"""Appendix A5: the bundle table, the landings of a check and their figure, the page's glued texts."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

from iclmem.bundle.layout import Bundle  # noqa: E402
from iclmem.chapters.ch_a5_bundle import BundleView, bundle_table, bundle_texts, landing_table, plot_landings  # noqa: E402


def _view(tmp_path, landings: list[dict], verdict: str) -> BundleView:
    manifest = {
        "name": "decide",
        "digest": "d" * 64,
        "grid": {"name": "decide", "tasks": 488},
        "tasks_bundled": 2,
        "cpu_hours": 0.5,
        "made": [{"date": "2026-12-07", "machine": {"processor": "AMD EPYC"}, "code_commit": "0123456789abcdef"}],
        "items": {},
    }
    check = {"verdict": verdict, "draws": len(landings), "seed": 7, "tolerance": {"atol": 1e-3, "rtol": 1e-3}}
    return BundleView(Bundle(tmp_path, manifest), {**check, "landings": landings})


def _landing(epoch: int, excess: float, problem: str = "") -> dict:
    return {
        "dataset": "spotify", "kind": "classification", "query_size": 50, "learning_rate": 1e-3, "epoch": epoch,
        "excess": {} if problem else {"train loss": excess / 2, "M_theta loss": excess},
        "max_abs": {} if problem else {"train loss": excess * 1e-3 / 2, "M_theta loss": excess * 1e-3},
        "seconds": 1.5, "problem": problem,
    }  # fmt: skip


def test_the_landing_table_shows_the_farthest_quantity_of_each_draw(tmp_path):
    view = _view(tmp_path, [_landing(1, 0.2), _landing(50, 3.0), _landing(0, 0, problem="no scores")], "rejected")
    table = landing_table(view)
    assert list(table["farthest"]) == ["M_theta loss", "M_theta loss", "no scores"]
    assert table["x tolerance"].iloc[1] == 3.0 and math.isinf(table["x tolerance"].iloc[2])
    fig = plot_landings(view)
    bars = fig.axes[0].patches
    assert [round(b.get_width(), 6) for b in bars] == [0.2, 3.0, 1000.0]  # the draw that could not compare: ceiling
    assert bundle_table([view])["check here"].tolist() == ["rejected"]


def test_the_texts_state_the_draw_and_its_detection_probability(tmp_path):
    texts = bundle_texts([_view(tmp_path, [_landing(1, 0.1)] * 29, "accepted")])
    assert texts["a5-draws"] == "29" and texts["a5-seed"] == "7" and texts["a5-verdict"] == "accepted"
    assert texts["a5-detection"] == "95.3%"  # 1 - 0.9^29
    none = bundle_texts([])
    assert set(none) == set(texts) and "no results bundle" in none["a5-bundles"]


def test_the_drift_table_reads_the_benchmark_and_is_empty_without_it(tmp_path):
    import json

    from iclmem.chapters.ch_a5_bundle import drift_table

    assert drift_table(tmp_path / "missing.json").empty
    diffs = {
        f"{name} {stat}": value
        for name, value in (("train loss", 0.1), ("metrics", 0.2), ("scores loss", 0.3), ("scores entropy", 0.4))
        for stat, value in (("max_abs", value * 1e-4), ("x_tolerance", value))
    }
    row = {"table": "breast_cancer", "learning_rate": 1e-3, "epoch": 100, "compared": "two threads", **diffs}
    (tmp_path / "drift.json").write_text(json.dumps({"rows": [row]}))
    table = drift_table(tmp_path / "drift.json")
    assert table["scores x tolerance"].tolist() == [0.4] and table["train loss x tolerance"].tolist() == [0.1]


def test_the_precision_table_counts_what_moved_and_shows_the_narrow_sizes_projected(tmp_path):
    import json

    from iclmem.chapters.ch_a5_bundle import precision_table

    assert precision_table(tmp_path / "missing.json").empty
    same = {"claims": 17, "verdicts_moved": [], "records_changed": [], "max_null_rate_change": 0.0}
    rows = [
        {"dtype": "float64 (shipped)", **same, "bytes": 52_000_000, "projected_bytes": 49_000_000},
        {
            **same,
            "dtype": "float16",
            "verdicts_moved": ["C3"],
            "records_changed": ["C3", "C13"],
            "max_null_rate_change": 0.002,
            "bytes": 52_000_000,
            "projected_bytes": 23_400_000,
        },
    ]
    (tmp_path / "precision.json").write_text(json.dumps({"rows": rows}))
    table = precision_table(tmp_path / "precision.json")
    assert table["verdicts moved"].tolist() == [0, 1] and table["records changed"].tolist() == ["none", "C3, C13"]
    assert table["nulls on disk (MB)"].tolist() == [52.0, 23.4]  # the shipped bytes, then the projection
    assert table["largest null-rate change"].tolist() == ["0.0 points", "0.2 points"]


def _fake_design(tmp_path) -> BundleView:
    """Two bundled tasks of a grid of 14 (Q = 50 and Q = 512, single-task), items of known sizes."""
    items = {}

    def item(kind: str, key: str, size: int, **meta) -> None:
        folder = tmp_path / "items" / kind / key
        folder.mkdir(parents=True)
        (folder / "data").write_bytes(b"x" * size)
        items[f"{kind}/{key}"] = {"kind": kind, "key": key, **meta}

    for q, run, size in ((50, "r50", 100), (512, "r512", 1000)):
        spec = {"dataset": "t", "learning_rate": 1e-4, "query_size": q, "label_condition": "none", "epochs": 100,
                "seed": 0, "context_size": 256, "regime": "single_task_fixed"}  # fmt: skip
        item("sweep", f"task{q}", 10, spec=spec, run=run)
        item("finetune", run, 20)
        item("null", f"n{q}", size, run=run)
        item("witness", f"w{q}", size // 10, run=run)
    view = _view(tmp_path, [], "accepted")
    strata = {"Q50 single_task_fixed": 10, "Q512 single_task_fixed": 4}
    manifest = {**view.bundle.manifest, "items": items, "grid": {"name": "decide", "tasks": 14, "strata": strata}}
    return BundleView(Bundle(tmp_path, manifest), view.check)


def test_a_bundle_shows_what_it_keeps_and_projects_its_whole_grid(tmp_path):
    from iclmem.chapters.ch_a5_bundle import contents_table, size_projection

    view = _fake_design(tmp_path)
    kinds = contents_table(view).set_index("kind")
    assert list(kinds.index) == ["null", "witness", "finetune", "sweep"]  # largest first
    assert kinds.loc["null", "items"] == 2 and kinds.loc["null", "share"] == f"{1100 / (1100 + 110 + 40 + 20):.1%}"
    projection = size_projection(view).set_index("stratum")
    assert projection.loc["Q50 single_task_fixed", "bytes"] == 10 * (10 + 20 + 100 + 10)
    assert projection.loc["Q512 single_task_fixed", "bytes"] == 4 * (10 + 20 + 1000 + 100)
    assert projection.loc["Q50 single_task_fixed", "bundled"] == "1 of 10"
    assert bundle_texts([view])["a5-grid-size"] != "not projected (no strata recorded)"


def test_a_bundle_not_checked_here_has_no_landings_and_no_figure(tmp_path):
    view = BundleView(_view(tmp_path, [], "accepted").bundle, None)
    table = landing_table(view)
    assert table.empty and "x tolerance" in table.columns
    assert plot_landings(view) is None
    assert (
        "still running: not checked here, and read by chapters 02-05 as an interim"
        in bundle_texts([view])["a5-bundles"]
    )


def test_the_design_cost_sets_each_bundled_task_against_its_registered_projection():
    """The shipped design (bundle/decide): its strata hold every task of the grid, the registered CPU-hours add up to
    the registration's (grids/decide_power.csv, committed before the run), and a bundled task's measured seconds
    are its sweep wall time."""
    import pandas as pd

    from iclmem.bundle import read_bundle
    from iclmem.chapters.ch_a5_bundle import cost_projection, registered_designs
    from iclmem.store.imports import PACKAGE_ROOT

    bundle = read_bundle(PACKAGE_ROOT.parent / "bundle" / "decide")
    assert registered_designs([BundleView(bundle, None)]) == [BundleView(bundle, None)]  # grids/decide_power.csv
    table = cost_projection(BundleView(bundle, None))
    bundled = table.bundled.str.split(" of ", expand=True).astype(int)
    assert bundled[1].sum() == bundle.manifest["grid"]["tasks"] and bundled[0].sum() == bundle.manifest["tasks_bundled"]
    power = pd.read_csv(PACKAGE_ROOT.parent / "grids" / "decide_power.csv")
    registered = float(
        power[(power.claim == "design") & (power.unit.str.startswith("CPU-hours"))]["units in design"].iloc[0]
    )
    assert abs(table["registered CPU-hours"].sum() - registered) < 0.05
    walls = [
        e["wall_s"]
        for e in bundle.items.values()
        if e["kind"] == "sweep" and e["spec"]["regime"] != "single_task_fixed"
    ]
    joint = table[table.stratum.str.contains("multi_task")]
    assert sorted(joint["measured s per task"].dropna()) == sorted(round(w, 1) for w in walls)
