"""Appendix A1 (notebook A1): the tables of the reference LTM's quality report and model card.

The reference model is M_ref of Paper 1, Sec. 4.2 (compared with the paper's ConTextTab). The tables shape
``benchmarks/ltm_quality.py``'s result (the evaluation itself is engine: :mod:`iclmem.ltm.quality`) and the
model card.
"""

from __future__ import annotations

import pandas as pd

from iclmem.ltm.reference import parameter_count_text


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


def card_texts(card: dict) -> dict[str, str]:
    """The model card's numbers notebook A1's prose states (issue 53 item 5): ``card_parameters`` (about how many),
    the output sizes ``card_max_classes`` and ``card_n_bins``, and the prior's ranges ``card_contexts`` (context rows),
    ``card_features``, ``card_max_context`` and ``card_max_categories`` (levels of a categorical column)."""
    arch, prior = card["architecture"], card["prior"]
    return {
        "card_parameters": parameter_count_text(card),
        "card_max_classes": str(arch["max_classes"]),
        "card_n_bins": str(arch["n_bins"]),
        "card_contexts": f"{prior['min_context']}-{prior['max_context']}",
        "card_features": f"{prior['min_features']}-{prior['max_features']}",
        "card_max_context": str(prior["max_context"]),
        "card_max_categories": str(prior["max_categories"]),
    }


def benchmark_texts(quality: dict) -> dict[str, str]:
    """The quality benchmark's settings notebook A1's prose states, from its result file (``seeds``, ``speed``) and the
    engine's defaults the benchmark runs with (:func:`iclmem.ltm.quality.split_table`,
    :func:`iclmem.ltm.quality.zero_information_check`, :data:`iclmem.data.columns.NUMERIC_TEXT_SHARE`)."""
    import inspect

    from iclmem.data.columns import NUMERIC_TEXT_SHARE
    from iclmem.ltm.quality import split_table, zero_information_check

    split = inspect.signature(split_table).parameters
    zero = inspect.signature(zero_information_check).parameters
    seeds, speed = int(quality["seeds"]), quality.get("speed", {})
    return {
        "quality_seeds": str(seeds),
        "quality_seed_range": f"0-{seeds - 1}" if seeds > 1 else "0",
        "quality_max_test": str(split["max_test"].default),
        "quality_max_train": str(split["max_train"].default),
        "numeric_text_share": f"{NUMERIC_TEXT_SHARE:.0%}",
        "zero_info_candidates": str(zero["n_candidates"].default),
        "speed_context": str(speed.get("n_context", "-")),
        "speed_queries": str(speed.get("n_query", "-")),
        "speed_features": str(speed.get("n_features", "-")),
    }


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
