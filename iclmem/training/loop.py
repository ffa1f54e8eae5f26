"""The one training loop of every regime (Sec. 4.1, Tab. 2, App. A.1 "Unverified ground truth", App. D).

A regime (:mod:`iclmem.training.finetune` for the controlled single-task setting, :mod:`iclmem.training.regimes`
for the joint ones of App. D) is a :class:`Schedule`: it decides which context-query pairs each
epoch's AdamW steps train on and what is recorded at a probing epoch. Everything else is shared
here: the copy of M_ref and its optimizer, the step, the ground-truth log (the row ids every step
processed), the train-loss curve, the weights kept at each probing epoch, the resumable
checkpoint and the files a finished run leaves in the results store::

    <run folder>/weights_epoch<e>.pt   M_theta at each probing epoch e (epoch 0 is M_ref)
    <run folder>/state.pt              the resumable state of an unfinished run (deleted at the end)
    <run folder>/log.json.gz           the ground-truth log: one entry per step
    <run folder>/train_curve.csv       the loss of the batch each step trained on
    <run folder>/metrics.csv           the schedule's rows at each probing epoch
    <run folder>/complete.json         the completion record: sha256 of each file above; written last, it marks
                                       the run finished (:mod:`iclmem.store.integrity`)

:func:`train_and_record` is the one sequence a single-table run (:mod:`iclmem.training.finetune`) and a joint run
(:mod:`iclmem.training.regimes`) share: train (or resume) from M_ref with a configuration's optimizer settings, check
the log (the caller's ground-truth check; a log that fails it raises before anything is recorded), and write the
finished
run with its completion record last (:func:`write_finished`, sealed with the calling module's name and code version,
which ``iclmem store gc`` reads to decide what current code still reaches).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np
import pandas as pd
import torch

from ..ltm import ICLTask, ReferenceLTM, load_reference
from ..runtime.progress import Bar
from ..store.atomic import atomic_torch_save, atomic_write_bytes, atomic_write_text
from ..store.errors import DamagedArtifactError
from ..store.integrity import inspect, quarantine, seal
from ..store.keys import code_version
from .privacy import DPStep, private_backward

STATE_FILE = "state.pt"
METRICS_FILE = "metrics.csv"  # the last data file; the completion record (iclmem.store.integrity) follows it


def weights_path(run_dir: Path, epoch: int) -> Path:
    """Where a run keeps M_theta's weights at a probing epoch."""
    return run_dir / f"weights_epoch{epoch:04d}.pt"


def model_at_epoch(
    run_dir: Path,
    epoch: int,
    kept: tuple[int, ...],
    reference: ReferenceLTM | None = None,
    error: type[Exception] = ValueError,
) -> ReferenceLTM:
    """A copy of M_ref carrying the weights a run kept at ``epoch`` (one of ``kept``)."""
    if epoch not in kept:
        raise error(
            f"epoch {epoch} was not kept; kept epochs: {kept}. Use one of those, or fine-tune again with it among "
            "probe_epochs (Tab. 2: 0, 1, 2, 5, 10, 50, 100, 250, 500 up to epochs)."
        )
    check = inspect(run_dir)  # verified once per process: a file changed since is hashed again
    if check.state != "ok":
        where = quarantine(run_dir, check.detail) if check.state == "damaged" else run_dir
        raise DamagedArtifactError(
            f"the run {run_dir.name} is {check.state} ({check.detail}; now at {where}); run again to compute it again"
        )
    model = (reference or load_reference()).clone()
    model.network.load_state_dict(
        torch.load(weights_path(run_dir, epoch), weights_only=True, map_location=model.device)
    )
    return model


def members_from_log(log: list[dict]) -> np.ndarray:
    """The member set a log proves: every query row id of every logged step."""
    return (
        np.unique(np.concatenate([np.asarray(s["query_ids"], dtype=np.int64) for s in log]))
        if log
        else np.array([], dtype=np.int64)
    )


def read_log(run_dir: Path) -> list[dict]:
    """The ground-truth log of a finished run."""
    return json.loads(gzip.decompress((run_dir / "log.json.gz").read_bytes()))


@dataclass(frozen=True)
class Step:
    """One AdamW step of a schedule: the task it trains on and what the log and the curve record of it.

    ``log`` holds at least ``epoch``, ``context_ids`` and ``query_ids`` (the ground truth);
    ``curve`` the columns of the train-loss curve besides ``train_loss``.
    """

    task: ICLTask
    log: dict
    curve: dict


class Schedule(Protocol):
    """What a regime decides; the loop of :func:`train` does the rest."""

    #: AdamW steps per epoch (one per dataset).
    steps_per_epoch: int
    #: Columns of ``train_curve.csv``.
    curve_columns: tuple[str, ...]

    def steps(self, epoch: int) -> Iterable[Step]:
        """The steps of epoch ``epoch`` (1-based), in the order they run."""

    def record(self, model: ReferenceLTM, epoch: int) -> list[dict]:
        """Metric rows of ``model`` (M_theta at probing epoch ``epoch``): vanilla losses, collapse flag."""


@dataclass
class TrainingState:
    """A fine-tuning copy of M_ref, its AdamW optimizer (Tab. 2) and a run's progress, resumable from ``state.pt``.

    ``log`` (the ids each step trained on), ``rows`` (metrics at probing epochs) and ``curve``
    (train loss per step) are the lists a run appends to; :meth:`save` writes them with the
    weights atomically.
    """

    model: ReferenceLTM
    optimizer: torch.optim.Optimizer
    epoch: int = 0
    log: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    curve: list = field(default_factory=list)

    @classmethod
    def start(
        cls, reference: ReferenceLTM, learning_rate: float, weight_decay: float, state_path: Path
    ) -> TrainingState:
        """A fresh copy of ``reference``, or the state an interrupted run left at ``state_path``."""
        model = reference.clone()
        opt = torch.optim.AdamW(model.trainable_parameters(), lr=learning_rate, weight_decay=weight_decay)
        if not state_path.exists():
            return cls(model, opt)
        state = torch.load(state_path, weights_only=False, map_location=model.device)
        model.network.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        return cls(model, opt, state["epoch"], state["log"], state["rows"], state["curve"])

    def save(self, state_path: Path, epoch: int) -> None:
        """Write the state reached at ``epoch`` (the loop's counter; ``self.epoch`` is where it started)."""
        atomic_torch_save(
            {
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "epoch": epoch,
                "log": self.log,
                "rows": self.rows,
                "curve": self.curve,
            },
            state_path,
        )


@dataclass
class Trained:
    """What :func:`train` leaves: the log, the probing-epoch rows and the curve of a finished run."""

    log: list[dict]
    rows: list[dict]
    curve: list[dict]


class TrainingSettings(Protocol):
    """What :func:`train` reads of a run's configuration (a :class:`~iclmem.training.finetune.FinetuneConfig`, or
    the audit's positive-control recipe): AdamW's learning rate and weight decay (Tab. 2), the epochs, the probing
    epochs, and the DP-SGD step of a private run (None: the plain step)."""

    learning_rate: float
    weight_decay: float
    epochs: int
    probe_epochs: tuple[int, ...]

    def dp_step(self) -> DPStep | None: ...


@dataclass(frozen=True)
class LoopOptions:
    """How :func:`train`'s loop runs, not what it learns: ``progress``, the label of its terminal progress bar (None:
    no bar); ``checkpoint_every``, how often the resumable state is saved (besides every probing epoch);
    ``stop_after``, the epoch after which it stops, with everything up to it as the full run has it (a results
    bundle's recomputed sample, :mod:`iclmem.bundle.recheck`; None: the last epoch)."""

    progress: str | None = "fine-tuning"
    checkpoint_every: int = 25
    stop_after: int | None = None


def train(
    schedule: Schedule,
    reference: ReferenceLTM,
    settings: TrainingSettings,
    run_dir: Path,
    loop: LoopOptions = LoopOptions(),
) -> Trained:
    """Run (or resume) ``schedule`` for ``settings.epochs`` epochs from M_ref; see the module docstring.

    At epoch 0 (if it is a probing epoch) and after every probing epoch the schedule records its
    rows and the weights are kept; the resumable state is saved every ``loop.checkpoint_every`` epochs
    and at every probing epoch. An interrupted run resumes from its last saved state and ends
    with the same log and weights as an uninterrupted one. A private run (``settings.dp_step()``): each step is
    DP-SGD's (:func:`iclmem.training.privacy.private_backward`: per-member clipping and Gaussian noise) instead of
    the plain one.
    """
    epochs, probe_epochs, privacy = settings.epochs, settings.probe_epochs, settings.dp_step()
    state_path = run_dir / STATE_FILE
    state = TrainingState.start(reference, settings.learning_rate, settings.weight_decay, state_path)
    model, opt, epoch = state.model, state.optimizer, state.epoch

    def record(e: int) -> None:
        with torch.no_grad():
            state.rows.extend(schedule.record(model, e))
        atomic_torch_save(model.state_dict(), weights_path(run_dir, e))

    if epoch == 0 and 0 in probe_epochs and not state.rows:
        record(0)
    per_epoch = schedule.steps_per_epoch
    bar = Bar(
        total=epochs * per_epoch,
        initial=epoch * per_epoch,
        disable=loop.progress is None,
        desc=loop.progress or "",
        leave=False,
    )
    last = epochs if loop.stop_after is None else min(epochs, loop.stop_after)
    while epoch < last:
        epoch += 1
        for i, step in enumerate(schedule.steps(epoch)):
            opt.zero_grad()
            if privacy is None:
                loss = model.predict([step.task], grad=True)[0].loss().mean()
                loss.backward()
            else:
                loss = private_backward(model, step.task, privacy, epoch, i)
            opt.step()
            state.log.append(step.log)
            state.curve.append({**step.curve, "train_loss": loss.item()})  # loss of the batch this step trained on
            bar.update(1)
        if epoch in probe_epochs:
            record(epoch)
        if epoch % loop.checkpoint_every == 0 or epoch in probe_epochs:
            state.save(state_path, epoch)
    bar.close()
    return Trained(state.log, state.rows, state.curve)


def _plain(entry: dict) -> dict:
    return {k: (np.asarray(v).tolist() if isinstance(v, np.ndarray | list) else v) for k, v in entry.items()}


def write_finished(
    run_dir: Path, trained: Trained, curve_columns: tuple[str, ...], producer: str = "", version: str = ""
) -> None:
    """Write a finished run's log, curve and metrics, then its completion record (:func:`iclmem.store.integrity.seal`,
    last: it marks the run finished; ``producer`` and ``version`` name the code that made it), then drop its state."""
    log = [_plain(s) for s in trained.log]
    # mtime=0: gzip's header would otherwise hold the time of writing, and the same run other bytes each time
    log_bytes = gzip.compress(json.dumps(log).encode(), mtime=0)
    atomic_write_bytes(run_dir / "log.json.gz", log_bytes)
    atomic_write_text(
        run_dir / "train_curve.csv", pd.DataFrame(trained.curve, columns=list(curve_columns)).to_csv(index=False)
    )
    atomic_write_text(run_dir / METRICS_FILE, pd.DataFrame(trained.rows).to_csv(index=False))
    seal(run_dir, producer, version, exclude=(STATE_FILE,))
    (run_dir / STATE_FILE).unlink(missing_ok=True)


# --- train and record a run finished (the sequence a single-table run and a joint run share, issue 41) ----------

T = TypeVar("T")


def train_and_record(
    schedule: Schedule,
    reference: ReferenceLTM,
    config: TrainingSettings,
    run_dir: Path,
    *,
    producer: str,
    check: Callable[[list], T],
    loop: LoopOptions = LoopOptions(),
) -> tuple[Trained, T]:
    """Train ``schedule`` into ``run_dir`` (:func:`train`), ``check`` its log, then record it finished (completion
    record last); ``producer``: the dotted module that makes the run. Returns the trained run and what ``check``
    returned."""
    trained = train(schedule, reference, config, run_dir, loop)
    checked = check(trained.log)
    write_finished(run_dir, trained, schedule.curve_columns, producer, code_version(producer))
    return trained, checked


__all__ = [
    "METRICS_FILE",
    "STATE_FILE",
    "LoopOptions",
    "Schedule",
    "Step",
    "Trained",
    "TrainingState",
    "TrainingSettings",
    "members_from_log",
    "model_at_epoch",
    "read_log",
    "train",
    "train_and_record",
    "weights_path",
    "write_finished",
]
