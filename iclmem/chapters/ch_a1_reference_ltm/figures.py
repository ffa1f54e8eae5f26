"""Appendix A1 (notebook A1): the reference LTM's pretraining-loss figure (M_ref of Paper 1, Sec. 4.2)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd


def plot_pretraining_loss(curve: pd.DataFrame, stage_ends: pd.Series) -> plt.Figure:
    """Query loss per pretraining step (rolling mean over 50 steps), per batch task; dotted lines where a stage ends."""
    fig, ax = plt.subplots(figsize=(7, 3))
    for reg, name in ((0, "classification batches"), (1, "regression batches")):
        part = curve[curve.regression == reg]
        ax.plot(part.step, part.loss.rolling(50, min_periods=10).mean(), label=name)
    for end in stage_ends.iloc[:-1]:
        ax.axvline(end, color="grey", linestyle=":")
    ax.set_xlabel("pretraining step")
    ax.set_ylabel("query loss (rolling mean)")
    ax.legend()
    return fig
