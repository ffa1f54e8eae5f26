"""Controlled fine-tuning with a logged membership ground truth (Sec. 4.1, Tab. 2, App. A.1, B.1).

A copy of the reference LTM is fine-tuned on one dataset's split manifest: a static training
context C' (at most 512 rows, uniform label distribution, drawn from the context pool) and a
fixed batch of the Q member query rows; one AdamW step per epoch (single-task setting), so the
members are exactly the Q queries. Every step logs the context and query row ids it processed;
the member set is derived from that log and must equal the manifest's members.

At each probing epoch (Tab. 2: {0, 1, 2, 5, 10, 50, 100, 250, 500}; epoch 0 is M_ref) the weights
are kept and the *vanilla loss* (the unmanipulated training-style context C') is measured for
members and non-members under M_theta and M_ref. The ratio L_v(M_theta) / L_v(M_ref) and the
prediction spread give the collapse flag of Tab. 3 / App. B.1.

The training loop, the log, checkpointing and resume are :mod:`iclmem.training`'s, shared with the
joint regimes of :mod:`iclmem.training.regimes`; this module is the single-task schedule. Runs live in the
results store under a key that hashes the manifest, the hyperparameters, the reference checkpoint
hash and the code version; an existing run is loaded, an interrupted run resumes from its last
saved epoch.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from iclmem.user_errors import UserError

from ..bundle.serve import bundles_off, lookup
from ..data import SplitManifest
from ..data.context import draw_training_context
from ..data.dataset import Dataset
from ..ltm import MAX_CLASSES, ICLTask, LTMInputError, ReferenceLTM, TableEncoder, load_reference, subsample_features
from ..stats.outcomes import COLLAPSE_RATIO
from ..store.atomic import atomic_write_text
from ..store.integrity import served, writer_lock
from ..store.keys import artifact_dir, code_version, content_key, input_key, results_root
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
from .privacy import DPStep, PrivacyConfig

PROBE_EPOCHS: tuple[int, ...] = (0, 1, 2, 5, 10, 50, 100, 250, 500)
LEARNING_RATES: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4)
#: Tab. 3 / App. B.1: near-constant predictions, one label for at least this share of queries.
COLLAPSE_SHARE = 0.95
#: ... and for regression, a spread of point predictions below this share of M_ref's.
COLLAPSE_SPREAD = 0.05


class FinetuneError(UserError, ValueError):
    """Bad fine-tuning input: the message names the problem and the fix."""


@dataclass(frozen=True)
class FinetuneConfig:
    """Hyperparameters of one controlled fine-tuning run (Tab. 2)."""

    learning_rate: float
    epochs: int = 100
    probe_epochs: tuple[int, ...] = PROBE_EPOCHS
    context_size: int = 512
    context_seed: int = 0
    weight_decay: float = 0.01
    # 30, not the model's 32: the two distractor columns of Tab. 7 (distractor_2, and the 2-/3-way
    # combinations that include it) must still fit when a wide table is subsampled (Sec. 4.2, App. C).
    max_features: int = 30
    #: DP-SGD (:mod:`iclmem.training.privacy`, chapter 7); None: the plain run of every other chapter.
    privacy: PrivacyConfig | None = None

    def checked(self, max_context: int) -> FinetuneConfig:
        """Validate and return the config with probe epochs cut to ``epochs`` (errors name the fix)."""
        if not self.learning_rate > 0:
            raise FinetuneError(
                f"learning_rate must be positive, got {self.learning_rate}; the paper uses {LEARNING_RATES}."
            )
        if self.epochs < 0:
            raise FinetuneError(
                f"epochs must be >= 0, got {self.epochs}; use 0 (M_ref only) or the number of AdamW steps "
                f"(Tab. 2: up to 500)."
            )
        if not 1 <= self.context_size <= max_context:
            raise FinetuneError(
                f"context_size {self.context_size} is outside 1..{max_context} (the model's largest context); use at "
                f"most {max_context} rows."
            )
        beyond = [e for e in self.probe_epochs if e > self.epochs or e < 0]
        if beyond:
            raise FinetuneError(
                f"probe epochs {beyond} lie outside 0..{self.epochs}; raise epochs or drop them (e.g. "
                f"probe_epochs_up_to({self.epochs}))."
            )
        return self

    def dp_step(self) -> DPStep | None:
        """Chapter 7's DP-SGD step of this run (:meth:`iclmem.training.privacy.DPStep.of`); None for a plain run."""
        return None if self.privacy is None else DPStep.of(self.privacy, self.epochs, self.context_seed)


def probe_epochs_up_to(epochs: int) -> tuple[int, ...]:
    """The paper's probing epochs that a run of ``epochs`` epochs reaches."""
    return tuple(e for e in PROBE_EPOCHS if e <= epochs)


@dataclass
class RunData:
    """Encoded arrays of one run: the training context C', members and non-members."""

    context_ids: np.ndarray
    member_ids: np.ndarray
    non_member_ids: np.ndarray
    context_x: np.ndarray
    context_y: np.ndarray
    member_x: np.ndarray
    member_y: np.ndarray
    non_member_x: np.ndarray
    non_member_y: np.ndarray
    task: str
    target_center: float | None
    target_scale: float | None
    encoder: TableEncoder = field(repr=False)
    feature_columns: np.ndarray = field(repr=False)

    def task_for(
        self, x: np.ndarray, y: np.ndarray, context_x: np.ndarray | None = None, context_y: np.ndarray | None = None
    ) -> ICLTask:
        cx = self.context_x if context_x is None else context_x
        cy = self.context_y if context_y is None else context_y
        return ICLTask(cx, cy, x, y, self.task, self.target_center, self.target_scale)

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        return self.encoder.transform(frame)[:, self.feature_columns]


_ENCODED: OrderedDict[str, tuple[TableEncoder, np.ndarray]] = OrderedDict()
_ENCODED_TABLES = 4  # tables kept encoded in this process (the book's notebooks use at most 4)


def encoded_table(table: Dataset, fingerprint: str) -> tuple[TableEncoder, np.ndarray]:
    """The table's encoder fitted on every row's features, and those features encoded (read-only).

    Fitted once per table content (``fingerprint``, :func:`~iclmem.data.manifest.table_fingerprint`)
    in this process: every run and every probe of a table encodes the same rows the same way, and
    a notebook's runs of one table fit its encoder once instead of once per run.
    """
    if fingerprint in _ENCODED:
        _ENCODED.move_to_end(fingerprint)
        return _ENCODED[fingerprint]
    try:
        encoder = TableEncoder().fit(table.features)
        encoded = encoder.transform(table.features)
    except LTMInputError as err:  # e.g. inf in a feature column: the table's to fix, so name the table
        raise FinetuneError(f"{table.name}: {err}") from err
    encoded.setflags(write=False)
    _ENCODED[fingerprint] = (encoder, encoded)
    while len(_ENCODED) > _ENCODED_TABLES:
        _ENCODED.popitem(last=False)
    return encoder, encoded


def prepare_run_data(
    manifest: SplitManifest, table: Dataset, config: FinetuneConfig, max_classes: int = MAX_CLASSES
) -> RunData:
    """Encode the training context, members and non-members of a manifest (checked against the table).

    ``max_classes`` is the model's limit (:attr:`~iclmem.ltm.interface.LTM.max_classes`; the reference's by
    default): a classification table with more classes is refused before anything is encoded.

    The feature encoder (standardization, category codes) is fitted on the features of every row
    of the deduplicated table, never on the targets, so it treats members and non-members alike in
    every regime. (It used to be fitted on the context pool alone, which turns categories the pool
    never saw into missing values; under random pairs (App. D) probed members are drawn from
    members plus the pool and non-members never are, so those NaNs tracked membership, e.g. about
    30% vs 99% of the ``name`` column of wine_pl: a feature-level shift the attack would detect
    instead of memorization, App. A.1 "Distributional shift".)
    """
    manifest.check_table(table)
    members, non_members, pool = manifest.members, manifest.non_members, manifest.context
    if len(members) != manifest.query_size:
        raise FinetuneError(
            f"manifest has {len(members)} members but Q={manifest.query_size}; rebuild it with split_manifest(..., "
            "refresh=True)."
        )
    if table.task == "classification" and table.target.nunique() > max_classes:
        raise FinetuneError(
            f"{table.name} has {table.target.nunique()} classes; the model takes at most "
            f"max_classes={max_classes}: treat it as regression (set task: regression, task='regression' in "
            "Python) or group the classes."
        )
    encoder, encoded = encoded_table(table, manifest.table_fingerprint)
    ctx = draw_training_context(table.target, pool, table.task, size=config.context_size, seed=config.context_seed)
    if table.task == "classification":
        _check_context_classes(table, manifest, ctx.ids, config.context_size)
    cols = subsample_features(len(encoder.columns), config.max_features, config.context_seed)
    enc = encoded[:, cols]
    y = table.target.to_numpy()
    center = scale = None
    if table.task == "regression":
        yp = y[pool].astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            center, scale = float(yp.mean()), float(yp.std() + 1e-6)
            spread = float(np.std(y.astype(np.float64)))
        if not np.isfinite([center, scale, spread]).all():
            raise FinetuneError(
                f"{table.name}: the target {table.target_name!r} reaches {np.abs(y.astype(np.float64)).max():.3g} in "
                "magnitude: its mean or spread overflows double precision, so it cannot be standardized for the "
                "model; rescale the column in the file (divide it by a power of ten, or take its log)."
            )
    return RunData(
        context_ids=ctx.ids,
        member_ids=members,
        non_member_ids=non_members,
        context_x=enc[ctx.ids],
        context_y=y[ctx.ids],
        member_x=enc[members],
        member_y=np.asarray(manifest.labels(table, "members")),
        non_member_x=enc[non_members],
        non_member_y=np.asarray(manifest.labels(table, "non_members")),
        task=table.task,
        target_center=center,
        target_scale=scale,
        encoder=encoder,
        feature_columns=cols,
    )


def _check_context_classes(table: Dataset, manifest: SplitManifest, context_ids: np.ndarray, size: int) -> None:
    """Every label a query carries must occur in the training context C' (the model predicts context labels only)."""
    y = table.target.to_numpy()
    queried = set(manifest.labels(table, "members").tolist()) | set(manifest.labels(table, "non_members").tolist())
    missing = sorted(map(repr, queried - set(y[context_ids].tolist())))
    if not missing:
        return
    in_pool = set(y[manifest.context].tolist())
    fix = (
        f"raise context_size (now {size}) to at least the number of classes ({len(queried | in_pool)})"
        if queried <= in_pool
        else "use a smaller query size (the notebook parameter query_sizes) so that the context pool keeps a row of "
        "every class, or drop or group the rare classes"
    )
    raise FinetuneError(
        f"{table.name}: the training context ({len(context_ids)} rows of the context pool) holds no row of the "
        f"class(es) {', '.join(missing[:5])} that member or non-member queries carry, and the model predicts only "
        f"labels its context holds: {fix}."
    )


def vanilla_scores(model: ReferenceLTM, data: RunData) -> dict[str, float]:
    """Vanilla loss (training-style context C', no manipulation) for members and non-members.

    Also the share of queries given the most frequent predicted label (classification) or the
    spread of the point predictions (regression), used by the collapse test.
    """
    preds = model.predict(
        [data.task_for(data.member_x, data.member_y), data.task_for(data.non_member_x, data.non_member_y)]
    )
    out = {"loss_members": float(preds[0].loss().mean()), "loss_non_members": float(preds[1].loss().mean())}
    points = np.concatenate([p.point() for p in preds])
    truth = np.concatenate([data.member_y, data.non_member_y])
    if data.task == "classification":
        _, counts = np.unique(points, return_counts=True)
        out["top_prediction_share"] = float(counts.max() / counts.sum())
        out["accuracy"] = float((points == truth).mean())
    else:
        out["prediction_std"] = float(np.std(points))
        out["r2"] = float(1 - np.mean((points - truth) ** 2) / (np.var(truth) + 1e-12))
    out["loss_all"] = (out["loss_members"] * len(data.member_y) + out["loss_non_members"] * len(data.non_member_y)) / (
        len(data.member_y) + len(data.non_member_y)
    )
    return out


def collapse_flag(
    theta: dict[str, float], ref: dict[str, float], ratio_threshold: float = COLLAPSE_RATIO
) -> tuple[float, bool]:
    """Tab. 3 / App. B.1: collapse if L_v(M_theta) > 5 x L_v(M_ref), or if predictions became near-constant.

    Near-constant means: classification, >= 95% of queries get one label while M_ref spread them
    more; regression, the spread of point predictions fell below 5% of M_ref's.
    """
    ratio = theta["loss_all"] / max(ref["loss_all"], 1e-12)
    if "top_prediction_share" in theta:
        constant = theta["top_prediction_share"] >= COLLAPSE_SHARE > ref["top_prediction_share"]
    else:
        constant = theta["prediction_std"] < COLLAPSE_SPREAD * ref["prediction_std"]
    return ratio, bool(ratio > ratio_threshold or constant)


@dataclass
class FinetuneRun:
    """A finished (or loaded) run: where it lives, its per-epoch metrics and its ground-truth log."""

    key: str
    path: Path
    manifest: SplitManifest
    config: FinetuneConfig
    metrics: pd.DataFrame
    members_logged: np.ndarray
    curve: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the run's key by its inputs alone (:func:`run_input_key`): how a results bundle names it
    input_key: str = ""
    #: for a run served by a bundle (which keeps no weights): computes the run here when weights are asked for
    compute: Callable[[], FinetuneRun] | None = field(default=None, repr=False, compare=False)
    #: the results store the run's probe scores go to when it is served by a bundle (else the run's own store)
    store: Path | None = None

    def weights_path(self, epoch: int) -> Path:
        return weights_path(self.path, epoch)

    def model(self, epoch: int, reference: ReferenceLTM | None = None) -> ReferenceLTM:
        """M_theta at a probing epoch (epoch 0 is M_ref). A run served by a bundle is computed here first."""
        if self.compute is not None and epoch in self.config.probe_epochs and not self.weights_path(epoch).exists():
            return self.compute().model(epoch, reference)
        return model_at_epoch(self.path, epoch, self.config.probe_epochs, reference, FinetuneError)


def _run_inputs(manifest: SplitManifest, config: FinetuneConfig, reference: ReferenceLTM) -> tuple:
    return manifest.identity(), asdict(config), reference.store_identity


def run_key(manifest: SplitManifest, config: FinetuneConfig, reference: ReferenceLTM) -> str:
    return content_key(*_run_inputs(manifest, config, reference), code_version(__name__))


def run_input_key(manifest: SplitManifest, config: FinetuneConfig, reference: ReferenceLTM) -> str:
    """The run's key without the code version (:func:`iclmem.store.keys.input_key`): its name in a results bundle."""
    return input_key(*_run_inputs(manifest, config, reference))


def verify_ground_truth(log: list[dict], manifest: SplitManifest) -> np.ndarray:
    """Members from the log must equal the manifest's members, non-members never appear (App. A.1)."""
    logged = members_from_log(log)
    expected = np.unique(manifest.members)
    if log and not np.array_equal(logged, expected):
        raise FinetuneError(
            f"logged query ids ({len(logged)}) differ from the manifest's {len(expected)} members; the run is invalid "
            "— delete it and rerun."
        )
    seen = set(logged.tolist()) | {i for s in log for i in s["context_ids"]}
    leaked = seen & set(manifest.non_members.tolist())
    if leaked:
        raise FinetuneError(
            f"{len(leaked)} non-member rows appear in the training log; the split is broken — rebuild the manifest."
        )
    return logged


@dataclass
class SingleTaskSchedule:
    """Sec. 4.1: one step per epoch on the static context C' and the Q member queries (fixed pairs)."""

    data: RunData
    ref_scores: dict[str, float]
    steps_per_epoch: int = 1
    curve_columns: tuple[str, ...] = ("epoch", "train_loss")

    def __post_init__(self) -> None:
        self.train_task = self.data.task_for(self.data.member_x, self.data.member_y)

    def steps(self, epoch: int) -> list[Step]:
        log = {
            "epoch": epoch,
            "context_ids": self.data.context_ids.tolist(),
            "query_ids": self.data.member_ids.tolist(),
        }
        return [Step(self.train_task, log, {"epoch": epoch})]

    def record(self, model: ReferenceLTM, epoch: int) -> list[dict]:
        theta = vanilla_scores(model, self.data)  # its members' task is the training task: C' and the Q members
        ratio, collapsed = collapse_flag(theta, self.ref_scores)
        return [
            {
                "epoch": epoch,
                "train_loss": theta["loss_members"],
                **{f"theta_{k}": v for k, v in theta.items()},
                **{f"ref_{k}": v for k, v in self.ref_scores.items()},
                "loss_ratio": ratio,
                "collapsed": collapsed,
            }
        ]


def single_task_schedule(
    manifest: SplitManifest, table: Dataset, config: FinetuneConfig, reference: ReferenceLTM
) -> SingleTaskSchedule:
    """Sec. 4.1's fixed pairs of one run: its prepared data (:func:`prepare_run_data`) and M_ref's vanilla scores,
    which every probed epoch's loss ratio is taken against. A fine-tune and a bundle check's retraining both use it."""
    data = prepare_run_data(manifest, table, config, reference.max_classes)
    return SingleTaskSchedule(data, vanilla_scores(reference, data))


def finetune(
    manifest: SplitManifest,
    table: Dataset,
    config: FinetuneConfig,
    reference: ReferenceLTM | None = None,
    results_dir: str | Path | None = None,
    progress: bool = True,
    checkpoint_every: int = 25,
    load_only: bool = False,
) -> FinetuneRun | None:
    """Fine-tune (or load, or resume) one controlled run; see the module docstring.

    ``load_only``: return the run if the store has it finished, else None (compute nothing).
    """
    reference = reference or load_reference()
    config = config.checked(reference.cfg.max_context)
    manifest.check_table(table)
    key, ikey = run_key(manifest, config, reference), run_input_key(manifest, config, reference)
    path = artifact_dir("finetune", key, results_dir)

    def load(folder: Path = path, compute: Callable[[], FinetuneRun] | None = None) -> FinetuneRun:
        # a finished run loads without encoding anything
        return FinetuneRun(
            key,
            folder,
            manifest,
            config,
            pd.read_csv(folder / METRICS_FILE),
            verify_ground_truth(read_log(folder), manifest),
            pd.read_csv(folder / "train_curve.csv"),
            ikey,
            compute,
        )

    if served(path):  # checked against its completion record; a damaged run is set aside and computed again
        return load()
    bundled = lookup("finetune", ikey)
    if bundled is not None:  # a checked results bundle holds it, without weights: computed here if they are needed
        # a partial, not a lambda: the run goes to worker processes to be probed, and a lambda does not pickle
        run = load(bundled, partial(_computed_here, manifest, table, config, reference, results_dir, checkpoint_every))
        run.store = results_root(results_dir)
        return run
    if load_only:
        return None
    with writer_lock(
        path, what=f"the fine-tuning run finetune/{key} ({manifest.dataset}, lr={config.learning_rate:g})"
    ):
        if served(path):  # another process finished it while this one waited
            return load()
        return _finetune(path, key, manifest, table, config, reference, progress, checkpoint_every)


def _computed_here(
    manifest: SplitManifest,
    table: Dataset,
    config: FinetuneConfig,
    reference: ReferenceLTM,
    results_dir: str | Path | None,
    checkpoint_every: int,
) -> FinetuneRun:
    """The run computed in this store, a bundle aside: for the weights a bundle does not keep."""
    with bundles_off():
        return finetune(manifest, table, config, reference, results_dir, False, checkpoint_every)


def _finetune(
    path: Path,
    key: str,
    manifest: SplitManifest,
    table: Dataset,
    config: FinetuneConfig,
    reference: ReferenceLTM,
    progress: bool,
    checkpoint_every: int,
) -> FinetuneRun:
    schedule = single_task_schedule(manifest, table, config, reference)  # bad input raises before anything is written
    path.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        path / "run.json",
        json.dumps(
            {"manifest": manifest.to_dict(), "config": asdict(config), "reference_sha256": reference.checkpoint_sha256},
            indent=1,
            default=str,
        ),
    )
    trained, members = train_and_record(
        schedule,
        reference,
        config,
        path,
        producer=__name__,
        check=lambda log: verify_ground_truth(log, manifest),
        loop=LoopOptions(
            progress=f"{manifest.dataset} lr={config.learning_rate:g} Q={manifest.query_size}" if progress else None,
            checkpoint_every=checkpoint_every,
        ),
    )
    curve = pd.DataFrame(trained.curve, columns=list(schedule.curve_columns))
    return FinetuneRun(
        key,
        path,
        manifest,
        config,
        pd.DataFrame(trained.rows),
        members,
        curve,
        run_input_key(manifest, config, reference),
    )
