"""A1's before/after tables of the reference LTM's stage 4 (issue 53): quality and the probe's reach per version."""

from __future__ import annotations

import pandas as pd
import pytest

from iclmem.chapters.ch_a1_reference_ltm import ladder_change, quality_change, reach_change


def rows(ltm_auc: float) -> pd.DataFrame:
    out = []
    for seed in (0, 1):
        for method, auc in (("ltm", ltm_auc), ("knn", 0.80), ("hist_gb", 0.90)):
            out.append({"task": "classification", "dataset": "t", "seed": seed, "method": method, "roc_auc": auc})
        for method, r2 in (("ltm", 0.5), ("linear", 0.6)):
            out.append({"task": "regression", "dataset": "r", "seed": seed, "method": method, "r2": r2})
    return pd.DataFrame(out)


def test_quality_change_reads_each_dataset_against_its_best_baseline():
    table = quality_change(rows(0.85), rows(0.88)).set_index("dataset")
    assert table.loc["t", "gap before"] == pytest.approx(-0.05) and table.loc["t", "gap after"] == pytest.approx(-0.02)
    assert table.loc["t", "change"] == pytest.approx(0.03) and table.loc["r", "change"] == pytest.approx(0.0)


def _cell(d: str, v: float, p: float) -> dict:
    return {
        "dataset": d,
        "learning_rate": 1e-3,
        "epoch": 10,
        "vanilla AUC": v,
        "vanilla lo": v - 0.05,
        "vanilla hi": v + 0.05,
        "probe AUC": p,
        "probe lo": p - 0.1,
        "probe hi": p + 0.1,
    }


def test_reach_change_puts_both_versions_side_by_side_and_keeps_a_missing_one_out():
    run = {
        "strongest_under_all": {"breast_cancer": _cell("breast_cancer", 0.8, 0.56)},
        "cells_seen": {"breast_cancer": 0},
        "cells": {"breast_cancer": 9},
        "p1_cell": _cell("breast_cancer", 0.8, 0.56),
        "recall_control": {"seen": 1, "n": 4},
        "ladder": [{"context": "C'", "rows": 64, "auc": 0.85, "lo": 0.8, "hi": 0.9}],
    }
    after = {**run, "cells_seen": {"breast_cancer": 3}}
    table = reach_change({"runs": {"reference-v1": run, "reference": after}})
    assert list(table.table) == ["breast_cancer", "P1's cell"]
    assert table.loc[0, "cells seen (reference-v1)"] == "0 of 9" and table.loc[0, "cells seen (reference)"] == "3 of 9"
    assert table.loc[0, "probe (reference)"] == "0.560 [0.460, 0.660]"
    assert table.loc[1, "probe (reference)"] == "0.560 [0.460, 0.660]" and table.loc[1, "cells seen (reference)"] == "-"
    only_v1 = reach_change({"runs": {"reference-v1": run}})
    assert not any("(reference)" in c for c in only_v1.columns)
    assert ladder_change({"runs": {"reference": after}}).columns.tolist() == ["context", "reference"]
