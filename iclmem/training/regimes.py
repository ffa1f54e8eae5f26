"""Realistic training regimes (Sec. 6 "Limitations", App. D, Tab. 12).

The controlled setting of Sec. 4.1 is the worst case for privacy: one model per dataset,
fine-tuned on *fixed* context-query pairs. App. D moves towards how LTMs are actually trained:

1. ``single_task_fixed`` -- the controlled setting: :func:`iclmem.training.finetune.finetune` (one model
   per dataset, one step per epoch on the static context C' and the Q member queries);
2. ``multi_task_fixed`` -- one model fine-tuned *jointly* on all chosen datasets: every epoch makes
   one AdamW step per dataset (in a seeded random order, logged), each on that dataset's fixed
   pair (C', Q members), so the members of each dataset are still exactly its Q manifest members;
3. ``multi_task_random`` -- the same joint model, but every step draws a *fresh* random
   context-query sample: Q query rows uniformly from the dataset's **training pool** (every row of
   the deduplicated table except the manifest's non-members, i.e. members + context pool) and a
   training context of ``context_size`` rows with a uniform label distribution
   (:func:`iclmem.data.draw_training_context`) from the rest of that pool.

Ground truth (App. A.1, "Unverified ground truth"). Every step logs the dataset, the context row
ids and the query row ids it processed. A dataset's members are exactly the union of its logged
query ids; for random pairs that is every row ever sampled as a query, so the member count grows
with the epochs (reported as ``members_logged``). Non-members are the manifest's non-members,
which are never sampled, neither as queries nor into a context; this is checked on the log. Rows
that only ever appeared in contexts are neither members nor non-members and are not probed.
Probing M_theta at epoch e needs members that M_theta had seen by epoch e, and the same member
set at every probed epoch (M_ref is scored once). Under random pairs the probed members are
therefore the Q rows sampled as queries in the *first* epoch: members of every M_theta from
epoch 1 on, each seen about as often as an average member (1 + (e - 1) Q / |pool| times
in expectation). They are matched to the non-members' label distribution where the counts allow
(:func:`matched_member_sample`), and their split statistics (TVD / KS, Tab. 6) are reported.
Random pairs use the true labels: ``label_condition`` must be ``"none"``.

A joint run is one store artifact, ``<results>/multitask/<key>/``, keyed by the regime, all the
manifests, the hyperparameters, the reference checkpoint hash and the code version. It keeps the
weights at each probing epoch and per-dataset vanilla-loss metrics (collapse test, Tab. 3);
:meth:`JointRun.view` gives a per-dataset :class:`DatasetView` that :func:`iclmem.probe.probe_run`
and :func:`iclmem.probe.summarize_run` accept in place of a :class:`~iclmem.training.finetune.FinetuneRun`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from ..bundle.serve import bundles_off, lookup
from ..data import SplitManifest, draw_training_context, split_statistics
from ..data.dataset import Dataset
from ..ltm import ICLTask, ReferenceLTM, load_reference
from ..store.atomic import atomic_write_text
from ..store.integrity import produce, served
from ..store.keys import artifact_dir, code_version, content_key, input_key, results_root
from .finetune import FinetuneConfig, FinetuneError, RunData, collapse_flag, prepare_run_data, vanilla_scores
from .loop import (
    METRICS_FILE,
    LoopOptions,
    Step,
    members_from_log,
    model_at_epoch,
    read_log,
    train_and_record,
    weights_path,
)

SINGLE_TASK_FIXED = "single_task_fixed"
MULTI_TASK_FIXED = "multi_task_fixed"
MULTI_TASK_RANDOM = "multi_task_random"
REGIMES: tuple[str, ...] = (SINGLE_TASK_FIXED, MULTI_TASK_FIXED, MULTI_TASK_RANDOM)
MULTI_TASK: tuple[str, ...] = (MULTI_TASK_FIXED, MULTI_TASK_RANDOM)


class RegimeError(FinetuneError):
    """Bad regime input: the message names the problem and the fix."""


def check_regime(regime: str) -> str:
    """The canonical regime name (``-`` and ``_`` are interchangeable); unknown names are errors."""
    name = str(regime).strip().lower().replace("-", "_")
    if name not in REGIMES:
        raise RegimeError(f"unknown regime {regime!r}; use one of {', '.join(REGIMES)} (App. D).")
    return name


# --- sampling -----------------------------------------------------------------------------------


def training_pool(manifest: SplitManifest) -> np.ndarray:
    """Rows random pairs may sample (as queries or context): the table minus the non-members."""
    return np.union1d(manifest.members, manifest.context)


def sample_pair(
    pool: np.ndarray, target: pd.Series, task: str, query_size: int, context_size: int, seed: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """One fresh random context-query pair from ``pool``: (context ids, query ids), disjoint and sorted.

    Queries: ``query_size`` rows drawn uniformly without replacement. Context: at most
    ``context_size`` of the remaining rows with a uniform label distribution (Sec. 4.1).
    """
    pool = np.asarray(pool, dtype=np.int64)
    if len(pool) <= query_size:
        raise RegimeError(
            f"the training pool has {len(pool)} rows, too few for Q={query_size} queries plus a context; use a smaller "
            "query_size."
        )
    rng = np.random.default_rng(np.random.SeedSequence(list(seed)))
    queries = np.sort(rng.choice(pool, size=query_size, replace=False))
    rest = np.setdiff1d(pool, queries, assume_unique=True)
    context = draw_training_context(target, rest, task, size=context_size, seed=int(rng.integers(2**31 - 1))).ids
    return context, queries


def epoch_order(n_tasks: int, seed: int, epoch: int) -> np.ndarray:
    """The seeded order in which a joint epoch visits the datasets (one step each)."""
    return np.random.default_rng(np.random.SeedSequence([seed, 0x0DE, epoch])).permutation(n_tasks)


def matched_member_sample(
    members: np.ndarray, non_members: np.ndarray, target: pd.Series, task: str, seed: int
) -> np.ndarray:
    """A seeded subset of ``members`` with the non-members' size and label distribution.

    Classification: as many members of each class as there are non-members of it (all of the
    class's members if fewer). Regression: the members sorted by target, cut into as many
    equal-count bins as there are non-members, one member drawn per bin.
    """
    members, non_members = np.asarray(members, dtype=np.int64), np.asarray(non_members, dtype=np.int64)
    if len(members) <= len(non_members) and task != "classification":
        return np.sort(members)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x3E3]))
    y = target.to_numpy()
    if task == "classification":
        labels, counts = np.unique(y[non_members], return_counts=True)
        chosen = []
        for label, count in zip(labels, counts, strict=True):
            rows = members[y[members] == label]
            chosen.append(rng.choice(rows, size=min(int(count), len(rows)), replace=False))
        return np.sort(np.concatenate(chosen)) if chosen else np.array([], dtype=np.int64)
    order = members[np.lexsort((rng.random(len(members)), y[members].astype(np.float64)))]
    bins = np.array_split(order, len(non_members))
    return np.sort(np.array([b[rng.integers(len(b))] for b in bins], dtype=np.int64))


def probed_view(manifest: SplitManifest, probed: np.ndarray, statistics: dict | None = None) -> SplitManifest:
    """``manifest`` with its members replaced by the ``probed`` members and those rows taken out of its context pool.

    Vanilla losses and probing both encode through this view, so the members they score are the
    probed ones, and no probed member can sit in the vanilla context C' or in the pool that
    regression distractors are drawn from (under random pairs probed members come from the
    training pool, which contains the context pool; non-members never do).
    """
    probed = np.sort(np.asarray(probed, dtype=np.int64))
    context = np.setdiff1d(np.asarray(manifest.context, dtype=np.int64), probed)
    pools = {**manifest.pools, "members": probed.tolist(), "context": context.tolist()}
    stats = {**manifest.statistics, **({"probed_members": statistics} if statistics is not None else {})}
    return replace(manifest, pools=pools, query_size=len(probed), statistics=stats)


def planned_first_epoch_queries(
    manifest: SplitManifest, table: Dataset, index: int, context_size: int, seed: int
) -> np.ndarray:
    """Query rows random pairs will sample for dataset ``index`` in epoch 1 (what the log will show; seeded)."""
    _, queries = sample_pair(
        training_pool(manifest), table.target, table.task, manifest.query_size, context_size, (seed, 0x5EED, 1, index)
    )
    return queries


# --- runs ---------------------------------------------------------------------------------------


@dataclass
class DatasetView:
    """One dataset of a joint run, shaped like a :class:`~iclmem.training.finetune.FinetuneRun` for probing.

    ``manifest`` is :func:`probed_view` of the dataset's manifest: members replaced by the members
    probed (for fixed pairs: the manifest's members; for random pairs: the first epoch's queries,
    see the module docstring), the context pool without them, non-members unchanged. The
    vanilla losses of training were measured on the same view.
    """

    key: str
    path: Path
    manifest: SplitManifest
    config: FinetuneConfig
    metrics: pd.DataFrame
    members_logged: np.ndarray
    joint: JointRun = field(repr=False)
    #: the view's name in a results bundle (from the joint run's input key)
    input_key: str = ""

    @property
    def dataset(self) -> str:
        return self.manifest.dataset

    @property
    def store(self) -> Path | None:
        """The results store its probe scores go to when the joint run is served by a bundle."""
        return self.joint.store

    @property
    def regime(self) -> str:
        return self.joint.regime

    def model(self, epoch: int, reference: ReferenceLTM | None = None) -> ReferenceLTM:
        return self.joint.model(epoch, reference)


@dataclass
class JointRun:
    """A finished (or loaded) multi-task run: store folder, per-dataset metrics and member logs."""

    key: str
    path: Path
    regime: str
    manifests: dict[str, SplitManifest]
    config: FinetuneConfig
    metrics: pd.DataFrame
    members_logged: dict[str, np.ndarray]
    probed_members: dict[str, np.ndarray]
    member_statistics: dict[str, dict]
    curve: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the run's key by its inputs alone (:func:`joint_input_key`): how a results bundle names it
    input_key: str = ""
    #: for a run served by a bundle (which keeps no weights): computes the run here when weights are asked for
    compute: Callable[[], JointRun] | None = field(default=None, repr=False, compare=False)
    #: the results store its probe scores go to when it is served by a bundle
    store: Path | None = None

    @property
    def datasets(self) -> list[str]:
        return list(self.manifests)

    def weights_path(self, epoch: int) -> Path:
        return weights_path(self.path, epoch)

    def model(self, epoch: int, reference: ReferenceLTM | None = None) -> ReferenceLTM:
        """The joint M_theta at a probing epoch (epoch 0 is M_ref). A run served by a bundle is computed here first."""
        if self.compute is not None and epoch in self.config.probe_epochs and not self.weights_path(epoch).exists():
            return self.compute().model(epoch, reference)
        return model_at_epoch(self.path, epoch, self.config.probe_epochs, reference, RegimeError)

    def view(self, dataset: str) -> DatasetView:
        """The per-dataset view that :func:`iclmem.probe.probe_run` takes."""
        if dataset not in self.manifests:
            raise RegimeError(
                f"dataset {dataset!r} is not part of joint run {self.key}; its datasets: {', '.join(self.manifests)}."
            )
        view_manifest = probed_view(
            self.manifests[dataset], self.probed_members[dataset], self.member_statistics[dataset]
        )
        metrics = self.metrics[self.metrics.dataset == dataset].drop(columns="dataset").reset_index(drop=True)
        return DatasetView(
            content_key(self.key, dataset),
            self.path,
            view_manifest,
            self.config,
            metrics,
            self.members_logged[dataset],
            self,
            content_key(self.input_key, dataset) if self.input_key else "",
        )

    def member_counts(self) -> pd.DataFrame:
        """Per dataset: members proven by the log, members probed, and the probed split's statistics."""
        rows = [
            {
                "dataset": d,
                "members_logged": len(self.members_logged[d]),
                "members_probed": len(self.probed_members[d]),
                "non_members": len(self.manifests[d].non_members),
                "query_size": self.manifests[d].query_size,
                **self.member_statistics[d],
            }
            for d in self.manifests
        ]
        return pd.DataFrame(rows)


def _joint_inputs(
    regime: str, manifests: Sequence[SplitManifest], config: FinetuneConfig, reference: ReferenceLTM
) -> tuple:
    return regime, [m.identity() for m in manifests], asdict(config), reference.store_identity


def joint_key(regime: str, manifests: Sequence[SplitManifest], config: FinetuneConfig, reference: ReferenceLTM) -> str:
    return content_key(*_joint_inputs(regime, manifests, config, reference), code_version(__name__))


def joint_input_key(
    regime: str, manifests: Sequence[SplitManifest], config: FinetuneConfig, reference: ReferenceLTM
) -> str:
    """The joint run's key without the code version (:func:`iclmem.store.keys.input_key`): its name in a results
    bundle."""
    return input_key(*_joint_inputs(regime, manifests, config, reference))


def verify_joint_log(log: list[dict], manifests: dict[str, SplitManifest], regime: str) -> dict[str, np.ndarray]:
    """Members per dataset from the log; fixed pairs must log exactly the manifest's members.

    Every regime: no non-member row may appear in any logged query or context (App. A.1).
    """
    out = {}
    for name, manifest in manifests.items():
        steps = [s for s in log if s["dataset"] == name]
        logged = members_from_log(steps)
        if regime == MULTI_TASK_FIXED and steps and not np.array_equal(logged, np.unique(manifest.members)):
            raise RegimeError(
                f"{name}: logged query ids ({len(logged)}) differ from the manifest's {len(manifest.members)} members; "
                "the run is invalid -- delete it and rerun."
            )
        seen = np.unique(np.concatenate([logged, *(np.asarray(s["context_ids"], dtype=np.int64) for s in steps)]))
        leaked = np.intersect1d(seen, manifest.non_members)
        if len(leaked):
            raise RegimeError(f"{name}: {len(leaked)} non-member rows appear in the training log; the run is invalid.")
        out[name] = logged
    return out


def first_epoch_members(log: list[dict], dataset: str) -> np.ndarray:
    """Query rows of ``dataset``'s steps in the first logged epoch: members of every later M_theta."""
    steps = [s for s in log if s["dataset"] == dataset]
    if not steps:
        return np.array([], dtype=np.int64)
    first = min(s["epoch"] for s in steps)
    return members_from_log([s for s in steps if s["epoch"] == first])


def _planned_probed(
    manifests: Sequence[SplitManifest], tables: Sequence[Dataset], regime: str, config: FinetuneConfig
) -> dict[str, np.ndarray]:
    """The members each dataset's probe will score, known before training (the sampling is seeded)."""
    out = {}
    for index, (manifest, table) in enumerate(zip(manifests, tables, strict=True)):
        if regime == MULTI_TASK_RANDOM:
            first = planned_first_epoch_queries(manifest, table, index, config.context_size, config.context_seed)
            out[manifest.dataset] = matched_member_sample(
                first, manifest.non_members, table.target, table.task, config.context_seed
            )
        else:
            out[manifest.dataset] = np.sort(np.asarray(manifest.members, dtype=np.int64))
    return out


def _probed(
    log: list[dict], manifests: dict[str, SplitManifest], tables: dict[str, Dataset], regime: str, seed: int
) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    probed, stats = {}, {}
    for name, manifest in manifests.items():
        table = tables[name]
        if regime == MULTI_TASK_RANDOM:
            ids = matched_member_sample(
                first_epoch_members(log, name), manifest.non_members, table.target, table.task, seed
            )
            y_m, y_n = table.target.to_numpy()[ids], table.target.to_numpy()[manifest.non_members]
        else:
            ids = np.sort(manifest.members)
            y_m, y_n = manifest.labels(table, "members"), manifest.labels(table, "non_members")
        s = split_statistics(y_m, y_n, table.task, table.classes if table.task == "classification" else None)
        probed[name] = ids
        stats[name] = {
            **{f"probed_{k}": v for k, v in s.to_dict().items() if k != "task"},
            "probed_split_failures": "; ".join(s.failures()),
        }
    return probed, stats


def _check_inputs(manifests: Sequence[SplitManifest], tables: Sequence[Dataset], regime: str) -> None:
    if regime not in MULTI_TASK:
        raise RegimeError(
            f"train_joint runs the multi-task regimes {MULTI_TASK}; {regime!r} is iclmem.training.finetune.finetune."
        )
    if not manifests or len(manifests) != len(tables):
        raise RegimeError(f"give one table per manifest (got {len(manifests)} manifests and {len(tables)} tables).")
    names = [m.dataset for m in manifests]
    if len(set(names)) != len(names):
        raise RegimeError(f"dataset names must be unique in a joint run, got {names}.")
    if regime == MULTI_TASK_RANDOM:
        bad = [m.dataset for m in manifests if m.label_condition != "none"]
        if bad:
            raise RegimeError(
                f"random pairs sample queries from the whole training pool with their true labels (App. D); "
                f"{bad} have label_condition != 'none' -- use label_condition 'none'."
            )


def _load(
    path: Path,
    key: str,
    regime: str,
    manifests: dict[str, SplitManifest],
    tables: dict[str, Dataset],
    config: FinetuneConfig,
    ikey: str = "",
) -> JointRun:
    log = read_log(path)
    members = verify_joint_log(log, manifests, regime)
    probed, stats = _probed(log, manifests, tables, regime, config.context_seed)
    planned = _planned_probed(list(manifests.values()), [tables[n] for n in manifests], regime, config)
    differ = [n for n in manifests if not np.array_equal(planned[n], probed[n])]
    if differ:
        raise RegimeError(
            f"{differ}: the members logged in epoch 1 differ from the planned ones the vanilla losses were measured "
            "on; "
            "the run is invalid -- delete it and rerun."
        )
    return JointRun(
        key,
        path,
        regime,
        manifests,
        config,
        pd.read_csv(path / METRICS_FILE),
        members,
        probed,
        stats,
        pd.read_csv(path / "train_curve.csv"),
        ikey,
    )


def train_joint(
    manifests: Sequence[SplitManifest],
    tables: Sequence[Dataset],
    config: FinetuneConfig,
    regime: str = MULTI_TASK_FIXED,
    reference: ReferenceLTM | None = None,
    results_dir: str | Path | None = None,
    progress: bool = True,
    checkpoint_every: int = 25,
    load_only: bool = False,
) -> JointRun | None:
    """Fine-tune (or load, or resume) one multi-task run of App. D; see the module docstring.

    ``load_only``: return the run if the store has it finished, else None (compute nothing).

    ``manifests`` and ``tables`` are aligned (one deduplicated table per manifest); the context
    size, seed and learning rate come from ``config``, Q from each manifest.
    """
    regime = check_regime(regime)
    manifests, tables = list(manifests), list(tables)
    _check_inputs(manifests, tables, regime)
    reference = reference or load_reference()
    config = config.checked(reference.cfg.max_context)
    by_name = {m.dataset: m for m in manifests}
    table_of = {m.dataset: t for m, t in zip(manifests, tables, strict=True)}
    for m, t in zip(manifests, tables, strict=True):
        m.check_table(t)
    key, ikey = joint_key(regime, manifests, config, reference), joint_input_key(regime, manifests, config, reference)
    path = artifact_dir("multitask", key, results_dir)
    if served(path):  # checked against its completion record; a damaged run is set aside and computed again
        return _load(path, key, regime, by_name, table_of, config, ikey)
    bundled = lookup("multitask", ikey)
    if bundled is not None:  # a checked results bundle holds it, without weights: computed here if they are needed
        run = _load(bundled, key, regime, by_name, table_of, config, ikey)
        # a partial, not a lambda: a run goes to worker processes to be probed, and a lambda does not pickle
        run.compute = partial(_computed_here, manifests, tables, config, regime, reference, results_dir)
        run.store = results_root(results_dir)
        return run
    if load_only:
        return None

    def compute() -> JointRun:
        schedule = joint_schedule(manifests, tables, config, regime, reference)
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(
            path / "run.json",
            json.dumps(
                {
                    "regime": regime,
                    "datasets": list(by_name),
                    "manifests": [m.to_dict() for m in manifests],
                    "config": asdict(config),
                    "reference_sha256": reference.checkpoint_sha256,
                },
                indent=1,
                default=str,
            ),
        )
        train_and_record(
            schedule,
            reference,
            config,
            path,
            producer=__name__,
            check=lambda log: verify_joint_log(log, by_name, regime),
            loop=LoopOptions(
                progress=f"{regime} ({len(manifests)} datasets) lr={config.learning_rate:g}" if progress else None,
                checkpoint_every=checkpoint_every,
            ),
        )
        return _load(path, key, regime, by_name, table_of, config, ikey)

    return produce(
        path,
        lambda: _load(path, key, regime, by_name, table_of, config, ikey),
        compute,
        what=f"the joint run multitask/{key} ({regime}, {len(manifests)} datasets)",
    )


def joint_schedule(
    manifests: Sequence[SplitManifest],
    tables: Sequence[Dataset],
    config: FinetuneConfig,
    regime: str,
    reference: ReferenceLTM,
) -> JointSchedule:
    """The steps and records of a joint run (App. D): every dataset's run data, and the vanilla losses measured on
    the members the probe will score (collapse test, Tab. 10's Delta L_v)."""
    data: dict[str, RunData] = {
        m.dataset: prepare_run_data(m, t, config, reference.max_classes) for m, t in zip(manifests, tables, strict=True)
    }
    planned = _planned_probed(manifests, tables, regime, config)
    vanilla = {
        m.dataset: prepare_run_data(probed_view(m, planned[m.dataset]), t, config, reference.max_classes)
        for m, t in zip(manifests, tables, strict=True)
    }
    scores = {n: vanilla_scores(reference, d) for n, d in vanilla.items()}
    return JointSchedule(regime, manifests, tables, config, data, vanilla, scores)


def _computed_here(
    manifests: Sequence[SplitManifest],
    tables: Sequence[Dataset],
    config: FinetuneConfig,
    regime: str,
    reference: ReferenceLTM,
    results_dir: str | Path | None,
) -> JointRun:
    """The joint run computed in this store, a bundle aside: for the weights a bundle does not keep."""
    with bundles_off():
        return train_joint(manifests, tables, config, regime, reference, results_dir, progress=False)


class JointSchedule:
    """App. D: every epoch one AdamW step per dataset, in a seeded order; fixed pairs or fresh random pairs.

    Fixed pairs train each dataset on its static context C' and its Q member queries; random pairs
    draw a fresh context-query sample from the dataset's training pool at every step
    (:func:`sample_pair`, seeded by (seed, epoch, dataset index)). At a probing epoch every
    dataset's vanilla losses are measured on the members its probe will score.
    """

    def __init__(
        self,
        regime: str,
        manifests: Sequence[SplitManifest],
        tables: Sequence[Dataset],
        config: FinetuneConfig,
        data: dict[str, RunData],
        vanilla: dict[str, RunData],
        ref_scores: dict[str, dict[str, float]],
    ) -> None:
        self.regime, self.config, self.data, self.vanilla, self.ref_scores = regime, config, data, vanilla, ref_scores
        self.manifests = {m.dataset: m for m in manifests}
        self.tables = {m.dataset: t for m, t in zip(manifests, tables, strict=True)}
        self.names = list(self.manifests)
        self.steps_per_epoch = len(self.names)
        self.curve_columns = ("epoch", "dataset", "train_loss")
        random = regime == MULTI_TASK_RANDOM
        self.encoded = {n: data[n].encode(self.tables[n].features) for n in self.names} if random else {}
        self.pools = {n: training_pool(self.manifests[n]) for n in self.names}

    def _pair(self, index: int, name: str, epoch: int) -> tuple[ICLTask, np.ndarray, np.ndarray]:
        d = self.data[name]
        if self.regime == MULTI_TASK_FIXED:
            return d.task_for(d.member_x, d.member_y), d.context_ids, d.member_ids
        table = self.tables[name]
        ctx, q = sample_pair(
            self.pools[name],
            table.target,
            table.task,
            self.manifests[name].query_size,
            self.config.context_size,
            (self.config.context_seed, 0x5EED, epoch, index),
        )
        y, x = table.target.to_numpy(), self.encoded[name]
        return ICLTask(x[ctx], y[ctx], x[q], y[q], d.task, d.target_center, d.target_scale), ctx, q

    def steps(self, epoch: int) -> list[Step]:
        out = []
        for i in epoch_order(len(self.names), self.config.context_seed, epoch):
            name = self.names[i]
            task, ctx, q = self._pair(int(i), name, epoch)
            log = {
                "epoch": epoch,
                "dataset": name,
                "context_ids": np.asarray(ctx, dtype=np.int64),
                "query_ids": np.asarray(q, dtype=np.int64),
            }  # arrays: compact in the checkpoint state
            out.append(Step(task, log, {"epoch": epoch, "dataset": name}))
        return out

    def record(self, model: ReferenceLTM, epoch: int) -> list[dict]:
        rows = []
        for name in self.names:
            theta = vanilla_scores(model, self.vanilla[name])
            ref = self.ref_scores[name]
            ratio, collapsed = collapse_flag(theta, ref)
            rows.append(
                {
                    "dataset": name,
                    "epoch": epoch,
                    "train_loss": theta["loss_members"],
                    **{f"theta_{k}": v for k, v in theta.items()},
                    **{f"ref_{k}": v for k, v in ref.items()},
                    "loss_ratio": ratio,
                    "collapsed": collapsed,
                }
            )
        return rows


__all__ = [
    "REGIMES",
    "MULTI_TASK",
    "SINGLE_TASK_FIXED",
    "MULTI_TASK_FIXED",
    "MULTI_TASK_RANDOM",
    "RegimeError",
    "JointRun",
    "JointSchedule",
    "DatasetView",
    "check_regime",
    "training_pool",
    "sample_pair",
    "epoch_order",
    "matched_member_sample",
    "first_epoch_members",
    "probed_view",
    "planned_first_epoch_queries",
    "joint_key",
    "verify_joint_log",
    "train_joint",
]
