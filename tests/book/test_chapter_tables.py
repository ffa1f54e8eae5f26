"""Report tables of the probing sections on constructed summaries (Tab. 1, 10/11, App. A.4, Fig. 4, 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.ch03_probing.claims import PAPER_PERTURBATION
from iclmem.chapters.ch03_probing.probing import manipulation_effects, perturbation_effectiveness, probing_vs_paper
from iclmem.chapters.ch04_calibration.tables import calibration_effect, detectable_table, outcome_shares
from iclmem.stats.outcomes import DEFAULT_MARGIN_RULE, null_margin_rates, with_primary_metric


def _aucs(values: dict[str, tuple[str, float]], epoch: int = 10) -> pd.DataFrame:
    return pd.DataFrame([{"epoch": epoch, "manipulation": k, "category": c, "auc": a} for k, (c, a) in values.items()])


CONFIG_A = _aucs(
    {
        "baseline": ("baseline", 0.60),
        "shuffle_random": ("positional_shuffling", 0.60),
        "skew_true_2": ("skew_true", 0.64),
        "mixed_true_5_non_true_5": ("mixed_skewing", 0.70),
    }
)
CONFIG_B = _aucs(
    {
        "baseline": ("baseline", 0.50),
        "shuffle_random": ("positional_shuffling", 0.50),
        "skew_true_2": ("skew_true", 0.52),
        "mixed_true_5_non_true_5": ("mixed_skewing", 0.50),
    }
)


def _summary() -> pd.DataFrame:
    # (epoch, collapsed, auc_loss, auc_entropy, tpr10, tpr1, tpr10_ent, tpr1_ent, raw_tpr10, ref_tpr10, outcome, Q)
    rows = [
        (0, False, 0.50, 0.50, 0.10, 0.00, 0.10, 0.00, 0.30, 0.30, "no_signal", 50),
        (1, False, 0.70, 0.55, 0.40, 0.10, 0.60, 0.30, 0.50, 0.20, "detectable_memorization", 50),
        (10, False, 0.48, 0.62, 0.05, 0.00, 0.45, 0.05, 0.20, 0.15, "detectable_memorization", 50),
        (10, True, 0.99, 0.99, 1.00, 1.00, 1.00, 1.00, 1.00, 0.10, "representational_collapse", 512),
        (1, False, 0.45, 0.45, 0.02, 0.00, 0.02, 0.00, 0.05, 0.05, "no_signal", 512),
    ]
    cols = [
        "epoch",
        "collapsed",
        "auc_loss",
        "auc_entropy",
        "tpr10_loss",
        "tpr1_loss",
        "tpr10_entropy",
        "tpr1_entropy",
        "raw_tpr10_loss",
        "ref_tpr10_loss",
        "outcome",
        "query_size",
    ]
    return pd.DataFrame(rows, columns=cols).assign(dataset="t", learning_rate=1e-3, label_condition="none")


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
    # peaks over detectable configurations, each TPR of its row's primary metric: loss (0.40) at epoch 1,
    # entropy (0.45) at epoch 10, never the entropy TPR 0.60 of the row whose primary metric is loss
    assert t.loc["peak TPR@10% (primary metric)", "iclmem"] == "0.450"
    assert t.loc["peak TPR@1% (primary metric)", "iclmem"] == "0.100"
    assert t.loc["best single manipulation", "iclmem"] == "mixed_true_5_non_true_5"
    assert t.loc["best single manipulation: Delta AUC", "iclmem"] == "0.050"
    assert t.loc["baseline manipulation: mean AUC", "iclmem"] == "0.550"
    assert t.loc["best single manipulation", "paper"] == PAPER_PERTURBATION["best_single"]
    empty = probing_vs_paper(_summary(), [])
    assert (
        empty.loc["best single manipulation", "iclmem"] == "-"
        and empty.loc["skew true target: mean Delta AUC", "iclmem"] == "-"
    )


def test_calibration_effect_counts_raw_signals_that_vanish():
    e = calibration_effect(_summary(), rule="calibrated_tpr")
    # non-collapsed, epoch > 0: rows 2, 3, 5; raw >= 0.1: rows 2, 3; calibrated >= 0.1: row 2 only
    assert e == {"non_collapsed": 3, "raw_tpr10_signals": 2, "vanished": 1, "calibrated_signals": 1}
    # Delta TPR = raw - ref: row 2 0.30 (kept), row 3 0.05 (vanishes)
    assert calibration_effect(_summary(), rule="delta_tpr") == e
    # TPR(Delta S) - 0.10 >= 0.10: row 2 (0.40) only
    assert calibration_effect(_summary(), rule="tpr_over_fpr")["calibrated_signals"] == 1
    with pytest.raises(ValueError, match="unknown calibrated-margin rule"):
        calibration_effect(_summary(), rule="margin")


def test_null_margin_rates_show_the_old_rule_fires_by_chance_and_the_default_does_not():
    """App. A.4 under the null (members and non-members exchangeable), 50 + 50 queries."""
    rates = null_margin_rates(50, 50, n_sim=400, seed=1).set_index("rule")
    assert rates.loc["calibrated_tpr", "fires_given_raw"] > 0.45  # the reading that cannot show 230 of 241 vanishing
    assert rates.loc[DEFAULT_MARGIN_RULE, "fires_given_raw"] < 0.15
    assert rates.loc[DEFAULT_MARGIN_RULE, "fires"] < rates.loc["calibrated_tpr", "fires"] / 3


def test_with_primary_metric_pairs_each_auc_with_its_own_tprs():
    s = with_primary_metric(_summary())
    assert list(s.metric) == ["loss", "loss", "entropy", "loss", "loss"]  # ties go to loss
    assert s.tpr10.tolist() == [0.10, 0.40, 0.45, 1.00, 0.02] and s.auc.tolist() == [0.50, 0.70, 0.62, 0.99, 0.45]
    top = detectable_table(_summary())
    assert (
        len(top) == 1 and top.loc[0, "metric"] == "loss" and top.loc[0, "tpr10"] == 0.40 and top.loc[0, "tpr1"] == 0.10
    )
    with pytest.raises(ValueError, match="metric must be"):
        with_primary_metric(_summary(), "confidence")


def test_outcome_shares_are_percent_per_query_size():
    s = outcome_shares(_summary())
    assert np.allclose(s.sum(), 100.0)
    assert s.loc["detectable_memorization", "Q=50"] == 100.0 and s.loc["representational_collapse", "Q=512"] == 50.0
