"""The paper's three settings contain exactly their elements (Sec. 3.3); performance prompts; label parsing."""

from __future__ import annotations

import pytest

from iclmem.llm.datasets import Instance, get_spec
from iclmem.llm.prompts import (
    clean_completion,
    memorization_messages,
    parse_label,
    performance_messages,
)
from iclmem.llm.segments import SegmentPair

TREC = get_spec("trec")
WNLI = get_spec("wnli")
DEMOS = [
    SegmentPair(f"d{i}", lab, f"first piece number {i} of", f"demo second {i}")
    for i, lab in enumerate(["human", "location", "numeric"])
]
TARGET = SegmentPair("t", "entity", "What is the name of the", "largest desert on Earth?")


def _text(messages) -> str:
    return "\n".join(content for _, content in messages)


@pytest.mark.parametrize("layout", ["turns", "single"])
def test_full_information_has_instruction_labels_pairs_and_first_piece(layout):
    msgs = memorization_messages(TREC, "train", "full", DEMOS, TARGET, layout)
    text = _text(msgs)
    assert "TREC dataset" in text and "train split" in text and "exactly" in text
    for d in DEMOS:
        assert d.first in text and d.second in text and f"Label: {d.label}" in text
    assert TARGET.first in text and "Label: entity" in text
    assert TARGET.second not in text
    if layout == "turns":
        assert msgs[0][0] == "system"
        assert msgs[-1] == ("user", f"Label: entity\nFirst piece: {TARGET.first}\nSecond piece:")
        assert [r for r, _ in msgs[1:-1]] == ["user", "assistant"] * len(DEMOS)
        assert [c for r, c in msgs if r == "assistant"] == [d.second for d in DEMOS]
    else:
        assert len(msgs) == 1 and text.endswith(f"First piece: {TARGET.first}\nSecond piece:")


@pytest.mark.parametrize("layout", ["turns", "single"])
def test_pairs_and_labels_drop_the_instruction_only(layout):
    text = _text(memorization_messages(TREC, "train", "pairs_labels", DEMOS, TARGET, layout))
    assert "TREC" not in text and "Instruction" not in text and "train split" not in text
    assert all(f"Label: {d.label}" in text and d.first in text and d.second in text for d in DEMOS)
    assert "Label: entity" in text and TARGET.second not in text


@pytest.mark.parametrize("layout", ["turns", "single"])
def test_only_segment_pairs_drop_instruction_and_labels(layout):
    msgs = memorization_messages(TREC, "train", "pairs_only", DEMOS, TARGET, layout)
    text = _text(msgs)
    assert "Label" not in text and "TREC" not in text and "Instruction" not in text
    assert all(d.label not in text for d in DEMOS + [TARGET])
    assert all(d.first in text and d.second in text for d in DEMOS) and TARGET.first in text
    assert text.count("First piece:") == len(DEMOS) + 1


def test_zero_shot_and_nli_layout():
    assert memorization_messages(TREC, "test", "full", [], TARGET)[0][1].startswith("Instruction: You are provided")
    cue = (("user", f"First piece: {TARGET.first}\nSecond piece:"),)  # the cue at k = 0 in every setting
    assert memorization_messages(TREC, "test", "pairs_only", [], TARGET) == cue
    assert memorization_messages(TREC, "test", "pairs_labels", [], TARGET)[-1][1].endswith("\nSecond piece:")
    nli = SegmentPair("n", "entailment", "The trophy did not fit.", "It was big.")
    msgs = memorization_messages(WNLI, "validation", "full", [], nli)
    assert "validation split of the WNLI dataset" in msgs[0][1]
    assert (
        msgs[-1][1] == "Sentence 1: The trophy did not fit.\nLabel: entailment\nSentence 2:"
    )  # sentence 1, label, cue
    with pytest.raises(ValueError, match="unknown settings"):
        memorization_messages(TREC, "train", "everything", [], TARGET)
    with pytest.raises(ValueError, match="layout"):
        memorization_messages(TREC, "train", "full", [], TARGET, "sideways")


def test_performance_prompt_uses_whole_instances_with_labels():
    demos = [Instance("a", "human", ("Who wrote Hamlet?",)), Instance("b", "location", ("Where is Rome?",))]
    target = Instance("c", "numeric", ("How many legs does a spider have?",))
    msgs = performance_messages(TREC, demos, target)
    assert msgs[0][0] == "system" and "abbreviation, entity" in msgs[0][1]
    assert msgs[1:] == (
        ("user", "Text: Who wrote Hamlet?"),
        ("assistant", "human"),
        ("user", "Text: Where is Rome?"),
        ("assistant", "location"),
        ("user", "Text: How many legs does a spider have?"),
    )
    single = performance_messages(TREC, demos, target, "single")[0][1]
    assert (
        single.endswith("Text: How many legs does a spider have?\nLabel:") and "numeric" not in single.split("\n\n")[-1]
    )


def test_parse_label_and_clean_completion():
    labels = ["entailment", "not_entailment"]
    assert parse_label("not entailment", labels) == "not_entailment"
    assert parse_label("Entailment.", labels) == "entailment"
    assert parse_label("The answer is not_entailment", labels) == "not_entailment"
    assert parse_label("maybe", labels) is None
    assert parse_label("red wine", ["red", "white"]) == "red"
    assert clean_completion("  Second piece: is Felton Road. ") == "is Felton Road."
    assert clean_completion("Sentence 2: It was big.") == "It was big."
