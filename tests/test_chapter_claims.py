"""Claim records of chapters 1, 2, 3 and 5 on constructed inputs (C14, C10, C12, C13)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclmem.chapters.finetuning import loss_ratio_claim
from iclmem.chapters.probing import perturbation_claim
from iclmem.chapters.regimes import balance_summary, regime_claim
from iclmem.chapters.split import paper_split_extremes, split_claim


def test_split_claim_checks_every_split_against_the_thresholds():
    good = pd.DataFrame({"task": ["regression", "classification"], "KS stat": [0.02, np.nan], "KS p": [0.99, np.nan],
                         "TVD": [np.nan, 0.0]})
    record = split_claim(good)
    assert record["verdict"] == "reproduced" and "max KS 0.020" in record["ours"] and "max TVD 0.000" in record["ours"]
    bad = good.assign(**{"KS p": [0.01, np.nan]})
    assert split_claim(bad)["verdict"] == "differs"
    assert paper_split_extremes()["min_p"] == 0.530  # Tab. 6's smallest KS p-value (buy_buy_baby, Q=512)


def test_loss_ratio_claim_needs_both_modes():
    metrics = pd.DataFrame({"epoch": [0, 1, 10, 0, 1, 10], "learning_rate": [1e-4] * 3 + [1e-1] * 3,
                            "loss_ratio": [1.0, 1.1, 1.3, 1.0, 40.0, 900.0]})
    assert loss_ratio_claim(metrics)["verdict"] == "reproduced"
    mild = metrics.assign(loss_ratio=[1.0, 1.1, 1.3, 1.0, 2.0, 3.0])
    assert loss_ratio_claim(mild)["verdict"] == "differs"
    assert loss_ratio_claim(metrics[metrics.learning_rate == 1e-4])["verdict"] == "not testable here"


def _aucs(values: dict[str, tuple[str, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"epoch": 1, "manipulation": k, "category": c, "auc": a} for k, (c, a) in values.items()])


def test_perturbation_claim_reads_shuffling_and_skewing():
    ok = _aucs({"baseline": ("baseline", 0.60), "shuffle_first": ("positional_shuffling", 0.60), "skew_true_2": ("skew_true", 0.62)})
    record = perturbation_claim([ok], "detectable-memorization")
    assert record["verdict"] == "reproduced" and "skew true +0.020" in record["ours"]
    worse = _aucs({"baseline": ("baseline", 0.60), "shuffle_first": ("positional_shuffling", 0.60), "skew_true_2": ("skew_true", 0.55)})
    assert perturbation_claim([worse], "non-collapsed")["verdict"] == "differs"
    assert perturbation_claim([], "none")["verdict"] == "not testable here"


def _peaks(aucs: dict[tuple[str, str], float | None]) -> pd.DataFrame:
    return pd.DataFrame([{"dataset": d, "regime": r, "auc": a} for (d, r), a in aucs.items()])


def test_regime_claim_asks_for_a_decay():
    falling = _peaks({("a", "single_task_fixed"): 0.6, ("a", "multi_task_fixed"): 0.55, ("a", "multi_task_random"): None,
                      ("b", "single_task_fixed"): 0.58, ("b", "multi_task_fixed"): None, ("b", "multi_task_random"): None})
    record = regime_claim(falling, falling)
    assert record["verdict"] == "reproduced" and record["ours"] == "2 -> 1 -> 0 of 2"
    rising = _peaks({("a", "single_task_fixed"): None, ("a", "multi_task_fixed"): 0.6, ("a", "multi_task_random"): 0.6})
    assert regime_claim(rising, rising)["verdict"] == "differs"


def test_balance_summary_reports_the_largest_gap_per_regime():
    balance = pd.DataFrame({"regime": ["multi_task_random", "multi_task_random", "single_task_fixed"], "dataset": ["d"] * 3,
                            "column": ["name", "a", "name"], "missing members": [0.3, 0.1, 0.0], "missing non-members": [0.99, 0.1, 0.0],
                            "p": [1e-9, 1.0, 1.0]})
    s = balance_summary(balance)
    assert list(s.index) == ["single_task_fixed", "multi_task_random"]
    assert np.isclose(s.loc["multi_task_random", "largest_gap"], 0.69) and s.loc["multi_task_random", "smallest_p"] == 1e-9
