"""Tests of chapter 7's verdict rules (iclmem.chapters.mitigation): M1, M2 and the removal threshold on built tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from iclmem.chapters.mitigation import UTILITY_BUDGET, Mitigation, accuracy_cost, mitigation_claims, removal_threshold


def _mitigation(vanilla_lo: dict[float, float], correct: dict[float, np.ndarray]) -> Mitigation:
    rows = [{"epsilon": e, "vanilla AUC": lo + 0.1, "vanilla lo": lo, "vanilla hi": lo + 0.2} for e, lo in vanilla_lo.items()]
    return Mitigation(pd.DataFrame(rows), 1.0, pd.DataFrame(), correct)


def _rows(share: float, n: int = 200) -> np.ndarray:
    return (np.arange(n) < share * n).astype(float)


def test_m1_reproduced_only_when_signal_is_there_and_gone_at_eps_4_and_below():
    same = {e: _rows(0.7) for e in (1.0, 4.0, 16.0, math.inf)}
    gone = mitigation_claims(_mitigation({1.0: 0.4, 4.0: 0.45, 16.0: 0.52, math.inf: 0.6}, same))
    assert gone[0]["verdict"] == "reproduced"
    kept = mitigation_claims(_mitigation({1.0: 0.4, 4.0: 0.51, 16.0: 0.52, math.inf: 0.6}, same))
    assert kept[0]["verdict"] == "differs"
    absent = mitigation_claims(_mitigation({1.0: 0.4, 4.0: 0.45, 16.0: 0.45, math.inf: 0.48}, same))
    assert absent[0]["verdict"] == "inconclusive"


def test_m2_reads_a_paired_interval_of_the_accuracy_cost_against_the_budget():
    lo = {1.0: 0.4, 4.0: 0.45, math.inf: 0.6}
    cheap = mitigation_claims(_mitigation(lo, {1.0: _rows(0.5), 4.0: _rows(0.7), math.inf: _rows(0.7)}))
    assert cheap[1]["verdict"] == "reproduced"  # identical rows at eps 4 and inf: cost 0, interval [0, 0]
    dear = mitigation_claims(_mitigation(lo, {1.0: _rows(0.5), 4.0: _rows(0.7 - 4 * UTILITY_BUDGET), math.inf: _rows(0.7)}))
    assert dear[1]["verdict"] == "differs"
    cost = accuracy_cost(_mitigation(lo, {4.0: _rows(0.6), math.inf: _rows(0.7)}), 4.0)
    assert abs(cost["cost"] - 0.1) < 1e-12
    assert cost["lo"] <= cost["cost"] <= cost["hi"]


def test_removal_threshold_is_the_largest_eps_below_which_every_interval_covers_half():
    table = _mitigation({1.0: 0.4, 4.0: 0.48, 16.0: 0.55, 64.0: 0.45, math.inf: 0.6}, {}).table
    assert removal_threshold(table) == 4.0
    assert removal_threshold(_mitigation({1.0: 0.52, math.inf: 0.6}, {}).table) is None
