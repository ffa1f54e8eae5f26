"""C12a-c of notebook 03 (Sec. 5 "Perturbation Effectiveness", Fig. 4) on synthetic probe scores, with their nulls."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.ch03_probing.claims import (
    FEATURE_CATEGORIES,
    NEUTRAL_DELTA,
    PAPER_PERTURBATION,
    SHUFFLE_CATEGORY,
    SKEW_CATEGORY,
    about_zero_agreement,
    effect_draws,
    equivalence_null_rate,
    perturbation_claims,
)
from iclmem.chapters.ch03_probing.probing import manipulation_effects
from iclmem.probe.effects import GROUPS, group_ranks, group_ranks_of, manipulation_aucs
from iclmem.report.records import record_from
from iclmem.report.registry import CLAIMS
from iclmem.stats.metrics import auc, membership_score
from iclmem.stats.permutation import permuted_labels

#: A small suite: name -> category (Tab. 7 keys), two manipulations per claim's category.
SUITE = {
    "baseline": "baseline",
    "shuffle_random": "positional_shuffling",
    "shuffle_first": "positional_shuffling",
    "feature_reduction_2": "feature_reduction",
    "distractor_1": "distractor_injection",
    "distractor_2": "distractor_injection",
    "skew_true_2": "skew_true",
    "skew_true_5": "skew_true",
    "mixed_true_5_non_true_5": "mixed_skewing",
}


def _frame(
    seed: int,
    n: int = 60,
    signal: float = 0.5,
    effect: dict[str, float] | None = None,
    noise: dict[str, float] | None = None,
    suite: dict[str, str] = SUITE,
    epoch: int = 1,
) -> pd.DataFrame:
    """Probe scores of one configuration: M_theta's loss lowers members' loss by ``signal`` + ``effect[k]`` under
    manipulation k.

    ``noise[k]``: the scale of manipulation k's own noise on top of a per-query component shared by all
    manipulations; a manipulation without noise and effect scores exactly as the baseline.
    """
    rng = np.random.default_rng(seed)
    names = list(suite)
    effect, noise = effect or {}, noise or {}
    member = np.arange(n) < n // 2
    ref = rng.gamma(2.0, size=(n, 1)) + 0.1 * rng.standard_normal((n, len(names)))
    own = rng.standard_normal((n, len(names))) * np.array([noise.get(k, 0.0) for k in names])
    lift = signal + np.array([effect.get(k, 0.0) for k in names])
    theta = ref + rng.standard_normal((n, 1)) + own - member[:, None] * lift
    parts = []
    for model, ep, loss in (("ref", -1, ref), ("theta", epoch, theta)):
        parts.append(
            pd.DataFrame(
                {
                    "query_id": np.repeat(100 + np.arange(n), len(names)),
                    "is_member": np.repeat(member, len(names)),
                    "manipulation": np.tile(names, n),
                    "category": np.tile([suite[k] for k in names], n),
                    "model": model,
                    "epoch": ep,
                    "loss": loss.ravel(),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def _claims(frames: list[pd.DataFrame], invariant: bool = False, **kw) -> dict[str, dict]:
    records = perturbation_claims([group_ranks(f, 1) for f in frames], "synthetic", invariant, **kw)
    for r in records:
        record_from(r)  # a valid claim record (the reproduced ones carry their null and a null rate <= 5%)
    return {r["id"]: r for r in records}


def _verdict(claim: str, frames: list[pd.DataFrame], invariant: bool = False) -> str:
    return _claims(frames, invariant)[claim]["verdict"]


NOISY = {k: 0.3 for k in SUITE if k != "baseline"}


# --- the null's computation ---------------------------------------------------------------------------


def test_group_deltas_equal_a_slow_per_permutation_auc_averaged_over_the_group():
    frame = _frame(3, n=14, noise=NOISY)
    frame["loss"] = frame.loss.round(1)  # ties, counted half by both
    ranks = group_ranks(frame, 1)
    labels = np.vstack([ranks.is_member, permuted_labels(ranks.is_member, 12, seed=5)])
    fast = ranks.deltas(labels)
    wide = {m: f.pivot(index="query_id", columns="manipulation", values="loss") for m, f in frame.groupby("model")}
    score = membership_score("loss", (wide["theta"] - wide["ref"]).to_numpy())
    names = list(wide["theta"].columns)
    members_of = {g: [k for k in SUITE if k != "baseline" and g in (SUITE[k], k)] for g in ranks.groups}
    assert ranks.groups == GROUPS  # every group C12 reads is in the suite
    assert {SKEW_CATEGORY, SHUFFLE_CATEGORY, *FEATURE_CATEGORIES, PAPER_PERTURBATION["best_single"]} == set(GROUPS)
    for p, lab in enumerate(labels):
        slow = {k: auc(score[lab, names.index(k)], score[~lab, names.index(k)]) for k in SUITE}
        for g, group in enumerate(ranks.groups):
            expected = np.mean([slow[k] - slow["baseline"] for k in members_of[group]])
            assert fast[p, g] == pytest.approx(expected, abs=1e-12)
    again = group_ranks_of(ranks.frame(), dict(zip(ranks.groups, ranks.sizes, strict=True)))
    assert np.array_equal(again.deltas(labels), fast)  # the frame a bundle keeps gives every draw back exactly


def test_effect_draws_observed_row_is_fig4s_mean_delta_auc():
    frames = [_frame(s, noise=NOISY, effect={"skew_true_2": 0.3}) for s in (1, 2)]
    draws = effect_draws([group_ranks(f, 1) for f in frames], n_perm=20, seed=0)
    effects = (
        manipulation_effects([manipulation_aucs(f, epochs=[1]) for f in frames])
        .set_index("manipulation")
        .mean_delta_auc
    )
    skew = [k for k, c in SUITE.items() if c == "skew_true"]
    assert draws.statistic("skew_true")[0] == pytest.approx(effects[skew].mean(), abs=1e-12)
    assert draws.statistic("mixed_true_5_non_true_5")[0] == pytest.approx(effects["mixed_true_5_non_true_5"])
    assert draws.values.shape == (21, len(GROUPS)) and draws.statistic("baseline") is None
    # configurations probing the same queries are permuted alike: the same frame twice gives the same null as once
    once = effect_draws([group_ranks(frames[0], 1)], n_perm=20, seed=0).values
    assert np.allclose(effect_draws([group_ranks(frames[0], 1)] * 2, n_perm=20, seed=0).values, once)


def test_equivalence_rule_and_its_null_rate_at_the_margin():
    rng = np.random.default_rng(0)
    narrow, wide = rng.normal(0, 0.001, 100), rng.normal(0, 0.02, 100)
    assert about_zero_agreement(0.001, narrow) == (True, False)
    assert about_zero_agreement(0.02, narrow) == (False, True)
    assert about_zero_agreement(0.001, wide) == (False, False)  # noise wider than the margin: cannot tell
    assert 0 < equivalence_null_rate(narrow) <= 0.05  # an effect of exactly +-margin passes in ~3% of draws
    assert equivalence_null_rate(wide) == 0.0
    assert equivalence_null_rate(np.zeros(100)) == 0.0  # no noise: a +-margin effect is never called ~0


# --- C12a: true-label skew raises AUC(Delta S) ----------------------------------------------------------


def test_c12a_skew_that_helps_is_reproduced_with_a_five_percent_null_rate():
    frames = [_frame(s, noise=NOISY, effect={"skew_true_2": 0.5, "skew_true_5": 0.5}) for s in (1, 2, 3)]
    r = _claims(frames)["C12a"]
    assert r["verdict"] == "reproduced" and r["null_rate"] == pytest.approx(0.05)
    assert (
        "skew true +0." in r["ours"]
        and "mixed_true_5_non_true_5" in r["ours"]
        and "over 100 permutations" in r["null_range"]
    )


def test_c12a_skew_that_hurts_differs_and_no_change_is_inconclusive():
    hurts = [_frame(s, noise=NOISY, effect={"skew_true_2": -0.5, "skew_true_5": -0.5}) for s in (1, 2)]
    assert _verdict("C12a", hurts) == "differs"
    same = [_frame(s, noise={"distractor_1": 0.3}) for s in (1, 2)]  # skew_true scores exactly as the baseline
    r = _claims(same)["C12a"]
    assert r["verdict"] == "inconclusive" and r["null_rate"] == 0.0 and "+0.0000" in r["observed"]


def test_c12a_is_rarely_reproduced_when_membership_is_exchangeable():
    records = [_claims([_frame(100 + s, n=30, signal=0.0, noise=NOISY)])["C12a"] for s in range(60)]
    verdicts = [r["verdict"] for r in records]
    assert verdicts.count("reproduced") <= 6  # ~5% of builds by construction (one-sided test at 5%); here 2 of 60
    assert verdicts.count("inconclusive") >= 48
    assert all(r["null_rate"] <= 0.05 for r in records)


def test_c12a_is_not_testable_without_skew_manipulations_or_configurations():
    suite = {k: c for k, c in SUITE.items() if c != "skew_true"}
    assert _verdict("C12a", [_frame(1, suite=suite, noise={"distractor_1": 0.3})]) == "not testable here"
    assert {r["verdict"] for r in perturbation_claims([], "none", False)} == {"not testable here"}


# --- C12b: positional shuffling changes AUC(Delta S) by about 0 -----------------------------------------


def test_c12b_holds_by_construction_for_a_row_order_invariant_model():
    r = _claims([_frame(1)], invariant=True)["C12b"]
    assert (
        r["verdict"] == "holds by construction"
        and "baseline context" in r["reason"]
        and r["null"].startswith("no null")
    )


def test_c12b_equivalence_verdicts_without_an_invariance():
    assert (
        _verdict("C12b", [_frame(s) for s in (1, 2)]) == "reproduced"
    )  # shuffles score as the baseline: exactly 0, no noise
    tiny = {"shuffle_random": 0.005, "shuffle_first": 0.005}
    r = _claims([_frame(s, n=100, noise=tiny) for s in (1, 2)])["C12b"]
    assert r["verdict"] == "reproduced" and 0 < r["null_rate"] <= 0.05 and "within" in r["reason"]
    shifted = {"shuffle_random": 0.6, "shuffle_first": 0.6}
    assert _verdict("C12b", [_frame(s, noise=tiny, effect=shifted) for s in (1, 2)]) == "differs"
    noisy = {"shuffle_random": 1.0, "shuffle_first": 1.0}
    r = _claims([_frame(s, noise=noisy) for s in (1, 2)])["C12b"]
    assert r["verdict"] == "inconclusive" and f"+-{NEUTRAL_DELTA:g}" in r["reason"]


def test_c12b_is_not_testable_without_shuffles():
    suite = {k: c for k, c in SUITE.items() if c != "positional_shuffling"}
    assert _verdict("C12b", [_frame(1, suite=suite)], invariant=True) == "not testable here"
    assert _verdict("C12b", [_frame(1, suite=suite)]) == "not testable here"


# --- C12c: feature reduction and distractor columns change AUC(Delta S) negligibly ----------------------

FEATURES = ("feature_reduction_2", "distractor_1", "distractor_2")


def test_c12c_equivalence_verdicts():
    tiny = dict.fromkeys(FEATURES, 0.005)
    r = _claims([_frame(s, n=100, noise=tiny) for s in (1, 2)], invariant=True)["C12c"]
    assert r["verdict"] == "reproduced" and 0 < r["null_rate"] <= 0.05
    assert "feature_reduction" in r["observed"] and "distractor_injection" in r["observed"]
    # one category off the margin is enough to differ (both must be about 0)
    assert (
        _verdict("C12c", [_frame(s, noise=tiny, effect={"distractor_1": 0.6, "distractor_2": 0.6}) for s in (1, 2)])
        == "differs"
    )
    r = _claims([_frame(s, noise=dict.fromkeys(FEATURES, 1.0)) for s in (1, 2)])["C12c"]
    assert r["verdict"] == "inconclusive" and "cannot be told" in r["reason"]


def test_c12c_is_not_testable_without_feature_manipulations_and_reads_the_one_probed():
    none = {k: c for k, c in SUITE.items() if c not in ("feature_reduction", "distractor_injection")}
    assert _verdict("C12c", [_frame(1, suite=none)]) == "not testable here"
    one = {k: c for k, c in SUITE.items() if c != "distractor_injection"}
    r = _claims([_frame(1, suite=one)])["C12c"]
    assert r["verdict"] == "reproduced" and "distractor_injection not probed" in r["reason"]


def test_the_three_records_are_the_registrys_c12_subclaims():
    ids = [r["id"] for r in perturbation_claims([group_ranks(_frame(1), 1)], "synthetic", True)]
    chapters = {c.id: c.chapter for c in CLAIMS}
    assert ids == ["C12a", "C12b", "C12c"] and {chapters[i] for i in ids} == {"notebooks/03_multiple_choice_probing"}


def test_a_selection_replayed_in_every_draw_averages_each_draws_own_configurations():
    configs = [group_ranks(_frame(s, noise=NOISY), 1) for s in (1, 2, 3)]
    n_perm = 40
    everyone = np.ones((1 + n_perm, 3), dtype=bool)
    np.testing.assert_allclose(
        effect_draws(configs, n_perm, 0, everyone).values, effect_draws(configs, n_perm, 0).values
    )
    only_first = np.zeros((1 + n_perm, 3), dtype=bool)
    only_first[:, 0] = True
    np.testing.assert_allclose(
        effect_draws(configs, n_perm, 0, only_first).values, effect_draws(configs[:1], n_perm, 0).values
    )
    # a draw that selects nothing averages over every configuration, as the real rule does
    nothing = only_first.copy()
    nothing[5] = False
    np.testing.assert_allclose(
        effect_draws(configs, n_perm, 0, nothing).values[5], effect_draws(configs, n_perm, 0).values[5]
    )
    with pytest.raises(ValueError, match=r"selected must have shape \(1 \+ n_perm, n_configs\) = \(41, 3\)"):
        effect_draws(configs, n_perm, 0, everyone[:, :2])
    records = perturbation_claims(configs, "detectable", False, n_perm=n_perm, selected=only_first)
    assert "1 detectable configurations, re-selected under every permutation" in records[0]["ours"]
    assert "selected again under each permutation" in records[0]["null"] and records[0]["null_draws"] == n_perm


def test_replayed_selection_reads_each_permutations_outcomes_in_the_rows_order():
    from iclmem.chapters.ch03_probing.claims import replayed_selection

    rows = pd.DataFrame({"run_key": ["b", "a"], "epoch": [10, 1], "outcome": ["detectable_memorization", "no_signal"]})
    null = pd.DataFrame(
        {
            "perm": [0, 0, 1, 1],
            "run_key": ["a", "b", "a", "b"],
            "epoch": [1, 10, 1, 10],
            "outcome": ["detectable_memorization", "no_signal", "no_signal", "no_signal"],
        }
    )
    np.testing.assert_array_equal(replayed_selection(rows, null), [[True, False], [False, True], [False, False]])
    with pytest.raises(ValueError, match="the null lacks some of the configurations"):
        replayed_selection(rows.assign(epoch=[10, 2]), null)


# --- manipulations that are the baseline's context for a model (issue 53, item 7) ----------------------------------


def test_c12a_names_a_manipulation_that_is_the_baseline_for_this_model():
    from iclmem.probe.invariances import REFERENCE_INVARIANCES
    from iclmem.probe.same_context import same_as_baseline

    same = same_as_baseline(REFERENCE_INVARIANCES)
    assert "mixed_true_5_non_true_5" in same and "skew_true_2" not in same
    frames = [_frame(s, noise=NOISY, effect={"skew_true_2": 0.3}) for s in (1, 2)]
    plain = _claims(frames, True, n_perm=20)["C12a"]
    named = _claims(frames, True, n_perm=20, same_as_base=same)["C12a"]
    assert "0 by construction, no measurement" in named["ours"] and "by construction" not in plain["ours"]
    assert named["verdict"] == plain["verdict"]  # the skew category still decides
    from iclmem.probe.manipulations import manipulation_names

    every_skew = _claims(frames, True, n_perm=20, same_as_base=[*same, *manipulation_names("skew_true")])["C12a"]
    assert every_skew["verdict"] == "holds by construction"


def test_no_manipulation_is_the_baseline_for_a_model_without_invariances():
    from iclmem.probe.invariances import NO_INVARIANCES, Invariances
    from iclmem.probe.same_context import same_as_baseline

    assert same_as_baseline(NO_INVARIANCES) == []
    order_only = same_as_baseline(Invariances(row_order=True))
    assert "shuffle_random" in order_only and "uniform_2" not in order_only
