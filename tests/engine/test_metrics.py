"""Membership metrics: AUC, TPR@FPR, bootstrap intervals, delta scores, gaps (Sec. 4.2, App. A.4, B.2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from iclmem.stats.metrics import (
    METRIC_DIRECTION,
    MetricsError,
    attack_metrics,
    attack_statistics,
    auc,
    bootstrap,
    bootstrap_attack_statistics,
    delta_scores,
    gap_stats,
    loss_gaps,
    membership_score,
    roc_curve,
    roc_points,
    suite_scores,
    tpr_at_fpr,
)

torch.set_num_threads(1)


def test_auc_hand_computed_with_ties():
    # 9 pairs: 3 beats all (3); 2 beats 1 and ties twice (1 + 2 x 0.5); 1 ties once (0.5) -> 5.5 / 9
    m, n = [3, 2, 1], [1, 2, 2]
    wins = sum((a > b) + 0.5 * (a == b) for a in m for b in n)
    assert wins == 5.5
    assert auc(m, n) == pytest.approx(5.5 / 9)
    assert auc([1, 1], [1, 1, 1]) == 0.5
    assert auc([5, 6], [1, 2]) == 1.0 and auc([1, 2], [5, 6]) == 0.0
    assert attack_statistics(m, n)["auc"] == pytest.approx(5.5 / 9)  # trapezoid area agrees with Mann-Whitney


def test_auc_matches_sklearn_on_random_scores():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    m, n = rng.integers(0, 6, 40).astype(float), rng.integers(0, 6, 55).astype(float)  # many ties
    expected = roc_auc_score(np.r_[np.ones(40), np.zeros(55)], np.r_[m, n])
    assert auc(m, n) == pytest.approx(expected) and attack_statistics(m, n)["auc"] == pytest.approx(expected)


def test_roc_curve_points():
    c = roc_curve([3, 2], [2, 1])
    assert c.fpr.tolist() == [0, 0, 0.5, 1] and c.tpr.tolist() == [0, 0.5, 1, 1]
    assert c.thresholds[0] == np.inf and c.thresholds[1:].tolist() == [3, 2, 1]
    pts = roc_points([3, 2], [2, 1], floor=1e-3)
    assert pts.fpr_plot.min() == 1e-3 and (pts.tpr_plot > 0).all()


def test_tpr_at_fpr_is_the_largest_tpr_with_fpr_at_most_the_target():
    members = list(range(10, 20))  # 10 members, all above non-members 0..8 except ties below
    non = [float(i) for i in range(9)] + [15.0]  # one non-member scores 15: 10 non-members
    # thresholds > 15: tpr = 4/10 at fpr 0; threshold 15: fpr 0.1, tpr 5/10; threshold 10: tpr 1, fpr 0.1
    assert tpr_at_fpr(members, non, 0.01) == pytest.approx(0.4)
    assert tpr_at_fpr(members, non, 0.1) == pytest.approx(1.0)
    assert tpr_at_fpr(members, non, 0.099) == pytest.approx(0.4)
    assert tpr_at_fpr([1, 1], [1, 1], 0.5) == 0.0  # all tied: only (0,0) and (1,1)
    with pytest.raises(MetricsError):
        tpr_at_fpr([1], [0], 1.5)


def test_bootstrap_intervals_contain_the_point_and_are_seeded():
    rng = np.random.default_rng(1)
    m, n = rng.normal(0.5, 1, 80), rng.normal(0, 1, 90)
    a = attack_metrics(m, n, n_boot=300, seed=4)
    assert a["auc_lo"] <= a["auc"] <= a["auc_hi"] and a["auc_hi"] - a["auc_lo"] < 0.3
    assert a["tpr10_lo"] <= a["tpr10"] <= a["tpr10_hi"]
    assert a == attack_metrics(m, n, n_boot=300, seed=4)
    assert a != attack_metrics(m, n, n_boot=300, seed=5)  # another seed, other resamples
    assert set(attack_metrics(m, n, n_boot=0)) == {"auc", "tpr1", "tpr10"}


@pytest.mark.parametrize("rounding", [None, 0])
def test_vectorized_bootstrap_equals_the_resample_loop(rounding):
    """Same resamples, same statistics as looping attack_statistics over bootstrap(), ties included."""
    rng = np.random.default_rng(2)
    m, n = rng.normal(0.4, 1, 37), rng.normal(0, 1, 120)
    if rounding is not None:  # heavy ties: a handful of distinct values
        m, n = np.round(m, rounding), np.round(n, rounding)
    loop = bootstrap(m, n, attack_statistics, n_boot=50, seed=9)
    fast = bootstrap_attack_statistics(m, n, n_boot=50, seed=9)
    assert list(fast.columns) == list(loop.columns) == ["auc", "tpr1", "tpr10"]
    np.testing.assert_allclose(fast.to_numpy(), loop.to_numpy(), atol=1e-12)
    assert fast.auc.std() > 0  # the resamples differ
    with pytest.raises(MetricsError, match="n_boot"):
        bootstrap_attack_statistics(m, n, n_boot=0)


def test_bad_inputs():
    with pytest.raises(MetricsError, match="NaN"):
        auc([1.0, np.nan], [0.0])
    with pytest.raises(MetricsError, match="0 non-member"):
        auc([1.0], [])
    with pytest.raises(MetricsError, match="0 member"):
        attack_metrics([], [1.0])
    with pytest.raises(MetricsError, match="unknown metric"):
        membership_score("accuracy", 1.0)


def test_membership_direction():
    assert METRIC_DIRECTION == {"loss": "lower", "entropy": "lower", "confidence": "higher"}
    assert membership_score("loss", [1.0, -2.0]).tolist() == [-1.0, 2.0]
    assert membership_score("entropy", 0.5) == -0.5
    assert membership_score("confidence", [0.2]).tolist() == [0.2]


def _frame(values: dict[tuple[int, bool], list[float]], manips=("a", "b")) -> pd.DataFrame:
    rows = [
        {"query_id": q, "is_member": mem, "manipulation": k, "loss": v}
        for (q, mem), vals in values.items()
        for k, v in zip(manips, vals, strict=True)
    ]
    return pd.DataFrame(rows)


def test_suite_delta_scores_and_gaps_hand_computed():
    theta = _frame({(1, True): [1.0, 3.0], (2, False): [2.0, 2.0], (3, False): [4.0, 0.0]})
    ref = _frame({(1, True): [3.0, 3.0], (2, False): [2.0, 1.0], (3, False): [1.0, 1.0]})
    s = suite_scores(theta).set_index("query_id").S
    assert s.to_dict() == {1: 2.0, 2: 2.0, 3: 2.0}
    d = delta_scores(theta, ref).set_index("query_id")
    assert d.delta.to_dict() == {1: -1.0, 2: 0.5, 3: 1.0}
    assert d.score.to_dict() == {1: 1.0, 2: -0.5, 3: -1.0}  # lower loss => member
    g = loss_gaps(theta)
    assert g.to_dict() == {"a": 1.0 - 3.0, "b": 3.0 - 1.0}
    assert gap_stats(g) == (0.0, 2.0)


def test_delta_scores_need_the_same_pairs():
    theta = _frame({(1, True): [1.0, 3.0], (2, False): [2.0, 2.0]})
    with pytest.raises(MetricsError, match="different"):
        delta_scores(theta, theta[theta.manipulation == "a"])
    with pytest.raises(MetricsError, match="twice"):
        delta_scores(pd.concat([theta, theta]), theta)
    with pytest.raises(MetricsError, match="lack columns"):
        suite_scores(theta.drop(columns="loss"))


def test_run_summary_equals_the_metrics_computed_one_by_one():
    """summarize_scores checks the pairs once and shares each metric's suite scores; its numbers are those of
    delta_scores and suite_scores called for each metric, and unpaired frames are still refused."""
    from iclmem.probe.summary import summarize_scores

    rng = np.random.default_rng(3)
    rows = [
        {
            "query_id": q,
            "is_member": q % 2 == 0,
            "manipulation": k,
            "loss": rng.normal() - 0.3 * (q % 2 == 0),
            "entropy": rng.normal(),
            "confidence": rng.uniform(),
        }
        for q in range(30)
        for k in ("a", "b", "c")
    ]
    theta = pd.DataFrame(rows)
    ref = theta.assign(
        loss=theta.loss + rng.normal(scale=0.5, size=len(theta)),
        entropy=theta.entropy * 0.5,
        confidence=rng.uniform(size=len(theta)),
    )
    row = summarize_scores(theta, ref, n_boot=50, seed=1)
    for metric in ("loss", "entropy", "confidence"):
        d = delta_scores(theta, ref, metric)
        expected = attack_metrics(d.score[d.is_member], d.score[~d.is_member], n_boot=50, seed=1)
        assert row[f"auc_{metric}"] == expected["auc"] and row[f"auc_{metric}_lo"] == expected["auc_lo"]
        assert row[f"tpr10_{metric}_hi"] == expected["tpr10_hi"]
        for prefix, frame in (("raw", theta), ("ref", ref)):
            s = suite_scores(frame, metric)
            score = membership_score(metric, s.S)
            raw = attack_metrics(score[s.is_member], score[~s.is_member], n_boot=0)
            assert row[f"{prefix}_auc_{metric}"] == raw["auc"] and row[f"{prefix}_tpr1_{metric}"] == raw["tpr1"]
    with pytest.raises(MetricsError, match="different"):
        summarize_scores(theta, ref[ref.manipulation != "c"], n_boot=0)
    with pytest.raises(MetricsError, match="lack columns"):
        summarize_scores(theta.drop(columns="manipulation"), ref, n_boot=0)


def test_negative_control_identical_models_give_zero_delta_and_chance_auc():
    rng = np.random.default_rng(0)
    theta = _frame({(q, q % 2 == 0): rng.normal(size=2).tolist() for q in range(20)})
    d = delta_scores(theta, theta.copy())
    assert (d.delta == 0).all()
    m, n = d.score[d.is_member], d.score[~d.is_member]
    assert auc(m, n) == 0.5 and tpr_at_fpr(m, n, 0.1) == 0.0


def test_null_halves_are_disjoint_seeded_halves():
    from iclmem.stats.metrics import MetricsError, null_halves

    values = np.arange(11, dtype=float)
    a, b = null_halves(values, seed=3)
    assert len(a) == len(b) == 5 and not set(a) & set(b) and set(a) | set(b) <= set(values)
    again = null_halves(values, seed=3)
    assert np.array_equal(a, again[0]) and not np.array_equal(a, null_halves(values, seed=4)[0])
    with pytest.raises(MetricsError, match="at least 4"):
        null_halves([1.0, 2.0, 3.0])
