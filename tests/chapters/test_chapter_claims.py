"""Claim records of chapters 1, 2 and 5 on constructed inputs (C14, C10, C13); C12a-c:
tests/chapters/ch03_probing/test_chapter_probing.py."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclmem.chapters.ch01_split.split import paper_split_extremes, split_claim
from iclmem.chapters.ch02_finetuning.finetuning import loss_ratio_claim
from iclmem.chapters.ch05_regimes.balance import balance_summary
from iclmem.chapters.ch05_regimes.claims import regime_claim


def test_split_claim_holds_by_construction_and_still_checks_every_split():
    good = pd.DataFrame(
        {
            "task": ["regression", "classification"],
            "KS stat": [0.02, np.nan],
            "KS p": [0.99, np.nan],
            "TVD": [np.nan, 0.0],
            "draws": [1, 3],
        }
    )
    record = split_claim(good)
    assert (
        record["verdict"] == "holds by construction"
        and "max KS 0.020" in record["ours"]
        and "max TVD 0.000" in record["ours"]
    )
    assert "1 of 2 splits passed at the first draw" in record["reason"] and record["null_rate"] is None
    bad = good.assign(**{"KS p": [0.01, np.nan]})
    assert (
        split_claim(bad)["verdict"] == "differs"
    )  # a split that does not pass (e.g. the redraws ran out) is still caught
    assert paper_split_extremes()["min_p"] == 0.530  # Tab. 6's smallest KS p-value (buy_buy_baby, Q=512)


def test_loss_ratio_claim_needs_every_aggressive_rate_above_8x():
    metrics = pd.DataFrame(
        {
            "epoch": [0, 1, 10] * 3,
            "learning_rate": [1e-4] * 3 + [1e-2] * 3 + [1e-1] * 3,
            "loss_ratio": [1.0, 1.1, 1.3, 1.0, 30.0, 50.0, 1.0, 40.0, 900.0],
        }
    )
    record = loss_ratio_claim(metrics)
    assert (
        record["verdict"] == "reproduced"
        and record["null"].startswith("no null applies")
        and record["null_rate"] is None
    )
    one_low = metrics.assign(
        loss_ratio=[1.0, 1.1, 1.3, 1.0, 2.0, 3.0, 1.0, 40.0, 900.0]
    )  # lr 1e-2's median 2x: not where the claim says
    assert (
        loss_ratio_claim(one_low)["verdict"] == "differs"
        and "aggressive rates at or below it: 0.01" in loss_ratio_claim(one_low)["reason"]
    )
    assert loss_ratio_claim(metrics[metrics.learning_rate == 1e-4])["verdict"] == "not testable here"


def test_regime_claim_asks_for_a_decay():
    def rows(
        cells,
    ):  # sweep rows at Q = 512, epoch 1: (AUC, lower bound of its bootstrap interval) per (dataset, regime)
        return pd.DataFrame(
            [
                {
                    "dataset": d,
                    "regime": r,
                    "epoch": 1,
                    "learning_rate": 1e-4,
                    "query_size": 512,
                    "label_condition": "none",
                    "run_key": f"{d}-{r}",
                    "collapsed": False,
                    "loss_ratio": 1.0,
                    "auc_loss": a,
                    "auc_loss_lo": lo,
                    "auc_entropy": 0.4,
                    "auc_entropy_lo": 0.3,
                    "mu_gap": -0.2,
                    "sigma_gap": 0.1,
                }
                for (d, r), (a, lo) in cells.items()
            ]
        )

    hit, miss = (0.8, 0.6), (0.45, 0.3)
    falling = rows(
        {
            ("a", "single_task_fixed"): hit,
            ("a", "multi_task_fixed"): hit,
            ("a", "multi_task_random"): miss,
            ("b", "single_task_fixed"): hit,
            ("b", "multi_task_fixed"): miss,
            ("b", "multi_task_random"): miss,
        }
    )
    quiet = falling.assign(auc_loss=0.45, auc_loss_lo=0.3)  # permuted rows in which nothing is detectable: null rate 0
    record = regime_claim(falling, [quiet] * 20)
    assert (
        record["verdict"] == "reproduced"
        and record["ours"] == "2 -> 1 -> 0 of 2 (AUC interval above 0.5); point rule: 2 -> 1 -> 0"
    )
    assert regime_claim(falling, None)["verdict"] == "inconclusive"  # no null: a fall cannot count as reproduced
    rising = rows({("a", "single_task_fixed"): miss, ("a", "multi_task_fixed"): hit, ("a", "multi_task_random"): hit})
    assert regime_claim(rising, [rising] * 20)["verdict"] == "differs"


def test_balance_summary_reports_the_largest_gap_per_regime():
    balance = pd.DataFrame(
        {
            "regime": ["multi_task_random", "multi_task_random", "single_task_fixed"],
            "dataset": ["d"] * 3,
            "column": ["name", "a", "name"],
            "missing members": [0.3, 0.1, 0.0],
            "missing non-members": [0.99, 0.1, 0.0],
            "p": [1e-9, 1.0, 1.0],
        }
    )
    s = balance_summary(balance)
    assert list(s.index) == ["single_task_fixed", "multi_task_random"]
    assert (
        np.isclose(s.loc["multi_task_random", "largest_gap"], 0.69) and s.loc["multi_task_random", "smallest_p"] == 1e-9
    )
