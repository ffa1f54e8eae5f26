"""Golchin et al. 2024, "Memorization In In-Context Learning", Sec. 4-5, Tab. 2-3: the paper's reference values.

Only numbers the paper states in its text and tables (GPT-4, 200 instances per dataset); its figures are not digitized.
The claims D1-D9 (:mod:`iclmem.chapters.ch06_llm_kshot.claims`, :mod:`iclmem.chapters.ch06_llm_kshot.performance`)
are formatted
and checked with these constants.
"""

from __future__ import annotations

import pandas as pd

# -- the paper's reference values (GPT-4, 200 instances per dataset) ---------------------------------------------
_ROWS = ["full", "pairs_labels", "pairs_only"]

# Tab. 2: Pearson correlation of performance and memorization (exact + near-exact) across regimes.
TABLE2 = pd.DataFrame(
    {
        "WNLI": [0.98, 1.00, 0.99],
        "TREC": [0.95, 0.91, 0.92],
        "DBpedia": [0.91, 0.88, 0.89],
        "RTE": [-0.55, -0.30, -0.30],
    },
    index=pd.Index(_ROWS, name="setting"),
)
# Tab. 3: the same with memorization counted by exact matches only.
TABLE3 = pd.DataFrame(
    {
        "WNLI": [0.97, 0.99, 0.97],
        "TREC": [0.87, 0.77, 0.82],
        "DBpedia": [0.88, 0.93, 0.89],
        "RTE": [-0.40, -0.50, -0.47],
    },
    index=pd.Index(_ROWS, name="setting"),
)

# Sec. 5.1, Observations 1-2 (memorization = exact + near-exact, percent of instances).
MEMORIZATION_RANGES = {"zero-shot": (11.0, 16.5), "few-shot": (18.0, 63.5), "many-shot": (24.0, 75.0)}
MEMORIZATION_NOTES = {
    "WNLI": "increases up to 75% at 200-shot",
    "RTE": "increases up to 24% at 200-shot",
    "TREC": "stays around 40% after 25-shot",
    "DBpedia": "stays around 53% after 25-shot",
}

# -- constants of the claims D1-D9 (/work/shared/claims.md) ---------------------------------------------------
# Sec. 5.1: "We use the second setting when discussing memorization in ICL, as it closely resembles standard ICL";
# the first (full information) is the upper bound, the third (only segment pairs) identifies the key element.
ICL_SETTING = "pairs_labels"
UPPER_BOUND_SETTING = "full"
KEY_ELEMENT_SETTING = "pairs_only"
# Sec. 5.1, Observation 2: "providing only a few demonstrations (e.g., 25 shots) sharply increases memorization".
SHARP_RISE_K = 25
MEMORIZATION_AT_200_SHOT = {"WNLI": 75.0, "RTE": 24.0}  # Observation 2, percent of instances
MEMORIZATION_PLATEAU_AFTER_25_SHOT = {"TREC": 40.0, "DBpedia": 53.0}  # Observation 2, "remains at around"
# Tab. 1: near-exact matches at the first k that are exact matches at the second k (full information setting).
NEAR_TO_EXACT_TRANSITIONS = {"WNLI": (25, 50), "DBpedia": (25, 50), "TREC": (25, 100)}
# Sec. 5.1, Observation 5: segment pairs and labels reach the full-information level "25 shots and onward".
SETTINGS_EQUAL_FROM_K = 25
# Sec. 5.2, Observation 1: ICL outperforms zero-shot when memorization in few-shot regimes reaches "around 40% or
# higher".
ICL_GAIN_MEMORIZATION = 40.0
# Sec. 4, "Human Evaluation": share of GPT-4's judge labels changed by the human review (all borderline cases
# between near-exact and inexact), and the judge's agreement with humans reported by Golchin & Surdeanu (2023a).
HUMAN_REVIEW_CHANGED_PERCENT = 5.0
JUDGE_HUMAN_ACCURACY = (92.0, 100.0)
