"""``iclmem audit``: from a fine-tuned checkpoint, its base and two files to a verdict with a known false-positive
rate and a known sensitivity (Sec. 4.1, 4.2, App. A.1, A.4; Tab. 3).

:func:`run_audit` runs the steps in order and stops at the first bad input (an
:class:`~iclmem.probe.audit.inputs.AuditInputError`, exit status 2):

1. read and check the two files (:mod:`iclmem.probe.audit.inputs`) and build one deduplicated table of both
   (:func:`~iclmem.probe.audit.split_check.combine_files`); with ``--table``, find every row of both in the full table
   the model was fine-tuned from and probe that table, read as the controlled chain reads it, on its row ids
   (:func:`~iclmem.probe.audit.split_check.place_in_table`): the encoder, the target statistics and every draw seeded by
   row id are then the chain's, and the AUC is the chain's (``tests/engine/test_audit_command.py``). Without it the
   encoder is fitted on the two files and the rows are numbered by the command: the AUC is then a lower bound next
   to the chain's (:data:`LOWER_BOUND`);
2. load the model and its base, of one architecture, and check that they take the target;
3. check the split (:mod:`iclmem.probe.audit.split_check`): per-column distances, a target one feature determines, the
   model-free baseline, and with ``--match`` the matched subsample;
4. probe every member and non-member (at most ``max_queries`` of each, a seeded subsample) under the model and the
   base with the 48 manipulations (:func:`iclmem.probe.audit.audit_fine_tuned`), and read the verdict with its error
   rates (:mod:`iclmem.probe.audit.verdict`);
5. with ``--control``, the positive control (:mod:`iclmem.probe.audit.positive_control`), its cost printed first;
6. write ``audit.html`` and ``audit.json`` into ``out`` (:mod:`iclmem.probe.audit.html_report`).

The exit status (:data:`iclmem.probe.audit.verdict.VERDICTS`): 0 no detectable memorization at the stated power, 1
detected, 3 the model-free baseline separates the files (the audit cannot tell memorization from distribution
shift), 2 a bad input.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...runtime.progress import Bar, duration
from ..settings import ProbeSettings
from . import AuditRows, audit_fine_tuned
from .html_report import figures, write_report
from .inputs import MIN_ROWS, AuditConfig, AuditInputError, check_model_takes, load_audit_models, read_audit_inputs
from .positive_control import ControlRecipe, run_control
from .split_check import (
    CALIPER_SD,
    AuditTable,
    baseline_check,
    column_distances,
    combine_files,
    determining_feature,
    matched_subsample,
    place_in_table,
)
from .verdict import RULE, attack_summary, delta_frame, equivalence, null_rate, power_at_size, rows_at_risk, verdict

#: What the report says of an AUC read without ``--table``.
LOWER_BOUND = (
    "the encoder was fitted on the two files only and the rows numbered by the command, while the model was "
    "fine-tuned (and a controlled run is probed) on the whole table's encoding and row ids: read this AUC as a lower "
    "bound next to the chain's, not as its value; --table FULL.csv (the table the model was fine-tuned from) "
    "reproduces it"
)


@dataclass(frozen=True)
class AuditOutcome:
    """What an audit leaves: its result (every number), the exit status, the report's files and the summary."""

    result: dict[str, Any]
    status: int
    html: Path
    json: Path
    summary: str


def check_split(audit: AuditTable, config: AuditConfig) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """The split's checks (step 3) and the member and non-member rows to probe (matched with ``--match``)."""
    members, non_members = audit.member_ids, audit.non_member_ids
    baseline, propensity = baseline_check(audit.table, members, non_members, n_boot=config.n_boot, seed=config.seed)
    split: dict[str, Any] = {
        "dedup": audit.dedup,
        "in_both": audit.in_both,
        "columns": column_distances(audit).to_dict("records"),
        "determining": determining_feature(audit.table),
        "baseline": baseline,
        "matched": None,
        "table": audit.table_file,
    }
    if config.match:
        members, non_members = matched_subsample(propensity, members, non_members, config.seed)
        if min(len(members), len(non_members)) < MIN_ROWS:
            raise AuditInputError(
                f"--match keeps {len(members)} members and {len(non_members)} non-members, fewer than the {MIN_ROWS} "
                "the test can use: the files hardly overlap; draw non-members from the members' distribution"
            )
        again, _ = baseline_check(audit.table, members, non_members, n_boot=config.n_boot, seed=config.seed)
        split["matched"] = {
            "n_members": len(members),
            "n_non_members": len(non_members),
            "caliper_sd": CALIPER_SD,
            "baseline": again,
        }
    split["separates"] = bool((split["matched"] or split)["baseline"]["separates"])
    return split, members, non_members


def _top_rows(top: pd.DataFrame, audit: AuditTable, show_rows: bool) -> list[dict[str, Any]]:
    """The rows at risk as records: rank, line in the members file, scores, and with ``show_rows`` the row."""
    t = audit.table
    out = []
    for rank, r in enumerate(top.itertuples(index=False), start=1):
        record: dict[str, Any] = {
            "rank": rank,
            "file_row": int(audit.file_rows[int(r.query_id)]),
            "-delta_s": float(r.score),
            "s_model": float(r.s_theta),
            "s_base": float(r.s_ref),
        }
        if show_rows:
            values = t.features.iloc[int(r.query_id)].to_dict()
            record["row"] = {**values, t.target_name: t.target.iloc[int(r.query_id)]}
        out.append(record)
    return out


def _encoding(audit: AuditTable) -> dict[str, Any]:
    """How the probe read the rows: on the full table of ``--table`` (the chain's encoding and row ids), or on the
    two files alone (a lower bound)."""
    t = audit.table_file
    if t is None:
        return {"fitted_on": "the two files", "row_ids": "the command's", "lower_bound": True, "note": LOWER_BOUND}
    note = (
        f"the encoder and the target statistics were fitted on the table {t['path']} ({t['n_rows_deduplicated']} rows "
        "after deduplication) and every row probed with its id there, as a controlled run is: the AUC is the chain's"
    )
    return {"fitted_on": t["path"], "row_ids": "the table's", "lower_bound": False, "note": note}


def _sentence(word: str, result: dict[str, Any]) -> str:
    """The verdict in one sentence, with the numbers that carry it."""
    a, null, power, eq = result["attack"], result["null"], result["power"], result["equivalence"]
    auc = f"AUC {a['auc']:.3f} [{a['auc_lo']:.3f}, {a['auc_hi']:.3f}]"
    if word == "cannot tell: distribution shift":
        b = (result["split"]["matched"] or result["split"])["baseline"]
        text = (
            f"a model-free baseline tells the files apart by their features alone (AUC {b['auc']:.3f} "
            f"[{b['auc_lo']:.3f}, {b['auc_hi']:.3f}], above {b['threshold']:.2f}), so the attack's {auc} cannot be "
            "read as memorization; run again with --match to audit a matched subsample, or draw the non-members "
            "from the members' distribution"
        )
    elif word == "detected":
        text = (
            f"the probe tells members from non-members, {auc}; the rule says 'detected' in {null['rate']:.1%} of "
            f"{null['n_permutations']} membership permutations (its null rate)"
        )
    else:
        text = (
            f"no detectable memorization, {auc}; the smallest AUC detectable at this size with "
            f"{power['power']:.0%} power is {power['smallest_detectable_auc']:.3f}; equivalence: {eq['reading']}"
        )
    control = result.get("control")
    if control is not None:
        seen = "sees" if control["sees_memorization"] else "does not see"
        text += f"; the positive control {seen} planted memorization on this table (AUC {control['attack']['auc']:.3f})"
        if word == "not detected" and not control["sees_memorization"]:
            text += ", so this non-detection says little"
    return text


def _probe(
    theta: Any, base: Any, audit: AuditTable, members: np.ndarray, non: np.ndarray, config: AuditConfig, progress: bool
) -> tuple[dict, pd.DataFrame, float]:
    """Step 4: the probe's summary and scores, and its seconds per probed row (both models)."""
    start = time.perf_counter()
    feature_seed = config.seed if audit.table_file else 0  # a controlled run's columns: drawn with its seed
    rows = AuditRows(audit.table, members, non, feature_seed=feature_seed)
    probe = ProbeSettings(seed=config.seed, max_queries=config.max_queries, n_boot=config.n_boot)
    summary, scores = audit_fine_tuned(theta, base, rows, probe, progress)
    probed = scores.query_id.nunique()
    return summary, scores, (time.perf_counter() - start) / max(probed, 1)


def run_audit(config: AuditConfig, *, progress: bool = True, echo: Callable[[str], None] = print) -> AuditOutcome:
    """The audit of the module docstring; ``echo`` gets the progress notes (the control's cost)."""
    started, clock = datetime.now(timezone.utc), time.perf_counter()
    bar = Bar(total=5, desc="audit", disable=not progress)
    bar.set_postfix(step="reading the files")
    *frames, full = read_audit_inputs(config)
    names = (Path(config.members).name, Path(config.non_members).name)
    audit = combine_files(*frames, config.target, config.task, missing_target=config.missing_target, names=names)
    if full is not None:
        audit = place_in_table(audit, tuple(frames), full, config.target, missing_target=config.missing_target,
                               names=names, table_name=Path(config.table).name)  # fmt: skip
    bar.set_postfix(step="loading the models")
    theta, base = load_audit_models(config)
    check_model_takes(theta, config.model, audit.table.task, int(audit.table.target.nunique()))
    bar.update(1)
    bar.set_postfix(step="checking the split")
    split, members, non_members = check_split(audit, config)
    bar.update(1)
    bar.set_postfix(step="probing")
    summary, scores, per_row = _probe(theta, base, audit, members, non_members, config, progress)
    delta = delta_frame(scores)
    attack = attack_summary(delta, n_boot=config.n_boot, seed=config.seed)
    bar.update(1)
    bar.set_postfix(step="null and power")
    top, share = rows_at_risk(delta, config.top_k)
    result: dict[str, Any] = {
        "format": "iclmem audit 1",
        "created": started.isoformat(timespec="seconds"),
        "config": {k: v for k, v in asdict(config).items() if k != "source"},
        "inputs": {
            "model": config.model,
            "base": config.base,
            "members": config.members,
            "non_members": config.non_members,
            "table": config.table or None,
            "target": config.target,
            "task": audit.table.task,
        },
        "encoding": _encoding(audit),
        "split": split,
        "rule": RULE,
        "attack": attack,
        "null": null_rate(delta, n_permutations=config.n_permutations, n_boot=config.n_boot, seed=config.seed),
        "power": power_at_size(attack["n_members"], attack["n_non_members"]),
        "equivalence": equivalence(delta, attack["auc"], n_boot=config.n_boot, seed=config.seed),
        "probe_summary": summary,
        "rows_at_risk": {"share": share, "top": _top_rows(top, audit, config.show_rows)},
        "control": None,
    }
    bar.update(1)
    if config.control:
        bar.set_postfix(step="positive control")
        recipe = ControlRecipe(
            config.control_learning_rate, config.control_epochs, config.control_context_size, config.control_max_members
        )
        result["control"] = run_control(
            base, AuditRows(audit.table, members, non_members), recipe, seconds_per_row=per_row,
            probe=ProbeSettings(seed=config.seed, n_boot=config.n_boot), progress=progress, echo=echo,
        )  # fmt: skip
    word, status = verdict(attack, split["separates"])
    result["verdict"] = {"word": word, "exit_status": status, "sentence": _sentence(word, result)}
    result["seconds"] = time.perf_counter() - clock
    html_path, json_path = write_report(result, figures(delta, share["non_member_p99"]), config.out)
    bar.update(1)
    bar.close()
    return AuditOutcome(result, status, html_path, json_path, summary_text(result, html_path, json_path))


def summary_text(result: dict[str, Any], html_path: Path, json_path: Path) -> str:
    """The one-screen summary the command prints."""
    s, a, null = result["split"], result["attack"], result["null"]
    b, d = (s["matched"] or s)["baseline"], s["dedup"]
    differs = [c["column"] for c in s["columns"] if c["differs"]]
    det = s["determining"]
    tpr01 = (
        f"{a['tpr0.1']:.3f} [{a['tpr0.1_lo']:.3f}, {a['tpr0.1_hi']:.3f}]"
        if a.get("tpr0.1") is not None
        else a["tpr0.1_note"]
    )
    m = s["matched"]
    matched = f"; matched subsample {m['n_members']} + {m['n_non_members']}" if m else ""
    lines = [
        f"iclmem audit: {result['inputs']['model']} against its base {result['inputs']['base']}",
        f"split: {d['n_members']} members, {d['n_non_members']} non-members after deduplication "
        f"({d['n_in_both_dropped']} rows in both files left out){matched}",
        f"  model-free baseline AUC {b['auc']:.3f} [{b['auc_lo']:.3f}, {b['auc_hi']:.3f}]"
        + (" on the matched subsample" if m else "")
        + ": "
        + ("SEPARATES the files" if b["separates"] else "does not separate the files")
        + f" (threshold: lower end above {b['threshold']:.2f})"
        + (f"; on the files as given {s['baseline']['auc']:.3f}" if m else ""),
        f"  columns that differ (5%, Bonferroni): {', '.join(differs[:6]) or 'none'}"
        + (f" and {len(differs) - 6} more" if len(differs) > 6 else ""),
        "  target determined by one feature: "
        + (f"YES, by {det['column']!r} ({det['measure']} {det['score']:.3f})" if det["determines"] else "no"),
        f"attack (Delta S, loss) on {a['n_members']} + {a['n_non_members']} probed rows: AUC {a['auc']:.3f} "
        f"[{a['auc_lo']:.3f}, {a['auc_hi']:.3f}]",
        f"  encoding: {result['encoding']['note']}",
        f"  TPR at 10% FPR {a['tpr10']:.3f} [{a['tpr10_lo']:.3f}, {a['tpr10_hi']:.3f}], at 1% {a['tpr1']:.3f} "
        f"[{a['tpr1_lo']:.3f}, {a['tpr1_hi']:.3f}], at 0.1% {tpr01}",
        f"  rule: {RULE}; null rate {null['rate']:.1%} [{null['rate_lo']:.1%}, {null['rate_hi']:.1%}] over "
        f"{null['n_permutations']} membership permutations",
        f"  smallest AUC detectable at this size with 80% power: {result['power']['smallest_detectable_auc']:.3f}",
        "  equivalence: " + ("not read (memorization detected)" if a["detected"] else result["equivalence"]["reading"]),
        f"rows at risk: {result['rows_at_risk']['share']['share']:.1%} of members above the non-members' 99th "
        "percentile (about 1% without memorization)",
    ]
    if result["control"] is not None:
        c = result["control"]
        lines.append(
            f"positive control: the probe {'sees' if c['sees_memorization'] else 'does NOT see'} planted memorization "
            f"(AUC {c['attack']['auc']:.3f} [{c['attack']['auc_lo']:.3f}, {c['attack']['auc_hi']:.3f}])"
        )
    v = result["verdict"]
    lines += [
        f"VERDICT: {v['word']} (exit status {v['exit_status']}): {v['sentence']}",
        f"report: {html_path}  numbers: {json_path}  ({duration(result['seconds'])})",
    ]
    return "\n".join(lines)


__all__ = ["LOWER_BOUND", "AuditOutcome", "check_split", "run_audit", "summary_text"]
