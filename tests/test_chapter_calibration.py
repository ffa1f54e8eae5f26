"""Chapter 4's controls, shuffled-label check and claim records on constructed summaries (Tab. 3, 10, App. A.4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.calibration import (
    calibration_claims,
    exhaustive_table,
    negative_control,
    positive_control,
    shuffled_label_check,
)
from iclmem.chapters.claims import VERDICTS
from iclmem.chapters.verdicts import share_verdict, wilson_interval

MEM, COLL, NOSIG = "detectable_memorization", "representational_collapse", "no_signal"


def _row(dataset, q, lr, epoch, cond, auc_loss, auc_entropy, outcome, k=2, task="classification", **extra):
    base = {"dataset": dataset, "query_size": q, "learning_rate": lr, "epoch": epoch, "label_condition": cond,
            "auc_loss": auc_loss, "auc_entropy": auc_entropy, "auc_loss_lo": auc_loss - 0.1, "auc_loss_hi": auc_loss + 0.1,
            "auc_entropy_lo": auc_entropy - 0.1, "auc_entropy_hi": auc_entropy + 0.1, "tpr10_loss": 0.2, "tpr1_loss": 0.05,
            "tpr10_entropy": 0.3, "tpr1_entropy": 0.15, "raw_tpr10_loss": 0.3, "ref_tpr10_loss": 0.1, "outcome": outcome,
            "collapsed": outcome == COLL, "k": k, "alpha": 0.5, "task": task, "mu_gap": -0.1, "sigma_gap": 0.3,
            "delta_lv_members": -0.1, "delta_lv_non_members": 0.0, "null_auc_loss": 0.5, "null_auc_loss_lo": 0.4,
            "null_auc_loss_hi": 0.6, "run_key": f"{dataset}-{q}-{lr}-{cond}"}
    return {**base, **extra}


def _summary() -> pd.DataFrame:
    rows = [
        _row("bin", 50, 1e-3, 1, "none", 0.62, 0.55, MEM), _row("bin", 50, 1e-3, 1, "members", 0.55, 0.70, MEM),
        _row("bin", 50, 1e-3, 10, "none", 0.58, 0.66, MEM), _row("bin", 50, 1e-3, 10, "members", 0.60, 0.60, MEM),
        _row("bin", 50, 1e-1, 1, "none", 0.90, 0.90, COLL), _row("bin", 50, 1e-1, 1, "members", 0.90, 0.90, COLL),
        _row("reg", 512, 1e-3, 1, "none", 0.45, 0.48, NOSIG, k=300, task="regression"),
        _row("reg", 512, 1e-3, 1, "members", 0.52, 0.40, MEM, k=300, task="regression"),
        _row("reg", 50, 1e-3, 10, "none", 0.49, 0.47, NOSIG, k=300, task="regression"),
    ]
    return pd.DataFrame(rows)


def test_shuffled_label_check_compares_the_same_metric_and_epoch():
    check = shuffled_label_check(_summary()).set_index(["dataset", "query_size", "learning_rate", "epoch"])
    first = check.loc[("bin", 50, 1e-3, 1)]
    assert first.metric == "loss" and first.auc_shuffled == 0.55 and first.verdict == "weakens"  # not the shuffled entropy 0.70
    later = check.loc[("bin", 50, 1e-3, 10)]
    assert later.metric == "entropy" and later.auc_shuffled == 0.60 and later.verdict == "weakens"
    assert check.loc[("reg", 512, 1e-3, 1)].verdict == "n/a"  # not detectable under N
    assert check.loc[("bin", 50, 1e-1, 1)].verdict == "n/a"
    stronger = _summary()
    stronger.loc[1, "auc_loss"] = 0.70
    assert shuffled_label_check(stronger).set_index("epoch").loc[1].iloc[0].verdict == "does not weaken"
    assert shuffled_label_check(_summary()[_summary().label_condition == "none"]).empty


def test_exhaustive_table_puts_the_shuffled_auc_beside_ns_peak():
    t = exhaustive_table(_summary()).set_index(["dataset", "Q", "LR"])
    peak = t.loc[("bin", 50, 1e-3)]
    assert peak["Ep."] == 10 and peak["AUC N"] == 0.66 and peak["metric"] == "entropy" and peak["AUC members"] == 0.60
    assert peak["TPR@10%"] == 0.3 and peak["shuffled check"] == "weakens" and peak.outcome == "Mem."
    assert np.isnan(t.loc[("reg", 50, 1e-3), "AUC members"])  # no shuffled run of that configuration


def test_negative_control_fails_when_too_many_null_intervals_exclude_chance():
    rows = pd.DataFrame([_row("bin", 50, 1e-3, e, "none", 0.6, 0.6, MEM) for e in range(1, 101)])
    assert negative_control(rows)["passed"] and negative_control(rows)["excluded"] == 0
    biased = rows.copy()
    biased.loc[:29, ["null_auc_loss_lo", "null_auc_loss_hi"]] = [0.55, 0.75]  # 30% exclude 0.5
    result = negative_control(biased)
    assert result["excluded"] == 30 and not result["passed"] and result["p_value"] < 1e-6
    few = rows.copy()
    few.loc[:5, ["null_auc_loss_lo"]] = 0.51  # 6 of 100: what chance gives
    assert negative_control(few)["passed"]


def test_positive_control_passes_only_with_its_interval_above_chance():
    control = pd.DataFrame([_row("iris", 20, 1e-2, 0, "members", 0.5, 0.5, NOSIG), _row("iris", 20, 1e-2, 250, "members", 0.58, 0.5, MEM)])
    assert not positive_control(control, 250)["passed"]  # lower bound 0.48
    control.loc[1, "auc_loss_lo"] = 0.55
    assert positive_control(control, 250)["passed"]
    with pytest.raises(ValueError, match="not probed at epoch 100"):
        positive_control(control, 100)


def test_wilson_interval_and_share_verdict():
    lo, hi = wilson_interval(12, 100)
    assert 0.06 < lo < 0.08 and 0.19 < hi < 0.21
    assert share_verdict(12, 100, 0.12)[0] == "reproduced"
    assert share_verdict(50, 100, 0.12)[0] == "differs" and "below" in share_verdict(50, 100, 0.12)[1]
    assert share_verdict(0, 0, 0.12)[0] == "not testable here"


def test_calibration_claims_cover_their_ids_with_valid_verdicts():
    records = {r["id"]: r for r in calibration_claims(_summary())}
    assert sorted(records) == sorted(["C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C11", "C15", "C16"])
    assert all(r["verdict"] in VERDICTS and r["reason"] for r in records.values())
    assert records["C1"]["ours"].startswith("2/2")  # both tables detectable somewhere
    assert records["C2"]["ours"].startswith("0.700")  # the peak among detectable rows (the collapsed 0.90 excluded)
    assert records["C8"]["verdict"] == "reproduced"  # at Q=50 only the binary table detects
    assert records["C16"]["verdict"] == "not testable here"
