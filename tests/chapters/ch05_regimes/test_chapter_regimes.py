"""The Tab. 12 layer of notebook 05 (Paper 1, App. D): the per-regime peak table, its layout, the paper's counts, the
grid
and claim C13 (the regime decay under the point rule and the bound reading, judged against the membership null)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import iclmem.chapters.ch05_regimes as chapter
import iclmem.probe.run as probe_run_module
import iclmem.sweep.engine as engine
import iclmem.sweep.tasks as tasks
import iclmem.training.finetune as finetune_module
import iclmem.training.regimes as regimes_module
from iclmem.book.execute import notebook_parameters, read_notebook
from iclmem.chapters.ch05_regimes import RegimeGridSpec, regime_claim, regime_peak_table
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.stats.outcomes import reclassify
from iclmem.sweep import parse_grid, run_sweep, spec_key
from iclmem.sweep.engine import Cluster
from iclmem.training.regimes import MULTI_TASK_FIXED, MULTI_TASK_RANDOM, REGIMES, SINGLE_TASK_FIXED, RegimeError

REPO = Path(__file__).resolve().parents[3]
ST, MF, MR = SINGLE_TASK_FIXED, MULTI_TASK_FIXED, MULTI_TASK_RANDOM


def test_peak_table_takes_the_best_detectable_epoch_per_dataset_and_regime():
    def row(dataset, regime, epoch, auc, outcome, lr=1e-4, q=512):
        return {
            "dataset": dataset,
            "regime": regime,
            "epoch": epoch,
            "auc_loss": auc,
            "tpr10_loss": auc / 4,
            "tpr1_loss": auc / 40,
            "auc_entropy": 0.4,
            "tpr10_entropy": 0.0,
            "tpr1_entropy": 0.0,
            "auc_loss_lo": auc - 0.15,
            "auc_entropy_lo": 0.3,
            "outcome": outcome,
            "learning_rate": lr,
            "query_size": q,
            "label_condition": "none",
            "members_logged": 512,
        }

    rows = pd.DataFrame(
        [
            row("a", "single_task_fixed", 0, 0.5, "no_signal"),
            row("a", "single_task_fixed", 1, 0.6, "detectable_memorization"),
            row("a", "single_task_fixed", 5, 0.7, "detectable_memorization", lr=1e-3),
            row("a", "single_task_fixed", 10, 0.9, "loss_inversion"),
            row("a", "single_task_fixed", 2, 0.99, "detectable_memorization", q=50),  # other Q: ignored
            row("a", "multi_task_random", 1, 0.45, "no_signal"),
            row("b", "single_task_fixed", 1, 0.55, "detectable_memorization"),
            row("b", "multi_task_random", 2, 0.52, "detectable_memorization"),
        ]
    )
    peaks = regime_peak_table(rows).set_index(["dataset", "regime"])
    a = peaks.loc[("a", "single_task_fixed")]
    assert (a.epoch, a.auc, a.learning_rate, a.tpr10) == (
        5,
        0.7,
        1e-3,
        0.7 / 4,
    )  # peak across learning rates; inversion excluded
    assert not peaks.loc[("a", "multi_task_random")].detectable and pd.isna(peaks.loc[("a", "multi_task_random")].auc)
    assert chapter.detectable_counts(peaks.reset_index()).to_dict() == {"single_task_fixed": 2, "multi_task_random": 1}
    wide = chapter.wide_table(peaks.reset_index())
    assert list(wide.columns.get_level_values(0).unique()) == ["Single-Task Fixed Pairs", "Multi-Task Random Pairs"]
    assert chapter.detectable_counts(chapter.PAPER_TABLE12, chapter.PAPER_DATASETS).tolist() == [
        5,
        2,
        1,
    ]  # Tab. 12: 5 -> 2 -> 1 of 10
    strict = regime_peak_table(rows, require_ci=True).set_index(
        ["dataset", "regime"]
    )  # lower bound > 0.5: only a's 0.7 (0.55)
    assert strict.detectable.tolist() == [True, False, False, False] and strict.auc.iloc[0] == 0.7
    entropy = rows.assign(auc_entropy=0.8, tpr10_entropy=0.5)  # detected on entropy: "best" reports entropy's numbers
    best = regime_peak_table(entropy).set_index(["dataset", "regime"]).loc[("a", "single_task_fixed")]
    assert (best.metric, best.auc, best.tpr10, best.epoch) == ("entropy", 0.8, 0.5, 1)
    assert (
        regime_peak_table(entropy, metric="loss").set_index(["dataset", "regime"]).loc[("a", "single_task_fixed")].auc
        == 0.7
    )
    fig = chapter.plot_regime_decay(peaks.reset_index())
    assert len(fig.axes) == 2


# --- the grid: single-task peaks over learning rates -------------------------------------------------------


def _book_grid(regimes=REGIMES, single=(1e-3, 1e-4)):
    spec = RegimeGridSpec(
        "",
        [1e-4],
        [512],
        list(regimes),
        10,
        256,
        0,
        10,
        16,
        [0, 1, 5, 10],
        200,
        single_task_learning_rates=list(single),
    )
    return chapter.notebook_grid(spec, {"spotify": None, "wine_pl": None})


def test_configuration_texts_state_the_grid_the_page_ran(tmp_path):
    texts = chapter.configuration_texts(_book_grid(), 512, paper_grid=tmp_path / "absent.yaml")
    assert (texts["probed_pair"], texts["one_non_member"], texts["probed_epochs"]) == ("16 + 16", "6.2%", "1, 5 and 10")
    assert (texts["fire_epochs"], texts["fire_epochs_single"]) == ("3", "6")  # two single-task learning rates
    assert (texts["context_size"], texts["n_boot"], texts["paper_grid_tasks"]) == ("256", "200", "-")
    assert 0.15 < float(texts["auc_halfwidth"]) < 0.25  # 1.96 Hanley-McNeil standard errors at 16 + 16
    assert chapter.configuration_texts(_book_grid(), 512)["paper_grid_tasks"] == str(
        len(chapter.runs.load_grid(chapter.runs.PAPER_GRID).specs)
    )


def test_notebook_grid_runs_single_task_fixed_pairs_at_every_rate_in_a_second_part():
    grid = _book_grid()
    assert grid.name == "book"  # the store's folder of the tasks that ran before: they are reused
    runs = {(s.regime, s.dataset, s.learning_rate) for s in grid.specs}
    assert {(d, lr) for r, d, lr in runs if r == ST} == {(d, lr) for d in ("spotify", "wine_pl") for lr in (1e-3, 1e-4)}
    assert {lr for r, _, lr in runs if r != ST} == {1e-4} and len(
        grid.specs
    ) == 4 + 2  # the joint regimes are unchanged
    before = _book_grid(single=())  # the grid of one part: its specs, with the same keys, are all in the new grid
    assert set(before.specs) < set(grid.specs) and len(before.specs) == 4
    key = {s: spec_key(s, before.probe, before.sources, "ref", "v") for s in before.specs}
    assert all(spec_key(s, grid.probe, grid.sources, "ref", "v") == key[s] for s in before.specs)
    assert len(_book_grid(regimes=[MF, MR]).specs) == 2  # no single-task regime: no second part
    params = {
        k: p.default
        for k, p in notebook_parameters(read_notebook(REPO / "notebooks" / "05_realistic_regimes.py")).items()
    }
    assert params["learning_rates"] == [1e-4] and params["single_task_learning_rates"] == [1e-3, 1e-4]
    assert params["n_permutations"] == 1000


# --- C13 on constructed rows and null draws ------------------------------------------------------------------

#: (AUC, lower bound of its interval): detectable under the bound reading, under the point rule only, not at all.
SIGNALS = {"bound": (0.8, 0.6), "point": (0.6, 0.45), "none": (0.45, 0.3)}


def _rows(cells: dict[tuple[str, str], str | dict[float, str]], q: int = 512) -> pd.DataFrame:
    """Sweep rows: per (dataset, regime) an unprobed epoch 0 and epoch 1 with the given signal (per learning rate if
    a dict)."""
    rows = []
    for (dataset, regime), signal in cells.items():
        for lr, kind in (signal if isinstance(signal, dict) else {1e-4: signal}).items():
            auc, lo = SIGNALS[kind]
            for epoch in (0, 1):
                a, b = (0.5, 0.4) if epoch == 0 else (auc, lo)
                rows.append(
                    {
                        "dataset": dataset,
                        "regime": regime,
                        "epoch": epoch,
                        "learning_rate": lr,
                        "query_size": q,
                        "label_condition": "none",
                        "members_logged": 512,
                        "run_key": f"{dataset}-{regime}-{lr:g}",
                        "collapsed": False,
                        "loss_ratio": 1.0,
                        "auc_loss": a,
                        "auc_loss_lo": b,
                        "auc_entropy": 0.4,
                        "auc_entropy_lo": 0.3,
                        "tpr10_loss": a / 4,
                        "tpr1_loss": 0.0,
                        "tpr10_entropy": 0.1,
                        "tpr1_entropy": 0.0,
                        "mu_gap": -0.2,
                        "sigma_gap": 0.1,
                    }
                )
    return reclassify(pd.DataFrame(rows), "text")


def _regimes(st: list[str], mf: list[str], mr: list[str]) -> pd.DataFrame:
    """Three datasets a, b, c with the given signal per regime."""
    return _rows(
        {(d, r): kind for r, kinds in ((ST, st), (MF, mf), (MR, mr)) for d, kind in zip("abc", kinds, strict=True)}
    )


FALLS = _regimes(
    ["bound", "bound", "point"], ["bound", "point", "point"], ["point", "point", "point"]
)  # bound 2 -> 1 -> 0
NOTHING = _regimes(["none"] * 3, ["none"] * 3, ["none"] * 3)


def test_the_single_task_column_peaks_over_learning_rates_and_counts_agree_with_the_peak_table():
    rows = _rows(
        {
            ("a", ST): {1e-3: "bound", 1e-4: "none"},
            ("b", ST): {1e-3: "none", 1e-4: "point"},
            ("a", MF): "none",
            ("b", MF): "point",
        }
    )
    peaks = regime_peak_table(rows).set_index(["dataset", "regime"])
    assert peaks.loc[("a", ST)].learning_rate == 1e-3 and peaks.loc[("b", ST)].learning_rate == 1e-4
    for reading, expected in (("text", {ST: 2, MF: 1}), ("bound", {ST: 1, MF: 0})):
        counts = chapter.detectable_by_regime(rows, reading).iloc[0]
        assert counts.to_dict() == expected
        assert counts.tolist() == chapter.detectable_counts(regime_peak_table(reclassify(rows, reading))).tolist()
    assert chapter.detectable_by_regime(rows, "bound", query_size=50).empty  # another Q: nothing to count


def test_c13_is_reproduced_when_the_bound_count_falls_and_chance_rarely_makes_it_fall():
    null = [NOTHING] * 19 + [FALLS]  # one permutation in 20 falls: 5%, at the limit
    record = regime_claim(FALLS, null)
    assert record["verdict"] == "reproduced" and record["null_rate"] == pytest.approx(0.05)
    assert record["ours"] == "2 -> 1 -> 0 of 3 (AUC interval above 0.5); point rule: 3 -> 3 -> 3"
    assert record["observed"] == "bound reading 2 -> 1 -> 0; point rule 3 -> 3 -> 3"
    assert (
        record["null_range"] == "single-task count (bound reading) [0, 2] over 20 permutations"
    )  # whole counts: 1 draw in 20 has 2
    assert "membership permuted" in record["null"] and "per dataset view" in record["null"]
    assert (
        "point rule (AUC > 0.5) counts 3 -> 3 -> 3 (does not fall), and chance gives it a fall in 0%"
        in record["reason"]
    )
    stacked = pd.concat(
        [frame.assign(perm=i) for i, frame in enumerate(null)], ignore_index=True
    )  # regime_null's frame
    assert regime_claim(FALLS, stacked) == record
    table = chapter.regime_count_table(chapter.regime_evidence(FALLS, null))
    assert (
        table.loc["Single-Task Fixed Pairs", "bound reading (of 3)"] == 2
        and table.loc["falls?", "bound reading (of 3)"] == "yes"
    )
    assert table.loc["falls?", "bound reading, null 95% range"] == "by chance in 5%"
    assert table.loc["Multi-Task Random Pairs", "bound reading, null 95% range"] == "[0, 0]"


def test_c13_is_inconclusive_when_chance_makes_the_count_fall_as_often_or_there_is_no_signal_or_no_null():
    record = regime_claim(FALLS, [NOTHING, FALLS] * 10)
    assert (
        record["verdict"] == "inconclusive"
        and record["null_rate"] == 0.5
        and "chance alone gives this verdict" in record["reason"]
    )
    empty = regime_claim(NOTHING, [NOTHING] * 20)
    assert empty["verdict"] == "inconclusive" and "no regime keeps a table (0 -> 0 -> 0)" in empty["reason"]
    unjudged = regime_claim(FALLS, None)  # compute = False or n_permutations = 0
    assert (
        unjudged["verdict"] == "inconclusive" and unjudged["null"] == "not computed" and unjudged["null_rate"] is None
    )
    assert "cannot count as reproduced" in unjudged["reason"]


def test_c13_differs_when_a_signal_does_not_fall_and_is_not_testable_without_the_regimes():
    rising = _regimes(["none", "none", "none"], ["bound", "none", "none"], ["bound", "bound", "none"])  # 0 -> 1 -> 2
    flat = _regimes(["bound", "none", "none"], ["bound", "none", "none"], ["bound", "none", "none"])  # 1 -> 1 -> 1
    for rows in (rising, flat):
        assert regime_claim(rows, [NOTHING] * 20)["verdict"] == "differs"
        assert regime_claim(rows, None)["verdict"] == "differs"
    joint_only = FALLS[FALLS.regime != ST]
    single_only = FALLS[FALLS.regime == ST]
    for rows in (joint_only, single_only):
        assert regime_claim(rows, [rows] * 20)["verdict"] == "not testable here"
    assert regime_claim(FALLS, [NOTHING] * 20, query_size=50)["verdict"] == "not testable here"


# --- C13's null from the store: cached scores, no model runs ------------------------------------------------


TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)


def _csv(folder: Path, name: str, task: str, n: int = 160) -> dict:
    rng = np.random.default_rng(len(name))
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y", "z"], size=n)})
    frame["target"] = (
        (frame.a + rng.normal(size=n) > 0).astype(int) if task == "classification" else frame.a * 2 + rng.normal(size=n)
    )
    frame.to_csv(folder / f"{name}.csv", index=False)
    return {"path": str(folder / f"{name}.csv"), "target": "target", "task": task, "name": name}


def test_regime_null_permutes_every_view_of_the_sweep_from_stored_scores(tmp_path, monkeypatch):
    for module in (
        probe_run_module,
        finetune_module,
        regimes_module,
    ):  # others edit the package while tests run: pin the keys
        monkeypatch.setattr(module, "code_version", lambda *_: "pinned")
    for module in (engine, tasks):
        monkeypatch.setattr(module, "sweep_code_version", lambda: "pinned")
    torch.manual_seed(0)
    reference = ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny-c13-model")
    grid = parse_grid(
        {
            "name": "tiny",
            "datasets": [_csv(tmp_path, "cls", "classification"), _csv(tmp_path, "reg", "regression")],
            "learning_rates": [1e-3],
            "query_sizes": [30],
            "regimes": list(REGIMES),
            "epochs": 2,
            "context_size": 30,
            "probe": {
                "max_queries": 6,
                "manipulations": ["baseline", "shuffle_first"],
                "n_boot": 20,
                "epochs": [0, 1, 2],
            },
            "parts": [{}, {"regimes": [ST], "learning_rates": [1e-2, 1e-3]}],
        }
    )
    result = run_sweep(grid, results_dir=tmp_path / "results", cluster=Cluster(0), reference=reference, progress=False)
    rows = result.rows()
    assert not result.failed and len(result.summaries) == 4 + 2 and rows.run_key.nunique() == 4 + 2 * 2

    def no_scoring(*_args, **_kwargs):
        raise AssertionError("C13's null must read the stored probe scores, not score again")

    monkeypatch.setattr(probe_run_module.ScoringBatches, "score", no_scoring)
    null = chapter.regime_null(grid, rows, 30, query_size=30, reference=reference, results_dir=tmp_path / "results")
    fine = rows[rows.epoch > 0]
    assert null.perm.nunique() == 30 and len(null) == 30 * len(fine)
    assert (
        set(null.run_key) == set(fine.run_key) and null.auc_loss_lo.notna().all()
    )  # bounds recomputed: the bound reading
    record = regime_claim(rows, null, query_size=30)
    assert record["null_rate"] is not None and "30 permutations" in record["null"]
    assert chapter.regime_evidence(rows, null, 30).counts["bound"].index.tolist() == list(REGIMES)
    with pytest.raises(RegimeError, match="holds no run"):  # another store: nothing to read, nothing trained
        chapter.regime_scores(grid, rows, 30, reference, tmp_path / "empty")
