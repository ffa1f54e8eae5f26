"""Notebook 00, the scorecard (both papers, claims C1-C16 and D1-D9, the rows P1-P3, M1, M2).

:mod:`~iclmem.chapters.ch00_scorecard.tables` lays out the badges and the compact table,
:mod:`~iclmem.chapters.ch00_scorecard.figures` draws the paper's values beside this build's. The records themselves
are read back from the executed chapters by :func:`iclmem.report.glue.scorecard_table`.
"""

from iclmem.chapters.ch00_scorecard.figures import plot_points
from iclmem.chapters.ch00_scorecard.tables import compact_html, counts_html, split_beyond

__all__ = ["compact_html", "counts_html", "plot_points", "split_beyond"]
