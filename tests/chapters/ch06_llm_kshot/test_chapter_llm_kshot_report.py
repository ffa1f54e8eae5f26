"""Notebook 06's report: judge quality on held-out pairs, controlled gaps with intervals, a summary made of numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.ch06_llm_kshot.context_summary import ContextSummary
from iclmem.chapters.ch06_llm_kshot.judge_quality import offline_judge_quality
from iclmem.chapters.ch06_llm_kshot.summary_text import Judging, summary_markdown
from iclmem.chapters.ch06_llm_kshot.tables import ground_truth_gaps
from iclmem.llm.judges import load_labelled_pairs
from iclmem.report.records import ClaimResult


class _WordOverlap:
    """A stand-in encoder: cosine similarity = Jaccard overlap of lower-case words (no model needed)."""

    def similarity(self, a, b):
        out = []
        for x, y in zip(a, b, strict=True):
            sx, sy = set(x.lower().split()), set(y.lower().split())
            out.append(len(sx & sy) / max(1, len(sx | sy)))
        return np.array(out)


def _mem(member_hits: int, nonmember_hits: int, base_hits: int, n: int = 10) -> pd.DataFrame:
    rows = []
    for model, hits_m, hits_n in (("fine-tuned", member_hits, nonmember_hits), ("base", base_hits, 0)):
        for k in (0, 10):
            for i in range(2 * n):
                member = i < n
                hit = (i < hits_m) if member else (i - n < hits_n)
                rows.append(
                    {
                        "model": model,
                        "setting": "full",
                        "k": k,
                        "instance_id": f"i{i}",
                        "member": member,
                        "match": "exact" if (hit and k > 0) else "no",
                    }
                )
    return pd.DataFrame(rows)


def test_ground_truth_gaps_are_the_differences_with_intervals():
    gaps = ground_truth_gaps(_mem(6, 1, 2), n_boot=300).set_index(["comparison", "regime"])
    row = gaps.loc[("fine-tuned: members minus non-members", "k > 0")]
    assert row["estimate"] == 50.0 and row["instances"] == "10 + 10"
    lo, hi = (float(x) for x in row["interval"].strip("[]").split(","))
    assert lo < 50 < hi and lo > 0
    assert gaps.loc[("fine-tuned: members minus non-members", "k = 0"), "estimate"] == 0.0
    assert gaps.loc[("members: fine-tuned minus base", "k > 0"), "estimate"] == 40.0
    assert ground_truth_gaps(_mem(6, 1, 2).query("model == 'base'")).empty


def test_offline_judge_quality_reports_held_out_numbers():
    q = offline_judge_quality(_WordOverlap(), n_folds=3, n_boot=50)
    pairs = load_labelled_pairs()
    assert q.n_pairs == len(pairs) and set(q.domains) == set(pairs["domain"])
    t = q.table()
    assert set(t["validation"]) == {"3-fold", "leave one kind of text out"} and (t["pairs"] == "all").sum() == 2
    h = q.headline()
    assert h["accuracy_lo"] <= h["accuracy"] <= h["accuracy_hi"]
    assert f"{h['accuracy']:.0%}" in q.text() and f"{q.in_sample_accuracy:.0%}" in q.text()


def _window(**kw) -> ContextSummary:
    args = {
        "fit": pd.DataFrame(),
        "ks": (0, 25, 200),
        "ks_run": [0, 25],
        "k_max": 120,
        "probe_pool": 400,
        "model_id": "some-model",
        "context_window": 8192,
        **kw,
    }
    return ContextSummary(**args)


def test_summary_sentences_are_formatted_from_the_numbers():
    run = {
        "n_completions": 321,
        "n_cached": 20,
        "wall_minutes": "2.5",
        "run_models": "one model (m)",
        "run_instances": 16,
    }
    results = [
        ClaimResult("D1", "p", "o", "reproduced", "r", null="k labels exchangeable within an instance", null_rate=0.02),
        ClaimResult("D2", "p", "o", "differs", "r"),
        ClaimResult("D3", "p", "o", "inconclusive", "r"),
        ClaimResult("D9", "p", "o", "not testable here", "r"),
    ]
    gaps = ground_truth_gaps(_mem(6, 1, 2), n_boot=100)
    judging = Judging(
        "the LLM judge",
        None,
        {"n": 40, "agreement": 0.75, "kappa": 0.5},
        "the review changed 2 of 40 judge labels (5.0%)",
    )
    text = summary_markdown(run, _window(), judging, gaps, results, "3 requests do not fit")
    for part in (
        "321 completions (20 from the disk cache) in 2.5 minutes",
        "some-model (8192 tokens)",
        "k = 120",
        "k = 200 did not fit",
        "from the LLM judge",
        "75% of the 40 completions",
        "kappa 0.50, moderate",
        "changed 2 of 40",
        "+50 percentage points",
        "1 reproduced, 1 differs, 1 inconclusive, 1 not testable here",
        "reproduced (D1); differs (D2); inconclusive (D3); not testable here (D9)",
        "3 requests do not fit",
    ):
        assert part in text, part
    other = summary_markdown(
        {**run, "wall_minutes": "9.0"},
        _window(ks_run=[0, 25, 200], k_max=400),
        Judging("the offline judge"),
        gaps.iloc[:0],
        results,
    )
    assert "9.0 minutes" in other and "did not fit" not in other and "agree on" not in other and "at least 400" in other


def test_correlation_intervals_are_pearson_across_k_with_a_bootstrap():
    from iclmem.chapters.ch06_llm_kshot.tables import correlation_intervals

    ks, n = (0, 10, 25), 20
    mem = pd.DataFrame(
        [
            {
                "model": "m",
                "setting": "full",
                "k": k,
                "instance_id": f"i{i}",
                "member": True,
                "match": "exact" if i < n * j // 2 else "no",
            }
            for j, k in enumerate(ks)
            for i in range(n)
        ]
    )
    perf = pd.DataFrame(
        [
            {"model": "m", "k": k, "instance_id": f"i{i}", "correct": i < 4 + 6 * j, "error": None}
            for j, k in enumerate(ks)
            for i in range(n)
        ]
    )
    t = correlation_intervals(mem, perf, n_boot=200).iloc[0]
    assert t["setting"] == "full" and t["ks"] == 3 and t["instances"] == n
    assert t["r"] == pytest.approx(1.0)  # both rise linearly in k's index: 0, 50, 100% vs 20, 50, 80%
    lo, hi = (float(x) for x in t["interval"].strip("[]").split(","))
    assert lo <= 1.0 <= hi + 1e-9 and lo > 0
    two = correlation_intervals(mem[mem.k < 25], perf[perf.k < 25], n_boot=50).iloc[0]
    assert two["interval"] == "undefined"  # two ks give r = +-1 by construction: no interval


def test_failed_requests_are_named_in_the_summary():
    run = {
        "n_completions": 10,
        "n_cached": 0,
        "wall_minutes": "0.1",
        "run_models": "m",
        "run_instances": 2,
        "n_failed": 3,
    }
    text = summary_markdown(run, _window(), Judging("the offline judge"), pd.DataFrame(), [])
    assert "3 requests failed; their rows are left out" in text
    assert "failed" not in summary_markdown({**run, "n_failed": 0}, _window(), Judging("x"), pd.DataFrame(), [])
