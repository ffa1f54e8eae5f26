"""The reference LTM's quality verdict (issue: reference LTM, "Quality and speed, measured")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.ch_a1_reference_ltm import (
    QUALITY_TARGETS,
    card_summary,
    encoding_comparison,
    plot_pretraining_loss,
    quality_table,
    quality_targets_met,
    quality_verdict,
    targets_label,
    verdict_glue,
)
from iclmem.ltm.quality import Table, encode


def _rows(ltm_auc: tuple[float, float], ltm_r2: tuple[float, float]) -> pd.DataFrame:
    """Two classification and two regression datasets, two seeds each; baselines fixed."""
    base_auc = {"knn": (0.90, 0.80), "random_forest": (0.95, 0.85), "linear": (0.93, 0.70)}
    base_r2 = {"knn": (0.30, 0.20), "random_forest": (0.50, 0.40), "linear": (0.45, 0.10)}
    rows = []
    for seed, shift in ((0, -0.01), (1, 0.01)):  # the seed mean is the value above
        for i, ds in enumerate(("c1", "c2")):
            for method, vals in {**base_auc, "ltm": ltm_auc}.items():
                rows.append(
                    {
                        "dataset": ds,
                        "task": "classification",
                        "seed": seed,
                        "method": method,
                        "roc_auc": vals[i] + shift,
                        "accuracy": 0.5,
                    }
                )
        for i, ds in enumerate(("r1", "r2")):
            for method, vals in {**base_r2, "ltm": ltm_r2}.items():
                rows.append(
                    {"dataset": ds, "task": "regression", "seed": seed, "method": method, "r2": vals[i] + shift}
                )
    return pd.DataFrame(rows)


def test_verdict_picks_the_best_baseline_by_mean_and_counts_knn_wins():
    v = quality_verdict(_rows(ltm_auc=(0.94, 0.79), ltm_r2=(0.45, 0.30)))
    assert v["classification_best_baseline"] == "random_forest"
    assert v["classification_gap_to_best"] == pytest.approx(0.9 - 0.865)
    assert not v["classification_within_margin"]  # 0.035 > 0.03
    assert v["classification_beats_knn_on"] == 1  # 0.94 > 0.90, 0.79 < 0.80
    assert v["regression_gap_to_best"] == pytest.approx(0.45 - 0.375)
    assert v["regression_within_margin"] and v["regression_beats_knn_on"] == 2
    assert not quality_targets_met(v)


def test_targets_met_needs_every_target():
    assert quality_targets_met(quality_verdict(_rows(ltm_auc=(0.94, 0.84), ltm_r2=(0.45, 0.30))))
    assert not quality_targets_met(quality_verdict(_rows(ltm_auc=(0.94, 0.84), ltm_r2=(0.45, 0.19))))  # kNN wins r2
    assert not quality_targets_met({})


def test_quality_table_has_mean_and_std_per_method():
    table = quality_table(_rows(ltm_auc=(0.94, 0.84), ltm_r2=(0.45, 0.30)))
    row = table[(table.dataset == "c1") & (table.method == "ltm")].iloc[0]
    assert row.roc_auc_mean == pytest.approx(0.94) and row.roc_auc_std == pytest.approx(0.01414, abs=1e-4)


def test_encoding_comparison_lines_up_both_encodings():
    a = _rows(ltm_auc=(0.94, 0.84), ltm_r2=(0.45, 0.30))
    b = _rows(ltm_auc=(0.90, 0.84), ltm_r2=(0.45, 0.35))
    cmp = encoding_comparison(a, b).set_index("dataset")
    assert cmp.loc["c1", "ltm, text numbers numbers"] == pytest.approx(0.94)
    assert cmp.loc["c1", "ltm, text numbers categorical"] == pytest.approx(0.90)
    assert cmp.loc["r2", "best baseline, text numbers categorical"] == pytest.approx(0.40)


def test_benchmark_encoding_switch_reaches_the_encoder():
    years = ["2001", "2002", "2003", "2004", "2005", "2006"] + ["2006"] * 6  # 2006 most frequent
    table = Table("t", pd.DataFrame({"year": years}), np.arange(12) % 2, "classification")
    numbers, _ = encode(table, np.arange(12), np.arange(6))
    codes, _ = encode(table, np.arange(12), np.arange(6), numeric_text_share=None)
    assert np.all(np.diff(numbers[:6, 0]) > 0)  # years in order
    assert codes[5, 0] < codes[0, 0]  # the frequency code puts 2006 first


def test_margins_are_the_targets_and_the_glue_formats_floats_only():
    assert QUALITY_TARGETS == {"classification": ("roc_auc", 0.03), "regression": ("r2", 0.10)}
    v = quality_verdict(_rows(ltm_auc=(0.94, 0.79), ltm_r2=(0.45, 0.30)))
    glued = verdict_glue(v)
    assert list(glued) == list(v)
    assert glued["classification_gap_to_best"] == "0.035" and glued["regression_ltm_mean_r2"] == "0.375"
    assert glued["classification_best_baseline"] == "random_forest"
    assert glued["regression_within_margin"] is True and glued["classification_datasets"] == 2
    assert targets_label(v) == "not met"
    assert targets_label(quality_verdict(_rows(ltm_auc=(0.94, 0.84), ltm_r2=(0.45, 0.30)))) == "met"


def test_card_summary_and_loss_figure():
    card = {
        "n_parameters": 1234,
        "steps_done": 3000,
        "wall_s": 600.0,
        "pretraining": {"seed": 7},
        "sha256": "ab" * 32,
        "architecture": {"d_model": 64, "n_layers": 4},
    }
    summary = card_summary(card)["value"]
    assert summary.index.tolist() == [
        "parameters",
        "pretraining steps",
        "wall time (min)",
        "seed",
        "sha256",
        "d_model",
        "n_layers",
    ]
    assert summary["wall time (min)"] == 10.0 and summary["sha256"] == "ab" * 8 + "..." and summary["d_model"] == 64
    import matplotlib

    matplotlib.use("Agg")
    curve = pd.DataFrame({"step": np.arange(200), "loss": np.linspace(2, 1, 200), "regression": np.arange(200) % 2})
    fig = plot_pretraining_loss(curve, pd.Series([100, 200]))
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()[:2]] == ["classification batches", "regression batches"]
    assert len(ax.get_lines()) == 3  # two curves and one stage boundary (the last stage's end is not drawn)
