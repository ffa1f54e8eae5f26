"""Paper 1, App. D (Tab. 12): the peak detectable memorization per dataset and training regime (notebook 05).

The paper's Tab. 12 and its layout, the same table from the sweep's rows (:func:`regime_peak_table`), the count of
tables with detectable memorization per regime and whether it decays (:func:`detectable_counts`, :func:`decays`),
and the figure beside the paper's (:func:`plot_regime_decay`). Re-exported by
:mod:`iclmem.chapters.ch05_regimes.regimes`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclmem.outcomes import Outcome, with_primary_metric
from iclmem.regimes import MULTI_TASK_FIXED, MULTI_TASK_RANDOM, REGIMES, SINGLE_TASK_FIXED, RegimeError

#: Column titles of Tab. 12.
REGIME_TITLES: dict[str, str] = {
    SINGLE_TASK_FIXED: "Single-Task Fixed Pairs",
    MULTI_TASK_FIXED: "Multi-Task Fixed Pairs",
    MULTI_TASK_RANDOM: "Multi-Task Random Pairs",
}


#: Tab. 12 of the paper (Q = 512): peak detectable memorization per regime, for the five datasets
#: with signal in at least one regime; a missing (dataset, regime) is "--" (no detectable signal).
#: Single-task peaks are across all learning rates (lr 1e-3 at babies_r_us and bikewale, else 1e-4);
#: the joint regimes use lr 1e-4 on all 10 CARTE tasks.
PAPER_TABLE12 = pd.DataFrame(
    [
        ("babies_r_us", SINGLE_TASK_FIXED, 1, 0.668, 0.205, 0.008, 1e-3),
        ("babies_r_us", MULTI_TASK_FIXED, 100, 0.618, 0.008, 0.000, 1e-4),
        ("beer_ratings", SINGLE_TASK_FIXED, 50, 0.586, 0.494, 0.166, 1e-4),
        ("bikedekho", SINGLE_TASK_FIXED, 10, 0.579, 0.148, 0.016, 1e-4),
        ("bikedekho", MULTI_TASK_FIXED, 1, 0.558, 0.190, 0.027, 1e-4),
        ("bikewale", SINGLE_TASK_FIXED, 1, 0.582, 0.266, 0.123, 1e-3),
        ("bikewale", MULTI_TASK_RANDOM, 10, 0.575, 0.100, 0.018, 1e-4),
        ("cardekho", SINGLE_TASK_FIXED, 50, 0.560, 0.029, 0.002, 1e-4),
    ],
    columns=["dataset", "regime", "epoch", "auc", "tpr10", "tpr1", "learning_rate"],
)
#: Datasets of the paper's evaluation (Tab. 5); Tab. 12 lists only those with a detectable signal.
PAPER_DATASETS = 10


def decays(counts: pd.Series) -> bool:
    """Whether detectable counts, in regime order, never rise and end below where they start (Tab. 12's decay)."""
    v = counts.to_numpy()
    return bool(v[-1] < v[0] and (v[1:] <= v[:-1]).all())


def regime_peak_table(
    rows: pd.DataFrame,
    query_size: int = 512,
    metric: str = "best",
    label_condition: str = "none",
    require_ci: bool = False,
) -> pd.DataFrame:
    """Tab. 12 from sweep rows: per dataset and regime, the probing epoch with the highest AUC(Delta S).

    Only epochs whose Tab. 3 outcome is detectable memorization count (epoch 0, M_ref, never does);
    a (dataset, regime) without one gets NaN ("--" in the paper). ``metric`` is ``"loss"``,
    ``"entropy"`` or ``"best"`` (default): per epoch the higher of the two AUCs, since Tab. 3
    detects on loss *or* entropy; the TPRs are of the same metric. Rows are filtered to
    ``query_size`` and ``label_condition``; the peak runs over every learning rate in ``rows``
    (the paper's single-task column takes the peak across all learning rates). ``require_ci``
    also asks the lower bound of the bootstrap interval of that AUC to exceed 0.5 (few probed
    queries: the point estimate exceeds 0.5 by chance half the time). Columns: dataset, regime,
    epoch, learning_rate, metric, auc, auc_lo, tpr10, tpr1, members_logged, detectable.
    """
    if metric not in ("loss", "entropy", "best"):
        raise RegimeError(f"metric must be 'loss', 'entropy' or 'best', got {metric!r}.")
    data = with_primary_metric(
        rows[(rows.query_size == query_size) & (rows.label_condition == label_condition) & (rows.epoch > 0)], metric
    )
    out = []
    for (dataset, regime), group in data.groupby(["dataset", "regime"], sort=False):
        hits = group[(group.outcome == Outcome.MEMORIZATION.value) & ((group.auc_lo > 0.5) | (not require_ci))]
        row = {
            "dataset": dataset,
            "regime": regime,
            "members_logged": int(group.members_logged.max()),
            "detectable": not hits.empty,
        }
        if not hits.empty:
            best = hits.loc[hits.auc.idxmax()]
            row.update(
                epoch=int(best.epoch),
                learning_rate=float(best.learning_rate),
                metric=best.metric,
                auc=float(best.auc),
                auc_lo=float(best.auc_lo),
                tpr10=float(best.tpr10),
                tpr1=float(best.tpr1),
            )
        out.append(row)
    cols = [
        "dataset",
        "regime",
        "epoch",
        "learning_rate",
        "metric",
        "auc",
        "auc_lo",
        "tpr10",
        "tpr1",
        "members_logged",
        "detectable",
    ]
    return pd.DataFrame(out, columns=cols).astype({"epoch": "Int64"})


def wide_table(peaks: pd.DataFrame, values: Sequence[str] = ("epoch", "auc", "tpr10", "tpr1")) -> pd.DataFrame:
    """Tab. 12's layout: one row per dataset, (regime, value) columns in the order of :data:`REGIMES`."""
    wide = peaks.pivot(index="dataset", columns="regime", values=list(values)).swaplevel(axis=1)
    order = [(r, v) for r in REGIMES for v in values if (r, v) in wide.columns]
    wide = wide[order]
    for col in [c for c in wide.columns if c[1] == "epoch"]:
        wide[col] = wide[col].astype("Int64")
    return wide.rename(columns=REGIME_TITLES, level=0)


def detectable_counts(peaks: pd.DataFrame, n_datasets: int | None = None) -> pd.Series:
    """Datasets with detectable memorization per regime (the paper: 5 -> 2 -> 1 of 10)."""
    counts = (
        peaks.auc.notna()
        .groupby(peaks.regime)
        .sum()
        .reindex([r for r in REGIMES if r in set(peaks.regime)])
        .astype(int)
    )
    counts.name = f"detectable (of {n_datasets or peaks.dataset.nunique()})"
    return counts


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
