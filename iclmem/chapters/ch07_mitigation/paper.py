"""Chapter 7 (IclMem Sec. 6 names DP-SGD as the mitigation; Abadi et al. 2016): what the papers say about it.

Neither paper measures it: the text the scorecard shows for claims M1 and M2 in the paper's column.
"""

from __future__ import annotations

PAPER = "(beyond the papers: IclMem Sec. 6 names DP-SGD, neither paper measures it)"
