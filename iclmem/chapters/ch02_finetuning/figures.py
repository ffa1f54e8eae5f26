"""Paper 1, Sec. 4.1, Tab. 2, App. B.1: the training-curve, collapse-map and loss-ratio figures of notebook 02."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from iclmem.stats.outcomes import COLLAPSE_RATIO


def lr_label(lr: float) -> str:
    """A learning rate as the figures label it: 1e-2 for 0.01 (Tab. 2)."""
    return f"1e{int(np.round(np.log10(lr)))}" if lr > 0 else str(lr)


def plot_training_curves(curves: pd.DataFrame, reference_losses: pd.DataFrame | None = None) -> sns.FacetGrid:
    """Training loss per epoch, one line per learning rate, panels dataset x Q (cf. Sec. 4.1)."""
    data = curves.assign(lr=curves.learning_rate.map(lr_label))
    g = sns.relplot(
        data=data,
        x="epoch",
        y="train_loss",
        hue="lr",
        style="label_condition",
        col="query_size",
        row="dataset",
        kind="line",
        height=2.6,
        aspect=1.4,
        facet_kws={"sharey": False},
        hue_order=sorted(data.lr.unique()),
    )
    for ax in g.axes.flat:
        ax.set_yscale("log")
    g.set_axis_labels("epoch", "training loss (log scale)")
    return g


def plot_collapse_map(metrics: pd.DataFrame) -> plt.Figure:
    """Share of runs flagged as collapsed, learning rate x probing epoch (Tab. 3, App. B.1)."""
    data = metrics[metrics.epoch > 0].assign(lr=metrics.learning_rate.map(lr_label))
    pivot = data.pivot_table(index="lr", columns="epoch", values="collapsed", aggfunc="mean").sort_index()
    fig, ax = plt.subplots(figsize=(1 + 0.7 * pivot.shape[1], 0.6 + 0.5 * pivot.shape[0]))
    sns.heatmap(
        pivot, annot=True, fmt=".2f", vmin=0, vmax=1, cmap="rocket_r", ax=ax, cbar_kws={"label": "share collapsed"}
    )
    ax.set_xlabel("fine-tuning epoch")
    ax.set_ylabel("learning rate")
    return fig


def plot_loss_ratio_distribution(metrics: pd.DataFrame, threshold: float = COLLAPSE_RATIO) -> plt.Figure:
    """Distribution of L_v(M_theta) / L_v(M_ref) over runs and epochs (App. B.1: bimodal in the paper)."""
    data = metrics[metrics.epoch > 0].assign(
        lr=metrics.learning_rate.map(lr_label), log10_ratio=np.log10(metrics.loss_ratio)
    )
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    sns.histplot(
        data=data, x="log10_ratio", hue="lr", multiple="stack", bins=30, ax=ax, hue_order=sorted(data.lr.unique())
    )
    ax.axvline(np.log10(threshold), color="k", ls="--", lw=1)
    ax.text(np.log10(threshold), ax.get_ylim()[1] * 0.9, f" collapse: ratio > {threshold:g}", fontsize=8)
    ax.set_xlabel(r"$\log_{10}\ L_v(M_\theta) / L_v(M_{ref})$")
    ax.set_ylabel("runs x probing epochs")
    return fig


__all__ = [
    "lr_label",
    "plot_collapse_map",
    "plot_loss_ratio_distribution",
    "plot_training_curves",
]
