"""Appendix A5 (notebook A5, no paper section): the results bundle the book reads, and its check on this machine.

``pages`` reads each bundle in use with its check record; tables and a figure show what was recomputed and how
far each draw landed (issue 55).
"""

from iclmem.chapters.ch_a5_bundle.pages import (
    BundleView,
    bundle_table,
    bundle_texts,
    bundles_in_use,
    contents_table,
    cost_projection,
    drift_table,
    landing_table,
    plot_landings,
    precision_table,
    registered_designs,
    size_projection,
)

__all__ = [
    "BundleView",
    "bundle_table",
    "bundle_texts",
    "bundles_in_use",
    "contents_table",
    "cost_projection",
    "drift_table",
    "landing_table",
    "plot_landings",
    "precision_table",
    "registered_designs",
    "size_projection",
]
