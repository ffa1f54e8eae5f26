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

Runs live in the results store under a key that hashes the manifest, the hyperparameters, the
reference checkpoint hash and the code version; an existing run is loaded, an interrupted run
resumes from its last saved epoch.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .atomic import atomic_torch_save, atomic_write, atomic_write_text
from .data import SplitManifest
from .data.context import draw_training_context
from .data.dataset import Dataset
from .ltm import ICLTask, ReferenceLTM, TableEncoder, load_reference, subsample_features
from .store import artifact_dir, code_version, content_key

PROBE_EPOCHS: tuple[int, ...] = (0, 1, 2, 5, 10, 50, 100, 250, 500)
LEARNING_RATES: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4)
COLLAPSE_RATIO = 5.0
COLLAPSE_SHARE = 0.95


class FinetuneError(ValueError):
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

    def checked(self, max_context: int) -> FinetuneConfig:
        """Validate and return the config with probe epochs cut to ``epochs`` (errors name the fix)."""
        if not self.learning_rate > 0:
            raise FinetuneError(f"learning_rate must be positive, got {self.learning_rate}; the paper uses {LEARNING_RATES}.")
        if self.epochs < 0:
            raise FinetuneError(f"epochs must be >= 0, got {self.epochs}.")
        if not 1 <= self.context_size <= max_context:
            raise FinetuneError(f"context_size {self.context_size} is outside 1..{max_context} (the model's largest context); use at most {max_context} rows.")
        beyond = [e for e in self.probe_epochs if e > self.epochs or e < 0]
        if beyond:
            raise FinetuneError(f"probe epochs {beyond} lie outside 0..{self.epochs}; raise epochs or drop them (e.g. probe_epochs_up_to({self.epochs})).")
        return self


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

    def task_for(self, x: np.ndarray, y: np.ndarray, context_x: np.ndarray | None = None, context_y: np.ndarray | None = None) -> ICLTask:
        cx = self.context_x if context_x is None else context_x
        cy = self.context_y if context_y is None else context_y
        return ICLTask(cx, cy, x, y, self.task, self.target_center, self.target_scale)

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        return self.encoder.transform(frame)[:, self.feature_columns]


def prepare_run_data(manifest: SplitManifest, table: Dataset, config: FinetuneConfig) -> RunData:
    """Encode the training context, members and non-members of a manifest (checked against the table).

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
        raise FinetuneError(f"manifest has {len(members)} members but Q={manifest.query_size}; rebuild it with split_manifest(..., refresh=True).")
    if table.task == "classification" and table.target.nunique() > 10:
        raise FinetuneError(f"{table.name} has {table.target.nunique()} classes; the reference LTM takes at most 10 — treat it as regression (task='regression').")
    encoder = TableEncoder().fit(table.features)
    ctx = draw_training_context(table.target, pool, table.task, size=config.context_size, seed=config.context_seed)
    cols = subsample_features(len(encoder.columns), config.max_features, config.context_seed)
    enc = encoder.transform(table.features)[:, cols]
    y = table.target.to_numpy()
    center = scale = None
    if table.task == "regression":
        yp = y[pool].astype(np.float64)
        center, scale = float(yp.mean()), float(yp.std() + 1e-6)
    return RunData(
        context_ids=ctx.ids, member_ids=members, non_member_ids=non_members,
        context_x=enc[ctx.ids], context_y=y[ctx.ids],
        member_x=enc[members], member_y=np.asarray(manifest.labels(table, "members")),
        non_member_x=enc[non_members], non_member_y=np.asarray(manifest.labels(table, "non_members")),
        task=table.task, target_center=center, target_scale=scale, encoder=encoder, feature_columns=cols,
    )


def vanilla_scores(model: ReferenceLTM, data: RunData) -> dict[str, float]:
    """Vanilla loss (training-style context C', no manipulation) for members and non-members.

    Also the share of queries given the most frequent predicted label (classification) or the
    spread of the point predictions (regression), used by the collapse test.
    """
    preds = model.predict([data.task_for(data.member_x, data.member_y), data.task_for(data.non_member_x, data.non_member_y)])
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
        len(data.member_y) + len(data.non_member_y))
    return out


def collapse_flag(theta: dict[str, float], ref: dict[str, float], ratio_threshold: float = COLLAPSE_RATIO) -> tuple[float, bool]:
    """Tab. 3 / App. B.1: collapse if L_v(M_theta) > 5 x L_v(M_ref), or if predictions became near-constant.

    Near-constant means: classification, >= 95% of queries get one label while M_ref spread them
    more; regression, the spread of point predictions fell below 5% of M_ref's.
    """
    ratio = theta["loss_all"] / max(ref["loss_all"], 1e-12)
    if "top_prediction_share" in theta:
        constant = theta["top_prediction_share"] >= COLLAPSE_SHARE > ref["top_prediction_share"]
    else:
        constant = theta["prediction_std"] < 0.05 * ref["prediction_std"]
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

    def weights_path(self, epoch: int) -> Path:
        return weights_path(self.path, epoch)

    def model(self, epoch: int, reference: ReferenceLTM | None = None) -> ReferenceLTM:
        """M_theta at a probing epoch (epoch 0 is M_ref)."""
        return model_at_epoch(self.path, epoch, self.config.probe_epochs, reference)


def weights_path(run_dir: Path, epoch: int) -> Path:
    """Where a run keeps M_theta's weights at a probing epoch."""
    return run_dir / f"weights_epoch{epoch:04d}.pt"


def model_at_epoch(run_dir: Path, epoch: int, kept: tuple[int, ...], reference: ReferenceLTM | None = None,
                   error: type[Exception] = FinetuneError) -> ReferenceLTM:
    """A copy of M_ref carrying the weights a run kept at ``epoch`` (one of ``kept``)."""
    if epoch not in kept:
        raise error(f"epoch {epoch} was not kept; kept epochs: {kept}.")
    model = (reference or load_reference()).clone()
    model.network.load_state_dict(torch.load(weights_path(run_dir, epoch), weights_only=True))
    return model


def run_key(manifest: SplitManifest, config: FinetuneConfig, reference: ReferenceLTM) -> str:
    return content_key(manifest.to_dict(), asdict(config), reference.checkpoint_sha256, code_version("finetune.py", "ltm", "data"))


def _step_log(epoch: int, data: RunData) -> dict:
    return {"epoch": epoch, "context_ids": data.context_ids.tolist(), "query_ids": data.member_ids.tolist()}


def members_from_log(log: list[dict]) -> np.ndarray:
    """The member set a log proves: every query row id of every logged step."""
    return np.unique(np.concatenate([np.asarray(s["query_ids"], dtype=np.int64) for s in log])) if log else np.array([], dtype=np.int64)


def verify_ground_truth(log: list[dict], manifest: SplitManifest) -> np.ndarray:
    """Members from the log must equal the manifest's members, non-members never appear (App. A.1)."""
    logged = members_from_log(log)
    expected = np.unique(manifest.members)
    if log and not np.array_equal(logged, expected):
        raise FinetuneError(f"logged query ids ({len(logged)}) differ from the manifest's {len(expected)} members; the run is invalid — delete it and rerun.")
    seen = set(logged.tolist()) | {i for s in log for i in s["context_ids"]}
    leaked = seen & set(manifest.non_members.tolist())
    if leaked:
        raise FinetuneError(f"{len(leaked)} non-member rows appear in the training log; the split is broken — rebuild the manifest.")
    return logged


@dataclass
class TrainingState:
    """A fine-tuning copy of M_ref, its AdamW optimizer (Tab. 2) and a run's progress, resumable from ``state.pt``.

    Shared by the single-task runs here and the joint runs of :mod:`iclmem.regimes`: ``log``
    (the ids each step trained on), ``rows`` (metrics at probing epochs) and ``curve`` (train loss
    per step) are the lists a run appends to; :meth:`save` writes them with the weights atomically.
    """

    model: ReferenceLTM
    optimizer: torch.optim.Optimizer
    epoch: int = 0
    log: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    curve: list = field(default_factory=list)

    @classmethod
    def start(cls, reference: ReferenceLTM, config: FinetuneConfig, state_path: Path) -> TrainingState:
        """A fresh copy of ``reference``, or the state an interrupted run left at ``state_path``."""
        model = reference.clone()
        opt = torch.optim.AdamW(model.trainable_parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
        if not state_path.exists():
            return cls(model, opt)
        state = torch.load(state_path, weights_only=False)
        model.network.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        return cls(model, opt, state["epoch"], state["log"], state["rows"], state["curve"])

    def save(self, state_path: Path, epoch: int) -> None:
        """Write the state reached at ``epoch`` (the run's loop counter; ``self.epoch`` is where it started)."""
        atomic_torch_save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "epoch": epoch, "log": self.log,
                           "rows": self.rows, "curve": self.curve}, state_path)


def finetune(
    manifest: SplitManifest,
    table: Dataset,
    config: FinetuneConfig,
    reference: ReferenceLTM | None = None,
    results_dir: str | Path | None = None,
    progress: bool = True,
    checkpoint_every: int = 25,
) -> FinetuneRun:
    """Fine-tune (or load, or resume) one controlled run; see the module docstring."""
    reference = reference or load_reference()
    config = config.checked(reference.cfg.max_context)
    data = prepare_run_data(manifest, table, config)
    key = run_key(manifest, config, reference)
    path = artifact_dir("finetune", key, results_dir)
    done = path / "metrics.csv"
    if done.exists():
        log = json.loads(gzip.decompress((path / "log.json.gz").read_bytes()))
        curve = pd.read_csv(path / "train_curve.csv")
        return FinetuneRun(key, path, manifest, config, pd.read_csv(done), verify_ground_truth(log, manifest), curve)
    path.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path / "run.json", json.dumps({"manifest": manifest.to_dict(), "config": asdict(config),
                                                     "reference_sha256": reference.checkpoint_sha256}, indent=1, default=str))
    ref_scores = vanilla_scores(reference, data)
    state_path = path / "state.pt"
    training = TrainingState.start(reference, config, state_path)  # resumes an interrupted run
    model, opt = training.model, training.optimizer
    epoch, log, rows, curve = training.epoch, training.log, training.rows, training.curve
    train_task = data.task_for(data.member_x, data.member_y)

    def record(e: int, train_loss: float) -> None:
        theta = vanilla_scores(model, data)
        ratio, collapsed = collapse_flag(theta, ref_scores)
        rows.append({"epoch": e, "train_loss": train_loss, **{f"theta_{k}": v for k, v in theta.items()},
                     **{f"ref_{k}": v for k, v in ref_scores.items()}, "loss_ratio": ratio, "collapsed": collapsed})
        atomic_torch_save(model.state_dict(), path / f"weights_epoch{e:04d}.pt")

    if epoch == 0 and 0 in config.probe_epochs and not rows:
        record(0, float(model.predict([train_task])[0].loss().mean()))
    bar = tqdm(total=config.epochs, initial=epoch, disable=not progress, desc=f"{manifest.dataset} lr={config.learning_rate:g} Q={manifest.query_size}", leave=False)
    while epoch < config.epochs:
        loss = model.predict([train_task], grad=True)[0].loss().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch += 1
        log.append(_step_log(epoch, data))
        curve.append({"epoch": epoch, "train_loss": loss.item()})  # loss of the batch this step trained on
        bar.update(1)
        if epoch in config.probe_epochs:
            with torch.no_grad():
                record(epoch, float(model.predict([train_task])[0].loss().mean()))
        if epoch % checkpoint_every == 0 or epoch in config.probe_epochs:
            training.save(state_path, epoch)
    bar.close()
    members = verify_ground_truth(log, manifest)
    atomic_write(path / "log.json.gz", lambda p: p.write_bytes(gzip.compress(json.dumps(log).encode())))
    metrics, curve_frame = pd.DataFrame(rows), pd.DataFrame(curve, columns=["epoch", "train_loss"])
    atomic_write_text(path / "train_curve.csv", curve_frame.to_csv(index=False))
    atomic_write_text(done, metrics.to_csv(index=False))  # written last: marks the run as finished
    state_path.unlink(missing_ok=True)
    return FinetuneRun(key, path, manifest, config, metrics, members, curve_frame)
