"""The recall control of notebook 04 (Sec. 4.2, App. A; issue 53 item 2): healthy cells with clear memorization."""

from __future__ import annotations

import math

import pandas as pd

from iclmem.chapters.ch_a6_instrument.instrument_recall import recall_cells, recall_sensitivity


def curve() -> pd.DataFrame:
    base = {
        "dataset": "t",
        "epoch": 10,
        "vanilla AUC": 0.95,
        "vanilla lo": 0.9,
        "vanilla hi": 0.99,
        "probe AUC": 0.6,
        "probe lo": 0.52,
        "probe hi": 0.68,
        "probe detects": True,
    }
    rows = [
        {
            **base,
            "condition": "none",
            "learning_rate": 1e-3,
            "loss ratio": 1.1,
            "held-out quality": 0.8,
            "held-out quality M_ref": 0.75,
        },
        # healthy, but the vanilla attack is not clear: out
        {
            **base,
            "condition": "none",
            "learning_rate": 1e-4,
            "loss ratio": 1.0,
            "held-out quality": 0.8,
            "held-out quality M_ref": 0.8,
            "vanilla lo": 0.6,
        },
        # worse than M_ref on rows it never saw: out, whatever the probe says
        {
            **base,
            "condition": "none",
            "learning_rate": 1e-2,
            "loss ratio": 1.4,
            "held-out quality": 0.6,
            "held-out quality M_ref": 0.75,
        },
        # a loss ratio of 3: out
        {
            **base,
            "condition": "none",
            "learning_rate": 1e-1,
            "loss ratio": 3.0,
            "held-out quality": 0.8,
            "held-out quality M_ref": 0.75,
        },
        # permuted labels: out (the recall control reads true labels)
        {
            **base,
            "condition": "all",
            "learning_rate": 1e-3,
            "loss ratio": 1.1,
            "held-out quality": 0.8,
            "held-out quality M_ref": 0.75,
        },
        {
            **base,
            "dataset": "u",
            "condition": "none",
            "learning_rate": 1e-3,
            "loss ratio": 1.2,
            "held-out quality": 0.75,
            "held-out quality M_ref": 0.75,
            "probe lo": 0.45,
            "probe detects": False,
        },
    ]
    return pd.DataFrame(rows)


def test_only_healthy_cells_with_clear_memorization_under_true_labels_count():
    cells = recall_cells(curve())
    assert list(zip(cells.dataset, cells.learning_rate, strict=True)) == [("t", 1e-3), ("u", 1e-3)]
    out = recall_sensitivity(cells)
    assert (out["n"], out["seen"], out["share"]) == (2, 1, 0.5) and out["lo"] < 0.5 < out["hi"]
    assert "1 of 2 healthy cells" in out["text"] and "2 table(s)" in out["text"]


def test_no_cell_is_said_so():
    out = recall_sensitivity(recall_cells(curve().assign(**{"vanilla lo": 0.5})))
    assert out["n"] == 0 and math.isnan(out["share"]) and "not measured" in out["text"]
