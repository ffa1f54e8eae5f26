"""A control for member-only shuffling (label condition M, Sec. 4.1, Tab. 2; the book's P3).

Under condition ``members`` the members were fine-tuned on labels permuted within their pool and
are probed on those labels, while the non-members are probed on their true labels. A model
fine-tuned on shuffled labels can raise the score of *any* improbable label and lower that of any
probable one without remembering a single row; the M rows then separate "shuffled label" from
"true label", not members from non-members.

The control scores the non-members as well on a shuffled label the model never saw: their labels
permuted within their pool by a second permutation (:func:`control_labels`, a stream of its own,
so not the permutation condition ``all`` would give them). Members keep the scores
:func:`~iclmem.probe.run.probe_run` gave them. Both pools then carry shuffled labels, so members
and non-members are exchangeable unless the model remembers rows, and the ordinary membership
null (:func:`iclmem.probe.null.run_null`) applies to the control's scores. If AUC(Delta S) stays
high, the signal is membership; if it falls to 0.5, it was the label type.

:func:`control_scores` returns a frame shaped like :func:`~iclmem.probe.run.probe_run`'s (one row per
query, manipulation, model and epoch), the non-members' rows recomputed for M_ref and for
M_theta at each epoch and cached in the results store next to the run's own probe scores. M_ref's control scores
are keyed, as its probe scores are, by the set of runs that share the queries
(:func:`~iclmem.probe.run.reference_owner`: the runs of one table, Q and condition, which differ in learning rate),
so they are computed once per set, and the distinct contexts are planned into batches once for M_ref and every
epoch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from ..data.dataset import Dataset
from ..data.randomize import randomize_labels
from ..ltm import ReferenceLTM
from ..runtime.workers import in_workers, worker_count
from ..store.keys import artifact_dir, code_version, content_key, input_key
from ..training.finetune import FinetuneRun, RunData, prepare_run_data
from .contexts import ProbeError
from .manipulations import resolve_manipulations
from .run import _cached, reference_owner, run_queries, run_store
from .scoring import DistinctBatches, ProbeQuery, QueryTarget, build_probe_tasks, scored_frame
from .settings import ProbeSettings

#: The second permutation's stream (label condition ``all`` uses ``[seed, 1]`` for the non-members' pool).
CONTROL_STREAM = 0x93


def control_labels(run: FinetuneRun, table: Dataset, seed: int = 0) -> np.ndarray:
    """The non-members' labels permuted within their pool by the control's own permutation (a random cycle)."""
    labels = np.asarray(run.manifest.labels(table, "non_members"))
    return randomize_labels(labels, np.random.SeedSequence([int(seed), 1, CONTROL_STREAM]))


def control_scores(
    run: FinetuneRun, table: Dataset, scores: pd.DataFrame, reference: ReferenceLTM, probe: ProbeSettings
) -> pd.DataFrame:
    """``scores`` (the run's :func:`~iclmem.probe.run.probe_run` frame) with every non-member row scored on
    :func:`control_labels` instead, for M_ref and for M_theta at ``probe.epochs`` (cached in the store).

    The non-members probed are the same queries (the same seeded subset at ``probe.max_queries``); only their label,
    and for regression the candidate set drawn around it, change. ``probe``'s candidates, seed and query cap must be
    those ``scores`` were made with.
    """
    held = sorted(int(e) for e in scores.loc[scores.model == "theta", "epoch"].unique())
    epochs = held if probe.epochs is None else [int(e) for e in probe.epochs]  # None: every epoch the scores hold
    n_candidates, seed, max_queries = probe.n_candidates, probe.seed, probe.max_queries
    if run.manifest.label_condition != "members":
        raise ProbeError(
            f"the member-only shuffling control applies to runs of label condition 'members' (M); run {run.key} has "
            f"{run.manifest.label_condition!r}. Pass the M runs of the grid."
        )
    limit = reference.max_classes
    data = prepare_run_data(run.manifest, table, run.config, limit)
    shuffled = replace(data, non_member_y=control_labels(run, table, seed))
    queries = [q for q in run_queries(shuffled, table, run, n_candidates, seed, max_queries, limit) if not q.is_member]
    tasks, meta = run_probe_tasks(data, queries, resolve_manipulations(None), seed, reference)
    params = {"n_candidates": n_candidates, "seed": seed, "max_queries": max_queries, "stream": CONTROL_STREAM}
    version = code_version(__name__)
    root = run_store(run)  # a run served by a bundle: the reader's store, never the bundle
    owner = reference_owner(run)  # M_ref's control scores depend on the queries, not on the learning rate
    batches = DistinctBatches(reference, tasks)  # planned once for M_ref and every epoch

    def path(which: str):
        key = content_key(
            owner if which == "ref" else run.key,
            "member-only-control",
            which,
            params,
            reference.store_identity,
            version,
        )
        return artifact_dir("probe", key, root) / "scores.parquet"

    def described(which: str) -> dict:
        whose = owner if which == "ref" else run.key
        return {"run": whose, "model": which, "control": "non-members on a second permutation", **params}

    def bundled(which: str) -> str:
        """The scores' name in a store's results bundle (:mod:`iclmem.bundle.store_runs`): as the probe's, with the
        control's parameters."""
        whose = owner if which == "ref" else getattr(run, "input_key", "")
        rest = {k: v for k, v in described(which).items() if k not in ("run", "model")}
        return input_key(whose, which, rest, reference.store_identity) if whose else ""

    frames = [
        _cached(
            path("ref"),
            lambda: scored_frame(meta, batches.score(reference), {"model": "ref", "epoch": -1}),
            described("ref"),
            bundled("ref"),
        )
    ]
    for epoch in epochs:

        def compute(epoch: int = epoch) -> pd.DataFrame:
            model = run.model(epoch, reference)
            return scored_frame(meta, batches.score(model), {"model": "theta", "epoch": epoch})

        frames.append(_cached(path(f"theta-{epoch}"), compute, described(f"theta-{epoch}"), bundled(f"theta-{epoch}")))
    controlled = pd.concat(frames, ignore_index=True)
    members = scores[scores.is_member.astype(bool) & ((scores.model == "ref") | scores.epoch.isin(epochs))]
    _same_queries(scores, controlled)
    return pd.concat([members, controlled[members.columns]], ignore_index=True)


def run_probe_tasks(
    data: RunData, queries: Sequence[ProbeQuery], manipulations, seed: int, reference: ReferenceLTM
) -> tuple[list, pd.DataFrame]:
    """:func:`~iclmem.probe.scoring.build_probe_tasks` of a run's queries with the run's target statistics and the
    model's limits (what :func:`~iclmem.probe.run.probe_run` builds for them)."""
    return build_probe_tasks(
        queries,
        manipulations,
        target=QueryTarget(data.task, data.target_center, data.target_scale),
        seed=seed,
        max_context=reference.cfg.max_context,
        max_features=reference.cfg.max_features,
    )


def _same_queries(scores: pd.DataFrame, controlled: pd.DataFrame) -> None:
    """The control's non-members must be the queries ``scores`` probed (same probing parameters)."""
    probed = set(scores.loc[~scores.is_member.astype(bool), "query_id"])
    ours = set(controlled.query_id)
    if probed != ours:
        raise ProbeError(
            f"the control probed {len(ours)} non-members, the run's scores {len(probed)} others; pass the "
            "n_candidates, seed and max_queries the run was probed with."
        )


def control_grid(
    runs: Sequence[FinetuneRun],
    tables: dict[str, Dataset],
    scores: dict[str, pd.DataFrame],
    reference: ReferenceLTM,
    probe: ProbeSettings,
    *,
    workers: int | None = None,
    progress: bool = True,
) -> dict[str, pd.DataFrame]:
    """:func:`control_scores` of every run (per run key), each at those of ``probe.epochs`` its probe scores hold.

    ``workers`` (default ``$ICLMEM_WORKERS``, else 1) scores the runs in that many processes
    (:mod:`iclmem.runtime.workers`), as :func:`iclmem.training.grid.probe_grid` probes them: with every query probed
    the control is half of the M runs' probing work, too much for one core while the other waits. The numbers are those
    of scoring
    in this process, to float32 summation order.
    """
    calls = []
    for run in runs:
        held = set(scores[run.key].epoch.unique())
        at = replace(probe, epochs=tuple(e for e in probe.epochs_for(sorted(held)) if e in held))
        calls.append((run, tables[run.manifest.dataset], scores[run.key], reference, at))
    done = in_workers(control_scores, calls, worker_count(workers), "member-only control", progress)
    return {run.key: frame for run, frame in zip(runs, done, strict=True)}


__all__ = ["CONTROL_STREAM", "control_grid", "control_labels", "control_scores", "run_probe_tasks"]
