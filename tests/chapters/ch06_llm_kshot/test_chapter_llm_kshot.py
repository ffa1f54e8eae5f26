"""The summaries of notebook 06 (ch06_llm_kshot: tables, glue, context) on small hand-computed inputs."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from iclmem.chapters.ch06_llm_kshot import paper as llm_kshot
from iclmem.chapters.ch06_llm_kshot.context_summary import ContextSummary, context_summary
from iclmem.chapters.ch06_llm_kshot.glue import (
    GROUND_TRUTH_NAMES,
    claims_glue,
    glue_values,
    ground_truth_glue,
    judge_glue,
    protocol_glue,
    run_glue,
)
from iclmem.chapters.ch06_llm_kshot.judge_quality import judges_text
from iclmem.chapters.ch06_llm_kshot.paper import TABLE2, TABLE3
from iclmem.chapters.ch06_llm_kshot.rules import N_BOOT, NULL_BOOT
from iclmem.chapters.ch06_llm_kshot.tables import (
    correlation_tables,
    ground_truth_table,
    memorized_vs_not_table,
    paper_correlation_tables,
    sample_table,
)
from iclmem.llm.chat import ChatRequest
from iclmem.llm.judges import Thresholds
from iclmem.llm.replication import ReplicationConfig, build_experiment
from iclmem.report.records import ClaimResult
from iclmem.stats.permutation import N_PERMUTATIONS


def rates_frame() -> pd.DataFrame:
    """Memorization rates by (model, member, setting, k), in percent."""
    rows = [  # model, member, setting, k, memorized, exact
        ("fine-tuned", True, "full", 0, 10.0, 0.0),
        ("fine-tuned", True, "full", 2, 50.0, 25.0),
        ("fine-tuned", True, "pairs_only", 0, 30.0, 10.0),
        ("fine-tuned", True, "pairs_only", 2, 70.0, 50.0),
        ("fine-tuned", False, "full", 0, 0.0, 0.0),
        ("fine-tuned", False, "full", 2, 20.0, 0.0),
        ("fine-tuned", False, "pairs_only", 0, 0.0, 0.0),
        ("fine-tuned", False, "pairs_only", 2, 40.0, 20.0),
        ("base", True, "full", 0, 0.0, 0.0),
        ("base", True, "full", 2, 5.0, 0.0),
        ("base", False, "full", 0, 0.0, 0.0),
        ("base", False, "full", 2, 15.0, 0.0),
    ]
    return pd.DataFrame(rows, columns=["model", "member", "setting", "k", "memorized", "exact"]).assign(n=4)


def test_ground_truth_glue_averages_the_rows_of_each_group():
    values = ground_truth_glue(rates_frame())
    assert values == {
        "ft_members_kshot": "60%",  # fine-tuned members at k = 2: (50 + 70) / 2
        "ft_nonmembers_kshot": "30%",  # fine-tuned non-members at k = 2: (20 + 40) / 2
        "ft_members_zeroshot": "20%",  # fine-tuned members at k = 0: (10 + 30) / 2
        "base_kshot": "10%",  # base, members and non-members at k = 2: (5 + 15) / 2
        "ft_members_by_k": "20% at k = 0, 60% at k = 2",
    }
    assert set(values) == set(GROUND_TRUTH_NAMES)


def test_ground_truth_glue_without_fine_tuning_is_not_applicable():
    assert ground_truth_glue(None) == dict.fromkeys(GROUND_TRUTH_NAMES, "n/a")


def test_ground_truth_table_puts_members_and_non_members_side_by_side():
    table = ground_truth_table(rates_frame())
    assert list(table.columns) == [
        "exact (members)",
        "exact (non-members)",
        "exact+near (members)",
        "exact+near (non-members)",
    ]
    assert table.loc[("fine-tuned", "pairs_only", 2), "exact+near (members)"] == 70.0
    assert table.loc[("fine-tuned", "full", 2), "exact (members)"] == 25.0
    assert table.loc[("base", "full", 2), "exact+near (non-members)"] == 15.0
    assert len(table) == 6  # (model, setting, k): fine-tuned 2 settings x 2 ks, base 1 x 2


def test_judge_glue_and_text():
    agree = {"n": 8, "agreement": 0.75, "kappa": 0.456}
    assert judge_glue(agree) == {"judge_agreement": "75%", "judge_kappa": "0.46"}
    assert judge_glue(None) == {"judge_agreement": "n/a", "judge_kappa": "n/a"}
    text = judges_text(agree, 3, Thresholds(rouge_l=0.5, semantic=0.7))
    assert text == (
        "thresholds: ROUGE-L >= 0.5, similarity >= 0.7; 8 pairs judged by both: agreement 75%, "
        "Cohen's kappa 0.46, 3 unparseable LLM answers (missing, left out of both judges' counts)"
    )


def test_protocol_glue_reads_the_numbers_the_prose_states_from_the_code():
    from iclmem.chapters.ch06_llm_kshot.correlation import VERY_STRONG_R
    from iclmem.llm.judges import JUDGE_MAX_NEW_TOKENS

    values = protocol_glue()
    assert values["judge_tokens"] == JUDGE_MAX_NEW_TOKENS and values["very_strong_r"] == f"{VERY_STRONG_R:g}"
    assert values["completion_pairs"] > 0 and values["chars_per_token"] > 0


def test_claims_glue_has_a_verdict_per_claim_and_the_method():
    results = [
        ClaimResult("D1", "p", "o", "reproduced", "r", null="k labels exchangeable within an instance", null_rate=0.02),
        ClaimResult("D2", "p", "o", "differs", "r"),
        ClaimResult("D3", "p", "o", "inconclusive", "r"),
        ClaimResult("D9", "p", "o", "not testable here", "r"),
    ]
    values = claims_glue(results, {"n": 4, "agreement": 0.5, "kappa": 0.7})
    assert {k: values[k] for k in ("verdict-D1", "verdict-D2", "verdict-D3", "verdict-D9")} == {
        "verdict-D1": "reproduced",
        "verdict-D2": "differs",
        "verdict-D3": "inconclusive",
        "verdict-D9": "not testable here",
    }
    assert values["claims_verdicts"] == "1 reproduced, 1 differs, 1 inconclusive, 1 not testable here"
    assert values["claims_n_boot"] == N_BOOT and type(values["claims_n_boot"]) is int
    assert values["claims_confidence"] == "95%" and values["equivalence_margin"] == "10"
    assert (
        values["claims_n_perm"] == N_PERMUTATIONS
        and values["claims_null_boot"] == NULL_BOOT
        and values["null_level"] == "5%"
    )
    assert values["judge_reading"] == "substantial"  # kappa 0.7: Landis and Koch's 0.61-0.80
    assert claims_glue(results, None)["judge_reading"] == "not measured"


def test_memorized_vs_not_table():
    mem = pd.DataFrame(
        {
            "model": "m",
            "setting": "full",
            "k": 2,
            "instance_id": ["i0", "i1", "i2"],
            "match": ["exact", "no", "near-exact"],
        }
    )
    perf = pd.DataFrame(
        {"model": "m", "k": 2, "instance_id": ["i0", "i1", "i2"], "correct": [True, False, False], "error": None}
    )
    table = memorized_vs_not_table(mem, perf)
    row = table.loc[("m", "full", 2)]
    assert row["accuracy (memorized)"] == 50.0 and row["n (memorized)"] == 2  # i0 right, i2 wrong
    assert row["accuracy (not memorized)"] == 0.0 and row["n (not memorized)"] == 1


def test_correlation_tables_hold_tab2_and_tab3_companions():
    rates = pd.DataFrame(
        {"model": "m", "setting": "full", "k": [0, 1, 2], "memorized": [0.0, 50.0, 100.0], "exact": [100.0, 50.0, 0.0]}
    )
    acc = pd.DataFrame({"model": "m", "k": [0, 1, 2], "accuracy": [10.0, 20.0, 30.0]})
    table = correlation_tables(rates, acc)
    assert math.isclose(table.loc["full", ("exact + near-exact (Tab. 2)", "m")], 1.0)
    assert math.isclose(table.loc["full", ("exact only (Tab. 3)", "m")], -1.0)


def test_paper_correlation_tables_are_the_papers_tab2_and_tab3():
    tabs = paper_correlation_tables()
    assert tabs.loc["pairs_labels", ("Tab. 2 (exact + near-exact)", "WNLI")] == 1.00
    assert tabs.loc["full", ("Tab. 3 (exact only)", "RTE")] == -0.40
    assert tabs.shape == (3, TABLE2.shape[1] + TABLE3.shape[1])


def test_context_summary_values_and_text():
    short = ContextSummary(pd.DataFrame(), (0, 2, 4), [0, 2], 3, 400, "m", 2048)
    assert short.left_out == [4] and short.largest_k == 3 and type(short.largest_k) is int
    assert short.glued() == {"largest_k": 3, "ks_run": "0, 2"}
    assert (
        short.text()
        == "model m, context window 2048; largest k that fits: 3; runs k = [0, 2]; left out (too long): [4]"
    )
    whole = ContextSummary(pd.DataFrame(), (0, 2), [0, 2], 8, 8, "m", None)
    assert whole.left_out == [] and whole.largest_k == "at least 8"
    assert (
        whole.text()
        == "model m, context window None; largest k that fits: at least 8 (the probe pool); runs k = [0, 2]"
    )


class WordCounter:
    """Counts words as tokens; the context window is set by the test."""

    name, model_id = "words", "words"

    def __init__(self, context_window: int | None) -> None:
        self.context_window = context_window

    def count_tokens(self, request: ChatRequest) -> int:
        return sum(len(c.split()) for _, c in request.messages)


@pytest.fixture(scope="module")
def exp():
    return build_experiment(
        ReplicationConfig(
            n_instances=4,
            n_demonstrations=4,
            ks=(0, 2, 4),
            max_new_tokens=5,
            performance_max_new_tokens=3,
            member_fraction=0.5,
        )
    )


def test_context_summary_leaves_out_the_ks_that_do_not_fit(exp):
    counter = WordCounter(None)
    zero = max(counter.count_tokens(r) for s in exp.config.settings for r in exp.memorization_requests(s, 0))
    zero = max(zero, *(counter.count_tokens(r) for r in exp.performance_requests(0)))
    summary = context_summary(WordCounter(zero + 5), exp)  # k = 0 plus the completion budget (5) fits exactly
    assert summary.ks == (0, 2, 4) and summary.ks_run == [0] and summary.left_out == [2, 4]
    assert summary.k_max == 0 and summary.largest_k == 0 and list(summary.fit["fits"]) == [True, False, False]
    unbounded = context_summary(WordCounter(None), exp)
    assert unbounded.ks_run == [0, 2, 4] and unbounded.k_max == unbounded.probe_pool
    assert unbounded.largest_k == f"at least {unbounded.k_max}"


def test_sample_table_and_run_glue(exp):
    table = sample_table(exp)
    assert list(table.index) == [f"{exp.data.spec.title} (train)"]
    assert table.loc[:, ["instances", "members", "demonstrations"]].iloc[0].tolist() == [4, 2, 4]
    assert table["usable"].iloc[0] == len(exp.data.instances) <= table["rows read"].iloc[0]
    mem = pd.DataFrame({"cached": [True, False, True], "error": [None, "timeout", None]})
    perf = pd.DataFrame({"cached": [False, True], "error": [None, None]})
    values = run_glue(exp, mem, perf, "one model (m)", 1.26)
    assert values == {
        "run_instances": 4,
        "run_members": 2,
        "run_settings": "full information, segment pairs and labels, only segment pairs",
        "run_models": "one model (m)",
        "run_tokens": 5,
        "wall_minutes": "1.3",
        "n_completions": 5,
        "n_cached": 3,
        "n_failed": 1,
    }


def test_glue_values_glues_each_value_unchanged_and_hidden(monkeypatch):
    import myst_nb

    calls = []
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: calls.append((name, value, display)))
    glue_values({"a": 3, "b": "0, 2"})
    assert calls == [("a", 3, False), ("b", "0, 2", False)]
    assert type(calls[0][1]) is int


def test_the_chapter_holds_the_papers_reference_values():
    assert llm_kshot.MEMORIZATION_RANGES["many-shot"] == (24.0, 75.0)
    assert llm_kshot.ICL_SETTING == "pairs_labels" and llm_kshot.ICL_GAIN_MEMORIZATION == 40.0


def test_no_engine_module_of_iclmem_llm_imports_the_chapters():
    import ast
    from pathlib import Path

    llm = Path(__file__).resolve().parents[3] / "iclmem" / "llm"
    files = sorted(llm.glob("*.py"))
    assert {"protocol.py", "replication.py"} <= {f.name for f in files}
    assert not {"paper.py", "claims.py", "plots.py"} & {
        f.name for f in files
    }  # moved to iclmem.chapters.ch06_llm_kshot.glue
    for path in files:
        tree = ast.parse(path.read_text())
        imported = [("." * n.level) + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if "chapters" in m], path.name
