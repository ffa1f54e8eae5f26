"""Golchin et al. 2024, "Memorization In In-Context Learning", Sec. 4-5, Tab. 1-3: the paper's reference values.

Only numbers the paper states in its text and tables (GPT-4, 200 instances per dataset); its figures are not digitized.
Also the short names of the paper's three settings (Sec. 5.1) and the paper's side of each claim D1-D9
(``paper_d1`` ... ``paper_d9``: these values formatted); the rules are in :mod:`iclmem.chapters.ch06_llm_kshot.claims`.
"""

from __future__ import annotations

import pandas as pd

_ROWS = ["full", "pairs_labels", "pairs_only"]


TABLE2 = pd.DataFrame(
    {
        "WNLI": [0.98, 1.00, 0.99],
        "TREC": [0.95, 0.91, 0.92],
        "DBpedia": [0.91, 0.88, 0.89],
        "RTE": [-0.55, -0.30, -0.30],
    },
    index=pd.Index(_ROWS, name="setting"),
)


TABLE3 = pd.DataFrame(
    {
        "WNLI": [0.97, 0.99, 0.97],
        "TREC": [0.87, 0.77, 0.82],
        "DBpedia": [0.88, 0.93, 0.89],
        "RTE": [-0.40, -0.50, -0.47],
    },
    index=pd.Index(_ROWS, name="setting"),
)


MEMORIZATION_RANGES = {"zero-shot": (11.0, 16.5), "few-shot": (18.0, 63.5), "many-shot": (24.0, 75.0)}


MEMORIZATION_NOTES = {
    "WNLI": "increases up to 75% at 200-shot",
    "RTE": "increases up to 24% at 200-shot",
    "TREC": "stays around 40% after 25-shot",
    "DBpedia": "stays around 53% after 25-shot",
}


ICL_SETTING = "pairs_labels"


UPPER_BOUND_SETTING = "full"


KEY_ELEMENT_SETTING = "pairs_only"


SHARP_RISE_K = 25


MEMORIZATION_AT_200_SHOT = {"WNLI": 75.0, "RTE": 24.0}  # Observation 2, percent of instances


MEMORIZATION_PLATEAU_AFTER_25_SHOT = {"TREC": 40.0, "DBpedia": 53.0}  # Observation 2, "remains at around"


NEAR_TO_EXACT_TRANSITIONS = {"WNLI": (25, 50), "DBpedia": (25, 50), "TREC": (25, 100)}


SETTINGS_EQUAL_FROM_K = 25


ICL_GAIN_MEMORIZATION = 40.0


HUMAN_REVIEW_CHANGED_PERCENT = 5.0


JUDGE_HUMAN_ACCURACY = (92.0, 100.0)


SHORT_SETTINGS = {"full": "full", "pairs_labels": "seg.+labels", "pairs_only": "seg. only"}


def paper_d1() -> str:
    r = MEMORIZATION_RANGES
    return (
        ", ".join(f"{name} {lo:g}-{hi:g}%" for name, (lo, hi) in r.items()) + " memorized (exact + near-exact, GPT-4)"
    )


def paper_d2() -> str:
    top = ", ".join(f"{d} {v:g}%" for d, v in MEMORIZATION_AT_200_SHOT.items())
    flat = ", ".join(f"{d} ~{v:g}%" for d, v in MEMORIZATION_PLATEAU_AFTER_25_SHOT.items())
    return f"{SHARP_RISE_K} shots sharply raise memorization over zero-shot; at 200-shot {top}; after 25-shot {flat}"


def paper_d3() -> str:
    steps = ", ".join(f"{d} {a}->{b}-shot" for d, (a, b) in NEAR_TO_EXACT_TRANSITIONS.items())
    return f"near-exact matches turn exact as k grows (Tab. 1: {steps})"


def paper_d4() -> str:
    return "segment pairs alone (no labels, no instruction) reach ~the maximum memorization of the settings (Obs. 7)"


def paper_d5() -> str:
    return (
        f"full information equals segment pairs + labels from k >= {SETTINGS_EQUAL_FROM_K}; "
        "the two differ only at zero-shot (Obs. 5)"
    )


def paper_d6() -> str:
    return (
        f"ICL beats zero-shot performance when memorization in few-shot regimes reaches "
        f"~{ICL_GAIN_MEMORIZATION:g}% or more"
    )


def paper_d7() -> str:
    t = TABLE2
    cols = ", ".join(f"{d} " + "/".join(f"{v:.2f}" for v in t[d]) for d in t.columns)
    settings = "/".join(SHORT_SETTINGS[s] for s in t.index)
    return (
        f"a very strong Pearson r(performance, memorization) across k when ICL beats zero-shot (Obs. 3); {settings}: "
        f"{cols} (Tab. 2; RTE, where ICL does not help, is reported, not claimed)"
    )


def paper_d8() -> str:
    return (
        "performance on memorized instances is higher than on non-memorized ones across nearly all regimes "
        "(Sec. 5.2, Obs. 2)"
    )


def paper_d9() -> str:
    lo, hi = JUDGE_HUMAN_ACCURACY
    return (
        f"human review changed {HUMAN_REVIEW_CHANGED_PERCENT:g}% of GPT-4's judge labels, all borderline near-exact "
        f"vs inexact (the judge's agreement with humans: {lo:g}-{hi:g}%)"
    )


__all__ = [
    "TABLE2",
    "TABLE3",
    "MEMORIZATION_RANGES",
    "MEMORIZATION_NOTES",
    "ICL_SETTING",
    "UPPER_BOUND_SETTING",
    "KEY_ELEMENT_SETTING",
    "SHARP_RISE_K",
    "MEMORIZATION_AT_200_SHOT",
    "MEMORIZATION_PLATEAU_AFTER_25_SHOT",
    "NEAR_TO_EXACT_TRANSITIONS",
    "SETTINGS_EQUAL_FROM_K",
    "ICL_GAIN_MEMORIZATION",
    "HUMAN_REVIEW_CHANGED_PERCENT",
    "JUDGE_HUMAN_ACCURACY",
    "SHORT_SETTINGS",
    "paper_d1",
    "paper_d2",
    "paper_d3",
    "paper_d4",
    "paper_d5",
    "paper_d6",
    "paper_d7",
    "paper_d8",
    "paper_d9",
]
