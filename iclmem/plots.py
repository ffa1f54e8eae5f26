"""Figures shared by the tabular notebooks (seaborn / matplotlib), one idea per figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns


def lr_label(lr: float) -> str:
    return f"1e{int(np.round(np.log10(lr)))}" if lr > 0 else str(lr)


def plot_training_curves(curves: pd.DataFrame, reference_losses: pd.DataFrame | None = None) -> sns.FacetGrid:
    """Training loss per epoch, one line per learning rate, panels dataset x Q (cf. Sec. 4.1)."""
    data = curves.assign(lr=curves.learning_rate.map(lr_label))
    g = sns.relplot(data=data, x="epoch", y="train_loss", hue="lr", style="label_condition", col="query_size", row="dataset",
                    kind="line", height=2.6, aspect=1.4, facet_kws={"sharey": False}, hue_order=sorted(data.lr.unique()))
    for ax in g.axes.flat:
        ax.set_yscale("log")
    g.set_axis_labels("epoch", "training loss (log scale)")
    return g


def plot_collapse_map(metrics: pd.DataFrame) -> plt.Figure:
    """Share of runs flagged as collapsed, learning rate x probing epoch (Tab. 3, App. B.1)."""
    data = metrics[metrics.epoch > 0].assign(lr=metrics.learning_rate.map(lr_label))
    pivot = data.pivot_table(index="lr", columns="epoch", values="collapsed", aggfunc="mean").sort_index()
    fig, ax = plt.subplots(figsize=(1 + 0.7 * pivot.shape[1], 0.6 + 0.5 * pivot.shape[0]))
    sns.heatmap(pivot, annot=True, fmt=".2f", vmin=0, vmax=1, cmap="rocket_r", ax=ax, cbar_kws={"label": "share collapsed"})
    ax.set_xlabel("fine-tuning epoch")
    ax.set_ylabel("learning rate")
    return fig


def plot_loss_ratio_distribution(metrics: pd.DataFrame, threshold: float = 5.0) -> plt.Figure:
    """Distribution of L_v(M_theta) / L_v(M_ref) over runs and epochs (App. B.1: bimodal in the paper)."""
    data = metrics[metrics.epoch > 0].assign(lr=metrics.learning_rate.map(lr_label), log10_ratio=np.log10(metrics.loss_ratio))
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    sns.histplot(data=data, x="log10_ratio", hue="lr", multiple="stack", bins=30, ax=ax, hue_order=sorted(data.lr.unique()))
    ax.axvline(np.log10(threshold), color="k", ls="--", lw=1)
    ax.text(np.log10(threshold), ax.get_ylim()[1] * 0.9, f" collapse: ratio > {threshold:g}", fontsize=8)
    ax.set_xlabel(r"$\log_{10}\ L_v(M_\theta) / L_v(M_{ref})$")
    ax.set_ylabel("runs x probing epochs")
    return fig


OUTCOME_COLORS = {"representational_collapse": "#7f7f7f", "loss_inversion": "#ff7f0e", "detectable_memorization": "#d62728",
                  "context_overfitting": "#1f77b4", "no_signal": "#bcbd22"}


def plot_delta_distributions(delta: pd.DataFrame) -> sns.FacetGrid:
    """Delta S(q) = S_theta(q) - S_ref(q) per metric, members vs non-members (Sec. 4.2).

    ``delta``: columns metric, delta, membership ("member" / "non-member").
    """
    g = sns.displot(data=delta, x="delta", hue="membership", col="metric", kind="kde", common_norm=False, fill=True,
                    facet_kws={"sharex": False, "sharey": False}, height=2.8, aspect=1.2, warn_singular=False)
    g.set_axis_labels(r"$\Delta S(q)$", "density")
    return g


def plot_roc_loglog(points: pd.DataFrame) -> plt.Figure:
    """ROC curves on log-log axes (the view that shows TPR at low FPR), one line per label."""
    fig, ax = plt.subplots(figsize=(4.2, 4.0))
    for label, part in points.groupby("label"):
        ax.plot(part.fpr_plot, part.tpr_plot, drawstyle="steps-post", label=label)
    ax.plot([1e-3, 1], [1e-3, 1], color="k", ls=":", lw=1, label="chance")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.legend(fontsize=7)
    return fig


def plot_perturbation_effectiveness(effect: pd.DataFrame) -> plt.Figure:
    """Fig. 4: mean change of AUC(Delta S) over the baseline manipulation, per category."""
    fig, ax = plt.subplots(figsize=(6, 0.4 + 0.35 * max(len(effect), 1)))
    ax.barh(effect.category, effect.mean_delta_auc, color="#4c72b0")
    ax.axvline(0, color="k", lw=1)
    ax.set_xlabel(r"mean $\Delta$AUC($\Delta S$) over baseline")
    return fig


def plot_outcome_shares(ours: pd.DataFrame, paper: pd.DataFrame) -> plt.Figure:
    """Fig. 5: % of configurations per outcome, ours beside the paper's, by Q."""
    data = pd.concat([ours.assign(source="iclmem"), paper.assign(source="paper")]).rename_axis("outcome").reset_index()
    long = data.melt(id_vars=["outcome", "source"], var_name="Q", value_name="percent")
    g = sns.catplot(data=long, y="outcome", x="percent", hue="source", col="Q", kind="bar", height=3, aspect=1.3,
                    order=list(paper.index))
    g.set_axis_labels("% of configurations", "")
    return g.figure


def plot_temporal_evolution(temporal: pd.DataFrame) -> sns.FacetGrid:
    """Fig. 2: % of configurations per outcome across fine-tuning epochs, one panel per Q."""
    g = sns.relplot(data=temporal, x="epoch", y="percent", hue="outcome", col="query_size", kind="line", marker="o",
                    palette=OUTCOME_COLORS, height=3, aspect=1.3)
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
