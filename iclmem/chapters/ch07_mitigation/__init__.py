"""Notebook 07, mitigation: does DP-SGD (IclMem Sec. 6's named mitigation; Abadi et al. 2016) remove the
memorization the book measures, and at what cost? Claims M1 and M2, beyond the papers.

``paper`` (what the papers say), ``thresholds`` (the chapter's chosen levels), ``dp_bounds`` (what (epsilon,
delta)-DP guarantees), ``equivalence`` (M1's equivalence statistics), ``utility`` (held-out utility), ``runs``
(one series of DP runs, :class:`MitigationSpec`), ``claims`` (M1, M2 and their rules), ``figures``.
"""

from iclmem.chapters.ch07_mitigation.claims import (
    cost_verdict,
    m1_null_rate,
    m1_record,
    m2_record,
    mitigation_claims,
    removal_threshold,
)
from iclmem.chapters.ch07_mitigation.dp_bounds import dp_auc_bound, dp_bound_table, dp_tpr_bound
from iclmem.chapters.ch07_mitigation.figures import plot_attack, plot_utility
from iclmem.chapters.ch07_mitigation.runs import (
    CLIPPED,
    PLAIN,
    Mitigation,
    MitigationSpec,
    accuracy_cost,
    run_label,
    run_mitigation,
)
from iclmem.chapters.ch07_mitigation.thresholds import (
    M1_EPSILON,
    M1_LEVEL,
    M1_MARGIN,
    UTILITY_BUDGET,
    UTILITY_CONDITION,
)

__all__ = [
    "CLIPPED",
    "M1_EPSILON",
    "M1_LEVEL",
    "M1_MARGIN",
    "PLAIN",
    "UTILITY_BUDGET",
    "UTILITY_CONDITION",
    "Mitigation",
    "MitigationSpec",
    "accuracy_cost",
    "cost_verdict",
    "dp_auc_bound",
    "dp_bound_table",
    "dp_tpr_bound",
    "m1_null_rate",
    "m1_record",
    "m2_record",
    "mitigation_claims",
    "plot_attack",
    "plot_utility",
    "removal_threshold",
    "run_label",
    "run_mitigation",
]
