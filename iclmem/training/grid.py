"""The grid of controlled fine-tuning runs (Sec. 5, Tab. 2): enumerate, run, probe, collect.

One :class:`RunSpec` names everything a run depends on besides the reference model; a grid is
the product of its axes (the word "grid" means this product everywhere in the package: a sweep's
grid file, :mod:`iclmem.sweep.gridfile`, lists the same axes). Notebooks run small grids
in-process with :func:`run_grid` and :func:`probe_grid`; the distributed sweep
(:mod:`iclmem.sweep`) runs the same :func:`run_spec` and :func:`probe_views` as jobs on a cluster.

A spec's ``regime`` (App. D, :mod:`iclmem.training.regimes`) is ``single_task_fixed`` (the controlled
setting, one model per dataset) or a multi-task regime, whose spec names all its datasets joined
by ``+`` (one joint model; :attr:`RunSpec.datasets` splits them).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pandas as pd

from ..data import Dataset, dataset_card, normalize_label_condition, prepared_table, split_manifest
from ..ltm import ReferenceLTM, load_reference
from ..probe import ProbeError, probe_run, summarize_run
from ..probe.run import reference_owner
from ..probe.settings import GRID_PROBE, ProbeSettings
from ..runtime.progress import Bar
from ..runtime.workers import in_workers, worker_count, worker_pool
from .finetune import FinetuneConfig, FinetuneRun, finetune, probe_epochs_up_to
from .regimes import MULTI_TASK, SINGLE_TASK_FIXED, DatasetView, JointRun, check_regime, train_joint

JOINT_SEPARATOR = "+"


@dataclass(frozen=True)
class RunSpec:
    """One fine-tuning configuration of the paper's grid (Tab. 2)."""

    dataset: str
    learning_rate: float
    query_size: int
    label_condition: str = "none"
    epochs: int = 100
    seed: int = 0
    context_size: int = 512
    regime: str = SINGLE_TASK_FIXED

    @property
    def datasets(self) -> list[str]:
        """The dataset(s) of the run: one for single-task, all joint datasets for multi-task regimes."""
        return self.dataset.split(JOINT_SEPARATOR) if self.regime in MULTI_TASK else [self.dataset]

    @property
    def work(self) -> int:
        """The run's size in query rows trained on (datasets x Q x epochs): the order in which workers take runs."""
        return len(self.datasets) * self.query_size * self.epochs

    def config(self) -> FinetuneConfig:
        return FinetuneConfig(
            self.learning_rate, self.epochs, probe_epochs_up_to(self.epochs), self.context_size, self.seed
        )

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class GridAxes:
    """The axes of a controlled grid (Tab. 2): the tables, the learning rates, the query sizes Q, the label
    conditions, and the fine-tuning regimes (App. D; the single-task one unless given)."""

    datasets: Sequence[str]
    learning_rates: Sequence[float]
    query_sizes: Sequence[int]
    label_conditions: Sequence[str]
    regimes: Sequence[str] = (SINGLE_TASK_FIXED,)


def expand_grid(axes: GridAxes, epochs: int, seed: int = 0, context_size: int = 512) -> list[RunSpec]:
    """The product of the grid's ``axes``, datasets outermost; then one joint spec per multi-task regime cell.

    A multi-task regime trains one model on all ``axes.datasets`` (App. D), so it contributes one spec
    per (query size, label condition, learning rate), not one per dataset.
    """
    datasets, learning_rates, query_sizes = list(axes.datasets), list(axes.learning_rates), list(axes.query_sizes)
    label_conditions, regimes = list(axes.label_conditions), list(axes.regimes)
    for name, axis in (
        ("datasets", datasets),
        ("learning_rates", learning_rates),
        ("query_sizes", query_sizes),
        ("label_conditions", label_conditions),
        ("regimes", regimes),
    ):
        if not axis:
            raise ValueError(f"grid axis {name!r} is empty; give at least one value.")
    conditions = [normalize_label_condition(c) for c in label_conditions]
    regimes = [check_regime(r) for r in regimes]
    bad = [d for d in datasets if JOINT_SEPARATOR in d]
    if bad and any(r in MULTI_TASK for r in regimes):
        raise ValueError(
            f"dataset names {bad} contain {JOINT_SEPARATOR!r}, which joins the datasets of a multi-task spec; rename "
            "them."
        )
    specs = []
    if SINGLE_TASK_FIXED in regimes:
        specs += [
            RunSpec(d, float(lr), int(q), c, int(epochs), int(seed), int(context_size))
            for d, q, c, lr in itertools.product(datasets, query_sizes, conditions, learning_rates)
        ]
    joined = JOINT_SEPARATOR.join(datasets)
    specs += [
        RunSpec(joined, float(lr), int(q), c, int(epochs), int(seed), int(context_size), r)
        for r in regimes
        if r in MULTI_TASK
        for q, c, lr in itertools.product(query_sizes, conditions, learning_rates)
    ]
    return specs


def table_of(name: str, tables: Mapping[str, Dataset] | None = None, carte_dir: str | None = None) -> Dataset:
    """The deduplicated table ``name``: from ``tables`` (already loaded, e.g. a file of your own) if there, else by
    name."""
    return tables[name] if tables and name in tables else prepared_table(name, carte_dir)


def run_spec(
    spec: RunSpec,
    reference: ReferenceLTM | None = None,
    results_dir: str | Path | None = None,
    progress: bool = False,
    carte_dir: str | None = None,
    tables: Mapping[str, Dataset] | None = None,
    load_only: bool = False,
) -> FinetuneRun | JointRun | None:
    """Split manifest(s) + fine-tuning in the spec's regime, through the results store.

    ``single_task_fixed`` gives a :class:`FinetuneRun`, the multi-task regimes a
    :class:`~iclmem.training.regimes.JointRun`. ``tables`` maps dataset names to deduplicated tables
    already loaded (e.g. from files with a target column); other names go through
    :func:`iclmem.data.prepared_table`. ``load_only``: None unless the store holds the run finished.
    """
    regime = check_regime(spec.regime)
    loaded = [table_of(d, tables, carte_dir) for d in spec.datasets]
    manifests = [
        split_manifest(t, spec.query_size, spec.seed, spec.label_condition, results_dir=results_dir) for t in loaded
    ]
    if regime in MULTI_TASK:
        return train_joint(
            manifests, loaded, spec.config(), regime, reference, results_dir, progress=progress, load_only=load_only
        )
    return finetune(
        manifests[0], loaded[0], spec.config(), reference, results_dir, progress=progress, load_only=load_only
    )


def run_grid(
    specs: list[RunSpec],
    reference: ReferenceLTM | None = None,
    results_dir: str | Path | None = None,
    progress: bool = True,
    carte_dir: str | None = None,
    tables: Mapping[str, Dataset] | None = None,
    workers: int | None = None,
) -> list[FinetuneRun]:
    """Run (or load from the store) every spec, with a progress bar over runs.

    ``tables`` maps dataset names to deduplicated tables already loaded (e.g. a file of your own);
    other names are loaded by :func:`iclmem.data.prepared_table`. ``workers`` (default
    ``$ICLMEM_WORKERS``, else 1) runs the runs missing from the store in that many processes first,
    the largest (:attr:`RunSpec.work`) first (:mod:`iclmem.runtime.workers`); every run is then read from the store
    here, in the order of ``specs``.
    """
    reference = reference or load_reference()
    n = worker_count(workers)
    if n > 1:
        todo = [
            s for s in specs if run_spec(s, reference, results_dir, False, carte_dir, tables, load_only=True) is None
        ]
        todo.sort(key=lambda s: -s.work)  # the longest runs first: the last one to finish is a short one
        used = {d: table_of(d, tables, carte_dir) for s in todo for d in s.datasets}
        in_workers(
            _run_spec_key, [(s, reference, results_dir, carte_dir, used) for s in todo], n, "fine-tuning runs", progress
        )
    return [
        run_spec(s, reference, results_dir, progress and n == 1, carte_dir, tables)
        for s in Bar(specs, desc="fine-tuning runs", disable=not progress or n > 1)
    ]


def _run_spec_key(
    spec: RunSpec,
    reference: ReferenceLTM,
    results_dir: str | Path | None,
    carte_dir: str | None,
    tables: Mapping[str, Dataset],
) -> str:
    """:func:`run_spec` in a worker process; the run stays in the store, its key comes back."""
    return run_spec(spec, reference, results_dir, False, carte_dir, tables).key


def _with_spec(frame: pd.DataFrame, spec: RunSpec, run: FinetuneRun) -> pd.DataFrame:
    out = frame.copy()
    for k, v in spec.to_dict().items():
        out[k] = v
    out["run_key"] = run.key
    return out


def grid_metrics(specs: list[RunSpec], runs: list[FinetuneRun]) -> pd.DataFrame:
    """Per-run, per-probing-epoch vanilla losses, loss ratio and collapse flag, with the spec columns."""
    return pd.concat([_with_spec(r.metrics, s, r) for s, r in zip(specs, runs, strict=True)], ignore_index=True)


def grid_curves(specs: list[RunSpec], runs: list[FinetuneRun]) -> pd.DataFrame:
    """Per-run training-loss curves (one row per epoch), with the spec columns."""
    return pd.concat([_with_spec(r.curve, s, r) for s, r in zip(specs, runs, strict=True)], ignore_index=True)


def grid_overview(specs: list[RunSpec], runs: list[FinetuneRun], metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per run: spec, store key, members proven by the log, and the last epoch's state."""
    last = metrics.sort_values("epoch").groupby("run_key").tail(1)[["run_key", "train_loss", "loss_ratio", "collapsed"]]
    rows = [
        {
            **s.to_dict(),
            "run_key": r.key,
            "members_logged": len(r.members_logged),
            "members_in_manifest": len(r.manifest.members),
        }
        for s, r in zip(specs, runs, strict=True)
    ]
    return pd.DataFrame(rows).merge(last, on="run_key").drop(columns=["seed", "epochs"])


def run_views(run: FinetuneRun | JointRun) -> list[FinetuneRun | DatasetView]:
    """The per-dataset runs to probe: the run itself, or each dataset's view of a joint run."""
    return [run.view(d) for d in run.datasets] if isinstance(run, JointRun) else [run]


def probe_views(
    run: FinetuneRun | JointRun,
    tables: Mapping[str, Dataset],
    reference: ReferenceLTM | None = None,
    settings: ProbeSettings = GRID_PROBE,
    results_dir: str | Path | None = None,
    progress: bool = False,
) -> list[tuple[FinetuneRun | DatasetView, pd.DataFrame, pd.DataFrame]]:
    """Probe every dataset of a run (Sec. 4.2) and summarize each probing epoch (Tab. 3 outcome, AUC, TPR).

    Per dataset view of the run: (view, summary of :func:`iclmem.probe.summarize_run`, raw scores).
    ``settings.epochs`` are filtered to those the run kept (default: all of them); ``tables`` maps each
    dataset name to its deduplicated table. Scores come from the results store when present.
    """
    out = []
    for view in run_views(run):
        kept = replace(settings, epochs=tuple(settings.epochs_for(view.config.probe_epochs)))
        scores = probe_run(
            view, tables[view.manifest.dataset], reference, kept, results_dir=results_dir, progress=progress
        )
        out.append((view, summarize_run(scores, view, n_boot=settings.n_boot, seed=settings.seed), scores))
    return out


def probe_order(specs: Sequence[RunSpec], owners: Sequence[str]) -> list[int]:
    """The order in which workers take a grid's runs to probe (Sec. 4.2): positions in ``specs``.

    The largest query size first: probing a Q = 512 run scores about ten times the queries of a Q = 50
    run, so with the long runs taken first the last one to finish is a short one and no core waits long
    for it (as :func:`run_grid` orders fine-tuning by :attr:`RunSpec.work`). Within a size, the runs that
    share M_ref's scores (``owners``, :func:`~iclmem.probe.run.reference_owner`) one after another, so a
    worker reuses their contexts.
    """
    return sorted(range(len(specs)), key=lambda i: (-specs[i].query_size, owners[i]))


def probe_grid(
    specs: Sequence[RunSpec],
    runs: Sequence[FinetuneRun],
    reference: ReferenceLTM | None = None,
    settings: ProbeSettings = GRID_PROBE,
    *,
    results_dir: str | Path | None = None,
    progress: bool = True,
    tables: Mapping[str, Dataset] | None = None,
    workers: int | None = None,
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Probe every run at ``settings.epochs`` (those it kept; default: every kept epoch) with ``settings``
    (:class:`~iclmem.probe.settings.ProbeSettings`) and summarize each epoch (Tab. 3 outcome, AUC, TPR).

    Returns the summary (spec columns, dataset card's k and alpha, and :func:`summarize_run`'s
    columns) and the raw scores per run key. Scores come from the results store when present.
    ``tables``: as for :func:`run_grid`. ``workers`` (default ``$ICLMEM_WORKERS``, else 1) probes
    the runs in that many processes (:mod:`iclmem.runtime.workers`): first M_ref's scores, once per set of
    runs that share them (:func:`~iclmem.probe.run.reference_owner`), then every run; the numbers
    are those of probing in this process, to float32 summation order.
    """
    reference = reference or load_reference()
    epochs = None if settings.epochs is None else tuple(settings.epochs)
    if epochs is not None:
        kept_anywhere = set().union(*(run.config.probe_epochs for run in runs)) if runs else set()
        missing = sorted(set(epochs) - kept_anywhere)
        if missing:
            raise ProbeError(
                f"probing epochs {missing} were kept by none of the runs (kept: {sorted(kept_anywhere)}); fine-tuning "
                "keeps "
                f"the paper's probing epochs (Tab. 2) up to each run's last epoch: choose epochs among those."
            )
    pairs = list(zip(specs, runs, strict=True))
    used = {spec.dataset: table_of(spec.dataset, tables) for spec, _ in pairs}
    n = worker_count(workers)

    def call(spec: RunSpec, run: FinetuneRun, at: tuple[int, ...] | None) -> tuple:
        return run, {spec.dataset: used[spec.dataset]}, reference, replace(settings, epochs=at), results_dir

    probed = None
    if n > 1 and len(pairs) > 1:  # one run is probed here: a pool would cost its start-up for nothing
        owners = [reference_owner(run) for _, run in pairs]
        order = probe_order([spec for spec, _ in pairs], owners)
        shared: dict[str, tuple[RunSpec, FinetuneRun]] = {}
        for i in order:
            shared.setdefault(owners[i], pairs[i])  # one run of each M_ref score set, the largest Q first
        with worker_pool(min(n, len(pairs))) as pool:
            in_workers(
                _probe_reference, [call(s, r, ()) for s, r in shared.values()], n, "probing M_ref", progress, pool
            )
            done = in_workers(probe_views, [call(*pairs[i], epochs) for i in order], n, "probing runs", progress, pool)
        probed = [None] * len(pairs)
        for i, result in zip(order, done, strict=True):
            probed[i] = result
    rows, scores = [], {}
    cards = {name: dataset_card(table).to_dict() for name, table in used.items()}  # once per table, not per run
    for i, (spec, run) in enumerate(Bar(pairs, desc="probing runs", disable=not progress or n > 1)):
        table = used[spec.dataset]
        [(_, summary, sc)] = probed[i] if probed else probe_views(*call(spec, run, epochs), progress=progress)
        card = cards[spec.dataset]
        for key, value in spec.to_dict().items():
            summary[key] = value
        summary["run_key"], summary["k"], summary["alpha"], summary["task"] = (
            run.key,
            card.get("k"),
            card.get("alpha"),
            table.task,
        )
        rows.append(summary)
        scores[run.key] = sc
    return pd.concat(rows, ignore_index=True), scores


def _probe_reference(
    run: FinetuneRun,
    tables: Mapping[str, Dataset],
    reference: ReferenceLTM,
    settings: ProbeSettings,
    results_dir: str | Path | None,
) -> None:
    """M_ref's scores of a run (no epoch of M_theta: ``settings.epochs`` is ``()``), left in the store:
    :func:`probe_grid`'s first pass in workers."""
    probe_run(run, tables[run.manifest.dataset], reference, settings, results_dir=results_dir, progress=False)
