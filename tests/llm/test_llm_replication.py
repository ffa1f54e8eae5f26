"""Replication tables (rates, accuracy, Pearson correlation as in Tab. 2-3, memorized vs not), performance repeats
and planning (generator and judge requests counted apart)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from iclmem.chapters.ch06_llm_kshot.paper import TABLE2, TABLE3
from iclmem.llm.cache import CachedBackend
from iclmem.llm.chat import ChatRequest, Completion
from iclmem.llm.judges import LLMJudge
from iclmem.llm.protocol import regime
from iclmem.llm.replication import (
    ReplicationConfig,
    accuracy,
    add_judgement,
    all_requests,
    build_experiment,
    correlation_table,
    judge_subsample,
    memorization_rates,
    memorized_vs_not,
    request_plan,
    request_summary,
    run_memorization,
    run_performance,
)


def judged_frame() -> pd.DataFrame:
    rows = []
    # k=0: 1 of 4 memorized, k=10: 2 of 4 (1 exact), k=25: 4 of 4 (3 exact)
    plan = {
        0: ["near-exact", "no", "no", "no"],
        10: ["exact", "near-exact", "no", "no"],
        25: ["exact", "exact", "exact", "near-exact"],
    }
    for k, matches in plan.items():
        for i, m in enumerate(matches):
            rows.append(
                {
                    "model": "m",
                    "setting": "full",
                    "k": k,
                    "instance_id": f"i{i}",
                    "member": i < 2,
                    "match": m,
                    "error": None,
                }
            )
    return pd.DataFrame(rows)


def perf_frame(correct: dict[int, list[bool]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"model": "m", "k": k, "instance_id": f"i{i}", "correct": c, "error": None}
            for k, cs in correct.items()
            for i, c in enumerate(cs)
        ]
    )


def test_memorization_rates_and_accuracy():
    rates = memorization_rates(judged_frame())
    assert list(rates["memorized"]) == [25.0, 50.0, 100.0] and list(rates["exact"]) == [0.0, 25.0, 75.0]
    by_member = memorization_rates(judged_frame(), by=("model", "member", "k"))
    assert by_member.set_index(["member", "k"]).loc[(True, 10), "memorized"] == 100.0
    acc = accuracy(perf_frame({0: [True, False, False, False], 10: [True, True, False, False], 25: [True] * 4}))
    assert list(acc["accuracy"]) == [25.0, 50.0, 100.0]


def test_correlation_table_is_pearson_across_k():
    rates = memorization_rates(judged_frame())
    acc = accuracy(perf_frame({0: [True, False, False, False], 10: [True, True, False, False], 25: [True] * 4}))
    tab = correlation_table(rates, acc, "memorized")
    assert tab.loc["full", "m"] == pytest.approx(1.0)  # accuracy equals memorization at every k
    acc_flat = accuracy(perf_frame({0: [True] * 4, 10: [True] * 4, 25: [True] * 4}))
    assert math.isnan(correlation_table(rates, acc_flat, "exact").loc["full", "m"])  # undefined for a constant series
    acc_down = accuracy(perf_frame({0: [True] * 4, 10: [True, True, True, False], 25: [False] * 4}))
    assert correlation_table(rates, acc_down, "exact").loc["full", "m"] < -0.9


def test_memorized_vs_not():
    perf = perf_frame({0: [True, False, False, False], 10: [True, True, False, False], 25: [True, True, True, False]})
    t = memorized_vs_not(judged_frame(), perf).set_index(["k", "memorized"])
    assert t.loc[(10, True), "accuracy"] == 100.0 and t.loc[(10, False), "accuracy"] == 0.0
    assert t.loc[(25, True), "n"] == 4 and t.loc[(25, True), "accuracy"] == 75.0


def test_judge_subsample_spreads_over_classes():
    sub = judge_subsample(judged_frame(), 6, seed=0)
    assert len(sub) == 6 and set(sub["match"]) == {"exact", "near-exact", "no"}
    assert judge_subsample(judged_frame(), 0).empty


def test_paper_tables_and_regimes():
    assert TABLE2.loc["pairs_labels", "WNLI"] == 1.00 and TABLE3.loc["full", "RTE"] == -0.40
    assert [regime(k) for k in (0, 25, 50, 100, 200)] == ["zero-shot", "few-shot", "few-shot", "many-shot", "many-shot"]
    assert regime(10) == regime(24) == "below few-shot"  # the paper's few-shot is k in {25, 50} (Sec. 3.5)


class EchoBackend:
    """Returns the first word of the last user message: enough to exercise the run loop and the cache."""

    name, model_id, context_window = "echo", "echo", None

    def __init__(self):
        self.calls = 0

    def count_tokens(self, request: ChatRequest) -> int:
        return sum(len(c.split()) for _, c in request.messages)

    def complete_batch(self, requests):
        self.calls += len(requests)
        return [Completion(r.messages[-1][1].split()[-1]) for r in requests]


def test_runs_plan_and_cache(tmp_path):
    exp = build_experiment(
        ReplicationConfig(n_instances=4, n_demonstrations=8, ks=(0, 4), settings=("full", "pairs_only"))
    )
    backend = CachedBackend(EchoBackend(), root=tmp_path)
    reqs = all_requests(exp, [0, 4])
    plan = request_summary(backend, reqs)
    assert (
        plan["requests"] == plan["to_send"] == 4 * 2 * 2 + 4 * 2
        and plan["cached"] == 0
        and plan["prompt_tokens_to_send"] > 0
    )
    mem = run_memorization(backend, exp, [0, 4], "echo", progress=False)
    perf = run_performance(backend, exp, [0, 4], "echo", progress=False)
    assert len(mem) == 16 and len(perf) == 8 and set(mem["member"]) == {True, False}
    assert request_summary(backend, reqs)["to_send"] == 0 and backend.backend.calls == 24

    class Exact:
        def judge_many(self, refs, cands):
            return ["exact" if r == c else "no" for r, c in zip(refs, cands, strict=True)]

    judged = add_judgement(mem, Exact())
    assert judged["match"].notna().all()


def test_performance_repeats_are_requests_of_their_own_and_averaged(tmp_path):
    exp = build_experiment(
        ReplicationConfig(n_instances=4, n_demonstrations=8, ks=(0, 4), settings=("full",), repeats=3)
    )
    reqs = exp.performance_requests(4)
    assert len(reqs) == 12 and [r.repeat for r in reqs] == [0] * 4 + [1] * 4 + [2] * 4
    assert len({r.messages for r in reqs}) == 4 and len(set(reqs)) == 12  # same prompts, three requests each
    assert exp.performance_instances()[4:8] == list(exp.instances) and len(exp.performance_requests(4, repeats=1)) == 4
    backend = CachedBackend(EchoBackend(), root=tmp_path)
    perf = run_performance(backend, exp, [0, 4], "echo", progress=False)
    assert len(perf) == 24 and backend.backend.calls == 24 and sorted(set(perf["repeat"])) == [0, 1, 2]
    run_performance(backend, exp, [0, 4], "echo", progress=False)
    assert backend.backend.calls == 24  # every repeat cached under its own key
    # accuracy: the mean over instances of each instance's mean over repeats; n counts instances
    rows = perf_frame({4: [True, False, False, False]}).assign(repeat=0)
    rows = pd.concat(
        [
            rows,
            rows.assign(repeat=1, correct=[True, True, False, False]),
            rows.assign(repeat=2, correct=[True, True, True, False]),
        ],
        ignore_index=True,
    )
    acc = accuracy(rows)
    assert acc["n"].tolist() == [4] and acc["accuracy"].iloc[0] == pytest.approx(100 * (3 + 2 + 1 + 0) / 12)
    mvn = memorized_vs_not(judged_frame().assign(k=4).drop_duplicates("instance_id"), rows)
    assert mvn["n"].sum() == 4  # one row per instance, not per repeat
    with pytest.raises(ValueError, match="repeats"):
        ReplicationConfig(repeats=0)


def test_plan_counts_generator_and_judge_requests_apart(tmp_path):
    exp = build_experiment(
        ReplicationConfig(n_instances=4, n_demonstrations=8, ks=(0, 4), settings=("full", "pairs_only"), repeats=3)
    )
    base, tuned = CachedBackend(EchoBackend(), root=tmp_path), CachedBackend(EchoBackend(), root=tmp_path / "ft")
    judge = LLMJudge(base)
    plan = request_plan({"base": base, "fine-tuned": tuned}, exp, [0, 4], judge, judge_requests=5)
    assert list(plan.index) == ["base", "fine-tuned", "LLM judge"] and list(plan["role"]) == [
        "generator",
        "generator",
        "judge",
    ]
    assert list(plan["memorization"]) == [16, 16, 0] and list(plan["performance"]) == [
        24,
        24,
        0,
    ]  # 4 x 2 ks x 3 repeats
    assert (
        list(plan["requests"]) == [40, 40, 5]
        and list(plan["to_send"]) == [40, 40, 5]
        and list(plan["count"]) == ["exact", "exact", "at most"]
    )
    assert plan.loc["LLM judge", "max_completion_tokens_to_send"] == 5 * judge.decoding.max_new_tokens
    assert plan.loc["LLM judge", "prompt_tokens_to_send"] > 5 * 20  # the few-shot judge prompt is long
    run_memorization(base, exp, [0, 4], "base", progress=False)
    again = request_plan({"base": base}, exp, [0, 4], judge, judge_requests=None)
    assert again.loc["base", "cached"] == 16 and again.loc["base", "to_send"] == 24
    assert again.loc["LLM judge", "requests"] == 16  # None: every memorization completion, capped by their number
    assert request_plan({"base": base}, exp, [0, 4], judge, 10**6).loc["LLM judge", "requests"] == 16
    assert "LLM judge" not in request_plan({"base": base}, exp, [0, 4]).index


def test_a_prompt_over_the_window_is_in_the_plans_does_not_fit_list(tmp_path):
    from iclmem.llm.replication import context_fit, plan_run, runnable_ks

    exp = build_experiment(
        ReplicationConfig(n_instances=4, n_demonstrations=8, ks=(0, 2, 8), settings=("full", "pairs_only"), repeats=3)
    )
    small = EchoBackend()
    longest = context_fit(small, exp).set_index("k")["longest_prompt_tokens"]
    small.context_window = int(longest[2]) + exp.config.max_new_tokens  # k = 2 just fits, k = 8 does not
    backend = CachedBackend(small, root=tmp_path)
    ks_run = runnable_ks(context_fit(backend, exp))
    plan = plan_run({"base": backend}, exp, ks_run)
    over = plan.does_not_fit
    assert ks_run == [0, 2] and plan.ks_left_out == [8]
    assert (
        set(over["k"]) == {8}
        and len(over)
        and (over["prompt_tokens"] + over["max_new_tokens"] > over["context_window"]).all()
    )
    long_one = max(
        exp.instances, key=lambda i: small.count_tokens(exp.memorization_requests("full", 8)[exp.instances.index(i)])
    )
    assert long_one.id in set(over[(over.task == "memorization") & (over.setting == "full")]["instance_id"])
    assert plan.table.loc["base", "does_not_fit"] == int(over["requests"].sum()) > 0
    assert (over[over.task == "performance"]["requests"] == 3).all()  # a classification prompt counts its repeats
    assert "do not fit" in plan.text() and "k = 8 left out" in plan.text()
    assert backend.backend.calls == 0  # counted before any request
    small.context_window = None
    assert plan_run({"base": backend}, exp, [0, 2, 8]).does_not_fit.empty
