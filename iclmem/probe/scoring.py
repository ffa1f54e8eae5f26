"""Batched scoring of manipulated multiple-choice contexts (Sec. 4.2, Tab. 2 "Evaluation metrics").

For every query ``q`` and manipulation ``pi_k`` the model ``M`` predicts the query's target from
the manipulated context ``C_k``; the probe scores are the loss ``L_k(q)`` (cross-entropy over the
classes, or over the bins of the bar distribution), the prediction entropy and the target
confidence (:class:`iclmem.ltm.Predictions`).

All contexts of many queries are built first, sorted by size (rows, features) to keep padding
small, and sent through ``model.predict(tasks)`` in chunks of ``chunk_size`` tasks; the reference
LTM pads and masks each chunk into one batch. Contexts the model cannot tell apart (its declared
invariances, :mod:`iclmem.probe.invariances`) are scored once. :func:`score_tasks_naive` scores one context at
a time (the benchmark's baseline and the equality test's reference).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..ltm import LTM, ICLTask
from ..runtime.progress import Bar
from .contexts import ProbeError, mc_context
from .invariances import distinct_tasks, model_invariances
from .manipulations import Manipulation, resolve_manipulations

SCORE_COLUMNS: tuple[str, ...] = ("query_id", "is_member", "manipulation", "category", "loss", "entropy", "confidence")
DEFAULT_CHUNK = 256
DEFAULT_CELLS = 4096
DEFAULT_PADDING = 0.1


@dataclass(frozen=True)
class ProbeQuery:
    """One query row to probe: its id (row id in the table), encoded features, target, membership, candidates."""

    query_id: int
    x: np.ndarray
    y: Any
    is_member: bool
    candidates: np.ndarray


@dataclass(frozen=True)
class QueryTarget:
    """What the queries' targets are (Sec. 4.2): the ``task``, and for regression the standardization of the target
    and its candidates (``center``, ``scale``; the context pool's mean and standard deviation)."""

    task: str = "classification"
    center: float | None = None
    scale: float | None = None


@dataclass(frozen=True)
class Batching:
    """How contexts are batched (module docstring): at most ``chunk_size`` tasks and ``max_cells`` padded cells
    (tasks x rows x columns incl. the target; None: by ``chunk_size`` only) per batch, at most a padded/real cell
    ratio of ``1 + max_padding``; with ``distinct`` each distinct context is scored once
    (:func:`~iclmem.probe.invariances.distinct_tasks`; ``False`` scores every task, equal up to float32 rounding)."""

    chunk_size: int = DEFAULT_CHUNK
    max_cells: int | None = DEFAULT_CELLS
    max_padding: float | None = DEFAULT_PADDING
    distinct: bool = True


def _limits(model: LTM) -> tuple[int | None, int | None]:
    cfg = getattr(model, "cfg", None)
    return getattr(cfg, "max_context", None), getattr(cfg, "max_features", None)


def build_probe_tasks(
    queries: Sequence[ProbeQuery],
    manipulations: Iterable[str | Manipulation] | None = None,
    *,
    target: QueryTarget = QueryTarget(),
    seed: int = 0,
    max_context: int | None = 512,
    max_features: int | None = 32,
) -> tuple[list[ICLTask], pd.DataFrame]:
    """Every manipulated MC context of every query as an :class:`ICLTask`, plus one metadata row per task."""
    manips = resolve_manipulations(manipulations)
    if not queries:
        raise ProbeError("no queries to probe; give at least one member or non-member query.")
    ids = [q.query_id for q in queries]
    if len(set(ids)) != len(ids):
        raise ProbeError("query ids must be unique (they are the rows' ids in the table).")
    tasks: list[ICLTask] = []
    meta: dict[str, list] = {"query_id": [], "is_member": [], "manipulation": [], "category": []}
    for q in queries:
        base = mc_context(q.x, q.y, q.candidates)
        for m in manips:
            ctx = m.apply(base, seed, q.query_id, max_context, max_features)
            tasks.append(ctx.to_task(target.task, target.center, target.scale))
            meta["query_id"].append(int(q.query_id))
            meta["is_member"].append(bool(q.is_member))
            meta["manipulation"].append(m.name)
            meta["category"].append(m.category)
    return tasks, pd.DataFrame(meta)


def _scores(preds: list) -> np.ndarray:
    """(n_tasks, 3): loss, entropy, confidence of each task's single query row."""
    out = np.empty((len(preds), 3))
    for i, p in enumerate(preds):
        target = p.target_log_prob()[0]  # loss = -log p(target), confidence = p(target): one lookup for both
        out[i] = (float(-target), float(p.entropy()[0]), float(target.exp()))
    return out


def _chunks(
    shapes: Sequence[tuple[int, int]],
    order: list[int],
    chunk_size: int,
    max_cells: int | None,
    max_padding: float | None,
) -> list[list[int]]:
    """Consecutive groups of ``order`` (tasks sorted by shape) that form the padded batches.

    ``shapes[i]`` is (rows, columns incl. the target) of task i as the model reads it. A group
    closes before it would exceed ``chunk_size`` tasks, ``max_cells`` padded cells (tasks x rows
    x columns), or a padded/real cell ratio of ``1 + max_padding``.
    """
    out: list[list[int]] = []
    cur: list[int] = []
    rows = feats = real = 0
    for i in order:
        r, f = shapes[i]
        r2, f2 = max(rows, r), max(feats, f)
        padded = (len(cur) + 1) * r2 * f2
        if cur and (
            len(cur) >= chunk_size
            or (max_cells is not None and padded > max_cells)
            or (max_padding is not None and padded > (1 + max_padding) * (real + r * f))
        ):
            out.append(cur)
            cur, r2, f2, real = [], r, f, 0
        cur.append(i)
        rows, feats, real = r2, f2, real + r * f
    if cur:
        out.append(cur)
    return out


def _shapes(model: LTM, tasks: Sequence[ICLTask]) -> list[tuple[int, int]]:
    """(rows, columns incl. the target) of every task as the model reads it (``model.input_rows`` if it has one)."""
    rows = getattr(model, "input_rows", lambda t: len(t.context_y) + len(t.query_x))
    return [(rows(t), t.context_x.shape[1] + 1) for t in tasks]


def score_tasks(
    model: LTM, tasks: Sequence[ICLTask], batching: Batching = Batching(), progress: bool = False, desc: str = "probing"
) -> np.ndarray:
    """Scores of every task in padded batches (tasks sorted by size first), batched as ``batching`` says.

    With ``batching.distinct`` (the default) each distinct context is scored once: tasks that are equal
    under the model's declared invariances (:func:`~iclmem.probe.invariances.distinct_tasks`; the
    reference LTM: row order, uniform duplication) share the scores of the first of them.

    On a CPU, batches much larger than the caches are slower per cell, and small contexts (10-row baselines) fit
    many to a batch while 100-row scaled contexts fit few: a batch holds at most ``batching.max_cells`` cells.
    """
    chunk_size, max_cells, max_padding = batching.chunk_size, batching.max_cells, batching.max_padding
    if batching.distinct:
        return DistinctBatches(model, tasks, chunk_size, max_cells, max_padding).score(model, progress, desc)
    return ScoringBatches(model, tasks, chunk_size, max_cells, max_padding).score(model, progress, desc)


class DistinctBatches:
    """:func:`score_tasks` of one set of tasks, planned once and scored by several models of one architecture.

    When first scored, the tasks that are equal under the planning model's invariances are found
    (:func:`~iclmem.probe.invariances.distinct_tasks`) and the distinct ones planned into
    :class:`ScoringBatches`; every later model reuses both, as a run's probe plans its contexts once for
    M_ref and every epoch (Sec. 4.2, :mod:`iclmem.probe.run`). Each model gets the scores
    :func:`score_tasks` gives it alone, bit for bit; a model that declares other invariances is refused.
    """

    def __init__(
        self,
        model: LTM,
        tasks: Sequence[ICLTask],
        chunk_size: int = DEFAULT_CHUNK,
        max_cells: int | None = DEFAULT_CELLS,
        max_padding: float | None = DEFAULT_PADDING,
    ) -> None:
        self._planner, self._tasks = model, list(tasks)
        self._options = (chunk_size, max_cells, max_padding)
        self._plan: tuple[ScoringBatches, np.ndarray] | None = None

    def score(self, model: LTM, progress: bool = False, desc: str = "probing") -> np.ndarray:
        """(n_tasks, 3): loss, entropy, confidence of every task under ``model``."""
        invariances = model_invariances(self._planner)
        if model_invariances(model) != invariances:
            raise ProbeError("a model scored with another model's distinct contexts must declare the same invariances.")
        if self._plan is None:
            first, group = distinct_tasks(self._tasks, invariances)
            self._plan = (ScoringBatches(self._planner, [self._tasks[i] for i in first], *self._options), group)
        batches, group = self._plan
        return batches.score(model, progress, desc)[group]


class ScoringBatches:
    """The padded batches of ``tasks`` (:func:`score_tasks`'s), planned once and scored by several models.

    A run's probe scores the same contexts with M_ref and with M_theta at every probing epoch
    (Sec. 4.2), models of one architecture: the batches, and for a model with ``collate`` (the
    reference LTM) the collated tensors too, are made for the first model and reused for the
    others, with the scores :func:`score_tasks` gives each model alone. The plan depends on the
    model's input rows (:func:`_shapes`), so :meth:`score` takes models of the planning model's
    ``cfg`` and row merging only.
    """

    def __init__(
        self,
        model: LTM,
        tasks: Sequence[ICLTask],
        chunk_size: int = DEFAULT_CHUNK,
        max_cells: int | None = DEFAULT_CELLS,
        max_padding: float | None = DEFAULT_PADDING,
    ) -> None:
        if chunk_size < 1:
            raise ProbeError(f"chunk_size must be >= 1, got {chunk_size}.")
        self.tasks, self.chunk_size = list(tasks), chunk_size
        shapes = _shapes(model, self.tasks)
        order = sorted(range(len(self.tasks)), key=lambda i: shapes[i][::-1])
        self.chunks = _chunks(shapes, order, chunk_size, max_cells, max_padding)
        self._architecture = architecture(model)
        self._collated: dict[int, dict[str, torch.Tensor]] = {}

    def fits(self, model: LTM) -> bool:
        """Whether ``model`` reads these batches as the planning model did (same type, ``cfg`` and row merging)."""
        return architecture(model) == self._architecture

    def score(self, model: LTM, progress: bool = False, desc: str = "probing") -> np.ndarray:
        """(n_tasks, 3): loss, entropy, confidence of every task under ``model``."""
        if not self.fits(model):
            raise ProbeError(
                "these batches were planned for a model of another architecture (cfg or row merging); plan them for "
                "this one."
            )
        collate = getattr(model, "collate", None)
        out = np.empty((len(self.tasks), 3))
        with torch.no_grad():
            for j, idx in enumerate(Bar(self.chunks, disable=not progress, desc=desc, leave=False)):
                chunk = [self.tasks[i] for i in idx]
                if collate is None:
                    out[idx] = _scores(model.predict(chunk))
                    continue
                if j not in self._collated:
                    self._collated[j] = collate(chunk)
                out[idx] = _scores(model.predict(chunk, batch=self._collated[j]))
        return out


def architecture(model: LTM) -> tuple:
    """What a batch plan depends on: the model's type, config and row merging."""
    return type(model), getattr(model, "cfg", None), getattr(model, "merge_rows", None)


def score_tasks_naive(model: LTM, tasks: Sequence[ICLTask], progress: bool = False) -> np.ndarray:
    """Scores of every task, one context per ``predict`` call (baseline for benchmark and tests)."""
    out = np.empty((len(tasks), 3))
    with torch.no_grad():
        for i, t in enumerate(Bar(tasks, disable=not progress, desc="probing (naive)", leave=False)):
            out[i] = _scores(model.predict([t]))[0]
    return out


def probe_scores(
    model: LTM,
    queries: Sequence[ProbeQuery],
    manipulations: Iterable[str | Manipulation] | None = None,
    *,
    target: QueryTarget = QueryTarget(),
    seed: int = 0,
    progress: bool = False,
    columns: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Tidy scores: one row per (query, manipulation) with :data:`SCORE_COLUMNS` (:func:`score_tasks`, default
    batching).

    ``columns`` (e.g. ``{"model": "theta", "epoch": 10}``) are added to every row.
    """
    max_context, max_features = _limits(model)
    tasks, frame = build_probe_tasks(
        queries, manipulations, target=target, seed=seed, max_context=max_context, max_features=max_features
    )
    return scored_frame(frame, score_tasks(model, tasks, progress=progress), columns)


def scored_frame(meta: pd.DataFrame, scores: np.ndarray, columns: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The tidy score frame: a copy of ``meta`` (one row per task) with its loss, entropy and confidence, plus
    ``columns``."""
    out = meta.copy()
    out["loss"], out["entropy"], out["confidence"] = scores[:, 0], scores[:, 1], scores[:, 2]
    for name, value in (columns or {}).items():
        out[name] = value
    return out


__all__ = [
    "SCORE_COLUMNS",
    "Batching",
    "QueryTarget",
    "DistinctBatches",
    "ProbeQuery",
    "ScoringBatches",
    "build_probe_tasks",
    "score_tasks",
    "score_tasks_naive",
    "probe_scores",
    "scored_frame",
]
