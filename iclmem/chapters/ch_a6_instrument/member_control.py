"""Paper 1, Sec. 4.1, Tab. 2 (label condition M) and Tab. 3 (detectable memorization): P3, a control for
member-only shuffling (appendix A6).

Under M the members carry shuffled labels and the non-members true ones, so an M row can separate
"shuffled label" from "true label" without any row being remembered. The control
(:mod:`iclmem.probe.label_control`) scores the non-members too on a shuffled label the model never
saw; members and non-members are then exchangeable unless rows were memorized, and the ordinary
membership null applies.

* :func:`member_only_control`: per M row (run x probing epoch > 0, not collapsed) the probe's AUC as
  built beside the AUC under the control, with intervals and outcomes under the book's reading;
* the scorecard row P3 it carries, "the M rows' detections are membership", with its null, is
  :func:`iclmem.chapters.ch_a6_instrument.claims.p3_record`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pandas as pd

from iclmem.data import Dataset
from iclmem.probe import summarize_run
from iclmem.probe.label_control import control_grid
from iclmem.probe.settings import ProbeSettings
from iclmem.stats.outcomes import reclassify
from iclmem.training.finetune import FinetuneRun

DETECTABLE = "detectable_memorization"
#: The settings :func:`member_only_control` probes with when it is given none (every query of each pool).
MEMBER_CONTROL_PROBE = ProbeSettings(max_queries=None, n_boot=200)
#: The row's keys on the page.
ROW_KEYS: tuple[str, ...] = ("dataset", "query_size", "learning_rate", "epoch")


def member_only_control(
    summary: pd.DataFrame,
    scores: Mapping[str, pd.DataFrame],
    runs: Sequence[FinetuneRun],
    tables: Mapping[str, Dataset],
    reference,
    outcome_rule: str,
    probe: ProbeSettings = MEMBER_CONTROL_PROBE,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    """The member-only shuffling control of every M row of ``summary`` (probing epoch > 0, not collapsed), probed
    with ``probe``'s settings.

    Returns ``(table, control summary, control scores per run key)``: ``table`` has one row per M row with its
    :data:`ROW_KEYS`, ``AUC`` / ``lo`` / ``hi`` and ``outcome`` as built and ``control AUC`` / ``control lo`` /
    ``control hi`` / ``control outcome`` (the loss metric's AUC(Delta S); outcomes under ``outcome_rule``, Tab. 3).
    """
    m = summary[(summary.label_condition == "members") & (summary.epoch > 0) & ~summary.collapsed.astype(bool)]
    if m.empty:
        return pd.DataFrame(), pd.DataFrame(), {}
    by_key = {run.key: run for run in runs}
    chosen = [by_key[k] for k in dict.fromkeys(m.run_key)]
    epochs = sorted(int(e) for e in m.epoch.unique())
    n_boot, seed = probe.n_boot, probe.seed
    controlled = control_grid(chosen, dict(tables), dict(scores), reference, replace(probe, epochs=tuple(epochs)))
    parts = []
    for run in chosen:
        wanted = set(m.loc[m.run_key == run.key, "epoch"].astype(int))
        sc = controlled[run.key]
        sc = sc[(sc.model == "ref") | sc.epoch.isin(wanted)]
        part = summarize_run(sc, run, n_boot=n_boot, seed=seed)
        spec_cols = [c for c in summary.columns if c not in part.columns and c != "epoch"]
        parts.append(part.assign(**m[m.run_key == run.key].iloc[0][spec_cols].to_dict()))
    control = reclassify(pd.concat(parts, ignore_index=True), outcome_rule)
    built = reclassify(m, outcome_rule)
    cols = ["run_key", "epoch", "auc_loss", "auc_loss_lo", "auc_loss_hi", "outcome"]
    table = built[[*ROW_KEYS, *cols[:1], *cols[2:]]].merge(
        control[cols].rename(
            columns={
                "auc_loss": "control AUC",
                "auc_loss_lo": "control lo",
                "auc_loss_hi": "control hi",
                "outcome": "control outcome",
            }
        ),
        on=["run_key", "epoch"],
        validate="one_to_one",
    )
    table = table.rename(columns={"auc_loss": "AUC", "auc_loss_lo": "lo", "auc_loss_hi": "hi"})
    return table.reset_index(drop=True), control, controlled


__all__ = ["DETECTABLE", "MEMBER_CONTROL_PROBE", "ROW_KEYS", "member_only_control"]
