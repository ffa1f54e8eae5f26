"""Recomputing one draw of a design's results bundle on this machine (issue 55, item 3).

A bundle's numbers are trusted on a reader's machine only after a random sample of them has been recomputed
there from scratch and landed within tolerance (Nix's ``--check``, BOINC's adaptive replication), never by
hashes alone (the sample and the verdict: :mod:`iclmem.bundle.check`). One *draw* of a design's bundle is one
(task, probed epoch): its fine-tuning run is trained again from M_ref up to that epoch
(:func:`iclmem.training.loop.train`'s ``stop_after``: the run to that epoch is the full run's), M_ref and M_theta at
that epoch are probed again (Sec. 4.2), and the recomputed training losses (the curve up to that epoch), the vanilla
metrics at that epoch and every probe score (loss and entropy, each query and manipulation) are compared with the
bundle's.

**Tolerance.** A value ``b`` recomputed as ``a`` lands within tolerance when ``|a - b| <= atol + rtol |b|``. The
default (:data:`TOLERANCE`) is set from the drift measured between two thread counts on this project's CPU
(``benchmarks/bundle_drift.py``): float32 sums in another order drift, and fine-tuning amplifies the drift
with the epochs.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import SplitManifest, split_manifest
from ..ltm import ReferenceLTM
from ..probe import probe_run
from ..probe.null import run_null
from ..probe.run import probe_params, reference_owner
from ..probe.settings import ProbeSettings
from ..store.keys import input_key
from ..sweep.gridfile import DatasetSource
from ..training.finetune import FinetuneConfig, FinetuneRun, run_input_key, single_task_schedule, verify_ground_truth
from ..training.grid import RunSpec, run_views
from ..training.loop import LoopOptions, train, write_finished
from ..training.regimes import MULTI_TASK, MULTI_TASK_RANDOM, JointRun, _load, joint_input_key, joint_schedule
from . import serve
from .layout import Bundle
from .null_codec import NullSettings
from .null_codec import decode as decode_null
from .sampling import (
    NULL_RECHECK_QUERIES,
    last_recomputable_epoch,
    recheck_queries,
    witness_key,
)
from .scores import decode, decode_witness

SCORE_COLUMNS: tuple[str, ...] = ("loss", "entropy")


@dataclass(frozen=True)
class Tolerance:
    """How far a recomputed value may land from the bundle's: ``|a - b| <= atol + rtol * |b|``."""

    atol: float = 1e-3
    rtol: float = 1e-3

    def excess(self, recomputed: np.ndarray, bundled: np.ndarray) -> float:
        """The largest ``|a - b| / (atol + rtol |b|)`` (within tolerance: at most 1)."""
        a, b = np.asarray(recomputed, float), np.asarray(bundled, float)
        if a.shape != b.shape:
            return float("inf")
        ratio = np.abs(a - b) / (self.atol + self.rtol * np.abs(b))
        ratio[np.isnan(a) & np.isnan(b)] = 0.0
        return float(np.max(np.nan_to_num(ratio, nan=np.inf), initial=0.0))


TOLERANCE = Tolerance()


def max_abs(recomputed: object, bundled: object) -> float:
    """The largest absolute difference (infinite when the shapes differ; NaN where both are NaN counts as 0)."""
    a, b = np.asarray(recomputed, float), np.asarray(bundled, float)
    if a.shape != b.shape:
        return float("inf")
    d = np.abs(a - b)
    d[np.isnan(a) & np.isnan(b)] = 0.0
    return float(np.max(d, initial=0.0))


@dataclass(frozen=True)
class Draw:
    """One (task, probed epoch) of a bundle."""

    task: str
    dataset: str
    kind: str
    query_size: int
    regime: str
    learning_rate: float
    epoch: int
    #: ``sweep``: a task of a design's bundle; ``store``: a run of a store's (:mod:`iclmem.bundle.run_check`)
    source: str = "sweep"

    @property
    def stratum(self) -> tuple:
        """Task kind x Q x regime x trained or not (an epoch-0 draw checks M_ref's scoring, not the training)."""
        return self.kind, self.query_size, self.regime, self.epoch > 0


@dataclass
class Landing:
    """How far one recomputed draw landed from the bundle: per compared quantity, the largest excess over the
    tolerance (<= 1: within) and the largest absolute difference."""

    draw: Draw
    excess: dict[str, float] = field(default_factory=dict)
    max_abs: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    problem: str = ""

    @property
    def within(self) -> bool:
        return not self.problem and all(v <= 1.0 for v in self.excess.values())

    def worst(self) -> str:
        """The quantity that landed farthest, and how far: one phrase."""
        if self.problem:
            return self.problem
        name = max(self.excess, key=self.excess.get)
        return f"{name} off by up to {self.max_abs[name]:.3g} ({self.excess[name]:.3g} x the tolerance)"


def sweep_draws(bundle: Bundle) -> list[Draw]:
    """Every (task, probed epoch) of a design's bundle, in the manifest's order."""
    out = []
    for key, entry in sorted(bundle.items.items()):
        if entry["kind"] != "sweep":
            continue
        spec = entry["spec"]
        last = last_recomputable_epoch(float(spec["learning_rate"]), spec["regime"] in MULTI_TASK)
        for epoch in (e for e in entry["epochs"] if last is None or e <= last):
            out.append(
                Draw(key.split("/", 1)[1], spec["dataset"], entry["task"], int(spec["query_size"]), spec["regime"],
                     float(spec["learning_rate"]), int(epoch))
            )  # fmt: skip
    return out


def _bundled_scores(bundle: Bundle, key: str, witness: str, which: str) -> pd.DataFrame | None:
    """The bundle's scores of one model: all of them (a ``probe`` item, ``key``), or the queries a check probes again
    (the run's ``witness`` item, model ``which``)."""
    if bundle.holds("probe", key):
        folder = bundle.item_dir("probe", key)
        return decode(folder / "scores.parquet", json.loads((folder / "params.json").read_text())["model"])
    if bundle.holds("witness", witness):
        return decode_witness(bundle.item_dir("witness", witness) / "scores.parquet", which)
    return None


def _compare_scores(landing: Landing, name: str, mine: pd.DataFrame, theirs: pd.DataFrame | None, tol: Tolerance):
    """Every recomputed score the bundle holds (all it holds must be recomputed) against the bundle's."""
    if theirs is None:
        landing.problem = f"the bundle holds no {name} scores for this run as this code splits and keys it"
        return
    keys = ["query_id", "manipulation"]
    if len(theirs) < len(mine):  # a witness: the recomputed queries it holds
        mine = mine[mine.query_id.isin(set(theirs.query_id))]
    elif len(theirs) > len(mine):  # every score: the recomputed queries' of them
        theirs = theirs[theirs.query_id.isin(set(mine.query_id))]
    merged = mine.merge(theirs, on=keys, suffixes=("", "_b"), how="left", indicator=True)
    if mine.empty or (merged["_merge"] != "both").any() or len(merged) != len(theirs):
        landing.problem = f"{name}: the recomputed queries or manipulations are not the bundle's"
        return
    for col in SCORE_COLUMNS:
        label = f"{name} {col}"
        landing.excess[label] = tol.excess(merged[col], merged[f"{col}_b"])
        landing.max_abs[label] = max_abs(merged[col], merged[f"{col}_b"])


def _table(name: str, sources: dict):
    return (DatasetSource(**sources[name]) if name in sources else DatasetSource(name)).load()


def recompute_task(
    draw: Draw, root: str, sources: dict, probe: dict, tol: Tolerance, reference: ReferenceLTM
) -> Landing:
    """Train the draw's run to its epoch and probe it (one dataset of a joint run, chosen by the draw), in a
    temporary store, on a seeded subset of its queries, and compare with the bundle."""
    from .layout import read_bundle

    started, bundle = time.perf_counter(), read_bundle(root)
    entry = bundle.items[f"sweep/{draw.task}"]
    spec = RunSpec(**entry["spec"])
    tables = {d: _table(d, sources) for d in spec.datasets}
    landing = Landing(draw)
    work = Path(tempfile.mkdtemp(prefix="iclmem-recheck-"))
    try:
        with serve.bundles_off():
            run = _train_to(spec, tables, draw.epoch, reference, work)
            views = run_views(run)
            view = views[zlib.crc32(f"{draw.task}-{draw.epoch}".encode()) % len(views)]
            null = _bundled_null(bundle, view.input_key, draw.epoch) if draw.epoch > 0 else None
            full = null is not None and len(view.manifest.members) <= NULL_RECHECK_QUERIES
            settings = _probe_settings(
                probe, (draw.epoch,), probe["max_queries"] if full else recheck_queries(probe["max_queries"])
            )
            scores = probe_run(
                view, tables[view.manifest.dataset], reference, settings, results_dir=work, progress=False
            )
        if run.input_key != entry["run"]:
            landing.problem = (
                "this code splits or configures the run otherwise (its input key differs from the bundle's)"
            )
            return landing
        _compare_run(landing, bundle, run, draw.epoch, tol)
        params = probe_params(probe["n_candidates"], probe["manipulations"], probe["seed"], probe["max_queries"])
        ref_key = input_key(reference_owner(view), "ref", params, reference.store_identity)
        theta_key = input_key(view.input_key, f"theta-{draw.epoch}", params, reference.store_identity)
        witness = witness_key(view.input_key, params, reference.store_identity)
        bundled_ref = _bundled_scores(bundle, ref_key, witness, "ref")
        _compare_scores(landing, "M_ref", scores[scores.model == "ref"], bundled_ref, tol)
        theta = scores[(scores.model == "theta") & (scores.epoch == draw.epoch)]
        bundled_theta = _bundled_scores(bundle, theta_key, witness, f"theta-{draw.epoch}")
        _compare_scores(landing, "M_theta", theta, bundled_theta, tol)
        if full and null is not None:
            _compare_null(landing, scores, draw.epoch, null, tol)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    landing.seconds = round(time.perf_counter() - started, 2)
    return landing


def _bundled_null(bundle: Bundle, run: str, epoch: int) -> tuple[NullSettings, pd.DataFrame] | None:
    """How the bundle's null of ``run`` was drawn and its rows at ``epoch``; None if it holds none there."""
    for key, entry in bundle.items.items():
        if entry["kind"] == "null" and entry["run"] == run and epoch in entry["epochs"]:
            rows = decode_null(bundle.item_dir("null", key.split("/", 1)[1]) / "null.parquet")
            settings = NullSettings(int(entry["n_perm"]), int(entry["seed"]), int(entry["n_boot"]))
            return settings, rows[rows.epoch == epoch].reset_index(drop=True)
    return None


def _compare_null(
    landing: Landing, scores: pd.DataFrame, epoch: int, bundled: tuple[NullSettings, pd.DataFrame], tol: Tolerance
) -> None:
    """The run's membership null at ``epoch`` recomputed from every recomputed score, against the bundle's rows."""
    settings, theirs = bundled
    mine = run_null(scores, [epoch], settings.n_perm, settings.seed, settings.n_boot)
    if list(mine.columns) != list(theirs.columns) or len(mine) != len(theirs):
        landing.problem = "null: the recomputed permutations are not the bundle's (other columns or count)"
        return
    values = [c for c in mine.columns if c not in ("perm", "epoch")]
    landing.excess["null"] = tol.excess(mine[values].to_numpy(float), theirs[values].to_numpy(float))
    landing.max_abs["null"] = max_abs(mine[values], theirs[values])


def _probe_settings(probe: dict, epochs: tuple[int, ...], max_queries: int | None) -> ProbeSettings:
    """The bundle's probe parameters as :class:`~iclmem.probe.settings.ProbeSettings`, at ``epochs`` and
    ``max_queries``."""
    manipulations = probe["manipulations"]
    return ProbeSettings(
        n_candidates=probe["n_candidates"],
        max_queries=max_queries,
        epochs=epochs,
        seed=probe["seed"],
        manipulations=tuple(manipulations) if manipulations else None,
    )


def _last_trained(regime: str, epoch: int) -> int:
    """The epoch a draw at ``epoch`` trains to: ``epoch``, or at least 1 under random pairs (App. D), whose probed
    members are the pairs its first epoch drew (an epoch-0 draw reads them from the first epoch's log)."""
    return max(epoch, 1) if regime == MULTI_TASK_RANDOM else epoch


def _train_to(spec: RunSpec, tables: dict, epoch: int, reference: ReferenceLTM, work: Path) -> FinetuneRun | JointRun:
    """The spec's run (single-task or joint, App. D) trained from M_ref up to ``epoch`` (:func:`_last_trained`) in
    ``work``, with the weights kept at the probing epochs up to it and its log, curve and metrics written as a
    finished run's."""
    manifests = [
        split_manifest(tables[d], spec.query_size, spec.seed, spec.label_condition, results_dir=work)
        for d in spec.datasets
    ]
    config = spec.config().checked(reference.cfg.max_context)
    joint = spec.regime in MULTI_TASK
    if joint:
        schedule = joint_schedule(manifests, [tables[d] for d in spec.datasets], config, spec.regime, reference)
    else:
        schedule = single_task_schedule(manifests[0], tables[spec.dataset], config, reference)
    run_dir = work / "run"
    trained = _trained(schedule, config, reference, run_dir, _last_trained(spec.regime, epoch))
    if joint:
        key = joint_input_key(spec.regime, manifests, config, reference)
        return _load(run_dir, "recheck", spec.regime, {m.dataset: m for m in manifests}, tables, config, key)
    return _single_run(run_dir, trained, schedule.curve_columns, manifests[0], config, reference)


def _trained(schedule, config: FinetuneConfig, reference: ReferenceLTM, run_dir: Path, stop_after: int):
    """``schedule`` trained from M_ref up to epoch ``stop_after`` in ``run_dir``, written as a finished run's."""
    run_dir.mkdir()
    trained = train(
        schedule, reference, config, run_dir, LoopOptions(progress=None, checkpoint_every=10**9, stop_after=stop_after)
    )
    write_finished(run_dir, trained, schedule.curve_columns)
    return trained


def _single_run(
    run_dir: Path, trained, columns, manifest: SplitManifest, config: FinetuneConfig, reference: ReferenceLTM
) -> FinetuneRun:
    """The single-task run trained in ``run_dir`` (:func:`_trained`), as the engine loads a finished one."""
    curve = pd.DataFrame(trained.curve, columns=list(columns))
    members = verify_ground_truth(trained.log, manifest)
    key = run_input_key(manifest, config, reference)
    return FinetuneRun("recheck", run_dir, manifest, config, pd.DataFrame(trained.rows), members, curve, key)


def train_single(
    manifest: SplitManifest, table, config: FinetuneConfig, epoch: int, reference: ReferenceLTM, work: Path
) -> FinetuneRun:
    """A single-task run of ``manifest`` and ``config`` (a store bundle's, :mod:`iclmem.bundle.run_check`) trained
    from M_ref up to ``epoch`` in ``work``."""
    schedule = single_task_schedule(manifest, table, config, reference)
    trained = _trained(schedule, config, reference, work / "run", epoch)
    return _single_run(work / "run", trained, schedule.curve_columns, manifest, config, reference)


def run_pairs(
    mine: tuple[pd.DataFrame, pd.DataFrame], theirs: tuple[pd.DataFrame, pd.DataFrame], epoch: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """What a check compares of a run retrained up to ``epoch``, as (recomputed, bundled) arrays by name: the training
    losses of every step retrained (as many as ``mine``'s curve holds) and the numeric M_theta vanilla metrics at
    ``epoch`` (Sec. 4.1). ``mine``, ``theirs``: (training curve, metrics) of the two runs."""
    (curve, metrics), (their_curve, their_metrics) = mine, theirs
    at, their_at = metrics[metrics.epoch == epoch], their_metrics[their_metrics.epoch == epoch]
    cols = [c for c in at.columns if c.startswith("theta_") and pd.api.types.is_numeric_dtype(at[c])]
    return {
        "train loss": (
            curve["train_loss"].to_numpy(float),
            their_curve["train_loss"].iloc[: len(curve)].to_numpy(float),
        ),
        "metrics": (at[cols].to_numpy(float), their_at[cols].to_numpy(float)),
    }


def _compare_run(landing: Landing, bundle: Bundle, run: FinetuneRun | JointRun, epoch: int, tol: Tolerance) -> None:
    """The training losses up to ``epoch`` and the vanilla metrics at ``epoch``, against the bundle's run."""
    folder = bundle.item_dir("multitask" if isinstance(run, JointRun) else "finetune", run.input_key)
    theirs = pd.read_csv(folder / "train_curve.csv"), pd.read_csv(folder / "metrics.csv")
    for name, (a, b) in run_pairs((run.curve, run.metrics), theirs, epoch).items():
        landing.excess[name], landing.max_abs[name] = tol.excess(a, b), max_abs(a, b)


__all__ = [
    "SCORE_COLUMNS",
    "TOLERANCE",
    "Draw",
    "Landing",
    "Tolerance",
    "max_abs",
    "recompute_task",
    "sweep_draws",
    "train_single",
]
