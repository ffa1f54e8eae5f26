"""Paper 1, Sec. 4.1 ("Controlled Fine-Tuning"), Tab. 2, App. B.1 (Outcome I, the loss ratio): notebook 02.

What only this chapter needs: the paper's loss-ratio values, the training-curve, collapse-map and
loss-ratio figures, and the loss-ratio claim (C10). Fine-tuning itself is the engine's
:mod:`iclmem.finetune` (single task) and :mod:`iclmem.training` (the loop).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from iclmem.outcomes import COLLAPSE_RATIO
from iclmem.report.records import claim_record
from iclmem.report.verdicts import evidence_verdict

# : App. B.1: stable configurations (lr <= 1e-4) cluster at 1-2x the reference loss; aggressive ones have median ratios
# above 8x.
PAPER_STABLE_RATIO = (1.0, 2.0)
PAPER_AGGRESSIVE_MEDIAN = 8.0


def median_loss_ratios(metrics: pd.DataFrame) -> pd.Series:
    """Median vanilla loss ratio L_v(M_theta) / L_v(M_ref) per learning rate, over fine-tuned epochs (epoch > 0)."""
    return metrics[metrics.epoch > 0].groupby("learning_rate").loss_ratio.median()


def loss_ratio_claim(metrics: pd.DataFrame) -> dict:
    """C10: the loss ratio is bimodal, lr <= 1e-4 at 1-2x, every aggressive rate (>= 1e-2) with a median > 8x; threshold
    5x.

    The ratio comes from fine-tuning (vanilla loss of M_theta over M_ref), not from membership labels,
    so no membership null applies; the record says so. Agrees when every stable rate's median is at
    most 2x and every aggressive rate's median exceeds 8x (the claim is about where the aggressive
    medians are, not whether one of them is).
    """
    ratio = median_loss_ratios(metrics)
    stable, aggressive = ratio[ratio.index <= 1e-4], ratio[ratio.index >= 1e-2]
    paper = (
        f"lr <= 1e-4: {PAPER_STABLE_RATIO[0]:g}-{PAPER_STABLE_RATIO[1]:g}x; lr >= 1e-2: median > "
        f"{PAPER_AGGRESSIVE_MEDIAN:g}x; "
        f"collapse threshold {COLLAPSE_RATIO:g}x"
    )
    ours = "; ".join(f"lr {lr:g}: {v:.3g}x" for lr, v in ratio.items())
    if stable.empty or aggressive.empty:
        return claim_record(
            "C10",
            paper,
            ours or "no fine-tuned epochs",
            "not testable here",
            "the grid needs a learning rate <= 1e-4 and one >= 1e-2",
        )
    low_ok = bool((stable <= PAPER_STABLE_RATIO[1]).all())
    high_ok = bool((aggressive > PAPER_AGGRESSIVE_MEDIAN).all())
    below = ", ".join(f"{lr:g}" for lr, v in aggressive.items() if v <= PAPER_AGGRESSIVE_MEDIAN) or "none"
    verdict = evidence_verdict(low_ok and high_ok, None, no_null=True)
    return claim_record(
        "C10",
        paper,
        f"median loss ratio {ours}",
        verdict,
        f"stable rates at most {PAPER_STABLE_RATIO[1]:g}x: {'yes' if low_ok else 'no'}; every aggressive rate with a "
        f"median above {PAPER_AGGRESSIVE_MEDIAN:g}x: {'yes' if high_ok else 'no'} (aggressive rates at or below it: "
        f"{below})",
        null="no null applies: the loss ratio is measured on fine-tuning's own vanilla loss, which no "
        "relabelling of members and non-members changes",
        observed=f"smallest aggressive median "
        f"{float(aggressive.min()):.3g}x, largest stable median {float(stable.max()):.3g}x",
    )


# --- figures ----------------------------------------------------------------------------------


def lr_label(lr: float) -> str:
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
    "PAPER_AGGRESSIVE_MEDIAN",
    "PAPER_STABLE_RATIO",
    "lr_label",
    "loss_ratio_claim",
    "median_loss_ratios",
    "plot_collapse_map",
    "plot_loss_ratio_distribution",
    "plot_training_curves",
]
