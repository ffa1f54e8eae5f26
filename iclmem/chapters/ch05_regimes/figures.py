"""Paper 1, App. D (Tab. 12): the figure of notebook 05, the peak AUC per dataset across the three regimes beside
the paper's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclmem.chapters.ch05_regimes.paper import PAPER_TABLE12, REGIME_TITLES
from iclmem.training.regimes import REGIMES


def plot_regime_decay(ours: pd.DataFrame, paper: pd.DataFrame = PAPER_TABLE12):
    """Peak AUC(Delta S) per dataset across the three regimes (cf. Tab. 12): ours (solid) beside the paper's (dashed).

    A dataset without detectable memorization in a regime is drawn at chance (AUC 0.5) with an open marker.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, data, title, style in (
        (axes[0], paper, "paper (Tab. 12, CARTE tables)", "--"),
        (axes[1], ours, "this build", "-"),
    ):
        for dataset, group in data.groupby("dataset", sort=True):
            g = group.set_index("regime").reindex(REGIMES)
            y = g.auc.astype(float).fillna(0.5).to_numpy()
            found = g.auc.notna().to_numpy()
            (line,) = ax.plot(range(len(REGIMES)), y, style, marker=None, label=dataset)
            ax.scatter(np.flatnonzero(found), y[found], color=line.get_color(), zorder=3)
            ax.scatter(np.flatnonzero(~found), y[~found], facecolors="none", edgecolors=line.get_color(), zorder=3)
        ax.axhline(0.5, color="k", lw=0.8, ls=":")
        ax.set_xticks(range(len(REGIMES)), [REGIME_TITLES[r].replace(" Pairs", "\npairs") for r in REGIMES], fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, loc="best")
    axes[0].set_ylabel(r"peak AUC($\Delta S$)  (open: not detectable)")
    fig.tight_layout()
    return fig
