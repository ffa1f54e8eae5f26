"""Appendix A4 of this book (IclMem Sec. 4.1, 4.2, App. A.4 applied to your own model): audit a fine-tuned LTM (notebook A4).

The page runs the whole chain (controlled fine-tuning with a logged ground truth, the zero-information
multiple-choice probe with its 48 manipulations, calibration against M_ref) with the shipped
reference LTM, and gives the exact commands that run the same chain on a TabPFN v2 or TabICL
checkpoint (:mod:`iclmem.adapters`). Calibration uses the pretrained checkpoint of the same
architecture as M_ref: the ``model`` parameter names it, every run starts from it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

#: The chain an audit runs, in order: fine-tuning (ground truth), probing, calibration and outcome.
AUDIT_CHAIN: tuple[str, ...] = ("02_controlled_finetuning", "03_multiple_choice_probing", "04_calibration")
#: What the audit table shows per probing epoch (``summarize_run``'s columns, calibrated Delta S and raw S_theta).
AUDIT_COLUMNS: dict[str, str] = {"epoch": "epoch", "auc_loss": "AUC (Delta S, loss)", "tpr1_loss": "TPR@1% FPR (Delta S, loss)",
                                 "tpr10_loss": "TPR@10% FPR (Delta S, loss)", "raw_auc_loss": "AUC (raw S_theta, loss)",
                                 "outcome": "outcome (Tab. 3)"}


def audit_commands(kind: str, checkpoint: str, parameters_file: str = "my_table.yaml") -> str:
    """The exact shell commands that audit a ``kind`` ("tabpfn" or "tabicl") checkpoint on the table of ``parameters_file``."""
    if kind not in ("tabpfn", "tabicl"):
        raise ValueError(f"kind must be 'tabpfn' or 'tabicl', got {kind!r}.")
    lines = ["pip install -e '.[ltms]'   # tabicl==2.2.0, tabpfn==9.2.0 (make test installs them too)",
             "export HF_HUB_OFFLINE=1     # nothing downloads: the checkpoint is a local file"]
    lines += [f"iclmem run notebooks/{stem}.py -f {parameters_file} -p model {kind}:{checkpoint}" for stem in AUDIT_CHAIN]
    return "```bash\n" + "\n".join(lines) + "\n```"


def audit_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, learning rate, probing epoch): the calibrated attack, the raw one and the outcome."""
    keys = [c for c in ("dataset", "learning_rate") if c in summary.columns]
    cols = keys + [c for c in AUDIT_COLUMNS if c in summary.columns]
    return summary[cols].rename(columns=AUDIT_COLUMNS).reset_index(drop=True)


def naive_probe_table(seed: int = 0) -> pd.DataFrame:
    """How many of the 48 manipulations leave each model blind to the query's features, per preprocessing.

    Measured on the real TabPFN v2 and TabICL architectures at a tiny size with random weights
    (:mod:`iclmem.adapters.tiny`): the blindness of a context-fitted step to a constant column is
    structural, it holds for any weights (:func:`iclmem.adapters.visibility.query_visibility`).
    """
    from ..adapters import load_model
    from ..adapters.tiny import write_tiny_checkpoint
    from ..adapters.visibility import query_visibility

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("tabpfn", "tabicl"):
            path = write_tiny_checkpoint(kind, Path(tmp) / f"{kind}.ckpt", seed=seed)
            for mode in ("context", "dataset"):
                vis = query_visibility(load_model(f"{kind}:{path}", preprocessing=mode), seed=seed)
                rows.append({"model": kind, "preprocessing": mode + (" (naive)" if mode == "context" else " (default)"),
                             "manipulations blind to x_q": int(vis.blind.sum()), "of": len(vis),
                             "smallest loss spread (nats)": float(vis.spread.min())})
    return pd.DataFrame(rows)


__all__ = ["AUDIT_CHAIN", "AUDIT_COLUMNS", "audit_commands", "audit_table", "naive_probe_table"]
