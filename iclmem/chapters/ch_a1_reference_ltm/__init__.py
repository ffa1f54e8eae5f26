"""Notebook A1, the reference LTM: its model card and quality report (M_ref of IclMem Sec. 4.2).

``tables`` (quality and model-card tables), ``targets`` (the quality targets and their verdict), ``figures``
(the pretraining-loss figure).
"""

from iclmem.chapters.ch_a1_reference_ltm.figures import plot_pretraining_loss
from iclmem.chapters.ch_a1_reference_ltm.tables import (
    benchmark_texts,
    card_summary,
    card_texts,
    encoding_comparison,
    headline_scores,
    quality_table,
)
from iclmem.chapters.ch_a1_reference_ltm.targets import (
    QUALITY_TARGETS,
    quality_targets_met,
    quality_verdict,
    target_texts,
    targets_label,
    verdict_glue,
)
from iclmem.chapters.ch_a1_reference_ltm.versions import ladder_change, quality_change, reach_change

__all__ = [
    "benchmark_texts",
    "card_texts",
    "target_texts",
    "QUALITY_TARGETS",
    "card_summary",
    "encoding_comparison",
    "headline_scores",
    "ladder_change",
    "plot_pretraining_loss",
    "quality_table",
    "quality_targets_met",
    "quality_verdict",
    "quality_change",
    "reach_change",
    "targets_label",
    "verdict_glue",
]
