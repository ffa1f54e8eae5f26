"""The power computation of a registered design (iclmem.chapters.ch00_scorecard.design_power, design_plan; issue 57,
item 2): the share rules' exact binomials, the permutation-test simulation, the null of one row, the unit costs read
per table, and the cost of a grid, on small grids; the registered design itself is tested in test_decide_design.py."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.ch00_scorecard.design_plan import DesignFacts, table_units, task_costs
from iclmem.chapters.ch00_scorecard.design_power import (
    accepted,
    decay_rate,
    paper_collapse,
    paper_collapse_by_lr,
    paper_temporal,
    permutation_power,
    power_rows,
    row_null_rates,
    scaled_runs,
    share_power,
    two_q_power,
    within_group_permutations,
)
from iclmem.chapters.ch04_calibration.claims import tables_needed
from iclmem.chapters.ch05_regimes.claims import decays
from iclmem.report.verdicts import cluster_share_interval
from iclmem.sweep.gridfile import parse_grid


def test_the_runs_interval_holds_no_positive_share_without_a_hit():
    """The percentile bootstrap over runs of a share with no hit is [0, 0]: C6's Q=512 part needs a detectable run."""
    assert cluster_share_interval([False] * 12, list(range(12))) == (0.0, 0.0)
    ok = accepted(40, 0.018, "runs")
    assert not ok[0] and ok[1]


def test_share_power_agrees_with_tables_needed():
    """At the size tables_needed (chapter 04) finds, the Wilson rule has 80% power and a null rate of at most 5%;
    one table fewer, not both."""
    n = tables_needed(0.3, 0.8)
    power, rate = share_power(n, 0.3, 0.8, "wilson")
    assert power >= 0.8 and rate <= 0.05
    power, rate = share_power(n - 1, 0.3, 0.8, "wilson")
    assert not (power >= 0.8 and rate <= 0.05)


def test_two_q_power_multiplies_the_parts_and_scaled_runs_finds_a_size():
    p0, p1 = {50: 0.06, 512: 0.06}, {50: 0.12, 512: 0.018}
    a = share_power(300, 0.06, 0.12, "runs")
    b = share_power(100, 0.06, 0.018, "runs")
    assert two_q_power({50: 300, 512: 100}, p0, p1) == pytest.approx((a[0] * b[0], a[1] * b[1]))
    need = scaled_runs({50: 30, 512: 10}, lambda n: two_q_power(n, p0, p1))
    assert need is not None and need[50] > 30
    power, rate = two_q_power(need, p0, p1)
    assert power >= 0.8 and rate <= 0.05


def test_decay_rate_is_chapter_05s_rule():
    counts = np.random.default_rng(1).integers(0, 4, (300, 3))
    expected = np.mean([decays(pd.Series(c)) for c in counts])
    assert decay_rate(counts) == pytest.approx(expected)


def test_within_group_permutations_keep_each_unit_in_its_group():
    groups = np.array([0, 0, 0, 1, 1, 2])
    perm = within_group_permutations(groups, 50, np.random.default_rng(0))
    assert (groups[perm] == groups).all()
    assert all(sorted(p) == list(range(6)) for p in perm)


def test_permutation_power_is_high_for_a_large_effect_and_about_5_percent_for_none():
    labels = np.array([True, False] * 10)
    groups = np.arange(20) // 2

    def diff(v, lab):
        return (v * lab).sum(1) / lab.sum(1) - (v * ~lab).sum(1) / (~lab).sum(1)

    big = permutation_power(lambda rng: rng.normal(labels * 2.0, 1.0), diff, labels, groups)
    none = permutation_power(lambda rng: rng.normal(0.0, 1.0, 20), diff, labels, groups)
    assert big > 0.95 and none < 0.12


def test_row_null_rates_are_about_the_bound_readings_chance():
    null = row_null_rates([50], draws=800)
    assert 0.03 < null.loc[50, "detect"] < 0.10  # two metrics, each a 2.5% lower bound above 0.5
    assert null.loc[50, "c1"] <= null.loc[50, "detect"]
    assert null.loc[50, "c3"] < null.loc[50, "detect"] / 3


def test_the_paper_world_inputs():
    high, low = paper_collapse_by_lr()
    assert high > low and (high + low) / 2 == pytest.approx((paper_collapse(50) + paper_collapse(512)) / 2)
    q50, q512 = paper_temporal(50, [1, 50, 250]), paper_temporal(512, [1, 50, 100])
    assert q50[0] < q50[1] < q50[2] and q512[1] > q512[0] > q512[2] == 0


def _costs(tmp_path) -> dict:
    rows = [
        {"table": t, "Q": q, "kind": kind, "features": f, "step_s": 0.1 * f, "finetune_fixed_s": 1.0,
         "ref_s_per_query": 0.01, "theta_s_per_query": 0.02, "summary_s": 0.05}
        for t, kind, f in (("a", "binary", 10), ("b", "binary", 20), ("c", "multiclass", 10), ("d", "regression", 10))
        for q in (50, 512)
    ]  # fmt: skip
    return {"measured": rows, "null": {"per_run_epoch_s": {"50+50": 0.1, "512+512": 1.0}}}


def test_table_units_are_a_line_in_features_never_below_the_cheapest(tmp_path):
    costs = _costs(tmp_path)
    assert table_units(costs, "binary", 50, 15)["step_s"] == pytest.approx(1.5)
    assert table_units(costs, "binary", 50, 2)["step_s"] == pytest.approx(1.0)
    assert table_units(costs, "regression", 512, 30)["step_s"] == pytest.approx(1.0)


def _grid():
    return parse_grid(
        {
            "name": "tiny",
            "epochs": 10,
            "probe": {"max_queries": 512, "epochs": [0, 1, 10]},
            "parts": [
                {"datasets": ["daag_spam7", "wine_pl"], "learning_rates": [1e-4, 1e-2], "query_sizes": [50]},
                {"datasets": ["daag_spam7", "wine_pl"], "learning_rates": [1e-4], "query_sizes": [512],
                 "regimes": ["multi_task_fixed"]},
            ],
        }
    )  # fmt: skip


def test_task_costs_share_the_reference_scores_and_sum_a_joint_task(tmp_path):
    grid = _grid()
    facts = DesignFacts.of(grid)
    costs = task_costs(facts, _costs(tmp_path))
    single = costs[costs.regime == "single_task_fixed"]
    assert len(single) == 4 and len(costs) == 5
    first, second = single[single.dataset == "daag_spam7"].probe_s.tolist()
    assert first - second == pytest.approx(100 * 0.01)  # M_ref's 100 queries charged once per query set
    assert facts.rows.groupby("run").size().max() == 2  # epochs 1 and 10 probed, epoch 0 is M_ref's


def test_power_rows_cover_the_claims_on_a_small_grid(tmp_path):
    facts = DesignFacts.of(_grid())
    pilot = json.loads(
        json.dumps({"delta_auc_null": {c: {"sd_per_config": 0.02} for c in ("skew_true", "feature_reduction",
                                                                           "distractor_injection")}})
    )  # fmt: skip
    table = power_rows(facts, row_null_rates([50, 512], draws=200), pilot)
    assert {"C1", "C6", "C9", "C13", "P3"} <= set(table.claim)
    assert set(table.status) <= {
        "powered", "underpowered by design", "holds by construction", "not testable here",
        "not comparable (shown, not judged)", "outside this design",
    }  # fmt: skip
    assert (table[table.status == "underpowered by design"]["what it would take"] != "").all()
