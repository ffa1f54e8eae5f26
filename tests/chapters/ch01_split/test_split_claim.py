"""Claim C14 of chapter 1 (Sec. 4.1, App. A.2) on constructed split statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclmem.chapters.ch01_split.claims import split_claim
from iclmem.chapters.ch01_split.paper import paper_split_extremes


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
