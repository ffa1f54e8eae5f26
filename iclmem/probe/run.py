"""Probing a fine-tuning run end to end (Sec. 4.2, Tab. 2).

:func:`probe_run` scores every member and non-member query of a :class:`~iclmem.training.finetune.FinetuneRun`
under the full manipulation suite, for M_theta at each probing epoch and once for M_ref, and
caches each model's scores in the results store; :mod:`iclmem.probe.summary` turns them into
one row per epoch.
"""

from __future__ import annotations

import io
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..bundle.scores import decode
from ..bundle.serve import lookup
from ..data import SplitManifest
from ..data.dataset import Dataset
from ..ltm import LTM, MAX_CLASSES, ReferenceLTM, load_reference
from ..runtime.progress import Bar
from ..store.atomic import atomic_write_bytes, atomic_write_text
from ..store.integrity import produce, seal, served
from ..store.keys import artifact_dir, code_version, content_key, input_key
from ..training.finetune import FinetuneConfig, FinetuneRun, RunData, prepare_run_data
from .contexts import ProbeError, classification_candidates, regression_candidates
from .invariances import distinct_tasks, model_invariances
from .manipulations import Manipulation, resolve_manipulations
from .scoring import (
    DEFAULT_CHUNK,
    ProbeQuery,
    QueryTarget,
    ScoringBatches,
    architecture,
    build_probe_tasks,
    scored_frame,
)
from .settings import PROBE_DEFAULTS, ProbeSettings


def query_subset(
    n_members: int, n_non_members: int, seed: int, max_queries: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the members and of the non-members a probe keeps (Sec. 4.2): all of them, or, above
    ``max_queries``, a seeded random ``max_queries`` of each (members drawn first, from one generator)."""
    rng = np.random.default_rng(seed)
    kept = []
    for n in (n_members, n_non_members):
        keep = np.arange(n)
        if max_queries is not None and n > max_queries:
            keep = np.sort(rng.choice(n, size=max_queries, replace=False))
        kept.append(keep)
    return kept[0], kept[1]


def run_queries(
    data: RunData,
    table: Dataset,
    run: FinetuneRun,
    n_candidates: int = 10,
    seed: int = 0,
    max_queries: int | None = None,
    max_classes: int = MAX_CLASSES,
) -> list[ProbeQuery]:
    """Member and non-member queries of a run with their candidate sets.

    Classification: ``Y`` = every label of the table and of the run's (possibly randomized)
    query labels, at most ``max_classes`` (the probed model's :attr:`~iclmem.ltm.interface.LTM.max_classes`).
    Regression: distractors from the context pool's targets. ``max_queries`` keeps
    at most that many members and that many non-members (a seeded random subset).
    """
    if data.task == "classification":
        labels = np.concatenate([table.target.to_numpy(), data.member_y, data.non_member_y])
        classes = classification_candidates(labels)
        if len(classes) > max_classes:
            raise ProbeError(f"the run has {len(classes)} classes; the model takes at most max_classes={max_classes}.")
    else:
        pool = np.asarray(run.manifest.labels(table, "context"), dtype=np.float64)
        distinct = len(np.unique(pool))
        if distinct < n_candidates:  # then some query would find fewer than n_candidates - 1 distractors
            lower = f"lower n_candidates to at most {distinct}, or " if distinct >= 2 else ""
            raise ProbeError(
                f"{table.name}: the context pool holds {distinct} distinct target value(s) in {len(pool)} rows, fewer "
                f"than n_candidates={n_candidates} (the true value and {n_candidates - 1} distractors drawn from the "
                f"pool): {lower}use a smaller query size (query_sizes) so that more rows stay in the context pool."
            )
    out: list[ProbeQuery] = []
    kept = query_subset(len(data.member_ids), len(data.non_member_ids), seed, max_queries)
    for keep, (ids, xs, ys, is_member) in zip(
        kept,
        (
            (data.member_ids, data.member_x, data.member_y, True),
            (data.non_member_ids, data.non_member_x, data.non_member_y, False),
        ),
        strict=True,
    ):
        for i in keep:
            qid = int(ids[i])
            cands = (
                classes
                if data.task == "classification"
                else regression_candidates(ys[i], pool, n_candidates, seed, qid)
            )
            out.append(ProbeQuery(qid, xs[i], ys[i], is_member, cands))
    return out


def _reference_matches(run: FinetuneRun, reference: ReferenceLTM) -> None:
    card = run.path / "run.json"
    if card.exists():
        made_with = json.loads(card.read_text()).get("reference_sha256")
        if made_with and made_with != reference.checkpoint_sha256:
            raise ProbeError(
                f"run {run.key} was fine-tuned from reference {made_with[:12]}..., not "
                f"{reference.checkpoint_sha256[:12]}...; "
                "probe it with the same M_ref it started from."
            )


def _same_weights(a: LTM, b: LTM) -> bool:
    sa, sb = getattr(a, "state_dict", None), getattr(b, "state_dict", None)
    if sa is None or sb is None:
        return False
    x, y = sa(), sb()
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


def reference_owner(run: FinetuneRun) -> str:
    """Whose M_ref scores a run's are: runs with the same key here share them (scored once, cached once).

    M_ref's scores depend on the queries, not on the fine-tuning hyperparameters: the key is the
    manifest and the encoding choices, so runs that differ only in learning rate share them.
    """
    return reference_owner_of(run.manifest, run.config)


def reference_owner_of(manifest: SplitManifest, config: FinetuneConfig) -> str:
    """:func:`reference_owner` of a run's manifest and configuration (a run not loaded: a results bundle's)."""
    return content_key(manifest.identity(), config.max_features, config.context_seed, config.context_size)


def run_store(run: FinetuneRun) -> Path:
    """The results store a run's scores go to: the run's own, or for a run served by a bundle the reader's."""
    return getattr(run, "store", None) or run.path.parents[1]


@dataclass(frozen=True)
class ScoreLocations:
    """Where one model's scores of a run live: in the store (keyed by the code version of this module's import
    closure) and in a results bundle (keyed by the run's inputs alone, :func:`iclmem.store.keys.input_key`)."""

    run: FinetuneRun
    reference: ReferenceLTM
    params: dict
    root: Path
    version: str

    def owner(self, which: str, bundled: bool = False) -> str:
        """Whose scores: M_ref's are shared by the runs of one :func:`reference_owner`, M_theta's are the run's."""
        if which == "ref":
            return reference_owner(self.run)
        return getattr(self.run, "input_key", "") if bundled else self.run.key

    def path(self, which: str) -> Path:
        """``which`` (``"ref"`` or ``"theta-<epoch>"``): the store's ``probe/<key>/scores.parquet``."""
        key = content_key(self.owner(which), which, self.params, self.reference.store_identity, self.version)
        return artifact_dir("probe", key, self.root) / "scores.parquet"

    def bundle_key(self, which: str) -> str:
        """The scores' name in a results bundle ('' for a run without an input key: a joint run's view)."""
        owner = self.owner(which, bundled=True)
        return input_key(owner, which, self.params, self.reference.store_identity) if owner else ""


def probe_params(
    n_candidates: int, manipulations: Sequence[str | Manipulation] | None, seed: int, max_queries: int | None
) -> dict:
    """The probing parameters that key a run's scores (Sec. 4.2)."""
    names = [m.name for m in resolve_manipulations(manipulations)]
    return {"n_candidates": n_candidates, "manipulations": names, "seed": seed, "max_queries": max_queries}


def _cached(path: Path, compute, params: dict | None = None, bundle_key: str = "") -> pd.DataFrame:
    """The scores at ``path``, or ``compute()``'s written there; ``params.json`` only once they are computed, so a
    computation that raises leaves no folder behind. The completion record (:func:`iclmem.store.integrity.seal`, written
    last) marks the folder complete; scores that do not match it are set aside and computed again, and one
    process computes them while any other waits for them (:func:`iclmem.store.integrity.produce`). Scores the store
    lacks and a checked results bundle holds under ``bundle_key`` are read from the bundle (:mod:`iclmem.bundle`)."""
    if not served(path.parent):
        bundled = lookup("probe", bundle_key)
        if bundled is not None:
            return decode(bundled / path.name, json.loads((bundled / "params.json").read_text())["model"])

    def write() -> pd.DataFrame:
        frame = compute()
        if params is not None:
            atomic_write_text(path.parent / "params.json", json.dumps(params, indent=1))
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        atomic_write_bytes(path, buffer.getvalue())
        seal(path.parent, __name__, code_version(__name__))
        return frame

    return produce(path.parent, lambda: pd.read_parquet(path), write, what=f"the probe scores probe/{path.parent.name}")


def probe_run(
    run: FinetuneRun,
    table: Dataset,
    reference: ReferenceLTM | None = None,
    settings: ProbeSettings = PROBE_DEFAULTS,
    *,
    results_dir: str | Path | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    progress: bool = True,
) -> pd.DataFrame:
    """Probe scores of a run: one row per (query, manipulation, model, epoch).

    ``model`` is ``"theta"`` (M_theta at ``epoch``) or ``"ref"`` (M_ref, ``epoch`` = -1, scored
    once). ``settings`` (:class:`~iclmem.probe.settings.ProbeSettings`: candidates, query cap, epochs, seed,
    manipulations; its ``n_boot`` is the summary's, unused here): its ``epochs`` default to the run's probing epochs
    (``()``: M_ref's scores alone). ``results_dir`` defaults to the store the run lives in. Each model's scores are
    cached under ``<results>/probe/<key>/scores.parquet`` with a key over the run key, the probing parameters, the
    reference checkpoint and the code version.
    """
    reference = reference or load_reference()
    _reference_matches(run, reference)
    n_candidates, seed, max_queries = settings.n_candidates, settings.seed, settings.max_queries
    epochs = list(run.config.probe_epochs if settings.epochs is None else settings.epochs)
    bad = [e for e in epochs if e not in run.config.probe_epochs]
    if bad:
        raise ProbeError(
            f"epochs {bad} were not kept by the run; kept: {list(run.config.probe_epochs)}. Probe those epochs, or "
            "fine-tune with more epochs (the run keeps the paper's probing epochs up to its last one)."
        )
    manips = resolve_manipulations(settings.manipulations)
    root = results_dir if results_dir is not None else run_store(run)
    params = probe_params(n_candidates, manips, seed, max_queries)
    ref_owner = reference_owner(run)
    suite = _shared_suite(ref_owner, SuiteInputs(run, table, n_candidates, tuple(manips), seed, max_queries, reference))
    where = ScoreLocations(run, reference, params, Path(root), code_version(__name__))
    path, bundle_key = where.path, where.bundle_key

    def described(which: str) -> dict:
        return {"run": ref_owner if which == "ref" else run.key, "model": which, **params}

    ref = _cached(
        path("ref"),
        lambda: suite.scores(reference, {"model": "ref", "epoch": -1}, chunk_size, progress),
        described("ref"),
        bundle_key("ref"),
    )
    frames = [ref]
    for epoch in Bar(epochs, disable=not progress, desc=f"probe {run.manifest.dataset}", leave=False):

        def compute(epoch: int = epoch) -> pd.DataFrame:
            theta = run.model(epoch, reference)
            if _same_weights(theta, reference):  # e.g. epoch 0: M_theta is M_ref, reuse its scores exactly
                return ref.assign(model="theta", epoch=epoch)
            return suite.scores(theta, {"model": "theta", "epoch": epoch}, chunk_size, progress)

        which = f"theta-{epoch}"
        frames.append(_cached(path(which), compute, described(which), bundle_key(which)))
    return pd.concat(frames, ignore_index=True)


#: Suites kept per process (:func:`_shared_suite`): the runs of one M_ref score set differ in learning rate only.
SUITES_KEPT = 4
_SUITES: OrderedDict[tuple, _Suite] = OrderedDict()


@dataclass(frozen=True, eq=False)
class SuiteInputs:
    """What a :class:`_Suite` is built from: a run, its table, the probing parameters and M_ref (Sec. 4.2)."""

    run: FinetuneRun
    table: Dataset
    n_candidates: int
    manips: tuple[Manipulation, ...]
    seed: int
    max_queries: int | None
    reference: ReferenceLTM

    def cache_key(self, owner: str) -> tuple:
        """The key of :data:`_SUITES`: the owner pins the table (its manifest's fingerprint), the rest the contexts."""
        return (owner, self.n_candidates, self.manips, self.seed, self.max_queries, architecture(self.reference))


def _shared_suite(owner: str, inputs: SuiteInputs) -> _Suite:
    """The :class:`_Suite` of a run, shared with the other runs of its M_ref score set in this process.

    Runs with the same :func:`reference_owner` have the same queries and the same contexts (that is
    why they share M_ref's scores), so their suites are equal; a probing grid builds and collates
    them once per set instead of once per run. The last :data:`SUITES_KEPT` are kept.
    """
    key = inputs.cache_key(owner)
    try:
        hash(key)
    except TypeError:  # a manipulation that cannot key a cache: a suite of its own
        return _Suite(inputs)
    if key not in _SUITES:
        _SUITES[key] = _Suite(inputs)
        while len(_SUITES) > SUITES_KEPT:
            _SUITES.popitem(last=False)
    _SUITES.move_to_end(key)
    return _SUITES[key]


class _Suite:
    """The manipulated contexts of a run's queries, built once (when first needed) for every model probed.

    M_ref and M_theta at each epoch share the architecture, hence the invariances, so the distinct
    contexts are found once too; scoring them gives exactly what :func:`~.scoring.probe_scores` gives
    for each model (the same tasks in the same batches). Nothing is built while every score is in
    the store.
    """

    def __init__(self, inputs: SuiteInputs) -> None:
        self._inputs = inputs
        self._built: tuple | None = None
        self._batches: ScoringBatches | None = None

    def _build(self) -> tuple:
        if self._built is None:
            inputs = self._inputs
            run, table, limit = inputs.run, inputs.table, inputs.reference.max_classes
            data = prepare_run_data(run.manifest, table, run.config, limit)
            queries = run_queries(data, table, run, inputs.n_candidates, inputs.seed, inputs.max_queries, limit)
            cfg = inputs.reference.cfg
            limits = {"max_context": cfg.max_context, "max_features": cfg.max_features}
            tasks, frame = build_probe_tasks(
                queries,
                inputs.manips,
                target=QueryTarget(data.task, data.target_center, data.target_scale),
                seed=inputs.seed,
                **limits,
            )
            first, group = distinct_tasks(tasks, model_invariances(inputs.reference))
            self._built = ([tasks[i] for i in first], group, frame)
        return self._built

    def scores(self, model: ReferenceLTM, columns: dict, chunk_size: int, progress: bool) -> pd.DataFrame:
        if model_invariances(model) != model_invariances(self._inputs.reference):
            raise ProbeError(
                "a model probed with the reference's distinct contexts must declare the reference's invariances."
            )
        distinct, group, frame = self._build()
        if self._batches is None or self._batches.chunk_size != chunk_size or not self._batches.fits(model):
            self._batches = ScoringBatches(
                model, distinct, chunk_size
            )  # planned and collated once for every model probed
        return scored_frame(frame, self._batches.score(model, progress)[group], columns)


__all__ = ["probe_run", "query_subset", "reference_owner", "run_queries"]
