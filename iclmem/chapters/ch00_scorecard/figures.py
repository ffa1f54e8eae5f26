"""Notebook 00, the scorecard: the figure of the paper's values beside this build's (both papers' numeric claims).

:func:`point_frame` (one row per numeric point of the scorecard's records) and :func:`plot_points` (per point, the
paper's value and this build's with its interval, coloured by the verdict's badge).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

from iclmem.chapters.ch00_scorecard.tables import BADGE_COLOURS


def point_frame(table: pd.DataFrame) -> pd.DataFrame:
    """One row per numeric point of the scorecard's records: claim, label, paper, build, lo, hi, verdict."""
    rows = [
        {"claim": row.claim, "verdict": row.verdict, **point}
        for row in table.itertuples()
        if isinstance(row.points, list)
        for point in row.points
    ]
    return pd.DataFrame(rows, columns=["claim", "verdict", "label", "paper", "build", "lo", "hi"])


def plot_points(table: pd.DataFrame) -> plt.Figure:
    """Per numeric point (a share or an AUC, on one 0-1 axis): the paper's value (x) and this build's (dot) with its
    interval."""
    points = point_frame(table)
    fig, ax = plt.subplots(figsize=(7.5, 0.45 + 0.28 * max(len(points), 1)))
    for i, p in enumerate(points.itertuples()):
        colour = BADGE_COLOURS.get(p.verdict, ("#000000", ""))[0]
        if not (math.isnan(p.lo) or math.isnan(p.hi)):
            ax.plot([p.lo, p.hi], [i, i], color=colour, lw=2, alpha=0.6)
        ax.plot(p.build, i, "o", color=colour, ms=6, label="this build (95% interval)" if i == 0 else None)
        ax.plot(p.paper, i, "x", color="k", ms=7, mew=2, label="paper" if i == 0 else None)
    ax.set_yticks(range(len(points)), [f"{p.claim} {p.label}" for p in points.itertuples()], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of configurations or tables (AUC for C2)")
    ax.grid(axis="x", alpha=0.3)
    if len(points):
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


__all__ = ["plot_points", "point_frame"]
