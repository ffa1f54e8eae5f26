"""Appendix A3 (notebook A3, no paper section): every bad input the package answers, and its message.

The notebook imports from here: :func:`catalogue` runs the bad-input cases (:data:`CASES`, one record per mistake,
each entry point's cases in its own module), :func:`store_catalogue` the results store's cases (issue 41).
"""

from iclmem.chapters.ch_a3_bad_inputs.catalogue import (
    CASES,
    case_by_id,
    catalogue,
    catalogue_html,
    store_summary_text,
    summary_text,
)
from iclmem.chapters.ch_a3_bad_inputs.store_cases import STORE_CASES, store_catalogue

__all__ = [
    "CASES",
    "STORE_CASES",
    "case_by_id",
    "catalogue",
    "catalogue_html",
    "store_catalogue",
    "store_summary_text",
    "summary_text",
]
