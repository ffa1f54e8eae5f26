"""Probing memorization with IclMem (Sec. 4.2, App. A.3): multiple-choice contexts, the 48 manipulations, batched
scoring.

>>> from iclmem.probe import probe_run, summarize_run            # doctest: +SKIP
>>> scores = probe_run(run, table, reference=reference)          # doctest: +SKIP
>>> summarize_run(scores, run)[["epoch", "auc_loss", "tpr1_loss", "outcome"]]  # doctest: +SKIP
"""

from .contexts import MCContext, ProbeError, classification_candidates, mc_context, query_rng, regression_candidates
from .manipulations import (
    CATEGORIES,
    MANIPULATIONS,
    Manipulation,
    ManipulationStep,
    category_counts,
    compose,
    get_manipulation,
    manipulation_names,
    resolve_manipulations,
)
from .run import probe_run, run_queries
from .scoring import (
    SCORE_COLUMNS,
    ProbeQuery,
    ScoringBatches,
    build_probe_tasks,
    probe_scores,
    score_tasks,
    score_tasks_naive,
)
from .summary import summarize_run, summarize_scores

__all__ = [
    "CATEGORIES",
    "MANIPULATIONS",
    "SCORE_COLUMNS",
    "MCContext",
    "Manipulation",
    "ProbeError",
    "ProbeQuery",
    "ManipulationStep",
    "build_probe_tasks",
    "category_counts",
    "classification_candidates",
    "compose",
    "get_manipulation",
    "manipulation_names",
    "mc_context",
    "probe_run",
    "probe_scores",
    "query_rng",
    "regression_candidates",
    "resolve_manipulations",
    "run_queries",
    "ScoringBatches",
    "score_tasks",
    "score_tasks_naive",
    "summarize_run",
    "summarize_scores",
]
