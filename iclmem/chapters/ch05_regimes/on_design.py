"""Chapter 5's claim read on the registered decision design (``grids/decide.yaml``; issue 57 item 4).

C13 (App. D, Tab. 12: detectable tasks fall from single-task fixed pairs to multi-task fixed to multi-task random
pairs) with the same rule as on the chapter's sweep (:func:`.claims.regime_claim`), on the design's regime tables:
the tables its joint runs train on (part ``regimes``), each with its single-task run at the same Q, learning rate and
label condition (part ``tables``), and the membership null the bundle keeps for every view.
"""

from __future__ import annotations

import pandas as pd

from iclmem.bundle.design import Design
from iclmem.chapters.ch05_regimes.claims import regime_claim
from iclmem.training.regimes import MULTI_TASK, SINGLE_TASK_FIXED


def design_regime_rows(design: Design) -> pd.DataFrame:
    """The design's rows of C13: every view of its joint runs, and the single-task rows of the same tables at the
    joint runs' learning rates and query sizes and label condition N (one row per run x probed epoch)."""
    summary = design.summary
    joint = summary[summary.regime.isin(MULTI_TASK)]
    single = summary[
        (summary.regime == SINGLE_TASK_FIXED)
        & summary.dataset.isin(set(joint.dataset))
        & summary.learning_rate.isin(set(joint.learning_rate))
        & summary.query_size.isin(set(joint.query_size))
        & (summary.label_condition == "none")
    ]
    return pd.concat([single, joint], ignore_index=True)


def design_regime_claims(design: Design) -> list[dict]:
    """C13's record on the design (:func:`.claims.regime_claim` with the kept membership null of every row), at the
    joint runs' query size (the design's: 512, as Tab. 12)."""
    rows = design_regime_rows(design)
    joint = rows[rows.regime != SINGLE_TASK_FIXED]
    if joint.empty:  # no joint run bundled yet: the rule says what it needs
        return [regime_claim(rows, None)]
    return [regime_claim(rows, design.null(None, rows), int(joint.query_size.max()))]


__all__ = ["design_regime_claims", "design_regime_rows"]
