"""Claims D1-D9 of Golchin et al. computed on constructed replication frames with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.ch06_llm_kshot import claims as ch06_claims
from iclmem.chapters.ch06_llm_kshot import paper as llm_kshot
from iclmem.chapters.ch06_llm_kshot.claims import (
    all_claims,
    claim_d1,
    claim_d2,
    claim_d3,
    claim_d4,
    claim_d5,
    claim_d6,
    claim_d7,
    claim_d8,
    claim_d9,
)
from iclmem.chapters.ch06_llm_kshot.judge_quality import kappa_reading
from iclmem.chapters.ch06_llm_kshot.matrices import Focus, memorization_matrix
from iclmem.chapters.ch06_llm_kshot.rules import (
    NULL_BOOT,
    ClaimDraws,
    Interval,
    directional_agreement,
    instance_interval,
    interval_directional_verdict,
    interval_equivalence_verdict,
    margin_agreement,
    pearson,
)
from iclmem.chapters.ch06_llm_kshot.tables import claim_results_table, verdict_counts_text
from iclmem.chapters.ch06_llm_kshot.transitions import transitions
from iclmem.report.records import VERDICTS, ClaimError, ClaimResult
from iclmem.stats.permutation import N_PERMUTATIONS, NULL_LEVEL

SETTINGS = ("full", "pairs_labels", "pairs_only")
FT = Focus("fine-tuned", members_only=True)
N = 20


def mem_frame(
    plan: dict[tuple[str, int], list[str]], members: list[bool] | None = None, model: str = "fine-tuned"
) -> pd.DataFrame:
    """One judged row per (setting, k) of ``plan`` and instance: ``plan[(setting, k)][i]`` is instance i's match."""
    n = len(next(iter(plan.values())))
    members = members if members is not None else [True] * n
    return pd.DataFrame(
        [
            {
                "model": model,
                "setting": s,
                "k": k,
                "instance_id": f"i{i:02d}",
                "member": members[i],
                "match": m,
                "error": None,
            }
            for (s, k), matches in plan.items()
            for i, m in enumerate(matches)
        ]
    )


def perf_frame(
    correct: dict[int, list[bool]], members: list[bool] | None = None, model: str = "fine-tuned"
) -> pd.DataFrame:
    n = len(next(iter(correct.values())))
    members = members if members is not None else [True] * n
    return pd.DataFrame(
        [
            {
                "model": model,
                "k": k,
                "instance_id": f"i{i:02d}",
                "member": members[i],
                "label": "abcd"[i % 4],  # four balanced labels: chance 25%
                "correct": c,
                "error": None,
            }
            for k, cs in correct.items()
            for i, c in enumerate(cs)
        ]
    )


def same_in_all_settings(
    by_k: dict[int, list[str]], settings: tuple[str, ...] = SETTINGS
) -> dict[tuple[str, int], list[str]]:
    return {(s, k): m for s in settings for k, m in by_k.items()}


def share(n_hit: int, hit: str = "exact", miss: str = "no", n: int = N) -> list[str]:
    return [hit] * n_hit + [miss] * (n - n_hit)


def iid(rng: np.random.Generator, values: tuple, n: int = N) -> list:
    """``n`` draws of ``values`` drawn alike for every label they are given to: no effect of that label."""
    return list(rng.choice(np.array(values, dtype=object), n))


def assert_null(r: ClaimResult, n: int = N_PERMUTATIONS) -> None:
    """The record carries its null: what is exchangeable, the observed statistic, its null range and a rate in [0,
    1]."""
    assert r.null and r.observed and r.null_range and f"over {n} draws" in r.null_range
    assert r.null_rate is not None and 0.0 <= r.null_rate <= 1.0 and f"{NULL_BOOT}-resample bootstrap" in r.null
    record = r.record()
    assert (record["null"], record["null_rate"]) == (r.null, r.null_rate)
    if r.verdict == "reproduced":
        assert r.null_rate <= NULL_LEVEL


# -- statistics and verdict rules ----------------------------------------------------------------------------
def test_bootstrap_is_seeded_percentile_and_undefined_cases():
    x = np.array([0.0] * 10 + [1.0] * 10)
    a = instance_interval(len(x), lambda idx: float(x[idx].mean()), n_boot=500, seed=3)
    b = instance_interval(len(x), lambda idx: float(x[idx].mean()), n_boot=500, seed=3)
    assert a == b and a.lo < 0.5 < a.hi and 0.2 < a.lo and a.hi < 0.8 and a.n_units == 20 and a.n_valid == 500
    const = instance_interval(5, lambda idx: 7.0, n_boot=100)
    assert (const.lo, const.hi) == (7.0, 7.0)
    assert instance_interval(1, lambda idx: 1.0) is None
    assert instance_interval(10, lambda idx: float("nan"), n_boot=50) is None
    assert "95% percentile bootstrap over 20 instances, 500 resamples, seed 3" in a.text()


def test_pearson():
    assert pearson([0, 1, 2], [1, 3, 5]) == pytest.approx(1.0)
    assert pearson([0, 1, 2], [5, 3, 1]) == pytest.approx(-1.0)
    assert math.isnan(pearson([0, 1, 2], [2, 2, 2])) and math.isnan(pearson([1], [1]))


def iv(lo: float, hi: float) -> Interval:
    return Interval(lo, hi, 10, 100, 100, 0)


def test_directional_rule_agrees_is_inside_the_noise_or_is_contradicted():
    assert directional_agreement(5.0, iv(1.0, 9.0)) == (True, False)
    assert directional_agreement(5.0, iv(-1.0, 9.0)) == (
        False,
        False,
    )  # right sign, interval includes 0: inside the noise
    # the other sign inside the noise: the interval still reaches the claimed side, so no contradiction (issue 53)
    assert directional_agreement(-5.0, iv(-9.0, 1.0)) == (False, False)
    assert directional_agreement(-5.0, iv(-9.0, -1.0)) == (False, True)  # the interval excludes the claimed rise
    # no effect in any resample (both rates at a floor): nothing either way, inconclusive rather than a contradiction
    assert directional_agreement(0.0, iv(0.0, 0.0)) == (False, False)
    assert directional_agreement(-5.0, iv(-9.0, -1.0), sign=-1) == (True, False)
    assert directional_agreement(5.0, None) == directional_agreement(float("nan"), iv(1, 2)) == (None, False)


def test_directional_verdict_reads_the_null_rate():
    assert interval_directional_verdict(5.0, iv(1.0, 9.0), null_rate=0.03) == "reproduced"
    assert interval_directional_verdict(5.0, iv(1.0, 9.0), null_rate=0.06) == "inconclusive"  # chance agrees too often
    assert interval_directional_verdict(5.0, iv(-1.0, 9.0)) == "inconclusive"
    assert interval_directional_verdict(-5.0, iv(-9.0, -1.0)) == "differs"
    assert interval_directional_verdict(-5.0, iv(-9.0, -1.0), sign=-1, null_rate=0.0) == "reproduced"
    assert (
        interval_directional_verdict(5.0, None)
        == interval_directional_verdict(float("nan"), iv(1, 2))
        == "not testable here"
    )
    with pytest.raises(ValueError, match="null rate"):
        interval_directional_verdict(5.0, iv(1.0, 9.0))  # an agreeing rule without its null rate cannot be read


def test_equivalence_rule_and_verdict():
    assert margin_agreement(iv(-4.0, 6.0), margin=10) == (True, False)
    assert margin_agreement(iv(-4.0, 16.0), margin=10) == (False, False)  # straddles the margin
    assert margin_agreement(iv(12.0, 16.0), margin=10) == (False, True)  # wholly outside
    assert margin_agreement(iv(-4.0, 16.0), margin=10, one_sided=True) == (True, False)
    assert margin_agreement(iv(-14.0, 0.0), margin=10, one_sided=True) == (False, False)
    assert margin_agreement(iv(-30.0, -12.0), margin=10, one_sided=True) == (False, True)
    assert interval_equivalence_verdict(iv(-4.0, 6.0), margin=10, null_rate=0.01) == "reproduced"
    assert interval_equivalence_verdict(iv(-4.0, 6.0), margin=10, null_rate=0.2) == "inconclusive"
    assert interval_equivalence_verdict(iv(-4.0, 16.0), margin=10) == "inconclusive"
    assert interval_equivalence_verdict(iv(12.0, 16.0), margin=10) == "differs"
    assert interval_equivalence_verdict(iv(-14.0, 0.0), margin=10, one_sided=True) == "inconclusive"
    assert interval_equivalence_verdict(iv(-30.0, -12.0), margin=10, one_sided=True) == "differs"
    assert interval_equivalence_verdict(None) == "not testable here"


def test_focus_and_matrix():
    mem = mem_frame(
        {("full", 0): ["exact", "near-exact", "no", "no"], ("pairs_only", 0): ["no", "exact", "no", "near-exact"]},
        members=[True, True, False, False],
    )
    m = memorization_matrix(mem, FT)
    assert list(m.index) == ["i00", "i01"] and list(m[0]) == [0.5, 1.0]  # share of settings memorized
    assert list(memorization_matrix(mem, FT, ["full"], measure="exact")[0]) == [1.0, 0.0]
    assert len(memorization_matrix(mem, FT, members_only=False)) == 4
    assert memorization_matrix(mem, Focus("base")).empty


# -- D1, D2 --------------------------------------------------------------------------------------------------
def test_d1_reproduced_when_shots_raise_memorization():
    mem = mem_frame(same_in_all_settings({0: share(2), 10: share(12), 25: share(16)}))
    r = claim_d1(mem, FT, draws=ClaimDraws(n_boot=300))
    assert r.verdict == "reproduced" and r.claim_id == "D1"
    assert "zero-shot 10%" in r.ours and "below few-shot 60%" in r.ours and "few-shot 80%" in r.ours
    assert "+60 points" in r.ours
    assert "many-shot: no k run" in r.ours and "many-shot regime" in r.reason
    assert r.interval and r.interval.startswith("[+")
    assert r.paper == llm_kshot.paper_d1() and "11-16.5%" in r.paper and "24-75%" in r.paper
    assert_null(r)
    assert "k labels permuted within every instance" in r.null and r.observed == "k > 0 minus zero-shot: +60.0 points"
    assert "Under the null the same rule says so in" in r.reason


def test_d1_inconclusive_inside_the_noise_or_when_chance_agrees_as_often():
    weak = claim_d1(
        mem_frame(same_in_all_settings({0: share(2), 10: share(4)})), FT, draws=ClaimDraws(n_boot=300)
    )  # +10 points, 2 instances
    assert weak.verdict == "inconclusive" and "interval includes 0" in weak.reason
    assert_null(weak)
    three = claim_d1(
        mem_frame(same_in_all_settings({0: share(0, n=3), 10: share(3, n=3)})), FT, draws=ClaimDraws(n_boot=300)
    )
    # three instances that all rise: the rule agrees, but random k labels give three rises in 1 of 8 draws
    assert three.verdict == "inconclusive" and three.null_rate > NULL_LEVEL and "chance alone" in three.reason
    assert "interval lies above 0" in three.reason


def test_d1_differs_when_it_falls_is_inconclusive_when_flat_and_not_testable_without_zero_shot():
    flat = mem_frame(same_in_all_settings({0: share(5), 10: share(5)}))
    r = claim_d1(flat, FT, draws=ClaimDraws(n_boot=200))
    # no change in any resample: the interval reaches 0, so no contradiction (issue 53: as much evidence to differ
    # as to agree)
    assert r.verdict == "inconclusive" and "+0 points" in r.ours
    assert_null(r)
    falls = claim_d1(mem_frame(same_in_all_settings({0: share(15), 10: share(2)})), FT, draws=ClaimDraws(n_boot=200))
    assert falls.verdict == "differs"  # a clear fall: the interval lies below 0
    missing = claim_d1(mem_frame(same_in_all_settings({10: share(5)})), FT)
    assert missing.verdict == "not testable here" and missing.null is None and missing.null_rate is None


def test_d1_is_not_reproduced_when_k_carries_nothing():
    rng = np.random.default_rng(11)
    mem = mem_frame(same_in_all_settings({k: iid(rng, ("exact", "near-exact", "no"), 40) for k in (0, 10, 25)}))
    r = claim_d1(mem, FT, draws=ClaimDraws(n_boot=300))
    assert r.verdict != "reproduced"
    assert_null(r)
    assert r.null_rate <= 0.1  # the rule's own false-positive rate: about 2.5% (one side of a 95% interval)


def test_d1_reports_non_members_as_context():
    members = [True] * 10 + [False] * 10
    mem = mem_frame(same_in_all_settings({0: ["no"] * 20, 25: ["exact"] * 10 + ["no"] * 10}), members=members)
    r = claim_d1(mem, FT, draws=ClaimDraws(n_boot=100))
    assert "non-members: zero-shot 0%, k > 0 0%" in r.ours and "few-shot 100%" in r.ours


def test_d1_uses_the_pairs_labels_setting():
    plan = {
        ("pairs_labels", 0): share(0),
        ("pairs_labels", 10): share(0),
        ("full", 0): share(0),
        ("full", 10): share(20),
    }
    r = claim_d1(mem_frame(plan), FT, draws=ClaimDraws(n_boot=100))
    # the full setting's rise is not read: the pairs-and-labels setting is flat, inside the noise
    assert r.verdict == "inconclusive" and "segment pairs and labels setting" in r.reason


def test_d1_null_is_seeded():
    mem = mem_frame(same_in_all_settings({0: share(0, n=6), 10: share(5, n=6)}))
    a, b = (
        claim_d1(mem, FT, draws=ClaimDraws(n_boot=100, seed=4)),
        claim_d1(mem, FT, draws=ClaimDraws(n_boot=100, seed=4)),
    )
    assert (a.null_rate, a.null_range) == (b.null_rate, b.null_range) and "seed 4" in a.null
    assert claim_d1(mem, FT, draws=ClaimDraws(n_boot=100, n_perm=40)).null_range.endswith("over 40 draws")


def test_d2_uses_k25_or_says_which_k():
    mem = mem_frame(same_in_all_settings({0: share(0), 10: share(2), 25: share(15)}))
    r = claim_d2(mem, FT, draws=ClaimDraws(n_boot=200))
    assert r.verdict == "reproduced" and "k = 0 to k = 25: +75 points" in r.ours and "No k = 25" not in r.reason
    assert_null(r)
    assert "swapped at random" in r.null
    small = mem_frame(same_in_all_settings({0: share(0), 2: share(0)}))
    r2 = claim_d2(small, FT, draws=ClaimDraws(n_boot=100))
    assert r2.verdict == "inconclusive" and "No k = 25 was run" in r2.reason and "k = 2" in r2.reason  # flat at 0
    assert "75%" in r2.paper and "~53%" in r2.paper


def test_d2_verdicts():
    assert (
        claim_d2(
            mem_frame(same_in_all_settings({0: share(10), 25: share(2)})), FT, draws=ClaimDraws(n_boot=200)
        ).verdict
        == "differs"
    )
    weak = claim_d2(mem_frame(same_in_all_settings({0: share(2), 25: share(4)})), FT, draws=ClaimDraws(n_boot=300))
    assert weak.verdict == "inconclusive" and "interval includes 0" in weak.reason
    three = claim_d2(
        mem_frame(same_in_all_settings({0: share(0, n=3), 25: share(3, n=3)})), FT, draws=ClaimDraws(n_boot=300)
    )
    assert three.verdict == "inconclusive" and three.null_rate > NULL_LEVEL
    assert claim_d2(mem_frame(same_in_all_settings({0: share(3)})), FT).verdict == "not testable here"


def test_d2_is_not_reproduced_when_k_carries_nothing():
    rng = np.random.default_rng(12)
    r = claim_d2(
        mem_frame(same_in_all_settings({k: iid(rng, ("exact", "no"), 40) for k in (0, 25)})),
        FT,
        draws=ClaimDraws(n_boot=300),
    )
    assert r.verdict != "reproduced"
    assert_null(r)


# -- D3 --------------------------------------------------------------------------------------------------------
def test_transitions_count_near_to_exact_between_consecutive_k():
    plan = {
        ("full", 10): ["near-exact", "exact", "near-exact"],
        ("full", 25): ["exact", "near-exact", "near-exact"],
        ("full", 50): ["exact", "near-exact", "exact"],
    }
    t = transitions(mem_frame(plan), FT)
    assert list(t["up"]) == [1, 0, 1] and list(t["down"]) == [0, 1, 0]
    assert list(transitions(mem_frame(plan), FT, ks=[10, 50])["up"]) == [1, 0, 1]
    gap = {
        **plan,
        ("pairs_only", 10): ["near-exact"] * 3,
        ("pairs_only", 50): ["exact", "exact", "no"],
    }  # no k = 25 there
    assert list(transitions(mem_frame(gap), FT)["up"]) == [2, 1, 1]  # pairs_only: 10 -> 50 is consecutive


def test_d3_verdicts():
    up = mem_frame(same_in_all_settings({0: share(0), 10: share(16, "near-exact"), 50: share(16)}))
    r = claim_d3(up, FT, draws=ClaimDraws(n_boot=200))
    assert r.verdict == "reproduced" and "48 near-exact -> exact, 0 exact -> near-exact" in r.ours
    assert "exact share of memorized matches 0% at k = 10, 100% at k = 50" in r.ours
    assert_null(r)
    assert "the same permutation in all its settings" in r.null and "transitions over" in r.null_range
    down = mem_frame(same_in_all_settings({10: share(16), 50: share(16, "near-exact")}))
    assert claim_d3(down, FT, draws=ClaimDraws(n_boot=200)).verdict == "differs"
    none = mem_frame(same_in_all_settings({10: share(0), 50: share(0)}))
    assert claim_d3(none, FT).verdict == "not testable here"
    mixed = same_in_all_settings(
        {10: ["near-exact"] * 3 + ["exact"] * 2 + ["no"] * 15, 50: ["exact"] * 3 + ["near-exact"] * 2 + ["no"] * 15}
    )  # 3 instances up, 2 down
    noisy = claim_d3(mem_frame(mixed), FT, draws=ClaimDraws(n_boot=300))
    assert noisy.verdict == "inconclusive" and "net +3" in noisy.ours and "interval includes 0" in noisy.reason
    three = claim_d3(
        mem_frame(same_in_all_settings({10: share(3, "near-exact", n=3), 50: share(3, n=3)})),
        FT,
        draws=ClaimDraws(n_boot=300),
    )
    assert three.verdict == "inconclusive" and three.null_rate > NULL_LEVEL and "chance alone" in three.reason


def test_d3_with_k0_needs_enough_instances_against_its_null():
    tiny = mem_frame(same_in_all_settings({0: share(5, "near-exact"), 2: share(5)}))  # 5 of 20 instances turn exact
    rt = claim_d3(tiny, FT, draws=ClaimDraws(n_boot=100, n_perm=2000))
    # 5 instances, each up in all three settings: random k order gives five ups in 1 of 32 draws; the rule ~3.5%
    assert rt.verdict == "reproduced" and "include k = 0" in rt.reason and 0.02 < rt.null_rate <= NULL_LEVEL


def test_d3_is_not_reproduced_when_k_order_carries_nothing():
    rng = np.random.default_rng(13)
    plan = {(s, k): iid(rng, ("exact", "near-exact", "no"), 40) for s in SETTINGS for k in (10, 25, 50)}
    r = claim_d3(mem_frame(plan), FT, draws=ClaimDraws(n_boot=300))
    assert r.verdict != "reproduced"
    assert_null(r)


# -- D4, D5 ----------------------------------------------------------------------------------------------------
def test_d4_pairs_only_reaching_the_maximum():
    same = mem_frame(same_in_all_settings({0: share(1, n=200), 25: share(140, n=200)}))  # 70% in every setting
    r = claim_d4(
        same, FT, draws=ClaimDraws(n_boot=200, n_perm=1000)
    )  # the rule's rate at the margin: ~4%, estimated to +-0.6%
    assert r.verdict == "reproduced" and "gap +0 points" in r.ours and "the maximum is 70%" in r.reason
    assert_null(r, 1000)
    assert "dropped at random" in r.null and 0.0 < r.null_rate <= NULL_LEVEL and "maximum [" in r.interval
    plan = same_in_all_settings({0: share(1), 25: share(14)}, ("full", "pairs_labels"))
    plan[("pairs_only", 0)], plan[("pairs_only", 25)] = share(1), share(2)
    low = claim_d4(mem_frame(plan), FT, draws=ClaimDraws(n_boot=200))
    assert low.verdict == "differs" and "gap -60 points" in low.ours and "clearly different" in low.reason
    no_key = same_in_all_settings({0: share(1), 25: share(14)}, ("full", "pairs_labels"))
    assert claim_d4(mem_frame(no_key), FT).verdict == "not testable here"
    nothing = claim_d4(mem_frame(same_in_all_settings({0: share(3), 25: share(0)})), FT)
    assert (
        nothing.verdict == "not testable here" and "no maximum" in nothing.reason
    )  # 0% everywhere is not "reaching it"


def test_d4_equality_needs_a_narrow_interval():
    rng = np.random.default_rng(0)
    noisy = {
        ("full", 25): list(rng.choice(["exact", "no"], 6)),
        ("pairs_only", 25): list(rng.choice(["exact", "no"], 6)),
        ("full", 0): ["no"] * 6,
        ("pairs_only", 0): ["no"] * 6,
    }
    r = claim_d4(mem_frame(noisy), FT, draws=ClaimDraws(n_boot=300), margin=5.0)
    assert r.verdict == "inconclusive" and "not established" in r.reason  # the interval straddles the margin


def test_d4_tied_settings_on_few_instances_are_inconclusive():
    """20 instances memorized alike in every setting: the interval of the gap is [0, 0], but a build where segment pairs
    alone fall 10 points short ties as often on 20 instances; its null says so."""
    r = claim_d4(mem_frame(same_in_all_settings({0: share(1), 25: share(14)})), FT, draws=ClaimDraws(n_boot=200))
    assert r.interval.startswith("[+0, +0] points") and "the interval of the gap lies above -10 points" in r.reason
    assert r.verdict == "inconclusive" and r.null_rate > NULL_LEVEL and "chance alone" in r.reason
    assert_null(r)


def test_d4_equal_at_the_floor_is_inconclusive():
    """Every setting at 5%: within 10 points of the maximum whatever the prompt, so equality says nothing."""
    r = claim_d4(mem_frame(same_in_all_settings({0: share(0), 25: share(1)})), FT, draws=ClaimDraws(n_boot=300))
    assert (
        r.verdict == "inconclusive"
        and "by the floor" in r.reason
        and "the interval of the gap lies above -10 points" in r.reason
    )


def test_d4_is_not_reproduced_in_its_null_world():
    """Its null: segment pairs alone a margin short of settings that are otherwise exchangeable within an instance."""
    rng = np.random.default_rng(14)
    others = {(s, k): iid(rng, ("exact", "no"), 40) for s in ("full", "pairs_labels") for k in (0, 25)}
    short = {
        ("pairs_only", 0): share(0, n=40),
        ("pairs_only", 25): [m if rng.random() > 0.25 else "no" for m in others[("full", 25)]],
    }
    r = claim_d4(mem_frame({**others, **short}), FT, draws=ClaimDraws(n_boot=300))
    assert r.verdict != "reproduced"
    assert_null(r)
    floor = claim_d4(
        mem_frame(
            same_in_all_settings(
                {0: share(0, n=40), 25: iid(rng, ("exact", "no", "no", "no", "no", "no", "no", "no", "no", "no"), 40)}
            )
        ),
        FT,
    )
    assert floor.verdict != "reproduced"  # exchangeable settings near 0%: not "equal" in any sense that matters


@pytest.mark.slow
def test_d5_equal_from_25_different_at_zero_shot():
    n = 200
    big = {
        ("full", 0): share(140, n=n),
        ("pairs_labels", 0): share(0, n=n),
        ("full", 25): share(150, n=n),
        ("pairs_labels", 25): share(150, n=n),
        ("full", 50): share(160, n=n),
        ("pairs_labels", 50): share(160, n=n),
    }
    r = claim_d5(mem_frame(big), FT, draws=ClaimDraws(n_boot=200, n_perm=1000))
    assert r.verdict == "reproduced" and "+0 points at k = 25, 50, +70 points at k = 0" in r.ours
    assert r.interval and "k = 0:" in r.interval and "higher level at k = 25, 50" in r.interval
    assert_null(r, 1000)
    assert (
        "the larger of two rates" in r.null and "settings swapped" in r.null_range and "10 points apart" in r.null_range
    )
    plan = {
        ("full", 0): share(14),
        ("pairs_labels", 0): share(0),
        ("full", 25): share(15),
        ("pairs_labels", 25): share(15),
        ("full", 50): share(16),
        ("pairs_labels", 50): share(16),
    }
    few = claim_d5(
        mem_frame(plan), FT, draws=ClaimDraws(n_boot=200)
    )  # 20 tied instances: a 10-point gap ties as often, (a)'s null says so
    assert few.verdict == "inconclusive" and few.null_rate > NULL_LEVEL and "chance alone" in few.reason
    plan[("pairs_labels", 0)] = share(14)
    no_zero = claim_d5(mem_frame(plan), FT, draws=ClaimDraws(n_boot=200))
    # no zero-shot difference (14 against 14): inside the noise, not a contradiction
    assert no_zero.verdict == "inconclusive" and "not in the claimed direction" in no_zero.reason
    plan[("pairs_labels", 0)], plan[("pairs_labels", 50)] = share(0), share(0)
    apart = claim_d5(mem_frame(plan), FT, draws=ClaimDraws(n_boot=200))
    assert apart.verdict == "differs" and "clearly different" in apart.reason  # not equal at k >= 25


def test_d5_inconclusive_inside_the_noise_and_at_the_floor():
    weak = {
        ("full", 0): share(2),
        ("pairs_labels", 0): share(0),
        ("full", 25): share(15),
        ("pairs_labels", 25): share(15),
    }
    r = claim_d5(mem_frame(weak), FT, draws=ClaimDraws(n_boot=300))
    assert r.verdict == "inconclusive" and "+10 points at k = 0" in r.ours and "interval includes 0" in r.reason
    low = {
        ("full", 0): share(14),
        ("pairs_labels", 0): share(0),
        ("full", 25): share(1),
        ("pairs_labels", 25): share(1),
    }
    floor = claim_d5(
        mem_frame(low), FT, draws=ClaimDraws(n_boot=300)
    )  # 5% and 5%: within 10 points of each other whatever the prompt
    assert floor.verdict == "inconclusive" and "by the floor" in floor.reason


def test_d5_at_the_zero_shot_floor_is_inconclusive_not_differs():
    """0% zero-shot memorization in both settings: 0 - 0 says nothing about the difference D5 predicts (as D4 reads
    its floor); 1 memorized zero-shot completion in the segment pairs and labels setting still contradicts it."""
    plan = {
        ("full", 0): share(0),
        ("pairs_labels", 0): share(0),
        ("full", 25): share(15),
        ("pairs_labels", 25): share(15),
    }
    r = claim_d5(mem_frame(plan), FT, draws=ClaimDraws(n_boot=200))
    assert r.verdict == "inconclusive" and "sits at the floor" in r.reason
    plan[("pairs_labels", 0)] = share(3)
    assert claim_d5(mem_frame(plan), FT, draws=ClaimDraws(n_boot=200)).verdict == "differs"


@pytest.mark.slow
def test_d5_without_large_k_says_so():
    low = {("full", 0): share(14), ("pairs_labels", 0): share(0), ("full", 2): share(3), ("pairs_labels", 2): share(3)}
    r = claim_d5(mem_frame(low), FT, draws=ClaimDraws(n_boot=100))
    assert "No k >= 25 was run: part (a) uses k = 2" in r.reason
    assert r.verdict == "inconclusive" and "by the floor" in r.reason  # 15% each: its interval reaches below the margin
    high = {
        ("full", 0): share(140, n=200),
        ("pairs_labels", 0): share(0, n=200),
        ("full", 2): share(150, n=200),
        ("pairs_labels", 2): share(150, n=200),
    }
    r2 = claim_d5(mem_frame(high), FT, draws=ClaimDraws(n_boot=100, n_perm=1000))
    assert r2.verdict == "reproduced" and "No k >= 25 was run: part (a) uses k = 2" in r2.reason
    only_full = {("full", 0): share(1), ("full", 25): share(2)}
    assert claim_d5(mem_frame(only_full), FT).verdict == "not testable here"
    zero = {
        ("full", 0): share(14),
        ("pairs_labels", 0): share(0),
        ("full", 25): share(0),
        ("pairs_labels", 25): share(0),
    }
    assert claim_d5(mem_frame(zero), FT).verdict == "not testable here"  # 0% = 0% is no equality of memorization


def test_d5_is_not_reproduced_when_the_settings_are_exchangeable():
    rng = np.random.default_rng(15)
    plan = {(s, k): iid(rng, ("exact", "no"), 40) for s in ("full", "pairs_labels") for k in (0, 25, 50)}
    r = claim_d5(mem_frame(plan), FT, draws=ClaimDraws(n_boot=300))
    assert r.verdict != "reproduced" and r.null_rate is not None and 0.0 <= r.null_rate <= 1.0


# -- D6, D7, D8 ------------------------------------------------------------------------------------------------
def test_d6_gain_where_memorization_reaches_40_percent():
    mem = mem_frame(same_in_all_settings({0: share(0), 10: share(4), 25: share(12)}))  # 20% at 10, 60% at 25
    gain = perf_frame({0: [False] * 20, 10: [False] * 20, 25: [True] * 15 + [False] * 5})
    r = claim_d6(mem, gain, FT, draws=ClaimDraws(n_boot=200))
    assert r.verdict == "reproduced" and "at k = 25 (60%)" in r.ours and "75% vs zero-shot 0% (+75 points)" in r.ours
    assert_null(r)
    assert "classification answers exchangeable" in r.null
    flat = perf_frame({0: [True] * 10 + [False] * 10, 10: [True] * 10 + [False] * 10, 25: [True] * 10 + [False] * 10})
    assert (
        claim_d6(mem, flat, FT, draws=ClaimDraws(n_boot=200)).verdict == "inconclusive"
    )  # no gain, but none against it either
    falls = perf_frame({0: [True] * 20, 10: [True] * 10 + [False] * 10, 25: [False] * 20})
    assert (
        claim_d6(mem, falls, FT, draws=ClaimDraws(n_boot=200)).verdict == "differs"
    )  # accuracy falls where memorization rises
    weak = perf_frame({0: share(2, True, False), 10: share(2, True, False), 25: share(4, True, False)})
    rw = claim_d6(mem, weak, FT, draws=ClaimDraws(n_boot=300))
    assert rw.verdict == "inconclusive" and "interval includes 0" in rw.reason
    three = claim_d6(
        mem_frame(same_in_all_settings({0: share(0, n=3), 25: share(3, n=3)})),
        perf_frame({0: [False] * 3, 25: [True] * 3}),
        FT,
        draws=ClaimDraws(n_boot=300),
    )
    assert three.verdict == "inconclusive" and three.null_rate > NULL_LEVEL
    low = mem_frame(same_in_all_settings({0: share(0), 10: share(4), 25: share(6)}))
    r_low = claim_d6(low, gain, FT)
    assert (
        r_low.verdict == "not testable here" and "never reaches 40%" in r_low.reason and "30% at k = 25" in r_low.reason
    )


def test_d6_is_not_reproduced_when_k_does_not_change_accuracy():
    rng = np.random.default_rng(16)
    mem = mem_frame(same_in_all_settings({0: share(0, n=40), 10: share(30, n=40), 25: share(30, n=40)}))
    perf = perf_frame({k: iid(rng, (True, False), 40) for k in (0, 10, 25)})
    r = claim_d6(mem, perf, FT, draws=ClaimDraws(n_boot=300))
    assert r.verdict != "reproduced"
    assert_null(r)


def test_d6_threshold_comes_from_the_paper_constant(monkeypatch):
    mem = mem_frame(same_in_all_settings({0: share(0), 25: share(6)}))  # 30%
    gain = perf_frame({0: [False] * 20, 25: [True] * 20})
    assert claim_d6(mem, gain, FT).verdict == "not testable here"
    assert claim_d6(mem, gain, FT, threshold=25.0, draws=ClaimDraws(n_boot=100)).verdict == "reproduced"
    assert "~40%" in llm_kshot.paper_d6()
    monkeypatch.setattr(ch06_claims, "ICL_GAIN_MEMORIZATION", 30.0)
    monkeypatch.setattr(llm_kshot, "ICL_GAIN_MEMORIZATION", 30.0)
    assert (
        claim_d6(mem, gain, FT, draws=ClaimDraws(n_boot=100)).verdict == "reproduced" and "~30%" in llm_kshot.paper_d6()
    )


def by_k(hits: dict[int, int]) -> dict[int, list[str]]:
    """Memorization by k: ``hits[k]`` of the N instances memorized exactly."""
    return {k: share(n) for k, n in hits.items()}


def correct_by_k(hits: dict[int, int]) -> pd.DataFrame:
    """Classification by k: ``hits[k]`` of the N instances right."""
    return perf_frame({k: share(n, True, False) for k, n in hits.items()})


D7_MEM = {0: 0, 10: 6, 25: 12, 50: 18}
D7_RISING = {0: 2, 10: 7, 25: 12, 50: 17}


def test_d7_reproduced_when_accuracy_rises_above_chance_and_memorization_follows_it_beyond_k_0():
    mem, rising = mem_frame(same_in_all_settings(by_k(D7_MEM))), correct_by_k(D7_RISING)
    r = claim_d7(mem, rising, FT, draws=ClaimDraws(n_boot=200), chance=0.25)
    assert r.verdict == "reproduced" and "full r = 1.00" in r.ours and "seg. only r = 1.00" in r.ours
    assert "chance 25%" in r.ours and "above chance at k = 25, 50" in r.ours
    assert r.interval.count("[") == 3 and "bootstrap over 20 instances" in r.interval
    assert_null(r)
    assert "k = 0 kept" in r.null and r.null_rate <= NULL_LEVEL and r.null_range.count("over") == 3
    assert "very strong" in r.paper and "-0.55" in r.paper and "1.00" in r.paper and "not claimed" in r.paper
    assert "Without k = 0" in r.reason


def test_d7_not_testable_when_icl_only_copies_one_label_at_chance():
    """The issue's build: 0% at k = 0 (free text), then one label for every instance (25% of 4 balanced labels)."""
    mem, copied = mem_frame(same_in_all_settings(by_k(D7_MEM))), correct_by_k({0: 0, 10: 5, 25: 5, 50: 5})
    r = claim_d7(mem, copied, FT, draws=ClaimDraws(n_boot=200), chance=0.25)
    assert r.verdict == "not testable here" and "above chance" in r.reason and "no k > 0" in r.reason
    assert "r = " in r.ours  # the coefficients are shown, not judged


def test_d7_not_testable_where_icl_does_not_beat_zero_shot():
    """The paper claims nothing where ICL does not help (RTE): no r < 0 expectation."""
    mem, falling = mem_frame(same_in_all_settings(by_k(D7_MEM))), correct_by_k({0: 18, 10: 16, 25: 14, 50: 12})
    r = claim_d7(mem, falling, FT, draws=ClaimDraws(n_boot=200), chance=0.25)
    assert r.verdict == "not testable here" and "does not exceed zero-shot" in r.reason


def test_d7_a_shared_jump_from_k_0_is_inconclusive_under_the_null_that_keeps_k_0():
    """Both series jump at k = 0 and are flat after: r = 1 from one point; the null keeps that point, so chance
    gives the same answer."""
    jump = perf_frame({0: share(0, True, False), **{k: share(14, True, False) for k in (10, 25, 50)}})
    flat = mem_frame(same_in_all_settings({0: share(0), **{k: share(10) for k in (10, 25, 50)}}))
    r = claim_d7(
        flat, jump, FT, draws=ClaimDraws(n_boot=300), chance=0.25
    )  # r = 1 and its interval [1, 1]: the rule agrees ...
    assert r.verdict == "inconclusive" and "full r = 1.00" in r.ours and r.null_rate == 1.0  # ... in every draw
    assert "chance alone" in r.reason
    rng = np.random.default_rng(7)
    noisy = mem_frame(same_in_all_settings({0: share(0), **{k: iid(rng, ("exact", "no")) for k in (10, 25, 50)}}))
    rn = claim_d7(noisy, jump, FT, draws=ClaimDraws(n_boot=300), chance=0.25)
    assert rn.verdict == "inconclusive" and "[+0.8" in rn.null_range  # the jump survives every null draw


def test_d7_differs_when_memorization_falls_while_accuracy_rises():
    mem = mem_frame(same_in_all_settings(by_k({0: 0, 10: 18, 25: 12, 50: 4})))
    rising = correct_by_k(D7_RISING)
    r = claim_d7(mem, rising, FT, draws=ClaimDraws(n_boot=200), chance=0.25)
    assert r.verdict == "differs" and "3 wholly below it" in r.reason


def test_d7_reads_chance_from_the_labels_and_needs_it():
    mem, rising = mem_frame(same_in_all_settings(by_k(D7_MEM))), correct_by_k(D7_RISING)
    with pytest.raises(ValueError, match="chance"):
        claim_d7(mem, rising.drop(columns="label"), FT, draws=ClaimDraws(n_boot=50))
    assert "chance 25%" in claim_d7(mem, rising, FT, draws=ClaimDraws(n_boot=50, n_perm=50)).ours
    halves = rising.assign(label=["a" if i < 10 else "b" for i in range(20)] * 4)  # two labels, 10 each
    assert "chance 50%" in claim_d7(mem, halves, FT, draws=ClaimDraws(n_boot=50, n_perm=50)).ours


def test_d7_needs_three_k_and_a_varying_series():
    two = claim_d7(
        mem_frame(same_in_all_settings({0: share(0), 2: share(5)})),
        perf_frame({0: share(0, True, False), 2: share(5, True, False)}),
        FT,
        chance=0.25,
    )
    assert two.verdict == "not testable here" and "at least three k" in two.reason
    const = claim_d7(
        mem_frame(same_in_all_settings({0: share(0), 2: share(0), 4: share(0)})),
        perf_frame({0: share(0, True, False), 2: share(12, True, False), 4: share(16, True, False)}),
        FT,
        chance=0.25,
    )
    assert const.verdict == "not testable here" and "undefined" in const.reason


def test_d8_memorized_instances_perform_better():
    members = [True] * 10 + [False] * 10
    mem = mem_frame(same_in_all_settings({0: share(10), 10: share(10)}), members=members)
    good = perf_frame({0: share(10, True, False), 10: share(10, True, False)}, members=members)
    r = claim_d8(mem, good, FT, draws=ClaimDraws(n_boot=200, n_perm=1000))
    # random instance labels put 8 or more of the 10 right ones in one group in ~1% of draws; the rule says so in ~3%
    assert r.verdict == "reproduced" and "+100 points" in r.ours and "higher in 6 of 6" in r.ours
    assert "all instances" in r.reason  # memorized vs not splits the members and non-members together
    assert_null(r, 1000)
    assert "instances of the memorization permuted against those of the accuracy" in r.null
    bad = perf_frame({0: share(10, False, True), 10: share(10, False, True)}, members=members)
    assert claim_d8(mem, bad, FT, draws=ClaimDraws(n_boot=200)).verdict == "differs"
    acc = [True] * 6 + [False] * 4 + [True] * 5 + [False] * 5  # 60% of the memorized right, 50% of the others
    weak = claim_d8(mem, perf_frame({0: acc, 10: acc}, members=members), FT, draws=ClaimDraws(n_boot=300))
    assert weak.verdict == "inconclusive" and "+10 points" in weak.ours and "interval includes 0" in weak.reason
    nothing = mem_frame(same_in_all_settings({0: share(0), 10: share(0)}), members=members)
    assert claim_d8(nothing, good, FT).verdict == "not testable here"


def test_d8_is_not_reproduced_when_accuracy_is_unrelated_to_memorization():
    rng = np.random.default_rng(18)
    members = [True] * 20 + [False] * 20
    mem = mem_frame(same_in_all_settings({k: iid(rng, ("exact", "no"), 40) for k in (0, 10)}), members=members)
    perf = perf_frame({k: iid(rng, (True, False), 40) for k in (0, 10)}, members=members)
    r = claim_d8(mem, perf, FT, draws=ClaimDraws(n_boot=300))
    assert r.verdict != "reproduced"
    assert_null(r)


def test_d9_is_not_testable_and_quotes_the_judges(monkeypatch):
    r = claim_d9({"n": 48, "agreement": 0.5, "kappa": 0.1})
    assert r.verdict == "not testable here" and "50% of 48" in r.ours and "kappa 0.10" in r.ours
    assert r.null is None and r.null_rate is None
    assert claim_d9(None).ours == "no human review; no second judge was run"
    assert "5% of GPT-4" in r.paper
    monkeypatch.setattr(ch06_claims, "HUMAN_REVIEW_CHANGED_PERCENT", 7.0)
    monkeypatch.setattr(llm_kshot, "HUMAN_REVIEW_CHANGED_PERCENT", 7.0)
    assert "7% of GPT-4" in claim_d9(None).paper  # formatted from the constant, not typed


def test_kappa_reading():
    assert [kappa_reading(k) for k in (-0.1, 0.2, 0.3, 0.5, 0.7, 0.9)] == [
        "near chance",
        "near chance",
        "fair",
        "moderate",
        "substantial",
        "almost perfect",
    ]
    assert kappa_reading(float("nan")) == "not measured"


# -- all nine --------------------------------------------------------------------------------------------------
def test_all_claims_table_and_counts():
    members = [True] * 10 + [False] * 10
    mem = mem_frame(same_in_all_settings({0: share(0), 10: share(10), 25: share(10)}), members=members)
    perf = perf_frame(
        {0: share(0, True, False), 10: share(10, True, False), 25: share(10, True, False)}, members=members
    )
    results = all_claims(mem, perf, FT, {"n": 4, "agreement": 1.0, "kappa": 1.0}, draws=ClaimDraws(n_boot=100))
    assert [r.claim_id for r in results] == [f"D{i}" for i in range(1, 10)]
    assert all(r.verdict in VERDICTS and r.reason for r in results)
    table = claim_results_table(results)
    assert list(table.columns) == ["paper", "ours", "interval", "verdict", "null rate"]
    assert list(table.index) == [r.claim_id for r in results]
    assert table.loc["D9", "null rate"] == "-" and all(
        table.loc[r.claim_id, "null rate"].endswith("%") for r in results if r.null_rate is not None
    )
    counts = verdict_counts_text(results)
    n = {v: sum(r.verdict == v for r in results) for v in VERDICTS}
    assert counts == ", ".join(f"{c} {v}" for v, c in n.items() if c)
    assert results[0].record()["id"] == "D1" and results[8].record()["interval"] is None


def test_claim_result_rejects_a_bad_verdict():
    with pytest.raises(ClaimError):
        ClaimResult("D1", "p", "o", "maybe", "r")


def test_claim_result_carries_its_null_and_refuses_reproduced_without_one():
    with pytest.raises(ClaimError, match="needs its null"):
        ClaimResult("D1", "p", "o", "reproduced", "r")
    with pytest.raises(ClaimError, match="chance alone"):
        ClaimResult("D1", "p", "o", "reproduced", "r", null="k labels exchangeable", null_rate=0.2)
    r = ClaimResult(
        "D1",
        "p",
        "o",
        "reproduced",
        "r",
        "[+1, +2]",
        null="k labels exchangeable",
        observed="+1.5 points",
        null_range="[-1, +1] points over 100 draws",
        null_rate=0.02,
    )
    assert r.record() == {
        "id": "D1",
        "paper": "p",
        "ours": "o",
        "interval": "[+1, +2]",
        "verdict": "reproduced",
        "reason": "r",
        "null": "k labels exchangeable",
        "observed": "+1.5 points",
        "null_range": "[-1, +1] points over 100 draws",
        "null_rate": 0.02,
        "null_draws": None,
        "points": None,
    }


def test_the_focus_keeps_other_models_and_non_members_out():
    members = [True] * 10 + [False] * 10
    rising = same_in_all_settings({0: ["no"] * 20, 25: ["exact"] * 10 + ["no"] * 10})
    flat = same_in_all_settings({0: ["exact"] * 20, 25: ["exact"] * 20})
    mem = pd.concat([mem_frame(rising, members), mem_frame(flat, members, model="base")], ignore_index=True)
    # 10 members, all rising: random k labels give 9 or 10 rises in ~1% of draws, the rule says so in ~3% (2000 draws)
    assert claim_d1(mem, FT, draws=ClaimDraws(n_boot=100, n_perm=2000)).verdict == "reproduced"
    assert (
        claim_d1(mem, Focus("base"), draws=ClaimDraws(n_boot=100)).verdict == "inconclusive"
    )  # the base model's flat rows alone
    # all instances of the fine-tuned model: the non-members dilute the rise to +50 points
    assert "minus zero-shot +50 points" in claim_d1(mem, Focus("fine-tuned"), draws=ClaimDraws(n_boot=100)).ours


def test_d9_from_an_imported_review(tmp_path):
    from iclmem.llm.review import export_review, import_review

    judged = mem_frame(same_in_all_settings({0: ["near-exact"] * 4 + ["no"] * 16, 10: ["exact"] * 20}))  # 120 labels
    judged = judged.assign(match_offline=judged["match"], match_llm=judged["match"])
    path = tmp_path / "review.csv"
    assert export_review(judged, path) == 12  # the near-exact rows: 4 instances x 3 settings
    sheet = pd.read_csv(path, keep_default_na=False)
    sheet["human"] = ["inexact"] * 6 + ["near-exact"] * 6  # 6 of 120 labels changed: the paper's 5%
    sheet.to_csv(path, index=False)
    review = import_review(judged, path)
    r = claim_d9({"n": 120, "agreement": 1.0, "kappa": 1.0}, review)
    assert r.verdict == "reproduced" and "6/120 = 5.0%" in r.ours and "6 near-exact -> no" in r.ours
    assert "between near-exact and inexact" in r.reason and r.interval.endswith("(95% Wilson)")
    assert r.null.startswith("no null applies") and r.null_rate is None and r.observed == "labels changed: 6/120 = 5.0%"
    sheet["human"] = ["inexact"] * 12  # 12 of 120 = 10%: the paper's 5% is below the interval
    sheet.to_csv(path, index=False)
    changed = claim_d9(None, import_review(judged, path))
    assert changed.verdict == "differs" and "lies below this build's 95% Wilson interval" in changed.reason
    row = claim_results_table(
        all_claims(
            judged,
            perf_frame({0: [True] * 20, 10: [True] * 20}),
            FT,
            None,
            draws=ClaimDraws(n_boot=50),
            review=import_review(judged, path),
        )
    ).loc["D9"]
    assert "12/120 = 10.0%" in row["ours"] and row["verdict"] == "differs"


def test_d_table_values_come_from_the_frames():
    """The D-table's numbers on a frame whose answers are known: 0% zero-shot, 50% at k = 10 and 25 (members)."""
    members = [True] * 10 + [False] * 10
    mem = mem_frame(
        same_in_all_settings({0: share(0), 10: share(5, n=10) + share(0, n=10), 25: share(5, n=10) + share(0, n=10)}),
        members=members,
    )
    perf = perf_frame(
        {0: share(2, True, False), 10: share(10, True, False), 25: share(10, True, False)}, members=members
    )
    table = claim_results_table(all_claims(mem, perf, FT, None, draws=ClaimDraws(n_boot=200)))
    assert "zero-shot 0%" in table.loc["D1", "ours"] and "k > 0 minus zero-shot +50 points" in table.loc["D1", "ours"]
    assert "k = 0 to k = 25: +50 points" in table.loc["D2", "ours"]
    # D5 is judged net of non-members on a frame with non-members (basis.BASIS, issue 53 item 6): the net reading
    # comes first, the raw one (the paper's) after it
    assert table.loc["D5", "ours"].startswith(
        "members minus non-members, full minus seg.+labels: +0 points at k = 25, +0 points at k = 0; raw: full minus "
        "seg.+labels: +0 points at k = 25, +0 points at k = 0"
    )
    assert "accuracy there 100% vs zero-shot 20% (+80 points)" in table.loc["D6", "ours"]
    assert table.loc["D1", "verdict"] == "reproduced" and table.loc["D1", "interval"].startswith("[+")
