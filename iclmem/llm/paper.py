"""Numbers quoted from the paper ("Memorization In In-Context Learning", GPT-4, 200 instances per dataset).

Only numbers the paper states in its text and tables are here; its figures are not digitized.
"""

from __future__ import annotations

import pandas as pd

PAPER_KS = (0, 25, 50, 100, 200)
PAPER_N_INSTANCES = 200
PAPER_N_DEMONSTRATIONS = 200
PAPER_MAX_NEW_TOKENS = 100  # Sec. 4 "Model": 100 tokens for memorization, 10 for performance and evaluation
PAPER_PERFORMANCE_MAX_NEW_TOKENS = 10

_ROWS = ["full", "pairs_labels", "pairs_only"]

# Tab. 2: Pearson correlation of performance and memorization (exact + near-exact) across regimes.
TABLE2 = pd.DataFrame(
    {"WNLI": [0.98, 1.00, 0.99], "TREC": [0.95, 0.91, 0.92], "DBpedia": [0.91, 0.88, 0.89], "RTE": [-0.55, -0.30, -0.30]},
    index=pd.Index(_ROWS, name="setting"),
)
# Tab. 3: the same with memorization counted by exact matches only.
TABLE3 = pd.DataFrame(
    {"WNLI": [0.97, 0.99, 0.97], "TREC": [0.87, 0.77, 0.82], "DBpedia": [0.88, 0.93, 0.89], "RTE": [-0.40, -0.50, -0.47]},
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


def regime(k: int) -> str:
    """The paper's regimes (Sec. 3.5): zero-shot k=0, few-shot k in {25, 50}, many-shot k >= 100."""
    if k == 0:
        return "zero-shot"
    return "few-shot" if k < 100 else "many-shot"
