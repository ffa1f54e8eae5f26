"""Per-epoch summaries of probe scores (Sec. 4.2, App. A.4, B.2, Tab. 3, Tab. 10/11).

:func:`summarize_run` turns the scores of :func:`iclmem.probe.probe_run` into one row per epoch:
calibrated AUC(Delta S) and TPR@1%/10% with bootstrap intervals per metric, the uncalibrated ones
on S_theta and on S_ref alone (App. A.4), mu_gap / sigma_gap, the vanilla-loss deltas of Tab. 10,
the null control (two random halves of the non-members, which must look like chance) and the
Tab. 3 outcome.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..stats.metrics import (
    METRICS,
    attack_metrics,
    check_paired,
    delta_from_suites,
    gap_stats,
    loss_gaps,
    membership_score,
    null_halves,
    split_members,
    suite_scores,
)
from ..stats.outcomes import DETECT_METRICS, classify_outcome
from ..training.finetune import FinetuneRun
from .contexts import ProbeError

#: The label conditions whose members and non-members are scored alike (N: true labels in both pools; All: shuffled
#: in both), so that permuting membership is a valid null. Under M only the members carry shuffled labels, so Delta S
#: can separate "shuffled" from "true" labels with no memorization: M rows are judged by their contrast with All
#: (chapter 04's shuffled-label contrast), never pooled into a membership-null claim.
MEMBERSHIP_CONDITIONS: tuple[str, ...] = ("none", "all")


def membership_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows a membership-null claim may read: label conditions N and All (:data:`MEMBERSHIP_CONDITIONS`)."""
    if "label_condition" not in summary.columns:
        return summary
    return summary[summary.label_condition.isin(MEMBERSHIP_CONDITIONS)]


def fine_tuned(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows of fine-tuned models only (epoch 0 is M_ref itself)."""
    return summary[summary.epoch > 0]


def summarize_scores(
    theta: pd.DataFrame, ref: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, metrics: Sequence[str] = METRICS
) -> dict[str, float]:
    """Calibrated and raw attack metrics per metric, and the loss gap statistics, of one M_theta vs M_ref.

    Keys: ``auc_loss``, ``auc_loss_lo``, ``auc_loss_hi``, ``tpr1_loss``, ``tpr10_loss`` (+ ``_lo``/``_hi``), the same
    for
    entropy and confidence; ``raw_auc_loss``, ``raw_tpr1_loss``, ... on S_theta alone and ``ref_auc_loss``,
    ``ref_tpr10_loss``, ... on S_ref alone (App. A.4: what M_ref already separates); ``null_auc_loss`` (+
    ``_lo``/``_hi``)
    and the same for entropy: the negative control of :func:`iclmem.stats.metrics.null_halves` (two random halves of the
    non-members attacked as if one were members; its interval should cover 0.5); ``mu_gap``, ``sigma_gap``, ...
    """
    row: dict[str, float] = {}
    check_paired(theta, ref)  # once for every metric: the pairs do not depend on it
    for metric in metrics:
        s_theta, s_ref = suite_scores(theta, metric), suite_scores(ref, metric)
        d = delta_from_suites(s_theta, s_ref, metric)
        m, n = split_members(d, "score")
        for k, v in attack_metrics(m, n, n_boot=n_boot, seed=seed).items():
            base, _, bound = k.partition("_")
            row[f"{base}_{metric}" + (f"_{bound}" if bound else "")] = v
        for prefix, s in (("raw", s_theta), ("ref", s_ref)):
            raw_m, raw_n = split_members(s.assign(score=membership_score(metric, s.S)), "score")
            for k, v in attack_metrics(raw_m, raw_n, n_boot=0).items():
                row[f"{prefix}_{k}_{metric}"] = v
        if metric in DETECT_METRICS and len(n) >= 4:
            half_a, half_b = null_halves(n, seed)
            null = attack_metrics(half_a, half_b, n_boot=n_boot, seed=seed, fprs=())
            row.update(
                {
                    f"null_auc_{metric}": null["auc"],
                    f"null_auc_{metric}_lo": null["auc_lo"],
                    f"null_auc_{metric}_hi": null["auc_hi"],
                }
            )
    mu, sigma = gap_stats(loss_gaps(theta, "loss"))
    m_loss, n_loss = split_members(theta, "loss")
    row.update(
        {
            "mu_gap": mu,
            "sigma_gap": sigma,
            "mean_member_loss": float(m_loss.mean()),
            "mean_non_member_loss": float(n_loss.mean()),
            "n_members": int(theta.loc[theta.is_member.astype(bool), "query_id"].nunique()),
            "n_non_members": int(theta.loc[~theta.is_member.astype(bool), "query_id"].nunique()),
        }
    )
    return row


def summarize_run(
    scores: pd.DataFrame,
    run: FinetuneRun | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    require_ci: bool = False,
    inversion: str = "mean",
) -> pd.DataFrame:
    """One row per epoch: AUC/TPR (calibrated with CIs, and raw) per metric, gaps, vanilla-loss deltas, outcome (Tab.
    3).

    Without ``run`` the collapse test has no fine-tuning metrics and is skipped (never fires).
    """
    if "model" not in scores.columns or "epoch" not in scores.columns:
        raise ProbeError("scores need 'model' and 'epoch' columns; pass the frame probe_run returns.")
    ref = scores[scores.model == "ref"]
    if ref.empty:
        raise ProbeError("scores hold no M_ref rows (model == 'ref'); difficulty calibration needs them.")
    ft = run.metrics.set_index("epoch") if run is not None else None
    rows = []
    for epoch, theta in scores[scores.model == "theta"].groupby("epoch", sort=True):
        row: dict = {"epoch": int(epoch), **summarize_scores(theta, ref, n_boot=n_boot, seed=seed)}
        collapsed, ratio = False, None
        if ft is not None and epoch in ft.index:
            r = ft.loc[epoch]
            collapsed, ratio = bool(r["collapsed"]), float(r["loss_ratio"])
            row["delta_lv_members"] = float(r["theta_loss_members"] - r["ref_loss_members"])
            row["delta_lv_non_members"] = float(r["theta_loss_non_members"] - r["ref_loss_non_members"])
        row["loss_ratio"], row["collapsed"] = ratio, collapsed
        res = classify_outcome(
            gaps=loss_gaps(theta, "loss").to_numpy(),
            auc={m: row[f"auc_{m}"] for m in ("loss", "entropy")},
            auc_ci_low={m: row.get(f"auc_{m}_lo", np.nan) for m in ("loss", "entropy")},
            collapsed=collapsed,
            loss_ratio=ratio,
            require_ci=require_ci,
            inversion=inversion,
        )
        row["outcome"], row["outcome_rule"] = res.outcome.value, res.evidence["rule"]
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = [
    "MEMBERSHIP_CONDITIONS",
    "fine_tuned",
    "membership_rows",
    "summarize_run",
    "summarize_scores",
]
