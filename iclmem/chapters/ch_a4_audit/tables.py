"""Appendix A4 of this book (IclMem Sec. 4.1, 4.2, App. A.4 applied to your own model): the tables of the audit
(notebook A4).

The chain's calibrated and raw attack per probing epoch, ``iclmem audit``'s next to the chain's on the same
checkpoint (the same AUC given the run's whole table, ``--table``), its report in a frame, the same attack next to
the external audit of the engine (:func:`iclmem.probe.audit.audit_fine_tuned`), and how many of the 48 manipulations
leave TabPFN v2 and TabICL blind to the query's features. Calibration uses the pretrained checkpoint of the same
architecture as M_ref.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pandas as pd

from iclmem.probe.settings import ProbeSettings

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


def external_audit_table(run, reference, table, summary: pd.DataFrame, probe: ProbeSettings) -> pd.DataFrame:
    """The chain's attack on a run's last kept M_theta next to :func:`iclmem.probe.audit.audit_fine_tuned` on the same
    checkpoint, probed with the chain's ``probe`` settings (candidates, query cap, bootstrap draws, seed).

    The external audit only gets the weights and the member / non-member rows, as an auditor of a
    model fine-tuned elsewhere would; equal numbers show that it measures what notebooks 02-04 do.
    """
    from iclmem.probe.audit import AuditRows, audit_fine_tuned

    epoch = max(run.config.probe_epochs)
    rows = AuditRows(table, run.manifest.members, run.manifest.non_members)
    external, _ = audit_fine_tuned(run.model(epoch, reference), reference, rows, replace(probe, epochs=None))
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


def command_table(command, summary: pd.DataFrame, run) -> pd.DataFrame:
    """``iclmem audit``'s attack on a run's last kept checkpoint next to the chain's at the same epoch: the rows
    probed, AUC(Delta S) with its interval and TPR at 10% FPR, each as the chain and as the command computed it."""
    epoch = max(run.config.probe_epochs)
    chain = summary[(summary.run_key == run.key) & (summary.epoch == epoch)].iloc[0]
    a = command.result["attack"]
    rows = [
        ("members + non-members probed", f"{int(chain.n_members)} + {int(chain.n_non_members)}",
         f"{a['n_members']} + {a['n_non_members']}"),
        ("AUC (Delta S, loss)", f"{chain.auc_loss:.3f} [{chain.auc_loss_lo:.3f}, {chain.auc_loss_hi:.3f}]",
         f"{a['auc']:.3f} [{a['auc_lo']:.3f}, {a['auc_hi']:.3f}]"),
        ("TPR at 10% FPR", f"{chain.tpr10_loss:.3f}", f"{a['tpr10']:.3f}"),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["", f"chain (02-04), epoch {epoch}", "iclmem audit"])


def chain_sentence(command, summary: pd.DataFrame, run) -> str:
    """The page's sentence on the command's AUC next to the chain's at the run's last kept epoch: equal with the
    run's whole table (``--table``), a lower bound without it."""
    epoch = max(run.config.probe_epochs)
    chain = float(summary[(summary.run_key == run.key) & (summary.epoch == epoch)].iloc[0].auc_loss)
    auc = float(command.result["attack"]["auc"])
    if command.result["encoding"]["lower_bound"]:
        return (
            f"Without `--table` the command encodes the rows on the two files alone and numbers them itself: its AUC, "
            f"{auc:.3f}, is a lower bound next to the chain's {chain:.3f} at epoch {epoch}."
        )
    same = "the same number" if auc == chain else f"to within {abs(auc - chain):.1e}"
    return (
        "With the run's whole table as `--table`, the command fits its encoder on that table, as the run was "
        "trained, and gives each member and non-member its row id there, so its seeded manipulations and candidate "
        f"draws are the chain's: its AUC, {auc:.3f}, is the chain's at epoch {epoch}, {chain:.3f}, {same}."
    )


def command_texts(command, summary: pd.DataFrame | None = None, run=None) -> dict[str, str]:
    """The numbers and the sentences the page's prose states about the command's audit, as text to glue: the
    split's and the control's sentences follow what the audit found; with the chain's ``summary`` and the ``run``,
    also the sentence on the command's AUC next to the chain's (:func:`chain_sentence`)."""
    from iclmem.probe.audit.verdict import RISK_QUANTILE

    r = command.result
    a, base, control = r["attack"], r["split"]["baseline"], r["control"]
    split = (
        f"a classifier on the features alone tells the files apart with AUC {base['auc']:.3f}, and the audit reads "
        f"a signal as memorization only while the lower end of that AUC's interval stays at or below "
        f"{base['threshold']:.2f} ({'it does not here' if base['separates'] else 'it does here'})."
    )
    if control is None:
        said = "The positive control was not run (`--control` runs it)."
    else:
        seen = "sees" if control["sees_memorization"] else "does not see"
        said = (
            "The positive control, a copy of the base fine-tuned on half the non-members by a stated recipe, shows "
            f"that the probe {seen} memorization on this table (AUC {control['attack']['auc']:.3f})."
        )
    chain = {} if summary is None or run is None else {"audit_chain_sentence": chain_sentence(command, summary, run)}
    return chain | {
        "audit_verdict": r["verdict"]["word"],
        "audit_status": str(command.status),
        "audit_auc": f"{a['auc']:.3f} [{a['auc_lo']:.3f}, {a['auc_hi']:.3f}]",
        "audit_null_rate": f"{r['null']['rate']:.1%}",
        "audit_permutations": str(r["null"]["n_permutations"]),
        "audit_mda": f"{r['power']['smallest_detectable_auc']:.3f}",
        "audit_split_sentence": split,
        "audit_at_risk": f"{r['rows_at_risk']['share']['share']:.0%}",
        "audit_percentile": f"{RISK_QUANTILE * 100:.0f}th",
        "audit_control_sentence": said,
    }


def report_frame(page: str, height: int = 900) -> str:
    """The audit's HTML report inside an ``iframe`` (its own CSS stays inside it), for a notebook to display."""
    import html

    return (
        f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;height:{height}px;'
        'border:1px solid #ccc"></iframe>'
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
