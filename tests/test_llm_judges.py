"""Judges: decisions on fixed pairs, thresholds reproducible from the labelled pairs, LLM judge parsing, agreement."""

from __future__ import annotations

import pytest

from iclmem.llm.chat import ChatRequest, Completion
from iclmem.llm.judges import (
    JUDGE_EXAMPLES,
    MATCHES,
    SHIPPED_THRESHOLDS,
    LLMJudge,
    OfflineJudge,
    Thresholds,
    agreement,
    fit_thresholds,
    judge_messages,
    load_labelled_pairs,
    normalize,
    parse_judgement,
    rouge_l,
)


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge()


def test_normalization_and_rouge_l():
    assert normalize("  Rating is 4.2.  Winery is  Château X! ") == "rating is 4.2 winery is château x"
    assert normalize("John’s turn") == normalize("john's TURN")
    assert rouge_l("a b c d", "a b c d") == 1.0
    assert rouge_l("a b c d", "a x c y") == pytest.approx(0.5)
    assert rouge_l("a b", "") == 0.0


def test_offline_judge_on_fixed_pairs(judge):
    refs = ["Winery is Château La Providence.", "Rating is 3.5. Winery is Prima Perla.", "is 3.9. Winery is Luddite.",
            "The trophy was too big.", "It was founded in 1923 and is headquartered in Milan, Italy.", "Winery is Decoy."]
    cands = ["winery is Château La Providence", "Rating is 3.6. Winery is Prima Perla.", "3.9. Winery is Château de Chemilly.",
             "The suitcase was too small.", "It was founded in 1923 and is headquartered in Milan.", ""]
    assert judge.judge_many(refs, cands) == ["exact", "near-exact", "no", "no", "near-exact", "no"]


def test_shipped_thresholds_are_the_fit_on_the_labelled_pairs(judge):
    pairs = load_labelled_pairs()
    assert set(pairs["label"]) == set(MATCHES) and len(pairs) >= 50
    fitted, acc = fit_thresholds(pairs, judge.encoder)
    assert fitted == SHIPPED_THRESHOLDS
    assert acc >= 0.95
    scores = judge.scores(list(pairs.reference), list(pairs.candidate))
    assert (scores["match"] == pairs["label"]).mean() == pytest.approx(acc)


def test_thresholds_change_decisions(judge):
    strict = OfflineJudge(Thresholds(rouge_l=0.99, semantic=0.99), encoder=judge.encoder)
    assert strict.judge_many(["Rating is 3.5. Winery is Prima Perla."], ["Rating is 3.6. Winery is Prima Perla."]) == ["no"]


def test_llm_judge_prompt_and_parsing():
    msgs = judge_messages("ref text", "cand text")
    assert msgs[0][0] == "system" and msgs[-1] == ("user", "Reference text: ref text\nCandidate text: cand text")
    answers = [c for r, c in msgs if r == "assistant"]
    assert answers == [a for _, _, a in JUDGE_EXAMPLES] and answers.count("exact") == 1 and answers.count("near-exact") == 3
    assert parse_judgement("Near-exact.") == "near-exact"
    assert parse_judgement(" exact") == "exact"
    assert parse_judgement("No") == "no"
    assert parse_judgement("Inexact match") == "no"
    assert parse_judgement("I think it is a near exact match") == "near-exact"
    assert parse_judgement("banana") is None


class _Scripted:
    """A stand-in backend that answers from a list (the judge's parsing, not a model, is under test)."""

    name, model_id, context_window = "scripted", "scripted", None

    def __init__(self, answers):
        self.answers = list(answers)

    def count_tokens(self, request: ChatRequest) -> int:
        return 1

    def complete_batch(self, requests):
        return [Completion(self.answers.pop(0)) for _ in requests]


def test_llm_judge_counts_unparseable_answers_as_no():
    j = LLMJudge(_Scripted(["exact", "near-exact", "hmm", "no"]))
    assert j.judge_many(["a"] * 4, ["b"] * 4) == ["exact", "near-exact", "no", "no"]
    assert j.n_unparsed == 1 and j.raw[2] == "hmm"


def test_agreement():
    a = ["exact", "no", "no", "near-exact"]
    res = agreement(a, ["exact", "no", "near-exact", "near-exact"])
    assert res["n"] == 4 and res["agreement"] == 0.75 and 0 < res["kappa"] < 1
    assert int(res["confusion"].loc["no", "near-exact"]) == 1
    assert agreement(a, a)["kappa"] == pytest.approx(1.0)
