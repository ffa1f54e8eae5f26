"""Chapter 2's claim read on the registered decision design (``grids/decide.yaml``; issue 57 item 4).

C10 (Sec. 4.1, App. B.1: the loss ratio is bimodal by learning rate) with the same rule as on the book's grid
(:func:`.claims.loss_ratio_claim`), on the per-epoch fine-tuning metrics of the design's single-task runs, kept in
its results bundle (:attr:`iclmem.bundle.design.Design.metrics`). The joint regimes' runs are chapter 5's.
"""

from __future__ import annotations

import pandas as pd

from iclmem.bundle.design import Design
from iclmem.chapters.ch02_finetuning.claims import loss_ratio_claim
from iclmem.training.regimes import SINGLE_TASK_FIXED


def design_metrics(design: Design) -> pd.DataFrame:
    """The per-epoch metrics of the design's single-task runs (one row per run x epoch)."""
    metrics = design.metrics
    return metrics[metrics.regime == SINGLE_TASK_FIXED].reset_index(drop=True)


def design_finetuning_claims(design: Design) -> list[dict]:
    """C10's record on the design (:func:`.claims.loss_ratio_claim`)."""
    return [loss_ratio_claim(design_metrics(design))]


__all__ = ["design_finetuning_claims", "design_metrics"]
