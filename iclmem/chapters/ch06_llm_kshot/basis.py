"""Golchin et al. 2024, Sec. 3.2 and 5: the one basis each claim D1-D8 is judged on (notebook 06), stated here only.

The paper reads *raw rates*: the share of GPT-4's instances its judge calls exact or near-exact (Sec. 3.2, 5.1), with
no rows known to be unseen to compare against. The controlled fine-tune of notebook 06 has non-members, rows the model
never saw, prompted alike; their exact and near-exact matches are what templates, predictable fields and guessing
give. So:

* a claim whose statement is about **memorization** (its rate, its rise, its composition, its level per setting, its
  curve over k) is judged **net of non-members** (:data:`NET`): the members' reading minus the non-members' under the
  same prompts (:mod:`~iclmem.chapters.ch06_llm_kshot.contrast`), and its record shows the raw reading (the paper's)
  beside the verdict, not judged; its null makes what the net reading contrasts exchangeable (the member labels for a
  rise, D1-D3; the settings for an equality, D4-D5; the ks > 0 for a curve, D7);
* a claim about something else is judged on **raw rates** (:data:`RAW`), the paper's reading, with its own null, and
  its record says why (D6: accuracy at the paper's raw level; D8: accuracy split by the judge's label);
* where the model has no non-members (no fine-tune: a hosted model, a run without epochs; every instance of one
  kind), nothing can be subtracted: the raw reading is the only one, for every claim, and the record says so.

D9 (Sec. 4, a human review of the judge's labels) reads no rate and has no basis here.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

#: The verdict reads the members net of non-members (with non-members to subtract).
NET = "net"
#: The verdict reads raw rates, the paper's reading.
RAW = "raw"


@dataclass(frozen=True)
class Basis:
    """What a claim's verdict reads (:data:`NET` or :data:`RAW`) and why, in one line."""

    reading: str
    why: str


#: The basis of each claim D1-D8: one place, read by the claims, their records, the notebook's glue and the tests.
BASIS: dict[str, Basis] = {
    "D1": Basis(
        NET,
        "'ICL surfaces memorization' (Sec. 5.1, Obs. 1) is what the demonstrations add on rows the model saw beyond "
        "what they add on rows it never saw (templates, predictable fields, guessing)",
    ),
    "D2": Basis(NET, "the sharp rise by 25 shots (Sec. 5.1, Obs. 2) is D1's rise at one k"),
    "D3": Basis(
        NET,
        "near-exact matches turning exact is memorization becoming explicit (Sec. 5.1, Obs. 3); demonstrations that "
        "teach the format turn near-exact matches of never-seen rows exact too",
    ),
    "D4": Basis(
        NET,
        "the most memorization a prompt setting surfaces (Sec. 5.1, Obs. 7): a setting's instruction and labels move "
        "the template matches of never-seen rows too, so settings are compared on members beyond non-members",
    ),
    "D5": Basis(NET, "the same comparison of settings as D4 (Sec. 5.1, Obs. 5), at k >= 25 and at zero-shot"),
    "D6": Basis(
        RAW,
        "its condition is the paper's raw level (about 40% of instances memorized, Sec. 5.2 Obs. 1), a level on "
        "GPT-4's scale where nothing was subtracted, and what it judges is accuracy; a net level is on no scale the "
        "paper gives a threshold for",
    ),
    "D7": Basis(
        NET,
        "its memorization is 'surfaced memorization' (Sec. 5.2, Obs. 3), D1's: the series correlated with accuracy "
        "is the members' rate minus the non-members' at each k; accuracy is not a memorization rate and is read as "
        "it is",
    ),
    "D8": Basis(
        RAW,
        "it splits instances by the judge's memorized label and compares their accuracy (Sec. 5.2, Obs. 2): there is "
        "no memorization rate to take net of non-members, and membership is not its contrast",
    ),
}

#: The words of a basis in a record.
READING_WORDS = {NET: "members net of non-members", RAW: "raw rates, the paper's reading"}


def basis_of(claim_id: str) -> Basis:
    """The :class:`Basis` of ``claim_id`` (D1-D8)."""
    return BASIS[claim_id]


def reads_net(claim_id: str, ground_truth: bool) -> bool:
    """Is the verdict of ``claim_id`` read net of non-members? Only a :data:`NET` claim on a model with non-members."""
    return BASIS[claim_id].reading == NET and ground_truth


def basis_lead(claim_id: str, ground_truth: bool) -> str:
    """The record's first sentence: which basis its verdict reads, and why (Sec. 3.2, 5)."""
    b = BASIS[claim_id]
    if b.reading == NET and ground_truth:
        return f"Verdict on: {READING_WORDS[NET]}. Why this basis: {b.why}."
    if b.reading == NET:
        return (
            f"Verdict on: {READING_WORDS[RAW]}, the only reading here: this model has no non-members (no membership "
            "ground truth, e.g. a hosted model or a run without fine-tuning), so nothing can be subtracted. With "
            f"non-members, {claim_id} is read {READING_WORDS[NET]}: {b.why}."
        )
    other = "not net of non-members" if ground_truth else "this model has no non-members either"
    return f"Verdict on: {READING_WORDS[RAW]}, {other}. Why this basis: {b.why}."


def paper_reading(rows: str, text: str) -> str:
    """The record's sentence on the raw reading of a :data:`NET` claim, shown beside its verdict and not judged."""
    return f" Paper's reading (raw rates of the {rows}), shown beside the verdict, not judged: {text}."


def basis_table(ground_truth: bool = True) -> pd.DataFrame:
    """One row per claim D1-D8: the basis its verdict reads on a build with (``ground_truth``) or without
    non-members, and why."""
    return pd.DataFrame(
        [
            {
                "claim": cid,
                "verdict on": READING_WORDS[NET if reads_net(cid, ground_truth) else RAW],
                "basis": b.reading,
                "why": b.why,
            }
            for cid, b in BASIS.items()
        ]
    ).set_index("claim")


def basis_glue() -> dict[str, str]:
    """The claims read net of non-members and those read raw, as glued text (``claims_basis_net``,
    ``claims_basis_raw``: ``"D1, D2, ..."``)."""
    return {
        f"claims_basis_{reading}": ", ".join(cid for cid, b in BASIS.items() if b.reading == reading)
        for reading in (NET, RAW)
    }


__all__ = [
    "NET",
    "RAW",
    "Basis",
    "BASIS",
    "READING_WORDS",
    "basis_of",
    "reads_net",
    "basis_lead",
    "paper_reading",
    "basis_table",
    "basis_glue",
]
