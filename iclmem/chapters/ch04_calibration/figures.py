"""Paper 1, Sec. 5, App. B (Fig. 2, Fig. 5, Fig. 6): the figures of the outcomes of chapter 4 (notebook 04).

Drawn from the tables of :mod:`iclmem.chapters.ch04_calibration.tables`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

OUTCOME_COLORS = {
    "representational_collapse": "#7f7f7f",
    "loss_inversion": "#ff7f0e",
    "detectable_memorization": "#d62728",
    "context_overfitting": "#1f77b4",
    "no_signal": "#bcbd22",
}


def plot_outcome_shares(ours: pd.DataFrame, paper: pd.DataFrame) -> plt.Figure:
    """Fig. 5: % of configurations per outcome, ours beside the paper's, by Q."""
    data = pd.concat([ours.assign(source="iclmem"), paper.assign(source="paper")]).rename_axis("outcome").reset_index()
    long = data.melt(id_vars=["outcome", "source"], var_name="Q", value_name="percent")
    g = sns.catplot(
        data=long,
        y="outcome",
        x="percent",
        hue="source",
        col="Q",
        kind="bar",
        height=3,
        aspect=1.3,
        order=list(paper.index),
    )
    g.set_axis_labels("% of configurations", "")
    return g.figure


def plot_temporal_evolution(temporal: pd.DataFrame) -> sns.FacetGrid:
    """Fig. 2: % of configurations per outcome across fine-tuning epochs, one panel per Q."""
    g = sns.relplot(
        data=temporal,
        x="epoch",
        y="percent",
        hue="outcome",
        col="query_size",
        kind="line",
        marker="o",
        palette=OUTCOME_COLORS,
        height=3,
        aspect=1.3,
    )
    for ax in g.axes.flat:
        ax.set_xscale("log")
    g.set_axis_labels("fine-tuning epoch", "% of configurations")
    return g


def plot_data_characteristics(chars: pd.DataFrame) -> plt.Figure:
    """Fig. 6: datasets by target cardinality k and majority-class frequency alpha, coloured by signal."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    sns.scatterplot(data=chars, x="k", y="alpha", hue="category", s=80, ax=ax)
    for _, row in chars.iterrows():
        ax.annotate(row.dataset, (row.k, row.alpha), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("number of target classes k (distinct target values)")
    ax.set_ylabel(r"majority class frequency $\alpha$")
    return fig


def plot_design_tables(per_table: pd.DataFrame) -> plt.Figure:
    """Where the probe sees, table by table on the registered design (Fig. 5 per table): per table and Q, the
    AUC(Delta S) with its 95% interval of the table's row whose lower bound is highest (red: some row of the table
    reads detectable) and, at the right, detectable rows of fine-tuned rows
    (:func:`iclmem.chapters.ch04_calibration.on_design.detectable_by_table`)."""
    order = per_table.sort_values(["task", "dataset"]).dataset.unique()
    position = {name: i for i, name in enumerate(order)}
    qs = sorted(per_table.query_size.unique())
    fig, axes = plt.subplots(1, len(qs), figsize=(3.2 * len(qs) + 2.8, 0.24 * len(order) + 1.2), squeeze=False)
    for ax, q in zip(axes[0], qs, strict=True):
        part = per_table[per_table.query_size == q]
        y = part.dataset.map(position).to_numpy()
        seen = part.detectable.gt(0).to_numpy()
        for mask, colour in ((~seen, "#777777"), (seen, OUTCOME_COLORS["detectable_memorization"])):
            rows = part[mask]
            err = [rows.auc - rows.auc_lo, rows.auc_hi - rows.auc]
            ax.errorbar(rows.auc, y[mask], xerr=err, fmt="o", color=colour, markersize=3, capsize=2, linewidth=1)
        ax.axvline(0.5, color="black", linewidth=0.8)
        ax.set_yticks(range(len(order)), order if ax is axes[0][0] else [""] * len(order), fontsize=8)
        ax.set_ylim(len(order) - 0.5, -0.5)
        ax.set_title(f"Q={q}")
        ax.set_xlabel("AUC(ΔS), 95% interval")
        for row_y, rows, hits in zip(y, part.rows, part.detectable, strict=True):
            ax.annotate(f"{hits}/{rows}", (1.02, row_y), xycoords=ax.get_yaxis_transform(), fontsize=7, va="center")
    fig.tight_layout()
    return fig


def plot_table_claim_grid(grid: pd.DataFrame) -> plt.Figure:
    """The table-by-claim grid of the registered design
    (:func:`iclmem.chapters.ch04_calibration.on_design.table_claim_grid`): one row per table, one column per claim
    that counts tables; red where the table is one of the claim's hits, grey where the claim reads it without a hit,
    white where it has no row the claim reads."""
    claims = [c for c in grid.columns if c not in ("task", "k")]
    values = grid[claims].to_numpy(float)
    colours = np.full(values.shape + (3,), 1.0)
    colours[values == 0] = (0.85, 0.85, 0.85)
    colours[values == 1] = (0.84, 0.15, 0.16)
    fig, ax = plt.subplots(figsize=(1.1 * len(claims) + 3.2, 0.24 * len(grid) + 1.6))
    ax.imshow(colours, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(claims)), claims, rotation=30, ha="right", fontsize=8)
    labels = [f"{name} ({task[:3]}, k={int(k)})" for name, task, k in zip(grid.index, grid.task, grid.k, strict=True)]
    ax.set_yticks(range(len(grid)), labels, fontsize=7)
    ax.set_xticks(np.arange(len(claims) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(grid) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=1)
    ax.tick_params(which="minor", length=0)
    hits = np.nansum(values, axis=0).astype(int)
    read = (~np.isnan(values)).sum(axis=0)
    ax.set_title(
        "  ".join(f"{c.split(':')[0]} {h}/{r}" for c, h, r in zip(claims, hits, read, strict=True)), fontsize=8
    )
    fig.tight_layout()
    return fig
