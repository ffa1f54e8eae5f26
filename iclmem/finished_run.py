"""Train a run and record it finished (Sec. 4.1, App. D): the one sequence a single-table run (:mod:`iclmem.finetune`)
and a joint run (:mod:`iclmem.regimes`) share, so that both write their completion record the same way (issue 41).

:func:`train_and_record` trains (or resumes) a schedule from M_ref with a configuration's optimizer settings, checks
the log (the caller's ground-truth check; a log that fails it raises before anything is recorded), and writes the
finished run with its completion record last (:func:`iclmem.training.write_finished`, sealed with the calling
module's name and code version, which ``iclmem store gc`` reads to decide what current code still reaches).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from .ltm import ReferenceLTM
from .privacy import DPStep
from .store import code_version
from .training import Schedule, Trained, train, write_finished

T = TypeVar("T")


class TrainingSettings(Protocol):
    """What :func:`train_and_record` reads of a run's configuration (a :class:`~iclmem.finetune.FinetuneConfig`)."""

    learning_rate: float
    weight_decay: float
    epochs: int
    probe_epochs: tuple[int, ...]


def train_and_record(
    schedule: Schedule,
    reference: ReferenceLTM,
    config: TrainingSettings,
    run_dir: Path,
    *,
    producer: str,
    check: Callable[[list], T],
    desc: str,
    progress: bool = True,
    checkpoint_every: int = 25,
    privacy: DPStep | None = None,
) -> tuple[Trained, T]:
    """Train ``schedule`` into ``run_dir``, ``check`` its log, then record it finished (completion record last);
    ``producer``: the dotted module that makes the run. Returns the trained run and what ``check`` returned."""
    trained = train(
        schedule,
        reference,
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        epochs=config.epochs,
        probe_epochs=config.probe_epochs,
        run_dir=run_dir,
        progress=progress,
        checkpoint_every=checkpoint_every,
        desc=desc,
        privacy=privacy,
    )
    checked = check(trained.log)
    write_finished(run_dir, trained, schedule.curve_columns, producer, code_version(producer))
    return trained, checked


__all__ = ["TrainingSettings", "train_and_record"]
