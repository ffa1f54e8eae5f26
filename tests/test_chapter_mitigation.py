"""Tests of chapter 7's verdict rules and utility (iclmem.chapters.mitigation): M1, M2 and the removal threshold."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.mitigation import (
    UTILITY_BUDGET,
    Mitigation,
    accuracy_cost,
    cost_verdict,
    m1_null_rate,
    mitigation_claims,
    removal_threshold,
)


def _mitigation(
    vanilla_lo: dict[float, float], correct: dict[float, np.ndarray], ref: np.ndarray | None = None
) -> Mitigation:
    rows = [
        {"epsilon": e, "vanilla AUC": lo + 0.1, "vanilla lo": lo, "vanilla hi": lo + 0.2}
        for e, lo in vanilla_lo.items()
    ]
    return Mitigation(pd.DataFrame(rows), 1.0, pd.DataFrame(), correct, ref)


def _rows(share: float, n: int = 400) -> np.ndarray:
    return (np.arange(n) < share * n).astype(float)


def test_m1_reproduced_only_when_signal_is_there_and_gone_at_eps_4_and_below():
    same = {e: _rows(0.7) for e in (1.0, 4.0, 16.0, math.inf)}
    gone = mitigation_claims(_mitigation({1.0: 0.4, 4.0: 0.45, 16.0: 0.52, math.inf: 0.6}, same, _rows(0.7)))
    assert gone[0]["verdict"] == "reproduced"
    kept = mitigation_claims(_mitigation({1.0: 0.4, 4.0: 0.51, 16.0: 0.52, math.inf: 0.6}, same, _rows(0.7)))
    assert kept[0]["verdict"] == "differs"
    absent = mitigation_claims(_mitigation({1.0: 0.4, 4.0: 0.45, 16.0: 0.45, math.inf: 0.48}, same, _rows(0.7)))
    assert absent[0]["verdict"] == "inconclusive"


LO = {1.0: 0.4, 4.0: 0.45, math.inf: 0.6}


def test_m2_reproduced_when_eps_4_costs_nothing_against_m_ref_and_eps_inf():
    claims = mitigation_claims(_mitigation(LO, {1.0: _rows(0.5), 4.0: _rows(0.9), math.inf: _rows(0.9)}, _rows(0.9)))
    assert claims[1]["verdict"] == "reproduced"  # identical rows: both costs 0, intervals [0, 0]


def test_m2_differs_when_dp_costs_more_than_the_budget_against_m_ref_even_if_eps_inf_is_worse():
    """Under label condition all, the plain run loses true-label accuracy: being better than it is not enough."""
    ref, plain = _rows(0.9), _rows(0.6)
    private = _rows(0.9 - 4 * UTILITY_BUDGET)
    claims = mitigation_claims(_mitigation(LO, {1.0: _rows(0.5), 4.0: private, math.inf: plain}, ref))
    assert claims[1]["verdict"] == "differs"
    assert "M_ref" in claims[1]["reason"]
    assert accuracy_cost(_mitigation(LO, {4.0: private, math.inf: plain}, ref), 4.0, "inf")["cost"] < 0


def test_m2_differs_against_eps_inf_and_is_inconclusive_near_the_budget():
    ref = _rows(0.9)
    dear = mitigation_claims(
        _mitigation(LO, {1.0: _rows(0.5), 4.0: _rows(0.9 - 4 * UTILITY_BUDGET), math.inf: ref}, ref)
    )
    assert dear[1]["verdict"] == "differs"
    near = ref.copy()
    near[: int(UTILITY_BUDGET * 400)] = 0.0  # 20 of 400 rows lost: a cost of exactly the budget, its interval around it
    verdict, _ = cost_verdict({"ref": accuracy_cost(_mitigation(LO, {4.0: near, math.inf: ref}, ref), 4.0, "ref")})
    assert verdict == "inconclusive"


def test_accuracy_cost_is_paired_and_names_its_reference():
    m = _mitigation(LO, {4.0: _rows(0.6), math.inf: _rows(0.7)}, _rows(0.8))
    inf, ref = accuracy_cost(m, 4.0, "inf"), accuracy_cost(m, 4.0, "ref")
    assert abs(inf["cost"] - 0.1) < 1e-12 and abs(ref["cost"] - 0.2) < 1e-12
    assert inf["lo"] <= inf["cost"] <= inf["hi"]
    with pytest.raises(ValueError, match="against"):
        accuracy_cost(m, 4.0, "plain")


def test_removal_threshold_is_the_largest_eps_below_which_every_interval_covers_half():
    table = _mitigation({1.0: 0.4, 4.0: 0.48, 16.0: 0.55, 64.0: 0.45, math.inf: 0.6}, {}).table
    assert removal_threshold(table) == 4.0
    assert removal_threshold(_mitigation({1.0: 0.52, math.inf: 0.6}, {}).table) is None


def test_m1_null_permutes_membership_and_a_signal_nobody_has_is_rarely_reproduced():
    """M1's null rate: a strong non-private signal survives few permutations; scores that carry nothing never do."""
    rng = np.random.default_rng(0)
    n = 50
    strong = np.concatenate([rng.normal(1.5, 1, n), rng.normal(0, 1, n)])  # members first
    noise = {e: rng.normal(0, 1, 2 * n) for e in (1.0, 4.0)}
    base = _mitigation(LO, {e: _rows(0.7) for e in LO}, _rows(0.7))
    m = Mitigation(base.table, 1.0, base.summary, base.correct, base.ref_correct, {math.inf: strong, **noise}, n)
    record = mitigation_claims(m)[0]
    assert record["verdict"] == "reproduced" and record["null_rate"] <= 0.05
    assert "permuted" in record["null"]
    # a null rate above 5% turns agreement into inconclusive: the non-private "signal" that chance gives as often
    assert m1_null_rate(m, [1.0, 4.0]) == record["null_rate"]
    weak = Mitigation(base.table, 1.0, base.summary, base.correct, base.ref_correct, {math.inf: noise[1.0], **noise}, n)
    assert m1_null_rate(weak, [1.0, 4.0]) < 0.1  # lower bounds above 0.5 by chance: about 2.5% of draws
