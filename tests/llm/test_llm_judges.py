"""Judges: decisions on fixed pairs, thresholds reproducible from the labelled pairs, LLM judge parsing, agreement."""

from __future__ import annotations

import pandas as pd
import pytest

from iclmem.llm.chat import ChatRequest, Completion
from iclmem.llm.judges import (
    ANSWERS,
    JUDGE_EXAMPLES,
    JUDGE_INSTRUCTION,
    MATCHES,
    SHIPPED_THRESHOLDS,
    LLMJudge,
    OfflineJudge,
    Thresholds,
    agreement,
    judge_messages,
    load_labelled_pairs,
    normalize,
    parse_judgement,
    rouge_l,
)


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge(exact="normalized")  # the rule the labelled pairs (and the thresholds' fit) are written in


@pytest.fixture(scope="module")
def features(judge):
    """The labelled pairs with their ROUGE-L and embedding scores, computed once for the module."""
    from iclmem.llm.judges import pair_features

    return pair_features(load_labelled_pairs(), judge.encoder)


def test_normalization_and_rouge_l():
    assert normalize("  Rating is 4.2.  Winery is  Château X! ") == "rating is 4.2 winery is château x"
    assert normalize("John’s turn") == normalize("john's TURN")
    assert rouge_l("a b c d", "a b c d") == 1.0
    assert rouge_l("a b c d", "a x c y") == pytest.approx(0.5)
    assert rouge_l("a b", "") == 0.0


def test_offline_judge_on_fixed_pairs(judge):
    refs = [
        "Winery is Château La Providence.",
        "Rating is 3.5. Winery is Prima Perla.",
        "is 3.9. Winery is Luddite.",
        "The trophy was too big.",
        "It was founded in 1923 and is headquartered in Milan, Italy.",
        "Winery is Decoy.",
    ]
    cands = [
        "winery is Château La Providence",
        "Rating is 3.6. Winery is Prima Perla.",
        "3.9. Winery is Château de Chemilly.",
        "The suitcase was too small.",
        "It was founded in 1923 and is headquartered in Milan.",
        "",
    ]
    assert judge.judge_many(refs, cands) == ["exact", "near-exact", "no", "no", "near-exact", "no"]


def test_shipped_thresholds_are_the_fit_on_the_labelled_pairs(judge, features):
    from iclmem.llm.judges import fit_on_features

    pairs = load_labelled_pairs()
    assert set(pairs["label"]) == set(MATCHES) and len(pairs) >= 50
    fitted, acc = fit_on_features(features)
    assert fitted == SHIPPED_THRESHOLDS
    assert acc >= 0.95
    from iclmem.llm.judges import decide

    shipped = decide(features, SHIPPED_THRESHOLDS)
    assert (pd.Series(shipped) == pairs["label"]).mean() == pytest.approx(acc)
    some = pairs.sample(12, random_state=0)  # the judge itself decides as the fit's decide does
    assert judge.judge_many(list(some.reference), list(some.candidate)) == [shipped[i] for i in some.index]


def test_exact_follows_the_paper_unless_normalization_is_asked(judge):
    """The paper's exact match "exactly matches" the segment (Sec. 3.1): a case or punctuation difference is not
    exact; its ROUGE-L on normalized tokens is 1, so the thresholds call it near-exact (memorized either way)."""
    from iclmem.llm.judges import EXACT_RULES, is_exact

    paper = OfflineJudge(encoder=judge.encoder)
    assert paper.exact == "verbatim" and EXACT_RULES == ("verbatim", "normalized")
    ref, restyled = "Winery is Château La Providence.", "winery is Château La Providence"
    assert paper.judge_many([ref, ref], [restyled, " Winery is  Château La Providence. "]) == ["near-exact", "exact"]
    assert judge.judge_many([ref], [restyled]) == ["exact"]
    assert is_exact(ref, restyled, "normalized") and not is_exact(ref, restyled)
    with pytest.raises(ValueError, match="exact rule"):
        OfflineJudge(exact="loose")


def test_thresholds_change_decisions(judge):
    strict = OfflineJudge(Thresholds(rouge_l=0.99, semantic=0.99), encoder=judge.encoder)
    assert strict.judge_many(["Rating is 3.5. Winery is Prima Perla."], ["Rating is 3.6. Winery is Prima Perla."]) == [
        "no"
    ]


def test_llm_judge_prompt_follows_the_papers_fig5_and_parsing():
    (only,) = judge_messages("ref text", "cand text")  # the paper's layout: one message
    role, text = only
    assert role == "user" and text.startswith(JUDGE_INSTRUCTION)
    assert text.endswith("Example 5:\nReference text: ref text\nCandidate text: cand text\nAnswer:")
    assert [text.count(f"Example {i}:") for i in range(1, 6)] == [1] * 5
    assert text.count("Answer: exact match") == 1 and text.count("Answer: near-exact match") == 3
    turns = judge_messages("ref text", "cand text", layout="turns")
    assert turns[0] == ("system", JUDGE_INSTRUCTION) and turns[-1][1].endswith("Candidate text: cand text\nAnswer:")
    answers = [c for r, c in turns if r == "assistant"]
    assert answers == [ANSWERS[a] for _, _, a in JUDGE_EXAMPLES] and answers.count("exact match") == 1
    with pytest.raises(ValueError, match="judge layout"):
        judge_messages("a", "b", layout="fig")
    assert LLMJudge(_Scripted([])).decoding.max_new_tokens == 10  # the paper's budget for the judge
    for answer, label in ANSWERS.items():
        assert parse_judgement(label) == answer and parse_judgement(f"{label}.") == answer
    assert parse_judgement("Near-exact.") == "near-exact"
    assert parse_judgement(" exact") == "exact"
    assert parse_judgement("No") == "no"
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


def test_llm_judge_leaves_unparseable_answers_and_failed_requests_missing():
    j = LLMJudge(_Scripted(["exact", "near-exact", "hmm", "no", "exact or near-exact"]))
    assert j.judge_many(["a"] * 5, ["b"] * 5) == ["exact", "near-exact", None, "no", None]
    assert j.n_unparsed == 2 and j.n_failed == 0 and j.raw[2] == "hmm"


def test_llm_judge_failed_request_is_missing_not_no():
    class _Failing(_Scripted):
        def complete_batch(self, requests):
            return [
                Completion("", error="timeout after 3 retries") if a is None else Completion(a)
                for a, _ in zip([self.answers.pop(0) for _ in requests], requests, strict=True)
            ]

    j = LLMJudge(_Failing(["not an exact match", None]))
    assert j.judge_many(["a"] * 2, ["b"] * 2) == ["no", None]
    assert (j.n_failed, j.n_unparsed) == (1, 0) and j.raw[1].startswith("<error")


def test_agreement():
    a = ["exact", "no", "no", "near-exact"]
    res = agreement(a, ["exact", "no", "near-exact", "near-exact"])
    assert res["n"] == 4 and res["agreement"] == 0.75 and 0 < res["kappa"] < 1
    assert int(res["confusion"].loc["no", "near-exact"]) == 1
    assert agreement(a, a)["kappa"] == pytest.approx(1.0)


def test_held_out_accuracy_on_the_labelled_pairs(features):
    from iclmem.llm.judge_accuracy import cross_validate, drop_few_shot_examples

    pairs = load_labelled_pairs()
    big = pairs["domain"].value_counts()
    assert (big[["nli", "question", "abstract"]] >= 25).all() and pairs["domain"].nunique() >= 4
    res = cross_validate(features, n_folds=5, seed=0, n_boot=200)
    row = res.summary().iloc[0]
    assert row["n"] == len(drop_few_shot_examples(pairs)) < len(pairs)  # the LLM judge's few-shot examples left out
    assert row["accuracy"] >= 0.9 and row["kappa"] >= 0.85


# : Answers a judge may give in a sentence, with the label they mean (None: unparsed, the judge named two labels or
# none).
PHRASINGS: dict[str, str | None] = {
    "exact": "exact",
    "Exact match.": "exact",
    "**Exact**": "exact",
    "'exact'": "exact",
    "The answer is: exact": "exact",
    "Label: exact match": "exact",
    "It is an exact match.": "exact",
    "This is an exact match of the reference.": "exact",
    "Exact - the completion is identical to the reference.": "exact",
    "Not near-exact: it is an exact match.": "exact",
    "near-exact": "near-exact",
    "Near exact": "near-exact",
    "near exact match": "near-exact",
    "Near‑exact.": "near-exact",
    "It is a near-exact match.": "near-exact",
    "Answer: near-exact": "near-exact",
    "Not exact, but near-exact.": "near-exact",
    "near-exact (one word differs)": "near-exact",
    "The completion is a near-exact match to the reference.": "near-exact",
    "It isn't an exact match; it is near-exact.": "near-exact",
    "no": "no",
    "No.": "no",
    "inexact": "no",
    "Inexact match.": "no",
    "Not an exact match": "no",
    "Non-exact match": "no",
    "Neither exact nor near-exact": "no",
    "Not exact and not near-exact.": "no",
    "It is not a match.": "no",
    "None of them.": "no",
    "no match": "no",
    "This is not an exact or near-exact match.": "no",
    "The candidate does not match the reference.": "no",
    "exact or near-exact": None,
    "Between exact and near-exact.": None,
    "banana": None,
    "It matches the reference exactly.": None,
    "": None,
}


@pytest.mark.parametrize("answer, label", list(PHRASINGS.items()))
def test_a_sentence_cannot_fool_the_judge_parser(answer: str, label: str | None) -> None:
    assert parse_judgement(answer) == label
