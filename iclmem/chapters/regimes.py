"""Paper 1, Sec. 6 ("Limitations") and App. D (Tab. 12): realistic training regimes (notebook 05).

What only this chapter needs: the paper's Tab. 12 and its layout, the per-regime peak table and
its figure, the encoding-balance check of the probed splits and the regime-decay claim (C13).
The regimes themselves (sampling, joint training, probed members) are the engine's
:mod:`iclmem.regimes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import fisher_exact

from ..data import Dataset
from ..finetune import RunData, prepare_run_data
from ..grid import RunSpec, run_spec, table_of
from ..outcomes import Outcome, with_primary_metric
from ..regimes import MULTI_TASK, MULTI_TASK_FIXED, MULTI_TASK_RANDOM, REGIMES, SINGLE_TASK_FIXED, RegimeError
from ..sweep.gridfile import Grid, load_grid, parse_grid
from .claims import claim_record

#: Column titles of Tab. 12.
REGIME_TITLES: dict[str, str] = {SINGLE_TASK_FIXED: "Single-Task Fixed Pairs", MULTI_TASK_FIXED: "Multi-Task Fixed Pairs",
                                 MULTI_TASK_RANDOM: "Multi-Task Random Pairs"}


def encoding_balance(specs: Sequence[RunSpec], results_dir: str | None = None, carte_dir: str | None = None,
                     tables: Mapping[str, Dataset] | None = None) -> pd.DataFrame:
    """Per regime, dataset and encoded column: the missing-value share among probed members and among non-members.

    The runs are read from the results store (trained if missing). A column whose missing values
    track membership would let the attack detect the encoding instead of memorization (App. A.1,
    "Distributional shift"); ``p`` is Fisher's exact test of equal shares. ``tables``: the notebook's
    tables by name (a file of your own), else loaded by name.
    """
    rows = []
    for spec in specs:
        run = run_spec(spec, results_dir=results_dir, carte_dir=carte_dir, tables=tables)
        for name in spec.datasets:
            view = run.view(name) if spec.regime in MULTI_TASK else run
            table = table_of(name, tables, carte_dir)
            data = prepare_run_data(view.manifest, table, view.config)
            rows += [{"regime": spec.regime, "dataset": name, **r} for r in missing_balance(data)]
    return pd.DataFrame(rows)


def missing_balance(data: RunData) -> list[dict]:
    """Per encoded column of a run's data: missing share among members, among non-members, and Fisher's exact p."""
    rows = []
    for j, column in enumerate(np.asarray(data.encoder.columns)[data.feature_columns]):
        m, n = np.isnan(data.member_x[:, j]), np.isnan(data.non_member_x[:, j])
        p = float(fisher_exact([[m.sum(), (~m).sum()], [n.sum(), (~n).sum()]]).pvalue)
        rows.append({"column": str(column), "missing members": float(m.mean()), "missing non-members": float(n.mean()), "p": p})
    return rows


def balance_summary(balance: pd.DataFrame) -> pd.DataFrame:
    """Per regime: the largest member / non-member gap in missing share over all columns, and the smallest p-value."""
    gap = (balance["missing members"] - balance["missing non-members"]).abs()
    return (balance.assign(gap=gap).groupby("regime", sort=False)
            .agg(columns=("column", "size"), largest_gap=("gap", "max"), smallest_p=("p", "min"))
            .reindex([r for r in REGIMES if r in set(balance.regime)]))


def decays(counts: pd.Series) -> bool:
    """Whether detectable counts, in regime order, never rise and end below where they start (Tab. 12's decay)."""
    v = counts.to_numpy()
    return bool(v[-1] < v[0] and (v[1:] <= v[:-1]).all())


def notebook_grid(tables: Mapping[str, Dataset], data_path: str, learning_rates: Sequence[float], query_sizes: Sequence[int],
                  regimes: Sequence[str], epochs: int, context_size: int, seed: int, n_candidates: int, max_queries: int,
                  probe_epochs: Sequence[int], n_boot: int, grid_file: str | None = None) -> Grid:
    """Notebook 05's sweep grid: the grid file if one is given, else one built from the notebook's parameters.

    ``tables`` are the notebook's tables (:func:`iclmem.chapters.tables.notebook_tables`); with
    ``data_path`` the one table is your file, given to the sweep by path, target and task.
    """
    if grid_file:
        return load_grid(grid_file)
    if data_path:
        table = next(iter(tables.values()))
        entries: list = [{"path": str(Path(data_path).resolve()), "target": str(table.target.name), "task": table.task, "name": table.name}]
    else:
        entries = list(tables)
    return parse_grid({"name": "book", "datasets": entries, "learning_rates": list(learning_rates), "query_sizes": list(query_sizes),
                       "regimes": list(regimes), "epochs": epochs, "context_size": context_size, "seed": seed,
                       "probe": {"n_candidates": n_candidates, "max_queries": max_queries, "epochs": list(probe_epochs), "n_boot": n_boot}},
                      "notebook 05 parameters")


def regime_claim(peaks: pd.DataFrame, peaks_ci: pd.DataFrame) -> dict:
    """C13: detectable tasks fall from regime to regime (paper: 5 -> 2 -> 1 of 10; the last only at epoch 10)."""
    paper = detectable_counts(PAPER_TABLE12, PAPER_DATASETS)
    ours, ours_ci = detectable_counts(peaks), detectable_counts(peaks_ci)
    n = peaks.dataset.nunique()
    paper_text = " -> ".join(str(int(c)) for c in paper) + f" of {PAPER_DATASETS} (multi-task random: only at epoch 10)"
    text = " -> ".join(str(int(c)) for c in ours) + f" of {n}"
    if len(ours) < 2:
        return claim_record("C13", paper_text, text, "not testable here", "the comparison needs at least two regimes")
    falls = decays(ours)
    return claim_record("C13", paper_text, text, "reproduced" if falls else "differs",
                        f"the count {'falls' if falls else 'does not fall'} from regime to regime (point-estimate rule of Tab. 3); "
                        "with the bootstrap lower bound above 0.5: " + " -> ".join(str(int(c)) for c in ours_ci))


#: Tab. 12 of the paper (Q = 512): peak detectable memorization per regime, for the five datasets
#: with signal in at least one regime; a missing (dataset, regime) is "--" (no detectable signal).
#: Single-task peaks are across all learning rates (lr 1e-3 at babies_r_us and bikewale, else 1e-4);
#: the joint regimes use lr 1e-4 on all 10 CARTE tasks.
PAPER_TABLE12 = pd.DataFrame(
    [("babies_r_us", SINGLE_TASK_FIXED, 1, 0.668, 0.205, 0.008, 1e-3), ("babies_r_us", MULTI_TASK_FIXED, 100, 0.618, 0.008, 0.000, 1e-4),
     ("beer_ratings", SINGLE_TASK_FIXED, 50, 0.586, 0.494, 0.166, 1e-4),
     ("bikedekho", SINGLE_TASK_FIXED, 10, 0.579, 0.148, 0.016, 1e-4), ("bikedekho", MULTI_TASK_FIXED, 1, 0.558, 0.190, 0.027, 1e-4),
     ("bikewale", SINGLE_TASK_FIXED, 1, 0.582, 0.266, 0.123, 1e-3), ("bikewale", MULTI_TASK_RANDOM, 10, 0.575, 0.100, 0.018, 1e-4),
     ("cardekho", SINGLE_TASK_FIXED, 50, 0.560, 0.029, 0.002, 1e-4)],
    columns=["dataset", "regime", "epoch", "auc", "tpr10", "tpr1", "learning_rate"])
#: Datasets of the paper's evaluation (Tab. 5); Tab. 12 lists only those with a detectable signal.
PAPER_DATASETS = 10


def regime_peak_table(rows: pd.DataFrame, query_size: int = 512, metric: str = "best", label_condition: str = "none",
               require_ci: bool = False) -> pd.DataFrame:
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
    data = with_primary_metric(rows[(rows.query_size == query_size) & (rows.label_condition == label_condition) & (rows.epoch > 0)],
                               metric)
    out = []
    for (dataset, regime), group in data.groupby(["dataset", "regime"], sort=False):
        hits = group[(group.outcome == Outcome.MEMORIZATION.value) & ((group.auc_lo > 0.5) | (not require_ci))]
        row = {"dataset": dataset, "regime": regime, "members_logged": int(group.members_logged.max()), "detectable": not hits.empty}
        if not hits.empty:
            best = hits.loc[hits.auc.idxmax()]
            row.update(epoch=int(best.epoch), learning_rate=float(best.learning_rate), metric=best.metric, auc=float(best.auc),
                       auc_lo=float(best.auc_lo), tpr10=float(best.tpr10), tpr1=float(best.tpr1))
        out.append(row)
    cols = ["dataset", "regime", "epoch", "learning_rate", "metric", "auc", "auc_lo", "tpr10", "tpr1", "members_logged", "detectable"]
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
    counts = peaks.auc.notna().groupby(peaks.regime).sum().reindex([r for r in REGIMES if r in set(peaks.regime)]).astype(int)
    counts.name = f"detectable (of {n_datasets or peaks.dataset.nunique()})"
    return counts


def plot_regime_decay(ours: pd.DataFrame, paper: pd.DataFrame = PAPER_TABLE12):
    """Peak AUC(Delta S) per dataset across the three regimes (cf. Tab. 12): ours (solid) beside the paper's (dashed).

    A dataset without detectable memorization in a regime is drawn at chance (AUC 0.5) with an open marker.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, data, title, style in ((axes[0], paper, "paper (Tab. 12, CARTE tables)", "--"), (axes[1], ours, "this build", "-")):
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


__all__ = ["PAPER_DATASETS", "PAPER_TABLE12", "REGIME_TITLES", "balance_summary", "decays", "detectable_counts", "encoding_balance",
           "notebook_grid",
           "missing_balance", "plot_regime_decay", "regime_claim", "regime_peak_table", "wide_table"]
