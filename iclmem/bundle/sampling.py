"""What a check of a results bundle may draw and probe again, and the witness a design bundle keeps of it (issue 55).

A check (:mod:`iclmem.bundle.recheck`) recomputes draws (a task at a probed epoch) and probes a seeded subset of each
run's queries again (:func:`recheck_queries`); a design bundle (:mod:`iclmem.bundle.collect`) keeps those queries'
scores as the run's witness (:func:`witness_ids`, :func:`witness_key`), for the epochs a check may draw
(:func:`last_recomputable_epoch`).
"""

from __future__ import annotations

import numpy as np

from ..data import SplitManifest
from ..probe.run import query_subset
from ..store.keys import input_key

#: Members (and as many non-members) each draw probes again, a seeded subset of the bundle's (:func:`recheck_queries`):
#: 8 + 8 queries x 48 manipulations compare 768 scores per model, and a design bundle's witnesses (the scores it keeps
#: for them) stay near a tenth of its nulls' size.
RECHECK_QUERIES = 8
#: A draw of a run with at most this many members probes all of its queries, and recomputes its membership null
#: too when the bundle keeps one (:mod:`iclmem.bundle.null_codec`): the Q = 50 runs of a design, in about a minute each.
NULL_RECHECK_QUERIES = 64
#: A joint run's draws stop at this epoch (its training to epoch 100 costs more than the rest of a sample).
JOINT_MAX_EPOCH = 1
#: (learning rate at or above which, the last epoch a draw may take). Fine-tuning at the aggressive rates is chaotic:
#: past these epochs the same run with two torch threads instead of one lands as far from itself as with a changed
#: learning rate (``benchmarks/bundle_drift.py``, breast_cancer and diabetes: at lr 1e-2 the scores drift at most
#: 0.06x the tolerance up to epoch 10 and 2,300-9,100x at epochs 50-100; at lr 1e-1 0.04x at epoch 1 and 235x at
#: epoch 10), so another machine can recompute only the earlier epochs of such a run.
CHAOTIC_EPOCHS: tuple[tuple[float, int], ...] = ((1e-2, 10), (1e-1, 1))


def last_recomputable_epoch(learning_rate: float, joint: bool) -> int | None:
    """The last epoch of a run a draw may take (None: any), from :data:`JOINT_MAX_EPOCH` and :data:`CHAOTIC_EPOCHS`."""
    caps = [JOINT_MAX_EPOCH] if joint else []
    caps += [epoch for rate, epoch in CHAOTIC_EPOCHS if learning_rate >= rate * (1 - 1e-9)]
    return min(caps) if caps else None


def recomputable_text() -> str:
    """What :func:`last_recomputable_epoch` allows, in words (appendix A5)."""
    rates = "; ".join(f"learning rate {rate:g} and above: up to epoch {epoch}" for rate, epoch in CHAOTIC_EPOCHS)
    return f"{rates}; a joint run: up to epoch {JOINT_MAX_EPOCH}"


def recheck_queries(bundled: int | None) -> int:
    """Members (and non-members) a draw probes again: :data:`RECHECK_QUERIES`, or the bundle's own cap when it is
    smaller (then the seeded subset is the bundle's). Each query's contexts are seeded by its own id
    (:mod:`iclmem.probe.contexts`), so a subset scores every query as the full probe did."""
    return RECHECK_QUERIES if bundled is None else min(int(bundled), RECHECK_QUERIES)


def witness_ids(manifest: SplitManifest, seed: int, max_queries: int | None) -> set[int]:
    """The queries a check probes again of a run split by ``manifest`` and probed with ``seed`` and ``max_queries``
    (:func:`recheck_queries` members and as many non-members: the probe's own seeded subset,
    :func:`iclmem.probe.run.query_subset`)."""
    members, non_members = np.asarray(manifest.members), np.asarray(manifest.non_members)
    keep_m, keep_n = query_subset(len(members), len(non_members), seed, recheck_queries(max_queries))
    return {int(q) for q in (*members[keep_m], *non_members[keep_n])}


def witness_key(run: str, probe: dict, reference: dict) -> str:
    """The input key of a run's witness: the run's, and its probe's parameters."""
    return input_key(run, "witness", probe, reference)


__all__ = [
    "CHAOTIC_EPOCHS",
    "JOINT_MAX_EPOCH",
    "NULL_RECHECK_QUERIES",
    "RECHECK_QUERIES",
    "last_recomputable_epoch",
    "recheck_queries",
    "recomputable_text",
    "witness_ids",
    "witness_key",
]
