"""Paper 1, Sec. 4.1, Tab. 2 (label condition M) and Tab. 3 (detectable memorization): P3, a control for
member-only shuffling (notebook 04).

Under M the members carry shuffled labels and the non-members true ones, so an M row can separate
"shuffled label" from "true label" without any row being remembered. The control
(:mod:`iclmem.probe.label_control`) scores the non-members too on a shuffled label the model never
saw; members and non-members are then exchangeable unless rows were memorized, and the ordinary
membership null applies.

* :func:`member_only_control`: per M row (run x probing epoch > 0, not collapsed) the probe's AUC as
  built beside the AUC under the control, with intervals and outcomes under the book's reading;
* :func:`p3_record`: the scorecard row P3, "the M rows' detections are membership", with its null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from iclmem.data import Dataset
from iclmem.finetune import FinetuneRun
from iclmem.outcomes import reclassify
from iclmem.probe import summarize_run
from iclmem.probe.label_control import control_grid
from iclmem.probe.null import null_summaries
from iclmem.report.records import claim_record
from iclmem.report.verdicts import evidence_verdict

DETECTABLE = "detectable_memorization"
#: The row's keys on the page.
ROW_KEYS: tuple[str, ...] = ("dataset", "query_size", "learning_rate", "epoch")


def member_only_control(
    summary: pd.DataFrame,
    scores: Mapping[str, pd.DataFrame],
    runs: Sequence[FinetuneRun],
    tables: Mapping[str, Dataset],
    reference,
    outcome_rule: str,
    n_candidates: int = 10,
    seed: int = 0,
    max_queries: int | None = None,
    n_boot: int = 200,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    """The member-only shuffling control of every M row of ``summary`` (probing epoch > 0, not collapsed).

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
    controlled = control_grid(chosen, dict(tables), dict(scores), epochs, reference, n_candidates, seed, max_queries)
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


def p3_record(
    table: pd.DataFrame,
    control: pd.DataFrame,
    controlled: Mapping[str, pd.DataFrame],
    outcome_rule: str,
    n_permutations: int,
    seed: int = 0,
    n_boot: int = 200,
) -> dict:
    """P3: the M rows that read detectable stay detectable when the non-members too carry shuffled labels.

    It agrees when every M row detectable as built is detectable under the control; it differs when none is; in
    between it is inconclusive. Its null permutes membership across each run's probed queries of the control (there
    both pools carry shuffled labels, so they are exchangeable without memorization) and reads the same rule;
    ``n_permutations = 0`` gives no null.
    """
    paper = "(the book's control of condition M; the paper reads M rows as memorization, Tab. 3, 10, 11)"
    if table.empty:
        return claim_record("P3", paper, "no M row", "not testable here", "the grid has no non-collapsed M row")
    hit = table[table.outcome == DETECTABLE]
    if hit.empty:
        n_control = int((table["control outcome"] == DETECTABLE).sum())
        return claim_record(
            "P3",
            paper,
            f"no M row of {len(table)} reads detectable as built ({n_control} under the control)",
            "not testable here",
            "no M row reads detectable: there is no M signal to control",
        )
    kept = hit[hit["control outcome"] == DETECTABLE]
    keys = list(zip(hit.run_key, hit.epoch, strict=True))
    values = "; ".join(
        f"{r['dataset']} Q={r['query_size']} lr {r['learning_rate']:g} epoch {int(r['epoch'])}: {r['AUC']:.3f} -> "
        f"{r['control AUC']:.3f} [{r['control lo']:.3f}, {r['control hi']:.3f}]"
        for r in hit.to_dict("records")
    )
    ours = f"{len(kept)} of {len(hit)} M rows detectable as built stay detectable under the control ({values})"
    agrees = len(kept) == len(hit)
    rate = None
    if n_permutations:
        null = null_summaries(
            control[control.set_index(["run_key", "epoch"]).index.isin(keys)],
            dict(controlled),
            n_permutations,
            seed,
            n_boot,
            reading=outcome_rule,
            progress=False,
        )
        per_draw = null.groupby("perm").outcome.apply(lambda o: bool((o == DETECTABLE).all()))
        rate = float(per_draw.mean())
    verdict = (
        evidence_verdict(agrees, rate, contradicted=kept.empty)
        if rate is not None
        else ("inconclusive" if agrees or not kept.empty else "differs")
    )
    why = (
        "every M row that reads detectable as built stays detectable when the non-members also carry shuffled labels: "
        "the M signal is membership, not the label type"
        if agrees
        else "none of the M rows that read detectable as built stays detectable when the non-members also carry "
        "shuffled labels: the M signal separates shuffled from true labels, not members from non-members"
        if kept.empty
        else "some M rows that read detectable as built lose it under the control: part of the M signal is label type"
    )
    return claim_record(
        "P3",
        paper,
        ours,
        verdict,
        why,
        null=(
            "membership permuted across each run's probed queries under the control (both pools on shuffled labels); "
            "the rule reads the same rows"
            if rate is not None
            else None
        ),
        observed=f"{len(kept)}/{len(hit)}",
        null_rate=rate,
        null_draws=n_permutations if rate is not None else None,
    )


__all__ = ["DETECTABLE", "member_only_control", "p3_record"]
