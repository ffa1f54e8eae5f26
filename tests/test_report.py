"""Report tables of the probing sections on constructed summaries (Tab. 1, 10/11, App. A.4, Fig. 4, 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclmem.report import (
    PAPER_PERTURBATION,
    calibration_effect,
    manipulation_effects,
    outcome_shares,
    perturbation_effectiveness,
    probing_vs_paper,
)


def _aucs(values: dict[str, tuple[str, float]], epoch: int = 10) -> pd.DataFrame:
    return pd.DataFrame([{"epoch": epoch, "manipulation": k, "category": c, "auc": a} for k, (c, a) in values.items()])


CONFIG_A = _aucs({"baseline": ("baseline", 0.60), "shuffle_random": ("positional_shuffling", 0.60),
                  "skew_true_2": ("skew_true", 0.64), "mixed_true_5_non_true_5": ("mixed_skewing", 0.70)})
CONFIG_B = _aucs({"baseline": ("baseline", 0.50), "shuffle_random": ("positional_shuffling", 0.50),
                  "skew_true_2": ("skew_true", 0.52), "mixed_true_5_non_true_5": ("mixed_skewing", 0.50)})


def _summary() -> pd.DataFrame:
    rows = [  # (epoch, collapsed, auc_loss, auc_entropy, tpr10, tpr1, raw_tpr10, outcome, Q)
        (0, False, 0.50, 0.50, 0.10, 0.00, 0.30, "no_signal", 50),
        (1, False, 0.70, 0.55, 0.40, 0.10, 0.50, "detectable_memorization", 50),
        (10, False, 0.48, 0.62, 0.05, 0.00, 0.20, "detectable_memorization", 50),
        (10, True, 0.99, 0.99, 1.00, 1.00, 1.00, "representational_collapse", 512),
        (1, False, 0.45, 0.45, 0.02, 0.00, 0.05, "no_signal", 512),
    ]
    cols = ["epoch", "collapsed", "auc_loss", "auc_entropy", "tpr10_loss", "tpr1_loss", "raw_tpr10_loss", "outcome", "query_size"]
    return pd.DataFrame(rows, columns=cols)


def test_manipulation_effects_are_deltas_over_each_configs_baseline():
    e = manipulation_effects([CONFIG_A, CONFIG_B]).set_index("manipulation")
    assert np.isclose(e.loc["skew_true_2", "mean_delta_auc"], (0.04 + 0.02) / 2)
    assert np.isclose(e.loc["mixed_true_5_non_true_5", "mean_auc"], 0.60)
    assert e.loc["baseline", "mean_delta_auc"] == 0 and e.loc["shuffle_random", "n"] == 2
    by_cat = perturbation_effectiveness([CONFIG_A, CONFIG_B]).set_index("category").mean_delta_auc
    assert "baseline" not in by_cat.index and np.isclose(by_cat["positional_shuffling"], 0.0)
    assert manipulation_effects([]).empty and perturbation_effectiveness([]).empty


def test_probing_vs_paper_reads_peaks_of_non_collapsed_runs_and_best_manipulation():
    t = probing_vs_paper(_summary(), [CONFIG_A, CONFIG_B])
    assert t.loc["peak AUC(Delta S), loss or entropy", "iclmem"] == "0.700"  # the collapsed 0.99 is excluded
    assert t.loc["peak TPR@10% (loss)", "iclmem"] == "0.400"
    assert t.loc["best single manipulation", "iclmem"] == "mixed_true_5_non_true_5"
    assert t.loc["best single manipulation: Delta AUC", "iclmem"] == "0.050"
    assert t.loc["baseline manipulation: mean AUC", "iclmem"] == "0.550"
    assert t.loc["best single manipulation", "paper"] == PAPER_PERTURBATION["best_single"]
    empty = probing_vs_paper(_summary(), [])
    assert empty.loc["best single manipulation", "iclmem"] == "-" and empty.loc["skew true target: mean Delta AUC", "iclmem"] == "-"


def test_calibration_effect_counts_raw_signals_that_vanish():
    e = calibration_effect(_summary())
    # non-collapsed, epoch > 0: rows 2, 3, 5; raw >= 0.1: rows 2, 3; calibrated >= 0.1: row 2 only
    assert e == {"non_collapsed": 3, "raw_tpr10_signals": 2, "vanished": 1, "calibrated_signals": 1}


def test_outcome_shares_are_percent_per_query_size():
    s = outcome_shares(_summary())
    assert np.allclose(s.sum(), 100.0)
    assert s.loc["detectable_memorization", "Q=50"] == 100.0 and s.loc["representational_collapse", "Q=512"] == 50.0
