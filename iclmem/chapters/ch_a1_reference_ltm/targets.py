"""Appendix A1 (notebook A1): the targets the shipped reference LTM (M_ref, Paper 1 Sec. 4.2) must meet, and the
verdict the appendix renders.

Better than kNN on every dataset, mean ROC AUC within 0.03 and mean R^2 within 0.10 of the best scikit-learn
baseline, read on the headline scores of :func:`~iclmem.chapters.ch_a1_reference_ltm.tables.headline_scores`.
"""

from __future__ import annotations

import pandas as pd

from iclmem.chapters.ch_a1_reference_ltm.tables import headline_scores

#: The targets set for the reference model, per task: (headline metric, largest gap to the best baseline).
QUALITY_TARGETS: dict[str, tuple[str, float]] = {"classification": ("roc_auc", 0.03), "regression": ("r2", 0.10)}


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


def target_texts() -> dict[str, str]:
    """The margins of :data:`QUALITY_TARGETS` as the appendix's prose states them: ``target_<task>``."""
    return {f"target_{task}": f"{margin:.2f}" for task, (_, margin) in QUALITY_TARGETS.items()}


def verdict_glue(verdict: dict[str, object]) -> dict[str, object]:
    """The verdict as the appendix glues it: floats as text with 3 decimals, names, flags and counts as they are."""
    return {key: f"{value:.3f}" if isinstance(value, float) else value for key, value in verdict.items()}
