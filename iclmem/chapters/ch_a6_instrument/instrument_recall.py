"""Paper 1, Sec. 4.2, App. A (the instrument's sensitivity): a positive control that tests recall, not collapse
(issue 53, item 2).

P1's control permutes the labels of both pools and fine-tunes hard; the probe's strongest signal so far came from a
model "confidently wrong elsewhere" (non-members' loss far up, members' barely moved), which is collapse read
through the members, not row recall. The case an auditor cares about is a *healthy* model that memorized its members:
its vanilla loss over M_ref's stays below :data:`HEALTHY_MAX_RATIO` on all queries and it predicts the rows it never
saw no worse than M_ref (held-out accuracy, or R^2 for regression, at least M_ref's: issue 53's reading of "healthy";
the held-out *loss* ratio is shown beside it, since a model can stay as accurate while growing overconfident), while
the vanilla attack on the training context clearly separates members (its lower bound above the same bound P1's rule
reads). Among those cells of the per-table curves,
the share in which the probe's interval clears 0.5, with its Wilson interval, is the instrument's sensitivity; the
table beside it shows each cell's vanilla attack and probe.

The rule reads the fine-tuning log and the vanilla attack only, never the probe, so the cells are chosen before the
probe is looked at.
"""

from __future__ import annotations

import math

import pandas as pd

from iclmem.chapters.ch_a6_instrument.instrument_cells import P1_VANILLA_BOUND
from iclmem.stats.intervals import wilson

#: A healthy run's largest vanilla loss ratio L(M_theta) / L(M_ref) (the paper's stable runs sit at 1-2x, App. B.1;
#: collapse starts at 5x).
HEALTHY_MAX_RATIO = 1.5
#: ... and its held-out (non-member) accuracy or R^2 minus M_ref's must be at least this: no worse on rows it never saw.
HEALTHY_MIN_HELD_OUT_GAIN = 0.0
#: The label condition of a recall control: true labels (N), so a healthy model can also generalize.
RECALL_CONDITION = "none"

COLUMNS = [
    "dataset",
    "learning_rate",
    "epoch",
    "loss ratio",
    "held-out quality",
    "held-out quality M_ref",
    "held-out loss ratio",
    "vanilla AUC",
    "vanilla lo",
    "vanilla hi",
    "probe AUC",
    "probe lo",
    "probe hi",
    "probe detects",
]


def recall_cells(curve: pd.DataFrame, bound: float = P1_VANILLA_BOUND) -> pd.DataFrame:
    """The curve's healthy cells with clear memorization (the rule above), under the recall condition."""
    part = curve if "condition" not in curve.columns else curve[curve.condition == RECALL_CONDITION]
    if part.empty or "held-out quality" not in part.columns:
        return pd.DataFrame(columns=COLUMNS)
    keep = (
        (part["loss ratio"] < HEALTHY_MAX_RATIO)
        & (part["held-out quality"] - part["held-out quality M_ref"] >= HEALTHY_MIN_HELD_OUT_GAIN)
        & (part["vanilla lo"] > bound)
    )
    return part.loc[keep, [c for c in COLUMNS if c in part.columns]].reset_index(drop=True)


def recall_sensitivity(cells: pd.DataFrame) -> dict:
    """The share of recall cells in which the probe's interval clears 0.5, its Wilson interval and a sentence."""
    n = int(len(cells))
    if not n:
        return {
            "n": 0,
            "seen": 0,
            "share": math.nan,
            "lo": math.nan,
            "hi": math.nan,
            "text": "no healthy cell with clear memorization was run, so the probe's sensitivity to recall is "
            "not measured here",
        }
    seen = int(cells["probe detects"].sum())
    lo, hi = (float(v) for v in wilson(seen, n))
    tables = cells.dataset.nunique() if "dataset" in cells else 1
    text = (
        f"the probe sees {seen} of {n} healthy cells with clear memorization on {tables} table(s) "
        f"({seen / n:.0%}, 95% interval [{lo:.0%}, {hi:.0%}]); their vanilla attack reads a median AUC of "
        f"{cells['vanilla AUC'].median():.3f}, the probe {cells['probe AUC'].median():.3f}"
    )
    return {"n": n, "seen": seen, "share": seen / n, "lo": lo, "hi": hi, "text": text}


__all__ = [
    "HEALTHY_MIN_HELD_OUT_GAIN",
    "HEALTHY_MAX_RATIO",
    "RECALL_CONDITION",
    "recall_cells",
    "recall_sensitivity",
]
