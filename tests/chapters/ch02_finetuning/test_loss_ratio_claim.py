"""Claim C10 of chapter 2 (Sec. 4.1, App. B.1) on constructed loss ratios."""

from __future__ import annotations

import pandas as pd

from iclmem.chapters.ch02_finetuning.claims import loss_ratio_claim


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
