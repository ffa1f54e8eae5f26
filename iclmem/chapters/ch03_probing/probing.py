"""Paper 1, Sec. 4.2 ("Multiple-Choice Protocol", "Context Manipulations"), Sec. 5 ("Perturbation
Effectiveness"), App. A.3 (Tab. 7, Fig. 3, Fig. 4), App. B.3 (Tab. 8): multiple-choice probing (notebook 03).

What only this chapter needs: the paper's perturbation effects and Tab. 8 peaks, the example
probe contexts of Tab. 7, the per-manipulation AUCs and their effects over the baseline, the
distributions and ROC curves of the calibrated attack, and the perturbation claims C12a-c with their
permutation nulls (:func:`perturbation_claims`). The
probe itself (contexts, manipulations, scoring, summaries) is the engine's :mod:`iclmem.probe`.

This module holds the tables and figures; the claims C12a-c, their nulls and the paper's perturbation effects
are :mod:`~iclmem.chapters.ch03_probing.claims`, re-exported here.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from iclmem.chapters.ch03_probing.claims import (
    PAPER_PERTURBATION,
)
from iclmem.probe.summary import fine_tuned
from iclmem.stats.metrics import membership_score
from iclmem.stats.outcomes import Outcome, with_primary_metric

# --- tables -------------------------------------------------------------------------------------

#: Tab. 8 of the paper: the highest peak AUC(Delta S) and the highest TPRs over its detectable configurations.
PAPER_PEAKS = {"auc": 0.668, "tpr10": 0.494, "tpr1": 0.166}


def best_auc(summary: pd.DataFrame) -> pd.Series:
    """AUC(Delta S) of the metric that signals most, loss or entropy (as Tab. 8 reports)."""
    return summary[["auc_loss", "auc_entropy"]].max(axis=1)


def detectable_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """Fine-tuned configurations (epoch > 0) whose Tab. 3 outcome is detectable memorization, with their primary
    metric."""
    s = fine_tuned(summary)
    return with_primary_metric(s[s.outcome == Outcome.MEMORIZATION.value])


def _deltas_over_baseline(per_config: list[pd.DataFrame]) -> pd.DataFrame:
    """All per-manipulation AUC rows, with ``delta_auc``: AUC minus the same configuration and epoch's baseline AUC."""
    frames = []
    for i, f in enumerate(per_config):
        base = f[f.manipulation == "baseline"].set_index("epoch").auc
        frames.append(f.assign(delta_auc=f.auc - f.epoch.map(base), config=i))
    return pd.concat(frames)


def manipulation_effects(per_config: list[pd.DataFrame]) -> pd.DataFrame:
    """Per manipulation: mean AUC and mean change of AUC over the baseline manipulation, over configurations (Fig.
    4)."""
    if not per_config:
        return pd.DataFrame(columns=["manipulation", "category", "mean_auc", "mean_delta_auc", "n"])
    d = _deltas_over_baseline(per_config)
    return (
        d.groupby(["manipulation", "category"])
        .agg(mean_auc=("auc", "mean"), mean_delta_auc=("delta_auc", "mean"), n=("auc", "size"))
        .reset_index()
        .sort_values("mean_delta_auc", ascending=False, kind="stable")
    )


def probing_vs_paper(summary: pd.DataFrame, per_config: list[pd.DataFrame]) -> pd.DataFrame:
    """Our probing headline numbers beside the paper's (Tab. 8 peaks; Sec. 5 / Fig. 4 perturbation effects).

    ``per_config``: :func:`iclmem.probe.effects.manipulation_aucs` frames of the configurations Fig. 4 averages over.
    Peaks are over the detectable-memorization configurations (epoch > 0), as Tab. 8 reports them,
    each AUC with the TPRs of its own primary metric (:func:`with_primary_metric`).
    """
    fine = detectable_rows(summary)
    effects = manipulation_effects(per_config)
    by_cat = effects[effects.manipulation != "baseline"].groupby("category").mean_delta_auc.mean()
    best = effects[effects.manipulation != "baseline"].iloc[0] if len(effects) > 1 else None
    base = effects[effects.manipulation == "baseline"].mean_auc
    ours = {
        "peak AUC(Delta S), loss or entropy": fine.auc.max() if len(fine) else np.nan,
        "peak TPR@10% (primary metric)": fine.tpr10.max() if len(fine) else np.nan,
        "peak TPR@1% (primary metric)": fine.tpr1.max() if len(fine) else np.nan,
        "baseline manipulation: mean AUC": float(base.iloc[0]) if len(base) else np.nan,
        "skew true target: mean Delta AUC": by_cat.get("skew_true", np.nan),
        "positional shuffling: mean Delta AUC": by_cat.get("positional_shuffling", np.nan),
        "best single manipulation": best.manipulation if best is not None else "-",
        "best single manipulation: Delta AUC": best.mean_delta_auc if best is not None else np.nan,
    }
    paper = [
        PAPER_PEAKS["auc"],
        PAPER_PEAKS["tpr10"],
        PAPER_PEAKS["tpr1"],
        PAPER_PERTURBATION["baseline_auc"],
        PAPER_PERTURBATION["skew_true_delta"],
        PAPER_PERTURBATION["positional_shuffling_delta"],
        PAPER_PERTURBATION["best_single"],
        PAPER_PERTURBATION["best_single_delta"],
    ]
    return pd.DataFrame(
        {"iclmem": [_fmt(v) for v in ours.values()], "paper": [_fmt(v) for v in paper]}, index=list(ours)
    )


def _fmt(v: object) -> str:
    """Numbers to three decimals (NaN as "-"), names as they are: one readable column of mixed values."""
    if isinstance(v, (float, np.floating)):
        return "-" if np.isnan(v) else f"{v:.3f}"
    return str(v)


def perturbation_effectiveness(per_config: list[pd.DataFrame]) -> pd.DataFrame:
    """Fig. 4: mean change of per-manipulation AUC over the baseline manipulation, by category.

    ``per_config`` holds :func:`iclmem.probe.effects.manipulation_aucs` frames of the configurations to average over
    (the paper uses its detectable-memorization configurations).
    """
    if not per_config:
        return pd.DataFrame(columns=["category", "mean_delta_auc", "n"])
    d = _deltas_over_baseline(per_config)
    d = d[d.manipulation != "baseline"]
    return (
        d.groupby("category").delta_auc.agg(mean_delta_auc="mean", n="size").reset_index().sort_values("mean_delta_auc")
    )


def example_probe_contexts(
    query_x: np.ndarray,
    query_y: object,
    candidates: np.ndarray,
    names: list[str],
    columns: list[str],
    seed: int = 0,
    query_id: int = 0,
) -> dict[str, pd.DataFrame]:
    """The manipulated multiple-choice contexts of one query as small tables (Sec. 4.2, Tab. 7).

    Column names follow the features through the manipulation: it is applied once more to a
    context whose cells hold the column index, with the same seed, which shows which columns a
    feature reduction kept; appended distractor columns are named ``noise_i``.
    """
    from iclmem.probe.contexts import mc_context
    from iclmem.probe.manipulations import get_manipulation

    base = mc_context(query_x, query_y, candidates)
    index = base.with_(
        context_x=np.tile(np.arange(len(columns), dtype=np.float32), (base.n_rows, 1)),
        query_x=np.arange(len(columns), dtype=np.float32)[None, :],
    )
    out = {}
    for name in names:
        manipulation = get_manipulation(name)
        ctx = manipulation.apply(base, seed=seed, query_id=query_id)
        kept = manipulation.apply(index, seed=seed, query_id=query_id).query_x[0]
        n_noise = 0
        labels = []
        for v in kept:
            if float(v).is_integer() and 0 <= v < len(columns):
                labels.append(columns[int(v)])
            else:
                labels.append(f"noise_{n_noise}")
                n_noise += 1
        frame = pd.DataFrame(ctx.context_x, columns=labels)
        frame["target"] = ctx.context_y
        frame["is true target"] = [bool(v == query_y) for v in ctx.context_y]
        out[name] = frame
    return out


def strongest_configuration(summary: pd.DataFrame) -> pd.Series:
    """The non-collapsed (run, epoch > 0) with the highest AUC(Delta S) on loss or entropy."""
    s = fine_tuned(summary)
    s = s[~s.collapsed.astype(bool)]
    if s.empty:
        s = fine_tuned(summary)
    return s.loc[best_auc(s).idxmax()]


def delta_frame(scores: pd.DataFrame, epoch: int) -> pd.DataFrame:
    """Delta S(q) per metric for one epoch, long format (metric, delta, membership) for plotting."""
    from iclmem.stats.metrics import METRICS, delta_scores

    theta, ref = scores[(scores.model == "theta") & (scores.epoch == epoch)], scores[scores.model == "ref"]
    parts = [delta_scores(theta, ref, m).assign(metric=m) for m in METRICS]
    d = pd.concat(parts, ignore_index=True)
    d["membership"] = np.where(d.is_member.astype(bool), "member", "non-member")
    return d[["metric", "query_id", "membership", "delta", "score"]]


def roc_frame(scores: pd.DataFrame, epoch: int, metric: str = "loss") -> pd.DataFrame:
    """Log-log ROC points of the calibrated (Delta S) and the raw (S_theta) attack, for one epoch."""
    from iclmem.stats.metrics import delta_scores, roc_points, split_members, suite_scores

    theta, ref = scores[(scores.model == "theta") & (scores.epoch == epoch)], scores[scores.model == "ref"]
    cal = delta_scores(theta, ref, metric)
    raw = suite_scores(theta, metric)
    raw["score"] = membership_score(metric, raw.S)
    return pd.concat(
        [
            roc_points(*split_members(cal)).assign(label=f"calibrated, {metric}"),
            roc_points(*split_members(raw)).assign(label=f"raw (S_theta), {metric}"),
        ],
        ignore_index=True,
    )


# --- figures ----------------------------------------------------------------------------------


def plot_delta_distributions(delta: pd.DataFrame) -> sns.FacetGrid:
    """Delta S(q) = S_theta(q) - S_ref(q) per metric, members vs non-members (Sec. 4.2).

    ``delta``: columns metric, delta, membership ("member" / "non-member").
    """
    g = sns.displot(
        data=delta,
        x="delta",
        hue="membership",
        col="metric",
        kind="kde",
        common_norm=False,
        fill=True,
        facet_kws={"sharex": False, "sharey": False},
        height=2.8,
        aspect=1.2,
        warn_singular=False,
    )
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


__all__ = [
    "PAPER_PEAKS",
    "best_auc",
    "delta_frame",
    "detectable_rows",
    "example_probe_contexts",
    "manipulation_effects",
    "perturbation_effectiveness",
    "plot_delta_distributions",
    "plot_perturbation_effectiveness",
    "plot_roc_loglog",
    "probing_vs_paper",
    "roc_frame",
    "strongest_configuration",
]
