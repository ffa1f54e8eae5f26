"""Notebook 02, controlled fine-tuning: IclMem Sec. 4.1, Tab. 2, App. B.1 (Outcome I, the loss ratio).

The names notebook 02 uses: claim C10 and its medians (:mod:`.claims`) and the figures (:mod:`.figures`); the
paper's values are in :mod:`.paper`. Fine-tuning itself is the engine's :mod:`iclmem.training.finetune` and
:mod:`iclmem.training`.
"""

from iclmem.chapters.ch02_finetuning.claims import loss_ratio_claim, median_loss_ratios
from iclmem.chapters.ch02_finetuning.figures import (
    plot_collapse_map,
    plot_loss_ratio_distribution,
    plot_training_curves,
)
from iclmem.chapters.ch02_finetuning.on_design import design_finetuning_claims, design_metrics

__all__ = [
    "design_finetuning_claims",
    "design_metrics",
    "loss_ratio_claim",
    "median_loss_ratios",
    "plot_collapse_map",
    "plot_loss_ratio_distribution",
    "plot_training_curves",
]
