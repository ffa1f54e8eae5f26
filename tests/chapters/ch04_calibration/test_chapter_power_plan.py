"""Notebook 04's power plan (iclmem.chapters.ch04_calibration.power_plan): sizes at which each tabular claim's rule
can decide."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.ch04_calibration.power_plan import design_effect, power_plan, rows_for_share
from iclmem.stats.permutation import hanley_mcneil_se, min_detectable_auc, queries_for_absence, queries_for_auc


def test_queries_for_auc_inverts_the_smallest_detectable_auc():
    n = queries_for_auc(0.668)
    assert min_detectable_auc(n, n, 0.8, 0.025) <= 0.668 < min_detectable_auc(n - 1, n - 1, 0.8, 0.025)
    assert queries_for_auc(0.58) > queries_for_auc(0.668)  # a weaker signal needs more queries
    assert queries_for_auc(0.5) is None


def test_an_absence_claim_needs_an_equivalence_test_of_its_own_size():
    n = queries_for_absence(0.60)
    z = 1.6448536 + 0.8416212
    assert 0.5 + z * hanley_mcneil_se(0.5, n, n) <= 0.60 < 0.5 + z * hanley_mcneil_se(0.5, n - 1, n - 1)
    assert queries_for_absence(0.55) > n


def test_share_sizes_and_the_design_effect_of_runs():
    assert rows_for_share(0.03, 0.12) == pytest.approx(45.6, abs=0.5)
    assert rows_for_share(0.1, 0.1) == np.inf
    whole_runs = np.repeat([True, False] * 5, 4)  # runs are all-or-nothing: 4 epochs are worth one
    assert design_effect(whole_runs, np.repeat(np.arange(10), 4)) > 2.5
    mixed = np.tile([True, False, False, False], 10)  # every run has the same share: epochs independent-ish
    assert design_effect(mixed, np.repeat(np.arange(10), 4)) == 1.0


def _summary(det_share: float, cond: str = "none") -> pd.DataFrame:
    rows = []
    for t in ("a", "b"):
        for q in (50, 512):
            for r in range(4):
                for e, epoch in enumerate((1, 10, 100)):
                    det = (r * 3 + e) < det_share * 12
                    rows.append(
                        {
                            "dataset": t,
                            "query_size": q,
                            "epoch": epoch,
                            "label_condition": cond,
                            "run_key": f"{t}-{q}-{r}",
                            "outcome": "detectable_memorization" if det else "no_signal",
                            "auc_loss": 0.7 if det else 0.5,
                            "auc_entropy": 0.5,
                            "auc_loss_lo": 0.6 if det else 0.4,
                            "auc_loss_hi": 0.8,
                            "auc_entropy_lo": 0.4,
                            "auc_entropy_hi": 0.6,
                            "tpr10_loss": 0.3 if det else 0.1,
                            "tpr1_loss": 0.0,
                            "tpr10_entropy": 0.1,
                            "tpr1_entropy": 0.0,
                            "n_members": min(q, 200),  # the Q=512 runs probed on a capped pool
                            "n_non_members": min(q, 200),
                        }
                    )
    return pd.DataFrame(rows)


def test_the_plan_reads_the_null_and_names_a_size_for_each_claim():
    plan = power_plan(_summary(0.25), [_summary(0.0)] * 20).set_index(["claim", "what the rule compares"])
    assert {"C1", "C2", "C3", "C5", "C6", "C7", "C8", "C9", "C11", "C13, M1", "P1"} <= set(
        plan.index.get_level_values(0)
    )
    c6 = plan.loc["C6"].iloc[0]
    assert c6["under the null"] == "0.0%" and c6["paper"] == "12.0%" and c6["needed for 80% power"].endswith("runs")
    c1 = plan.loc["C1"].iloc[0]
    assert c1["under the null"] == "0% of tables hit" and c1["could more data decide it?"] == "yes, with more tables"
    assert plan.loc["C11"].iloc[0]["could more data decide it?"].startswith("no")
    # each query size's probed pool, not one number for all (their median once read "125 + 125")
    assert plan.loc["C2"].iloc[0]["this grid"] == "50 + 50 (Q=50), 200 + 200 (Q=512) probed queries"
    # M rows never enter: the same grid under condition M alone has no membership-null rows
    assert power_plan(_summary(0.25, "members"), [_summary(0.0)] * 5).loc[lambda f: f.claim == "C6"].empty
