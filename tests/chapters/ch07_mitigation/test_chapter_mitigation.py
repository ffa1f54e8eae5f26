"""Tests of chapter 7's verdict rules and utility (iclmem.chapters.ch07_mitigation: claims, runs, equivalence,
dp_bounds): M1 as an equivalence test, M2 where fine-tuning helps (or by construction), the DP bound and the
removal threshold."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.ch07_mitigation import (
    CLIPPED,
    M1_MARGIN,
    PLAIN,
    UTILITY_BUDGET,
    Mitigation,
    accuracy_cost,
    cost_verdict,
    dp_auc_bound,
    dp_bound_table,
    dp_tpr_bound,
    m1_null_rate,
    m1_record,
    m2_record,
    mitigation_claims,
    removal_threshold,
    run_label,
)
from iclmem.chapters.ch07_mitigation.equivalence_test import (
    equivalence_power,
    observed_bounds,
    paired_auc_difference,
    queries_for_power,
)

N = 50  # members (= non-members) per run


def _table(lo: dict[float, float]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"run": run_label(e), "epsilon": e, "vanilla AUC": v + 0.1, "vanilla lo": v, "vanilla hi": v + 0.2}
            for e, v in lo.items()
        ]
    )


def _mitigation(
    vanilla_lo: dict[float, float],
    correct: dict[float, np.ndarray],
    ref: np.ndarray | None = None,
    scores: dict[float, np.ndarray] | None = None,
) -> Mitigation:
    return Mitigation(
        _table(vanilla_lo),
        1.0,
        pd.DataFrame(),
        {run_label(e): c for e, c in correct.items()},
        ref,
        None if scores is None else {run_label(e): s for e, s in scores.items()},
        N,
    )


def _rows(share: float, n: int = 400) -> np.ndarray:
    return (np.arange(n) < share * n).astype(float)


def _scores(rng: np.random.Generator, shift: float, n: int = N) -> np.ndarray:
    """Members first, shifted by ``shift`` standard deviations above the non-members."""
    return np.concatenate([rng.normal(shift, 1, n), rng.normal(0, 1, n)])


def _exactly_half(n: int = N) -> np.ndarray:
    """Scores whose AUC is 0.5 on every stratified resample: all tied."""
    return np.zeros(2 * n)


# -- the DP bound -----------------------------------------------------------------------------------------
def test_dp_bound_allows_a_strong_attack_at_eps_4_and_none_at_eps_0():
    assert dp_tpr_bound(4.0, 1e-5, 0.01) == pytest.approx(math.exp(4) * 0.01 + 1e-5)
    assert dp_tpr_bound(4.0, 1e-5, 0.1) > 0.98 and dp_tpr_bound(math.inf, 1e-5, 0.0) == 1.0
    assert dp_auc_bound(4.0, 1e-5) > 0.95  # epsilon = 4 alone does not imply removal
    assert dp_auc_bound(1e-6, 0.0) == pytest.approx(0.5, abs=1e-3)  # eps -> 0: no attack beats chance
    assert dp_auc_bound(1.0, 1e-5) < dp_auc_bound(4.0, 1e-5) < dp_auc_bound(16.0, 1e-5) <= 1.0
    table = dp_bound_table([1.0, 4.0, math.inf], 1e-5)
    assert list(table["AUC bound"])[-1] == 1.0 and table["AUC bound"].is_monotonic_increasing


# -- M1 -------------------------------------------------------------------------------------------------------
def test_power_of_the_equivalence_rule_grows_with_the_queries():
    rng = np.random.default_rng(0)
    small = equivalence_power(rng.normal(size=2 * N), N, n_permutations=200, n_boot=100)
    big = equivalence_power(rng.normal(size=2 * 600), 600, n_permutations=200, n_boot=100)
    assert small < 0.1 < 0.6 < big  # 50 + 50 queries cannot show AUC within 0.5 +- 0.05; 600 + 600 mostly can
    assert 500 < queries_for_power(M1_MARGIN) < 700 and queries_for_power(0.1) < queries_for_power(0.05)


def test_paired_difference_is_paired_and_signed():
    rng = np.random.default_rng(1)
    base = rng.normal(size=2 * N)
    lifted = base + np.r_[np.ones(N), np.zeros(N)]
    d = paired_auc_difference(lifted, base, N, n_boot=200)
    assert d["difference"] > 0 and 0 < d["lo"] <= d["difference"] <= d["hi"]
    same = paired_auc_difference(base, base, N, n_boot=50)
    assert same == {"difference": 0.0, "lo": 0.0, "hi": 0.0}  # the same rows resampled for both runs
    with pytest.raises(ValueError, match="same queries"):
        paired_auc_difference(base, base[:-1], N)


def test_m1_reproduced_only_with_a_signal_an_equivalence_and_a_lowered_difference():
    rng = np.random.default_rng(2)
    strong = _scores(rng, 1.5)
    same = {e: _rows(0.7) for e in (1.0, 4.0, math.inf)}
    lo = {1.0: 0.45, 4.0: 0.45, math.inf: 0.6}
    gone = _mitigation(lo, same, _rows(0.7), {math.inf: strong, 1.0: _exactly_half(), 4.0: _exactly_half()})
    record = m1_record(gone)
    assert record["verdict"] == "reproduced" and record["null_rate"] <= 0.05
    assert "within 0.5 ± 0.05" in record["reason"] and "power" in record["reason"] and "permuted" in record["null"]
    gone.vanilla_scores[CLIPPED] = strong  # the clipped run without noise: the noise's share, reported beside
    assert "∞ clipped minus ε=4 +" in m1_record(gone)["ours"]
    # a non-detection at 50 + 50 queries: intervals cover 0.5 but are far wider than the margin
    noisy = {e: rng.normal(size=2 * N) for e in (1.0, 4.0)}
    wide = m1_record(_mitigation(lo, same, _rows(0.7), {math.inf: strong, **noisy}))
    assert wide["verdict"] == "inconclusive" and "removal not shown" in wide["reason"]
    assert "80% power needs about" in wide["reason"]
    kept = m1_record(_mitigation({1.0: 0.4, 4.0: 0.51, math.inf: 0.6}, same, _rows(0.7), {math.inf: strong, **noisy}))
    assert kept["verdict"] == "differs"
    absent = m1_record(
        _mitigation({1.0: 0.4, 4.0: 0.45, math.inf: 0.48}, same, _rows(0.7), {math.inf: strong, **noisy})
    )
    assert absent["verdict"] == "inconclusive" and "no signal to remove" in absent["reason"]


def test_m1_is_not_reproduced_when_the_private_run_is_as_strong_as_the_plain_one():
    """Equivalent to 0.5 is not enough: the paired difference must show that DP lowered the signal."""
    rng = np.random.default_rng(3)
    plain = _exactly_half()
    same = {e: _rows(0.7) for e in (4.0, math.inf)}
    record = m1_record(_mitigation({4.0: 0.45, math.inf: 0.6}, same, _rows(0.7), {math.inf: plain, 4.0: plain}))
    assert record["verdict"] == "inconclusive" and "includes 0" in record["reason"]
    assert observed_bounds(_scores(rng, 0.0), N)[0] < 0.5


def test_m1_null_permutes_membership_and_scores_that_carry_nothing_are_never_reproduced():
    rng = np.random.default_rng(0)
    strong = _scores(rng, 1.5)
    base = _mitigation({1.0: 0.45, 4.0: 0.45, math.inf: 0.6}, {}, None)
    m = Mitigation(base.table, 1.0, base.summary, {}, None, {PLAIN: strong, "1": strong, "4": strong}, N)
    assert m1_null_rate(m, [1.0, 4.0], 200, 50) < 0.05
    assert m1_null_rate(Mitigation(base.table, 1.0, base.summary, {}), [4.0]) is None


# -- M2 -------------------------------------------------------------------------------------------------------
LO = {1.0: 0.4, 4.0: 0.45, math.inf: 0.6}


def test_m2_holds_by_construction_when_fine_tuning_does_not_help():
    """Identical rows everywhere: both costs 0 and no gain, so a model that learns nothing passes."""
    claims = mitigation_claims(_mitigation(LO, {1.0: _rows(0.5), 4.0: _rows(0.9), math.inf: _rows(0.9)}, _rows(0.9)))
    assert claims[1]["verdict"] == "holds by construction" and "learns nothing" in claims[1]["reason"]


def test_m2_reproduced_against_a_real_gain_and_differs_when_dp_takes_it():
    ref, plain = _rows(0.85), _rows(0.95)  # fine-tuning gains 10 points
    cheap = m2_record(_mitigation(LO, {1.0: _rows(0.9), 4.0: _rows(0.95), math.inf: plain}, ref))
    assert cheap["verdict"] == "reproduced" and "gain" in cheap["ours"] and "real gain" in cheap["reason"]
    dear = m2_record(_mitigation(LO, {1.0: _rows(0.85), 4.0: _rows(0.85), math.inf: plain}, ref))
    assert dear["verdict"] == "differs" and "ε = ∞" in dear["reason"]  # DP took the whole gain


def test_m2_reads_the_utility_series_and_reports_clipping_apart():
    ref, plain = _rows(0.85), _rows(0.95)
    correct = {run_label(e): c for e, c in {4.0: _rows(0.93), math.inf: plain}.items()}
    correct[CLIPPED] = _rows(0.94)
    utility = Mitigation(_table({4.0: 0.45, math.inf: 0.6}), 1.0, pd.DataFrame(), correct, ref, None, N, "none")
    attack = _mitigation(LO, {1.0: _rows(0.9), 4.0: _rows(0.9), math.inf: _rows(0.6)}, _rows(0.9))
    m2 = mitigation_claims(attack, utility=utility)[1]
    assert "label condition none" in m2["ours"] and "clipping alone costs +0.010" in m2["ours"]
    assert m2["verdict"] == "reproduced"


def test_m2_differs_when_dp_costs_more_than_the_budget_against_m_ref_even_if_eps_inf_is_worse():
    """Under label condition all, the plain run loses true-label accuracy: being better than it is not enough."""
    ref, plain = _rows(0.9), _rows(0.6)
    private = _rows(0.9 - 4 * UTILITY_BUDGET)
    claims = mitigation_claims(_mitigation(LO, {1.0: _rows(0.5), 4.0: private, math.inf: plain}, ref))
    assert claims[1]["verdict"] == "differs"
    assert "M_ref" in claims[1]["reason"]
    assert accuracy_cost(_mitigation(LO, {4.0: private, math.inf: plain}, ref), 4.0, "inf")["cost"] < 0


def test_cost_verdict_is_inconclusive_near_the_budget():
    ref = _rows(0.9)
    near = ref.copy()
    near[: int(UTILITY_BUDGET * 400)] = 0.0  # 20 of 400 rows lost: a cost of exactly the budget, its interval around it
    verdict, _ = cost_verdict({"ref": accuracy_cost(_mitigation(LO, {4.0: near, math.inf: ref}, ref), 4.0, "ref")})
    assert verdict == "inconclusive"


def test_accuracy_cost_is_paired_and_names_its_reference():
    m = _mitigation(LO, {4.0: _rows(0.6), math.inf: _rows(0.7)}, _rows(0.8))
    inf, ref = accuracy_cost(m, 4.0, "inf"), accuracy_cost(m, "4", "ref")
    assert abs(inf["cost"] - 0.1) < 1e-12 and abs(ref["cost"] - 0.2) < 1e-12
    assert inf["lo"] <= inf["cost"] <= inf["hi"]
    with pytest.raises(ValueError, match="against"):
        accuracy_cost(m, 4.0, "plain")
    with pytest.raises(ValueError, match="missing"):
        accuracy_cost(m, 4.0, "clipped")


def test_removal_threshold_is_the_largest_eps_below_which_every_interval_covers_half():
    table = _mitigation({1.0: 0.4, 4.0: 0.48, 16.0: 0.55, 64.0: 0.45, math.inf: 0.6}, {}).table
    assert removal_threshold(table) == 4.0
    assert removal_threshold(_mitigation({1.0: 0.52, math.inf: 0.6}, {}).table) is None
