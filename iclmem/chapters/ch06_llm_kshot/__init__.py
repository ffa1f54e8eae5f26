"""Notebook 06, k-shot replication: Golchin et al. 2024, Sec. 3-5, Tab. 1-3, Fig. 2-4, claims D1-D9.

What the notebook imports: the rows a claim reads (:class:`Focus`), the basis each claim's verdict reads
(:data:`BASIS`, :func:`basis_table`: net of non-members or raw rates), the claims (:mod:`.claims`) and the draws
they are judged with (:class:`ClaimDraws`), the tables (:mod:`.tables`), the figures (:mod:`.figures`), the glued values
(:mod:`.glue`), the context window (:mod:`.context`), the offline judge's quality (:mod:`.quality`) and the summary
(:mod:`.summary`, with how the build was judged: :class:`Judging`).
"""

from iclmem.chapters.ch06_llm_kshot.accuracy import accuracy_by_k
from iclmem.chapters.ch06_llm_kshot.basis import BASIS, basis_table
from iclmem.chapters.ch06_llm_kshot.claims import all_claims
from iclmem.chapters.ch06_llm_kshot.context_summary import context_summary
from iclmem.chapters.ch06_llm_kshot.figures import (
    plot_match_composition,
    plot_memorization,
    plot_performance_vs_memorization,
)
from iclmem.chapters.ch06_llm_kshot.glue import (
    claims_glue,
    glue_values,
    ground_truth_glue,
    judge_glue,
    protocol_glue,
    run_glue,
)
from iclmem.chapters.ch06_llm_kshot.judge_quality import judges_text, offline_judge_quality
from iclmem.chapters.ch06_llm_kshot.matrices import Focus
from iclmem.chapters.ch06_llm_kshot.rules import ClaimDraws
from iclmem.chapters.ch06_llm_kshot.summary_text import Judging, summary_markdown
from iclmem.chapters.ch06_llm_kshot.tables import (
    claim_results_table,
    correlation_intervals,
    correlation_tables,
    ground_truth_gaps,
    ground_truth_table,
    memorized_vs_not_table,
    paper_correlation_tables,
    sample_table,
)

__all__ = [
    "BASIS",
    "Focus",
    "Judging",
    "ClaimDraws",
    "accuracy_by_k",
    "all_claims",
    "basis_table",
    "claim_results_table",
    "claims_glue",
    "context_summary",
    "correlation_intervals",
    "correlation_tables",
    "glue_values",
    "ground_truth_gaps",
    "ground_truth_glue",
    "ground_truth_table",
    "judge_glue",
    "judges_text",
    "memorized_vs_not_table",
    "offline_judge_quality",
    "paper_correlation_tables",
    "plot_match_composition",
    "plot_memorization",
    "plot_performance_vs_memorization",
    "protocol_glue",
    "run_glue",
    "sample_table",
    "summary_markdown",
]
