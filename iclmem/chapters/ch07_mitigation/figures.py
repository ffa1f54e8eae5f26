"""Chapter 7 (IclMem Sec. 6's DP-SGD): the figures of notebook 07: attack AUC and held-out utility against
epsilon."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclmem.chapters.ch07_mitigation.runs import CLIPPED, run_label


def _x(table: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Plot positions: log2 of each finite epsilon, the clipped run one step right of the largest, infinity two."""
    finite = table.epsilon[np.isfinite(table.epsilon)]
    right = (np.log2(finite.max()) + 2) if len(finite) else 0.0
    runs = table["run"] if "run" in table.columns else [run_label(e) for e in table.epsilon]
    x = np.array(
        [
            right - 1 if r == CLIPPED else right if math.isinf(e) else math.log2(e)
            for e, r in zip(table.epsilon, runs, strict=True)
        ]
    )
    return x, [str(r) for r in runs]


def plot_attack(table: pd.DataFrame) -> plt.Figure:
    """Vanilla-attack and probe AUC against epsilon, with 95% intervals and the 0.5 line."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    x, labels = _x(table)
    for name, colour, marker, dx in (("vanilla", "#1f77b4", "s", -0.08), ("probe", "#d62728", "o", 0.08)):
        y = table[f"{name} AUC"]
        ax.errorbar(
            x + dx,
            y,
            yerr=[y - table[f"{name} lo"], table[f"{name} hi"] - y],
            fmt=marker,
            color=colour,
            ms=5,
            capsize=3,
            label="vanilla attack on C'" if name == "vanilla" else "probe AUC(ΔS)",
        )
    ax.axhline(0.5, color="grey", lw=0.8)
    ax.set_xticks(x, labels)
    ax.set_xlabel("ε (δ = 1e-5; ∞: no DP)")
    ax.set_ylabel("attack AUC")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_utility(table: pd.DataFrame) -> plt.Figure:
    """Held-out accuracy and loss of M_theta against epsilon, with 95% intervals; M_ref's as a dashed line."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4))
    x, labels = _x(table)
    for ax, metric in zip(axes, ("accuracy", "loss"), strict=True):
        y = table[f"theta {metric}"]
        ax.errorbar(
            x,
            y,
            yerr=[y - table[f"theta {metric} lo"], table[f"theta {metric} hi"] - y],
            fmt="o",
            color="k",
            capsize=3,
            label="M_θ",
        )
        ax.axhline(float(table[f"ref {metric}"].iloc[0]), color="#2ca02c", ls="--", lw=1, label="M_ref")
        ax.set_xticks(x, labels)
        ax.set_xlabel("ε")
        ax.set_ylabel(f"held-out {metric}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
