"""Notebook 03, multiple-choice probing: IclMem Sec. 4.2, Sec. 5 ("Perturbation Effectiveness"), App. A.3.

The names notebook 03 uses: claims C12a-c and the selection they rest on (:mod:`.claims`; the group rank sums and
per-manipulation AUCs come from :mod:`iclmem.probe.effects`), and the probing tables and figures (:mod:`.probing`).
"""

from iclmem.chapters.ch03_probing.claims import NEUTRAL_DELTA, perturbation_claims, replayed_selection
from iclmem.chapters.ch03_probing.on_design import design_configurations, design_perturbation_claims
from iclmem.chapters.ch03_probing.probing import (
    delta_frame,
    example_probe_contexts,
    perturbation_effectiveness,
    plot_delta_distributions,
    plot_perturbation_effectiveness,
    plot_roc_loglog,
    probing_vs_paper,
    roc_frame,
    strongest_configuration,
)

__all__ = [
    "NEUTRAL_DELTA",
    "design_configurations",
    "design_perturbation_claims",
    "delta_frame",
    "example_probe_contexts",
    "perturbation_claims",
    "perturbation_effectiveness",
    "plot_delta_distributions",
    "plot_perturbation_effectiveness",
    "plot_roc_loglog",
    "probing_vs_paper",
    "replayed_selection",
    "roc_frame",
    "strongest_configuration",
]
