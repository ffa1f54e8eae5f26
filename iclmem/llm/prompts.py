"""Prompts of the paper's three settings (Sec. 3.3, Fig. 1) and of standard k-shot classification (Sec. 3.4).

Memorization prompts, for one instance and k demonstrations (segment pairs of other instances):

1. ``full`` -- *Full information*: an instruction naming the dataset and split and asking for the second
   piece exactly, the demonstrations with their labels, then the instance's label and first piece.
2. ``pairs_labels`` -- *Segment pairs and labels*: the same without the instruction.
3. ``pairs_only`` -- *Only segment pairs*: no instruction and no labels.

The instruction texts are ours; they follow the structure of the guided instruction of Golchin & Surdeanu
that the paper uses (dataset, split, label, first piece, "finish the second piece exactly").

Two layouts hold the same elements:

* ``single`` -- the paper's Fig. 1: one user message with the instruction, the demonstrations
  (``Label / First piece / Second piece`` blocks) and the instance, ending with ``Second piece:``.
* ``turns`` -- the common chat form of k-shot prompting: the instruction as system message, each
  demonstration as a user turn (label and first piece, ending with the cue ``Second piece:``) answered by an
  assistant turn (the second piece), then the instance as the last user turn, with the same cue. The cue is in
  every setting and at every k: without it, settings 2 and 3 at k = 0 would be a bare first piece that asks for
  nothing (the paper's Fig. 1 ends every prompt with it). Small chat models follow it far better than ``single``
  (SmolLM2-135M tends to copy the first demonstration of a single long message), so it is the default
  of the in-process runs; ``single`` reproduces the paper's layout for GPT-4.

Without an instruction the chat template may add the model's default system message (SmolLM2's names the
assistant only); it carries no dataset information, as the paper requires of settings 2 and 3.

Performance prompts are standard k-shot ICL: a task instruction, the k demonstrations as whole instances
with labels (the same instances in the same order as the memorization prompts for that k), the instance.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from iclmem.llm.datasets import DatasetSpec, Instance
from iclmem.llm.segments import SegmentPair

SETTINGS: dict[str, str] = {
    "full": "Full information",
    "pairs_labels": "Segment pairs and labels",
    "pairs_only": "Only segment pairs",
}
LAYOUTS = ("turns", "single")
Messages = tuple[tuple[str, str], ...]


def check_settings(settings: Sequence[str]) -> list[str]:
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        raise ValueError(f"unknown settings {unknown}; choose from {list(SETTINGS)}")
    return list(settings)


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"unknown prompt layout {layout!r}; choose from {LAYOUTS}")


def _names(spec: DatasetSpec) -> tuple[str, str]:
    return ("Sentence 1", "Sentence 2") if spec.kind == "nli" else ("First piece", "Second piece")


def instruction(spec: DatasetSpec, split: str, k: int) -> str:
    """The dataset-specific instruction of the full-information setting."""
    if spec.kind == "nli":
        text = (
            f"Instruction: You are provided with Sentence 1 from the {split} split of the {spec.title} dataset, "
            "together with the label of the sentence pair. Finish Sentence 2 as it appeared in the dataset. "
            "Sentence 2 must exactly match the instance in the dataset. Answer with Sentence 2 only."
        )
    else:
        text = (
            f"Instruction: You are provided with the first piece of an instance from the {split} split of the "
            f"{spec.title} dataset, together with its label. Finish the second piece of the instance exactly as it "
            "appeared in the dataset. Only rely on the original form of the instance in the dataset to finish the "
            "second piece. Answer with the second piece only."
        )
    if k:
        text += f" {k} other instances of the same split come first as examples."
    return text


def _query(spec: DatasetSpec, pair: SegmentPair, with_label: bool) -> str:
    """Label (if any) and first piece, in Golchin & Surdeanu's order (NLI: sentence 1 then label)."""
    first_name, _ = _names(spec)
    label = [f"Label: {pair.label}"] if with_label else []
    first = [f"{first_name}: {pair.first}"]
    return "\n".join(first + label if spec.kind == "nli" else label + first)


def memorization_messages(
    spec: DatasetSpec,
    split: str,
    setting: str,
    demonstrations: Sequence[SegmentPair],
    target: SegmentPair,
    layout: str = "turns",
) -> Messages:
    """The chat messages asking for ``target.second`` (which they never contain)."""
    check_settings([setting])
    _check_layout(layout)
    with_labels = setting in ("full", "pairs_labels")
    head = instruction(spec, split, len(demonstrations)) if setting == "full" else None
    _, second_name = _names(spec)
    if layout == "single":
        blocks = [head] if head else []
        blocks += [f"{_query(spec, d, with_labels)}\n{second_name}: {d.second}" for d in demonstrations]
        blocks.append(f"{_query(spec, target, with_labels)}\n{second_name}:")
        return (("user", "\n\n".join(blocks)),)
    cue = f"\n{second_name}:"  # every query turn asks for the second piece, so k = 0 has the cue in every setting
    messages: list[tuple[str, str]] = [("system", head)] if head else []
    for d in demonstrations:
        messages += [("user", _query(spec, d, with_labels) + cue), ("assistant", d.second)]
    messages.append(("user", _query(spec, target, with_labels) + cue))
    return tuple(messages)


def _instance_text(spec: DatasetSpec, inst: Instance) -> str:
    if spec.kind == "nli":
        return f"Sentence 1: {inst.parts[0]}\nSentence 2: {inst.parts[1]}"
    return f"Text: {inst.text}"


def performance_messages(
    spec: DatasetSpec, demonstrations: Sequence[Instance], target: Instance, layout: str = "turns"
) -> Messages:
    """Standard k-shot ICL classification prompt (paper Sec. 3.4): instruction, k labelled instances, the instance."""
    _check_layout(layout)
    head = f"{spec.task} Possible labels: {', '.join(spec.labels)}. Answer with the label only."
    if layout == "single":
        blocks = [head] + [f"{_instance_text(spec, d)}\nLabel: {d.label}" for d in demonstrations]
        blocks.append(f"{_instance_text(spec, target)}\nLabel:")
        return (("user", "\n\n".join(blocks)),)
    messages: list[tuple[str, str]] = [("system", head)]
    for d in demonstrations:
        messages += [("user", _instance_text(spec, d)), ("assistant", d.label)]
    messages.append(("user", _instance_text(spec, target)))
    return tuple(messages)


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower().replace("_", " ")
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def parse_label(completion: str, labels: Sequence[str]) -> str | None:
    """The label a completion names: the longest label at its start, else the earliest one it mentions."""
    text = _norm(completion)
    normed = sorted(((_norm(lab), lab) for lab in labels), key=lambda x: -len(x[0]))
    for n, lab in normed:
        if text == n or text.startswith(n + " "):
            return lab
    hits = [(m.start(), -len(n), lab) for n, lab in normed for m in [re.search(rf"\b{re.escape(n)}\b", text)] if m]
    return min(hits)[2] if hits else None


_LEADS = re.compile(r"^\s*(second piece|sentence 2)\s*:\s*", re.IGNORECASE)


def clean_completion(text: str) -> str:
    """Strip whitespace and a restated field name (``"Second piece: ..."``) from a completion."""
    return _LEADS.sub("", text.strip()).strip()
