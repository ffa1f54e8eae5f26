"""The audit's positive control: can the probe see memorization on this very table? (Sec. 4.1, 4.2, Tab. 2; chapter
04's P1.)

A "not detected" is evidence only where the probe sees memorization when there is some. ``iclmem audit --control``
plants it: it fine-tunes a copy of the base on part of the user's **non-member** rows, which the audited model never
saw, and probes that copy in the same way, calibrated against the same base. The recipe (:class:`ControlRecipe`,
every number a setting of :class:`~iclmem.probe.audit.inputs.AuditConfig`) is the controlled chain's single-task
schedule (:mod:`iclmem.training.finetune`, run by the one training loop :func:`iclmem.training.loop.train`):

* the non-members (those of the matched subsample with ``--match``) are shuffled (seeded) and halved: the first half
  (at most ``control_max_members`` rows) become the control's members, as many of the rest its non-members;
* a static training context C' of ``control_context_size`` rows is drawn from the members file with a uniform label
  distribution (:func:`iclmem.data.draw_training_context`); those rows are no part of the control's probe;
* ``control_epochs`` AdamW steps (learning rate ``control_learning_rate``, weight decay 0.01), each on C' and all the
  control's members (one step per epoch, as the chain);
* the control's members and non-members are probed under the copy and under the base with the 48 manipulations, and
  the audit's rule is applied to its AUC(Delta S).

Its cost is estimated before it runs (:func:`estimate_seconds`: one timed training step, and the audit's own probing
time per row) and printed.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...data.context import draw_training_context
from ...data.dataset import Dataset
from ...ltm import ICLTask, TableEncoder, subsample_features
from ...training.loop import LoopOptions, Step, train, weights_path
from ..settings import PROBE_DEFAULTS, ProbeSettings
from . import AuditRows, audit_fine_tuned, audit_queries
from .verdict import attack_summary, delta_frame


@dataclass(frozen=True)
class ControlRecipe:
    """How the control is fine-tuned (module docstring)."""

    learning_rate: float = 1e-3
    epochs: int = 50
    context_size: int = 64
    max_members: int = 100
    weight_decay: float = 0.01

    @property
    def probe_epochs(self) -> tuple[int, ...]:
        """The loop keeps the control's last epoch only (the model the audit probes)."""
        return (self.epochs,)

    def dp_step(self) -> None:
        """The control is fine-tuned with the plain step (no DP-SGD)."""
        return None

    def text(self) -> str:
        """The recipe in one sentence, as the report states it."""
        return (
            f"{self.epochs} AdamW steps (learning rate {self.learning_rate:g}, weight decay {self.weight_decay:g}) "
            f"on a static context of {self.context_size} member-file rows and the control's members (half the "
            f"non-members, at most {self.max_members}), one step per epoch as in the controlled chain"
        )


@dataclass
class ControlSchedule:
    """The single-task schedule of :mod:`iclmem.training.finetune` on the control's rows: one step per epoch on C' and
    the control's members; nothing recorded at the end (the probe reads the weights)."""

    task: ICLTask
    context_ids: np.ndarray
    member_ids: np.ndarray
    steps_per_epoch: int = 1
    curve_columns: tuple[str, ...] = ("epoch", "train_loss")

    def steps(self, epoch: int) -> list[Step]:
        log = {"epoch": epoch, "context_ids": self.context_ids.tolist(), "query_ids": self.member_ids.tolist()}
        return [Step(self.task, log, {"epoch": epoch})]

    def record(self, model: Any, epoch: int) -> list[dict]:
        return []


def control_rows(
    table: Dataset, member_ids: np.ndarray, non_member_ids: np.ndarray, recipe: ControlRecipe, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(context, control members, control non-members)`` row ids; control members whose label the context lacks
    are left out (the model predicts only labels its context holds)."""
    order = np.random.default_rng(np.random.SeedSequence([seed, 0xC0E7])).permutation(non_member_ids)
    half = min(len(order) // 2, recipe.max_members)
    a, b = np.sort(order[:half]), np.sort(order[half : 2 * half])
    ctx = draw_training_context(table.target, member_ids, table.task, size=recipe.context_size, seed=seed).ids
    if table.task == "classification":
        labels = set(table.target.iloc[ctx].tolist())
        a = a[table.target.iloc[a].isin(labels).to_numpy()]
    return ctx, a, b


def training_task(table: Dataset, ctx: np.ndarray, a: np.ndarray, b: np.ndarray, max_features: int = 30) -> ICLTask:
    """C' and the control's members, encoded as the probe encodes them (:func:`iclmem.probe.audit.audit_queries`)."""
    encoder = TableEncoder().fit(table.features)
    x = encoder.transform(table.features)[:, subsample_features(len(encoder.columns), max_features, 0)]
    y = table.target.to_numpy()
    _, center, scale = audit_queries(AuditRows(table, a, b, max_features))  # the probe's target statistics
    return ICLTask(x[ctx], y[ctx], x[a], y[a], table.task, center, scale)


def estimate_seconds(base: Any, task: ICLTask, recipe: ControlRecipe, rows: int, seconds_per_row: float) -> float:
    """Fine-tuning (one timed forward and backward, times the epochs) plus probing ``rows`` rows under two models."""
    model = base.clone()
    start = time.perf_counter()
    model.predict([task], grad=True)[0].loss().mean().backward()
    step = time.perf_counter() - start
    return recipe.epochs * step + rows * seconds_per_row


def fine_tune_control(base: Any, schedule: ControlSchedule, recipe: ControlRecipe, progress: bool = True) -> Any:
    """A copy of ``base`` after the recipe's steps (the one training loop, in a temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="iclmem-audit-control-") as tmp:
        label = "positive control: fine-tuning" if progress else None
        train(schedule, base, recipe, Path(tmp), LoopOptions(progress=label, checkpoint_every=recipe.epochs))
        model = base.clone()
        model.network.load_state_dict(
            torch.load(weights_path(Path(tmp), recipe.epochs), weights_only=True, map_location=model.device)
        )
    return model


def run_control(
    base: Any,
    rows: AuditRows,
    recipe: ControlRecipe,
    *,
    seconds_per_row: float,
    probe: ProbeSettings = PROBE_DEFAULTS,
    progress: bool = True,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The positive control (module docstring) on the audit's ``rows``: its recipe, cost, rows, attack and whether the
    rule sees it (``probe``: the audit's seed and bootstrap draws)."""
    table, n_boot, seed = rows.table, probe.n_boot, probe.seed
    ctx, a, b = control_rows(table, np.asarray(rows.members), np.asarray(rows.non_members), recipe, seed)
    task = training_task(table, ctx, a, b)
    estimate = estimate_seconds(base, task, recipe, len(a) + len(b), seconds_per_row)
    echo(
        f"positive control: {recipe.epochs} fine-tuning steps of the base on {len(a)} non-member rows, then probing "
        f"{len(a)} + {len(b)} rows: about {estimate:.0f} s"
    )
    start = time.perf_counter()
    model = fine_tune_control(base, ControlSchedule(task, ctx, a), recipe, progress)
    _, scores = audit_fine_tuned(model, base, AuditRows(table, a, b), ProbeSettings(seed=seed, n_boot=10), progress)
    attack = attack_summary(delta_frame(scores), n_boot=n_boot, seed=seed)
    return {
        "recipe": asdict(recipe),
        "recipe_text": recipe.text(),
        "estimated_seconds": float(estimate),
        "seconds": float(time.perf_counter() - start),
        "n_context": len(ctx),
        "n_members": len(a),
        "n_non_members": len(b),
        "attack": attack,
        "sees_memorization": bool(attack["detected"]),
    }


__all__ = [
    "ControlRecipe",
    "ControlSchedule",
    "control_rows",
    "estimate_seconds",
    "fine_tune_control",
    "run_control",
    "training_task",
]
