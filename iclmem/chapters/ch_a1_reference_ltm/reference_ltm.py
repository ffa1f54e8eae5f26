"""Appendix A1 (notebook A1): the reference LTM, its model card and its quality report.

Paper sections: App. A1 of this book; the reference model's quality vs the paper's ConTextTab
(the reference model M_ref of Sec. 4.2); Sec. 4 of Paper 1.

The targets the shipped reference model must meet (better than kNN on every dataset, mean ROC AUC
within 0.03 and mean R^2 within 0.10 of the best scikit-learn baseline), the quality tables and
verdict the appendix renders from ``benchmarks/ltm_quality.py``'s result, and the model-card summary
and pretraining-loss figure. The evaluation itself is engine: :mod:`iclmem.ltm.quality`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

#: The targets set for the reference model, per task: (headline metric, largest gap to the best baseline).
QUALITY_TARGETS: dict[str, tuple[str, float]] = {"classification": ("roc_auc", 0.03), "regression": ("r2", 0.10)}


def quality_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean (and std over seeds) of the headline metric per dataset and method.

    Classification: ROC AUC, accuracy, log loss; regression: R^2 and NLL (LTM only).
    """
    metrics = ["roc_auc", "accuracy", "log_loss", "r2", "nll"]
    present = [m for m in metrics if m in rows.columns]
    agg = rows.groupby(["task", "dataset", "method"])[present].agg(["mean", "std"])
    agg.columns = [f"{m}_{s}" for m, s in agg.columns]
    return agg.dropna(axis=1, how="all").reset_index()


def headline_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of each task's headline metric (ROC AUC or R^2): index (task, dataset), one column per method."""
    per = rows.groupby(["task", "dataset", "method"]).mean(numeric_only=True).reset_index()
    per["score"] = per["roc_auc"].where(per.task == "classification", per.get("r2"))
    return per.pivot(index=["task", "dataset"], columns="method", values="score")


def quality_verdict(rows: pd.DataFrame) -> dict[str, object]:
    """The targets of :data:`QUALITY_TARGETS`: better than kNN on every dataset; mean ROC AUC within 0.03 of the best
    baseline; mean R^2 within 0.10 of the best baseline (means over seeds, then datasets)."""
    scores = headline_scores(rows)
    out: dict[str, object] = {}
    for task, (metric, margin) in QUALITY_TARGETS.items():
        if task not in scores.index.get_level_values("task"):
            continue
        wide = scores.loc[task]
        baselines = [c for c in wide.columns if c != "ltm"]
        best = wide[baselines].mean().idxmax()
        out[f"{task}_ltm_mean_{metric}"] = float(wide["ltm"].mean())
        out[f"{task}_best_baseline"] = best
        out[f"{task}_best_baseline_mean_{metric}"] = float(wide[best].mean())
        out[f"{task}_gap_to_best"] = float(wide[best].mean() - wide["ltm"].mean())
        out[f"{task}_within_margin"] = bool(wide[best].mean() - wide["ltm"].mean() <= margin)
        out[f"{task}_beats_knn_on"] = int((wide["ltm"] > wide["knn"]).sum())
        out[f"{task}_datasets"] = int(len(wide))
    return out


def quality_targets_met(verdict: dict[str, object]) -> bool:
    """All of the targets at once: both margins held and kNN beaten on every dataset."""
    tasks = [t for t in ("classification", "regression") if f"{t}_datasets" in verdict]
    return bool(tasks) and all(
        verdict[f"{t}_within_margin"] and verdict[f"{t}_beats_knn_on"] == verdict[f"{t}_datasets"] for t in tasks
    )


def targets_label(verdict: dict[str, object]) -> str:
    """``"met"`` or ``"not met"``, as the appendix's verdict reads."""
    return "met" if quality_targets_met(verdict) else "not met"


def verdict_glue(verdict: dict[str, object]) -> dict[str, object]:
    """The verdict as the appendix glues it: floats as text with 3 decimals, names, flags and counts as they are."""
    return {key: f"{value:.3f}" if isinstance(value, float) else value for key, value in verdict.items()}


def encoding_comparison(rows: pd.DataFrame, rows_text_categorical: pd.DataFrame) -> pd.DataFrame:
    """Per dataset: the LTM and the best baseline (by the dataset's mean) with text columns of
    numbers read as numbers (the default) and kept categorical; ROC AUC or R^2, means over seeds."""
    out = []
    for label, frame in (("numbers", rows), ("categorical", rows_text_categorical)):
        wide = headline_scores(frame)
        out.append(
            pd.DataFrame(
                {
                    f"ltm, text numbers {label}": wide["ltm"],
                    f"best baseline, text numbers {label}": wide.drop(columns="ltm").max(axis=1),
                }
            )
        )
    return pd.concat(out, axis=1).reset_index()


def card_summary(card: dict) -> pd.DataFrame:
    """The model card at a glance: parameters, steps, wall time, seed, sha256 prefix, then the architecture."""
    summary = {
        "parameters": card["n_parameters"],
        "pretraining steps": card["steps_done"],
        "wall time (min)": round(card["wall_s"] / 60, 1),
        "seed": card["pretraining"]["seed"],
        "sha256": card["sha256"][:16] + "...",
    }
    return pd.concat([pd.Series(summary), pd.Series(card["architecture"])]).rename("value").to_frame()


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


__all__ = [
    "QUALITY_TARGETS",
    "quality_table",
    "headline_scores",
    "quality_verdict",
    "quality_targets_met",
    "targets_label",
    "verdict_glue",
    "encoding_comparison",
    "card_summary",
    "plot_pretraining_loss",
]
