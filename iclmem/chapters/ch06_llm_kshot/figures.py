"""Golchin et al. 2024, Fig. 2-4: this build's companions of the paper's figures (notebook 06, seaborn)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from iclmem.llm.prompts import SETTINGS


def _group_label(df: pd.DataFrame) -> pd.Series:
    if "member" in df.columns:
        return df["model"] + " / " + df["member"].map({True: "members", False: "non-members"})
    return df["model"]


def plot_memorization(rates: pd.DataFrame) -> sns.FacetGrid:
    """Fig. 2 companion: memorization (%) against k, one column per setting; top row exact + near-exact,
    bottom row exact only. ``rates`` comes from ``memorization_rates(..., by=(model, member, setting, k))``."""
    df = rates.copy()
    df["group"] = _group_label(df)
    long = df.melt(
        id_vars=["group", "setting", "k"], value_vars=["memorized", "exact"], var_name="measure", value_name="percent"
    )
    long["measure"] = long["measure"].map({"memorized": "exact + near-exact", "exact": "exact only"})
    long["setting"] = long["setting"].map(SETTINGS)
    g = sns.relplot(
        data=long,
        x="k",
        y="percent",
        hue="group",
        style="group",
        col="setting",
        row="measure",
        kind="line",
        marker="o",
        height=2.6,
        aspect=1.25,
        col_order=[SETTINGS[s] for s in SETTINGS if SETTINGS[s] in set(long.setting)],
        facet_kws={"margin_titles": True},
    )
    g.set_titles(col_template="{col_name}", row_template="{row_name}")
    g.set_axis_labels("k (demonstrations)", "memorization (%)")
    g.set(ylim=(-3, 103))
    g.figure.suptitle("Memorization across k-shot regimes (cf. Fig. 2 of the paper)", y=1.03)
    return g


def plot_match_composition(judged: pd.DataFrame, column: str = "match") -> sns.FacetGrid:
    """Fig. 3 companion: share of exact and near-exact matches per k, per setting and group (stacked)."""
    df = judged[judged[column].notna()].copy()
    df["group"] = _group_label(df)
    df["setting"] = df["setting"].map(SETTINGS)
    df["exact"] = (df[column] == "exact") * 100.0
    df["near-exact"] = (df[column] == "near-exact") * 100.0
    pivot = df.groupby(["group", "setting", "k"], observed=True)[["exact", "near-exact"]].mean().reset_index()
    groups, settings = (
        list(dict.fromkeys(pivot["group"])),
        [SETTINGS[s] for s in SETTINGS if SETTINGS[s] in set(pivot.setting)],
    )
    fig, axes = plt.subplots(
        len(groups), len(settings), figsize=(3.2 * len(settings), 2.2 * len(groups)), sharey=True, squeeze=False
    )
    for i, grp in enumerate(groups):
        for j, st in enumerate(settings):
            ax = axes[i][j]
            sub = pivot[(pivot.group == grp) & (pivot.setting == st)].sort_values("k")
            x = [str(k) for k in sub["k"]]
            ax.bar(x, sub["exact"], color=sns.color_palette()[0], label="exact")
            ax.bar(x, sub["near-exact"], bottom=sub["exact"], color=sns.color_palette()[1], label="near-exact")
            ax.set_ylim(0, 100)
            if i == 0:
                ax.set_title(st, fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{grp}\n%", fontsize=8)
            if i == len(groups) - 1:
                ax.set_xlabel("k")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Exact and near-exact matches (cf. Fig. 3 of the paper)")
    fig.tight_layout()
    return fig


def plot_performance_vs_memorization(
    acc: pd.DataFrame, rates: pd.DataFrame, measure: str = "memorized", chance: float | None = None
) -> Any:
    """Fig. 4 companion: k-shot accuracy (left) and memorization in the three settings against k, one panel per model.

    ``chance``: accuracy of a uniform guess (percent), drawn as a dotted line.
    """
    models = list(dict.fromkeys(rates["model"]))
    fig, axes = plt.subplots(1, 1 + len(models), figsize=(3.6 * (1 + len(models)), 3.4), squeeze=False)
    left = axes[0][0]
    sns.lineplot(data=acc, x="k", y="accuracy", hue="model", marker="o", ax=left)
    if chance is not None:
        left.axhline(chance, color="grey", linestyle=":", linewidth=1, label="chance")
    left.set(title="performance (k-shot ICL)", xlabel="k (demonstrations)", ylabel="accuracy (%)", ylim=(-3, 103))
    left.legend(fontsize=7)
    df = rates.copy()
    df["setting"] = df["setting"].map(SETTINGS)
    what = "exact + near-exact" if measure == "memorized" else "exact"
    for ax, model in zip(axes[0][1:], models, strict=True):
        sns.lineplot(data=df[df.model == model], x="k", y=measure, hue="setting", style="setting", marker="o", ax=ax)
        ax.set(title=f"memorization: {model}", xlabel="k (demonstrations)", ylabel=f"{what} (%)", ylim=(-3, 103))
        ax.legend(fontsize=7)
    fig.suptitle("Performance vs memorization (cf. Fig. 4 of the paper)")
    fig.tight_layout()
    return fig


__all__ = ["plot_memorization", "plot_match_composition", "plot_performance_vs_memorization"]
