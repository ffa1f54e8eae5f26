"""Judge selection (offline | llm | both), the LLM judge's own endpoint, and the human-review round trip (D9)."""

from __future__ import annotations

import pandas as pd
import pytest

from iclmem.llm.chat import Completion, MissingAPIKeyError
from iclmem.llm.judge_runs import judge_backend, judge_completions
from iclmem.llm.judges import LLMJudge
from iclmem.llm.review import ReviewFileError, borderline, export_review, import_review


class _Offline:
    """Labels by a lookup of the completion (the selection, not the judge, is under test)."""

    name = "offline"

    def __init__(self):
        self.calls = 0

    def judge_many(self, refs, cands):
        self.calls += len(cands)
        return [{"same": "exact", "close": "near-exact"}.get(c, "no") for c in cands]


class _Answers:
    """A chat backend whose judge answers depend on the candidate text in the prompt."""

    name, model_id, context_window, base_url = "scripted", "judge-model", None, None

    def __init__(self):
        self.requests = []

    def count_tokens(self, request):
        return 1

    def complete_batch(self, requests):
        self.requests += list(requests)
        out = []
        for r in requests:
            cand = r.messages[-1][1].split("Candidate text: ")[-1].split("\n")[0]
            out.append(
                Completion({"same": "exact match", "close": "inexact match", "far": "near-exact match"}.get(cand, "??"))
            )
        return out


def _mem():
    rows = []
    for i, cand in enumerate(["same", "close", "far", "far", "same", "other"]):
        rows.append(
            {
                "model": "m",
                "setting": "full",
                "k": 0,
                "instance_id": f"i{i}",
                "member": i % 2 == 0,
                "reference": "ref",
                "completion": cand,
                "error": None,
            }
        )
    rows.append(
        {
            "model": "m",
            "setting": "full",
            "k": 0,
            "instance_id": "i9",
            "member": False,
            "reference": "ref",
            "completion": "",
            "error": "timeout",
        }
    )
    return pd.DataFrame(rows)


def test_offline_mode_takes_rates_from_the_offline_judge_and_samples_the_llm_judge():
    backend = _Answers()
    j = judge_completions(_mem(), "offline", _Offline(), LLMJudge(backend), subsample=3, seed=0)
    f = j.frame
    assert list(f["match"][:6]) == ["exact", "near-exact", "no", "no", "exact", "no"]
    assert f["match"].iloc[6] is None  # a failed request is not judged
    assert j.n_llm == 3 == len(backend.requests) == int(f["match_llm"].notna().sum())
    assert j.agreement is not None and j.agreement["n"] == 3 and j.source == "the offline judge"


def test_llm_mode_takes_rates_from_the_llm_judge_only():
    backend, offline = _Answers(), _Offline()
    j = judge_completions(_mem(), "llm", offline, LLMJudge(backend))
    f = j.frame
    assert list(f["match"][:6]) == ["exact", "no", "near-exact", "near-exact", "exact", None]
    assert offline.calls == 0 and f["match_offline"].isna().all() and j.agreement is None
    assert j.n_unparsed == 1 and len(backend.requests) == 6  # "other" got "??": missing, not "no"
    assert f["match"].iloc[5] is None and f["match"].iloc[6] is None  # unparsed; generator failed
    counts = j.counts().set_index("judge")
    assert counts.loc[
        "LLM", ["completions", "generator failed", "sent to judge", "judged", "unparsed", "judge failed"]
    ].tolist() == [7, 1, 6, 5, 1, 0]
    assert counts.loc["LLM", "rates use"].startswith("denominator") and counts.loc["offline", "judged"] == 0
    assert all(r.decoding.max_new_tokens == 10 for r in backend.requests)


def test_both_mode_labels_everything_twice_and_rates_follow_the_llm_judge():
    j = judge_completions(_mem(), "both", _Offline(), LLMJudge(_Answers()))
    f = j.frame
    assert (f["match"] == f["match_llm"]).iloc[:5].all() and f["match"].iloc[5] is None
    # the unparsed answer is left out of the agreement (it is missing, not "no")
    assert j.agreement["n"] == 5 and j.agreement["agreement"] == pytest.approx(2 / 5)


def test_mode_errors_name_the_fix():
    with pytest.raises(ValueError, match="choose one of offline, llm, both"):
        judge_completions(_mem(), "gpt4")
    with pytest.raises(ValueError, match="needs an LLM judge"):
        judge_completions(_mem(), "llm", _Offline())
    with pytest.raises(ValueError, match="needs the offline judge"):
        judge_completions(_mem(), "both", None, LLMJudge(_Answers()))


def test_judge_backend_has_its_own_environment(monkeypatch):
    generator = _Answers()
    for var in (
        "ICLMEM_JUDGE_MODEL",
        "ICLMEM_JUDGE_BASE_URL",
        "ICLMEM_JUDGE_API_KEY",
        "ICLMEM_JUDGE_CONTEXT",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    assert judge_backend(generator) is generator  # no judge model: the generator judges
    monkeypatch.setenv("ICLMEM_JUDGE_MODEL", "gpt-4-0613")
    with pytest.raises(MissingAPIKeyError, match="ICLMEM_JUDGE_API_KEY"):
        judge_backend(generator)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://generator:8000/v1")
    monkeypatch.setenv("ICLMEM_JUDGE_BASE_URL", "http://judge:9000/v1")
    monkeypatch.setenv("ICLMEM_JUDGE_API_KEY", "judge-secret")
    monkeypatch.setenv("ICLMEM_JUDGE_CONTEXT", "8192")
    b = judge_backend(generator)
    assert (b.model_id, b.base_url, b.context_window) == ("gpt-4-0613", "http://judge:9000/v1", 8192)
    monkeypatch.delenv("ICLMEM_JUDGE_BASE_URL")
    assert judge_backend(generator).base_url == "http://generator:8000/v1"  # falls back to the generator's server


def test_borderline_export_and_import_report_the_share_changed(tmp_path):
    f = judge_completions(_mem(), "both", _Offline(), LLMJudge(_Answers())).frame
    border = borderline(f)
    # disagreements (i1, i2, i3) and near-exact labels (i1 offline, i2/i3 llm); agreed exact/no rows stay out
    assert sorted(border["instance_id"]) == ["i1", "i2", "i3"]
    path = tmp_path / "review.csv"
    assert export_review(f, path) == 3
    sheet = pd.read_csv(path, keep_default_na=False)
    assert list(sheet["human"]) == ["", "", ""] and {"reference", "completion", "match_offline", "match_llm"} <= set(
        sheet.columns
    )
    sheet.loc[sheet.instance_id == "i1", "human"] = "near-exact"  # judge (llm) said no: changed
    sheet.loc[sheet.instance_id == "i2", "human"] = "Near-Exact"  # judge said near-exact: unchanged
    sheet.to_csv(path, index=False)  # i3 left blank: not reviewed
    res = import_review(f, path)
    assert (res.n_judged, res.n_reviewed, res.n_changed) == (5, 2, 1)  # the unparsed answer is not judged
    assert res.share_changed == pytest.approx(1 / 5) and res.share_of_reviewed == pytest.approx(0.5)
    out = res.frame.set_index("instance_id")
    assert out.loc["i1", "match"] == "near-exact" and out.loc["i1", "match_judge"] == "no"
    assert list(res.changes.itertuples(index=False)) == [("no", "near-exact", 1)]
    assert "1 of 5" in res.text()


def test_import_refuses_unknown_labels_and_rows(tmp_path):
    f = judge_completions(_mem(), "both", _Offline(), LLMJudge(_Answers())).frame
    path = tmp_path / "r.csv"
    export_review(f, path)
    sheet = pd.read_csv(path, keep_default_na=False)
    sheet.loc[0, "human"] = "maybe"
    sheet.to_csv(path, index=False)
    with pytest.raises(ReviewFileError, match="use exact, near-exact or inexact"):
        import_review(f, path)
    sheet.loc[0, "human"] = "inexact"
    sheet.loc[0, "review_id"] = "other|full|0|x"
    sheet.to_csv(path, index=False)
    with pytest.raises(ReviewFileError, match="belong to no completion"):
        import_review(f, path)
    with pytest.raises(ReviewFileError, match="does not exist"):
        import_review(f, tmp_path / "none.csv")
