"""Appendix A4 of this book (IclMem Sec. 4.1, 4.2, App. A.4 applied to your own model): the tables of the audit
(notebook A4).

The chain's calibrated and raw attack per probing epoch, the same attack next to the external audit of the
engine (:func:`iclmem.audit.audit_fine_tuned`), and how many of the 48 manipulations leave TabPFN v2 and TabICL
blind to the query's features. Calibration uses the pretrained checkpoint of the same architecture as M_ref.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

#: What the audit table shows per probing epoch (``summarize_run``'s columns, calibrated Delta S and raw S_theta).
AUDIT_COLUMNS: dict[str, str] = {
    "epoch": "epoch",
    "auc_loss": "AUC (Delta S, loss)",
    "tpr1_loss": "TPR@1% FPR (Delta S, loss)",
    "tpr10_loss": "TPR@10% FPR (Delta S, loss)",
    "raw_auc_loss": "AUC (raw S_theta, loss)",
    "outcome": "outcome (Tab. 3)",
}


def audit_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, learning rate, probing epoch): the calibrated attack, the raw one and the outcome."""
    keys = [c for c in ("dataset", "learning_rate") if c in summary.columns]
    cols = keys + [c for c in AUDIT_COLUMNS if c in summary.columns]
    return summary[cols].rename(columns=AUDIT_COLUMNS).reset_index(drop=True)


def external_audit_table(
    run,
    reference,
    table,
    summary: pd.DataFrame,
    *,
    n_candidates: int = 10,
    max_queries: int | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """The chain's attack on a run's last kept M_theta next to :func:`iclmem.audit.audit_fine_tuned` on the same
    checkpoint.

    The external audit only gets the weights and the member / non-member rows, as an auditor of a
    model fine-tuned elsewhere would; equal numbers show that it measures what notebooks 02-04 do.
    """
    from iclmem.audit import audit_fine_tuned

    epoch = max(run.config.probe_epochs)
    external, _ = audit_fine_tuned(
        run.model(epoch, reference),
        reference,
        table,
        run.manifest.members,
        run.manifest.non_members,
        n_candidates=n_candidates,
        seed=seed,
        max_queries=max_queries,
        n_boot=n_boot,
    )
    chain = summary[(summary.run_key == run.key) & (summary.epoch == epoch)].iloc[0]
    keys = ["auc_loss", "auc_loss_lo", "auc_loss_hi", "tpr10_loss", "auc_entropy", "raw_auc_loss", "mu_gap"]
    return pd.DataFrame(
        {
            "epoch": epoch,
            "score": keys,
            "chain (02-04)": [float(chain[k]) for k in keys],
            "external audit": [float(external[k]) for k in keys],
        }
    )


def naive_probe_table(seed: int = 0) -> pd.DataFrame:
    """How many of the 48 manipulations leave each model blind to the query's features, per preprocessing.

    Measured on the real TabPFN v2 and TabICL architectures at a tiny size with random weights
    (:mod:`iclmem.adapters.tiny`): the blindness of a context-fitted step to a constant column is
    structural, it holds for any weights (:func:`iclmem.adapters.visibility.query_visibility`).
    """
    from iclmem.adapters import load_model
    from iclmem.adapters.tiny import write_tiny_checkpoint
    from iclmem.adapters.visibility import query_visibility

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("tabpfn", "tabicl"):
            path = write_tiny_checkpoint(kind, Path(tmp) / f"{kind}.ckpt", seed=seed)
            for mode in ("context", "dataset"):
                vis = query_visibility(load_model(f"{kind}:{path}", preprocessing=mode), seed=seed)
                rows.append(
                    {
                        "model": kind,
                        "preprocessing": mode + (" (naive)" if mode == "context" else " (default)"),
                        "manipulations blind to x_q": int(vis.blind.sum()),
                        "of": len(vis),
                        "smallest loss spread (nats)": float(vis.spread.min()),
                    }
                )
    return pd.DataFrame(rows)
