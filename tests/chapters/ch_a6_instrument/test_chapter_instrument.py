"""The instrument (notebook 04): the control's construction, the context attacks, the sensitivity curve's readings,
P1 and P2."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from iclmem.chapters.ch_a6_instrument.claims import instrument_claims
from iclmem.chapters.ch_a6_instrument.instrument import (
    context_attack,
    sensitivity_specs,
    vanilla_attack,
    weakest_detection,
)
from iclmem.chapters.ch_a6_instrument.instrument_cells import CONTROL_CONDITION
from iclmem.data import deduplicate, load_dataset, split_manifest
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.training.finetune import FinetuneConfig, finetune, prepare_run_data

TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)


@pytest.fixture(scope="module")
def reference() -> ReferenceLTM:
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny-instrument-model")


def _table(tmp_path, n: int = 200):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    frame["target"] = (frame.a + 0.3 * rng.normal(size=n) > 0.4).astype(
        int
    )  # about 65/35: many labels survive a permutation
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return deduplicate(load_dataset(path, target="target", task="classification"))


def test_the_control_randomizes_members_and_non_members_alike(tmp_path):
    """Under the control's condition both pools carry permuted labels: the share a permutation leaves unchanged (a label
    equal to the true one, which a feature could predict) is about the same among members and non-members, so it helps
    neither pool; under `members` only the members' labels change."""
    table = _table(tmp_path)
    true = split_manifest(table, query_size=40, seed=0, results_dir=tmp_path)
    ctl = split_manifest(table, query_size=40, seed=0, label_condition=CONTROL_CONDITION, results_dir=tmp_path)
    changed = {
        pool: np.mean(np.asarray(ctl.labels(table, pool)) != np.asarray(true.labels(table, pool)))
        for pool in ("members", "non_members")
    }
    assert 0.2 < changed["members"] < 0.8 and 0.2 < changed["non_members"] < 0.8
    assert abs(changed["members"] - changed["non_members"]) < 0.2
    only = split_manifest(table, query_size=40, seed=0, label_condition="members", results_dir=tmp_path)
    assert np.array_equal(np.asarray(only.labels(table, "non_members")), np.asarray(true.labels(table, "non_members")))


def test_context_attack_on_all_of_the_context_is_the_vanilla_attack(tmp_path, reference):
    table = _table(tmp_path)
    manifest = split_manifest(table, query_size=30, seed=0, label_condition=CONTROL_CONDITION, results_dir=tmp_path)
    run = finetune(
        manifest,
        table,
        FinetuneConfig(3e-3, epochs=10, probe_epochs=(0, 10), context_size=40),
        reference,
        tmp_path,
        progress=False,
    )
    full = context_attack(run, table, 10, reference, 1.0, n_boot=50)
    assert full == pytest.approx(vanilla_attack(run, table, 10, reference, n_boot=50))
    half = context_attack(run, table, 10, reference, 0.5, n_boot=50)
    assert half["auc"] != full["auc"] and half["lo"] <= half["auc"] <= half["hi"]
    data = prepare_run_data(run.manifest, table, run.config)
    assert len(data.context_y) == 40  # half of it is 20 rows, drawn by the seed


def test_sensitivity_specs_run_once_per_rate_to_the_last_epoch():
    specs = sensitivity_specs("breast_cancer", [1e-3, 3e-3], [10, 50, 250], 50, 64)
    assert [(s.learning_rate, s.epochs, s.label_condition) for s in specs] == [(1e-3, 250, "all"), (3e-3, 250, "all")]


def _curve(vanilla: list[tuple[float, float]], probe: list[tuple[float, float]]) -> pd.DataFrame:
    rows = []
    for i, ((v, vlo), (p, plo)) in enumerate(zip(vanilla, probe, strict=True)):
        rows.append(
            {
                "learning_rate": 1e-3,
                "epoch": 10 * (i + 1),
                "vanilla AUC": v,
                "vanilla lo": vlo,
                "vanilla hi": v + 0.1,
                "half-context AUC": v,
                "half-context lo": vlo,
                "half-context hi": v + 0.1,
                "probe AUC": p,
                "probe lo": plo,
                "probe hi": p + 0.1,
                "probe detects": plo > 0.5,
                "run_key": "r",
            }
        )
    return pd.DataFrame(rows)


def test_weakest_detection_and_p1():
    curve = _curve([(0.6, 0.52), (0.8, 0.7), (0.95, 0.9)], [(0.52, 0.42), (0.62, 0.53), (0.7, 0.6)])
    weakest = weakest_detection(curve)
    assert weakest["detected"] and weakest["row"]["vanilla AUC"] == 0.8 and "0.800" in weakest["text"]
    quiet = {"r@30": np.full(100, 0.4)}  # the probe's bound never clears 0.5 under the permuted membership
    negative = {
        "n": 100,
        "excluded": 4,
        "sets": 4,
        "set_shares": [0.04] * 4,
        "p_value": 0.6,
        "binomial_p": 0.6,
        "passed": True,
    }
    p1, p2 = instrument_claims(curve, quiet, negative)
    assert p1["id"] == "P1" and p1["verdict"] == "reproduced" and p1["null_rate"] == 0.0
    assert p2["verdict"] == "reproduced" and p2["null"].startswith("no null applies")
    blind = _curve([(0.6, 0.52), (0.95, 0.9)], [(0.5, 0.4), (0.55, 0.45)])
    assert not weakest_detection(blind)["detected"] and "never clears 0.5" in weakest_detection(blind)["text"]
    assert (
        instrument_claims(blind, {"r@20": np.full(100, 0.4)}, negative)[0]["verdict"] == "differs"
    )  # there, and unseen
    nothing = _curve([(0.55, 0.45)], [(0.55, 0.45)])
    assert instrument_claims(nothing, None, negative)[0]["verdict"] == "inconclusive"  # nothing known to detect
    failing = {"n": 100, "excluded": 30, "sets": 4, "set_shares": [0.3] * 4, "p_value": 1e-9, "passed": False}
    assert instrument_claims(curve, quiet, failing)[1]["verdict"] == "differs"
    two_sets = {"n": 50, "excluded": 2, "sets": 2, "set_shares": [0.04, 0.04], "p_value": float("nan"), "passed": None}
    p2 = instrument_claims(curve, quiet, two_sets)[1]
    assert p2["verdict"] == "not testable here" and "too few units" in p2["reason"]
    few_sets = {**negative, "verdict": "inconclusive"}
    p2 = instrument_claims(curve, quiet, few_sets)[1]
    assert p2["verdict"] == "inconclusive" and "too few for a pass" in p2["reason"]
    many = {**negative, "sets": 108, "set_shares": [0.0] * 60 + [0.05] * 40 + [0.42] * 8}  # a design's sets
    p2 = instrument_claims(curve, quiet, many)[1]
    assert "0% in 60, median 0%, largest 42%" in p2["ours"] and "5%, 5%" not in p2["ours"]


def test_p1s_choice_of_setting_is_made_again_in_every_null_draw():
    from iclmem.chapters.ch_a6_instrument.instrument_cells import selection_null

    curve = _curve([(0.6, 0.52), (0.8, 0.7), (0.95, 0.9)], [(0.52, 0.42), (0.62, 0.53), (0.7, 0.6)])
    negative = {"n": 100, "excluded": 4, "sets": 4, "set_shares": [0.04] * 4, "p_value": 0.6, "passed": True}
    bounds = {"r@10": np.full(100, 0.6), "r@20": np.full(100, 0.4), "r@30": np.full(100, 0.4)}
    fixed = instrument_claims(curve, bounds, negative)[0]
    assert fixed["null_rate"] == 0.0  # at the real choice (epoch 30) the permuted bound never clears 0.5
    picks_first = np.zeros(100, dtype=int)  # every draw chooses the setting where chance clears 0.5
    replayed = instrument_claims(curve, bounds, negative, picks_first)[0]
    assert replayed["null_rate"] == 1.0 and replayed["verdict"] == "inconclusive"
    assert "each draw chooses its own strongest setting" in replayed["null"] and replayed["null_draws"] == 100
    # the draws' choices: the largest permuted vanilla AUC over the curve's settings
    rng = np.random.default_rng(0)
    scores = {f"r@{e}": (rng.normal(size=20), rng.normal(size=30)) for e in (10, 20, 30)}
    scores["r@20"] = (scores["r@20"][0] + 100, scores["r@20"][1])  # members far above: any permutation's AUC varies
    choice = selection_null(curve, scores, 50)
    assert choice.shape == (50,) and set(choice) <= {0, 1, 2}
    np.testing.assert_array_equal(choice, selection_null(curve, scores, 50))  # seeded


def test_error_bars_stay_at_least_zero_when_a_small_bootstrap_leaves_the_estimate_outside_its_interval():
    """With few resamples (an own table's tiny n_boot) a percentile interval can miss its point estimate; matplotlib
    refuses negative error bars, so the curves' figures clip them at 0 (the interval itself is shown as computed)."""
    import matplotlib.pyplot as plt

    from iclmem.chapters.ch_a6_instrument.instrument import error_bars, plot_sensitivity
    from iclmem.chapters.ch_a6_instrument.table_curves import plot_table_curves

    curve = pd.DataFrame(
        {
            "dataset": "mine",
            "condition": ["none", "all"],
            "vanilla AUC": [0.6, 0.5],
            "vanilla lo": [0.62, 0.4],
            "vanilla hi": [0.7, 0.55],
        }
    )
    for name in ("probe", "half-context"):
        curve[[f"{name} AUC", f"{name} lo", f"{name} hi"]] = [[0.5, 0.45, 0.49], [0.55, 0.5, 0.6]]
    low, high = error_bars(curve, "vanilla")
    assert np.allclose(low, [0, 0.1]) and np.allclose(high, [0.1, 0.05])
    assert np.allclose(error_bars(curve, "probe")[1], [0, 0.05])
    plt.close(plot_table_curves(curve))
    plt.close(plot_sensitivity(curve))
