"""Audit a model fine-tuned outside iclmem: probe its members and non-members, calibrated against M_ref (Sec. 4.2, App.
A.4).

The controlled chain (notebooks 02-04) fine-tunes M_ref itself, so it knows the members. A model
someone already fine-tuned (M_theta, e.g. ``model=tabpfn:finetuned.ckpt``) is audited the same
way when its owner knows which rows it trained on: every member and non-member row of ``table``
is probed with the zero-information multiple-choice context and the 48 manipulations, under
M_theta and under the pretrained checkpoint it started from (M_ref), and the attack scores
``Delta S = S_theta - S_ref`` (:func:`iclmem.probe.summary.summarize_scores`: AUC, TPR at 1% / 10%
FPR with bootstrap intervals, the raw attack, the null-halves control, the loss gaps).

The features are encoded as for the controlled runs (:func:`iclmem.training.finetune.prepare_run_data`:
one :class:`~iclmem.ltm.encoding.TableEncoder` fitted on every row of the table, a seeded subset
of ``max_features`` columns). If M_theta was fine-tuned on differently preprocessed inputs (e.g.
through its package's scikit-learn wrapper), its memorized inputs are those, and the probe reads
them through iclmem's encoding: a weaker signal is then a lower bound, not an absence.

``iclmem audit`` (:mod:`iclmem.probe.audit.audit_run`) is this audit from two files, with the user's split checked first
(:mod:`iclmem.probe.audit.split_check`), the verdict's error rates (:mod:`iclmem.probe.audit.verdict`), an optional
positive control on the same table (:mod:`iclmem.probe.audit.positive_control`) and a self-contained report
(:mod:`iclmem.probe.audit.html_report`); its inputs are read and checked by :mod:`iclmem.probe.audit.inputs`. Given
``--table``, the full table the model was fine-tuned from, it is this very call on the chain's table and row ids;
without it the
table is the two files alone, encoded on them, and its AUC a lower bound next to the chain's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...data.dataset import Dataset
from ...ltm import TableEncoder, subsample_features
from ..contexts import ProbeError, classification_candidates, regression_candidates
from ..scoring import ProbeQuery, QueryTarget, probe_scores
from ..settings import PROBE_DEFAULTS, ProbeSettings
from ..summary import summarize_scores


@dataclass(frozen=True)
class AuditRows:
    """The rows an audit probes (Sec. 4.2): ``table`` (deduplicated), the row positions of the model's ``members``
    and of rows it never saw (``non_members``), and the encoding's column subset (``max_features`` encoded columns,
    drawn with ``feature_seed``; a controlled run draws them with its context seed)."""

    table: Dataset
    members: Sequence[int]
    non_members: Sequence[int]
    max_features: int = 30
    feature_seed: int = 0


def audit_queries(
    rows: AuditRows, probe: ProbeSettings = PROBE_DEFAULTS
) -> tuple[list[ProbeQuery], float | None, float | None]:
    """The probe queries of ``rows``' members and non-members (``probe``'s candidates per query, seed and cap per
    pool), and the target statistics.

    Classification candidates are the table's labels; regression distractors and the target's
    standardization come from the rows that are neither members nor non-members (the context pool,
    as in the controlled runs), or from the whole table if there are none.
    """
    table, max_features, feature_seed = rows.table, rows.max_features, rows.feature_seed
    n_candidates, seed, max_queries = probe.n_candidates, probe.seed, probe.max_queries
    members, non_members = np.asarray(rows.members, dtype=np.int64), np.asarray(rows.non_members, dtype=np.int64)
    n = len(table.target)
    if len(members) == 0 or len(non_members) == 0:
        raise ProbeError(
            "an audit needs at least one member and one non-member row; pass the row positions the model trained on "
            "(member_ids) and rows it never saw (non_member_ids)."
        )
    both = set(members.tolist()) & set(non_members.tolist())
    if both:
        raise ProbeError(
            f"{len(both)} rows are both members and non-members (e.g. {sorted(both)[:3]}); each row is one or the "
            "other."
        )
    outside = [i for i in np.concatenate([members, non_members]).tolist() if not 0 <= i < n]
    if outside:
        raise ProbeError(
            f"row positions {outside[:3]} lie outside the table's {n} rows; pass positions 0..{n - 1} of the "
            "deduplicated table."
        )
    encoder = TableEncoder().fit(table.features)
    cols = subsample_features(len(encoder.columns), max_features, feature_seed)
    x = encoder.transform(table.features)[:, cols]
    y = table.target.to_numpy()
    pool = np.setdiff1d(np.arange(n), np.concatenate([members, non_members]))
    pool = pool if len(pool) else np.arange(n)
    center = scale = None
    if table.task == "classification":
        classes = classification_candidates(y)
    else:
        yp = y[pool].astype(np.float64)
        center, scale = float(yp.mean()), float(yp.std() + 1e-6)
    rng = np.random.default_rng(seed)
    queries: list[ProbeQuery] = []
    for ids, is_member in ((members, True), (non_members, False)):
        if (
            max_queries is not None and len(ids) > max_queries
        ):  # the subset iclmem.probe.run_queries draws for a controlled run
            ids = ids[np.sort(rng.choice(len(ids), size=max_queries, replace=False))]
        for i in ids.tolist():
            cands = (
                classes
                if table.task == "classification"
                else regression_candidates(y[i], y[pool], n_candidates, seed, i)
            )
            queries.append(ProbeQuery(int(i), x[i], y[i], is_member, cands))
    return queries, center, scale


def audit_fine_tuned(
    theta, reference, rows: AuditRows, probe: ProbeSettings = PROBE_DEFAULTS, progress: bool = False
) -> tuple[dict, pd.DataFrame]:
    """``(summary, scores)`` of the membership attack on ``theta`` calibrated with ``reference`` over ``rows`` (see
    the module docstring), probed with ``probe``'s candidates, seed, query cap, manipulations and bootstrap draws.

    ``scores`` has one row per (query, manipulation, model) with ``model`` "theta" or "ref". ``progress``: a
    progress line per model on the terminal (:mod:`iclmem.runtime.progress`).
    """
    queries, center, scale = audit_queries(rows, probe)
    manipulations, seed = probe.manipulations, probe.seed
    kwargs = dict(target=QueryTarget(rows.table.task, center, scale), seed=seed, progress=progress)
    s_theta = probe_scores(theta, queries, manipulations, columns={"model": "theta"}, **kwargs)
    s_ref = probe_scores(reference, queries, manipulations, columns={"model": "ref"}, **kwargs)
    summary = summarize_scores(s_theta, s_ref, n_boot=probe.n_boot, seed=seed)
    return summary, pd.concat([s_theta, s_ref], ignore_index=True)


__all__ = ["AuditRows", "audit_fine_tuned", "audit_queries"]
