"""What a model is exactly invariant to, and the contexts it therefore scores once (Sec. 4.2, App. A.3).

A model declares its exact invariances (:class:`Invariances`; the reference LTM: row order and
uniform duplication of the context, argued in :mod:`iclmem.probe.equivalence`). Probing then
scores each *distinct* context once: :func:`task_key` is the canonical form of an
:class:`~iclmem.ltm.ICLTask` under the declared invariances (the context's rows as a multiset,
multiplicities divided by their gcd, the queries, the task and its target statistics), and
:func:`distinct_tasks` groups many tasks by it. The scores of a group's first task are reused for
the others; in exact arithmetic they are equal, in float32 they differ by rounding only
(``tests/probe/test_probe_distinct.py`` compares them with scoring every context, all 48 manipulations).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from math import gcd
from typing import Any

import numpy as np

from ..ltm import ICLTask
from ..ltm.model import TabularICLTransformer
from ..ltm.reference import ReferenceLTM
from .contexts import ProbeError


@dataclass(frozen=True)
class Invariances:
    """What a model is exactly invariant to (in exact arithmetic; see the module docstring for float32).

    ``row_order``: permuting the context rows does not change any query's prediction.
    ``uniform_duplication``: multiplying the multiplicity of every distinct context row by the same
    integer does not change it (with ``row_order=False`` this is read as replacing each row by ``c``
    consecutive copies, what ``np.repeat`` does). ``note`` says why; it is not part of equality.
    """

    row_order: bool = False
    uniform_duplication: bool = False
    note: str = field(default="", compare=False)


#: The conservative default: no invariance is assumed, only identical inputs are merged.
NO_INVARIANCES = Invariances(False, False, "unknown model: nothing assumed")
#: The reference LTM (any checkpoint of TabularICLTransformer): no row positions, attention over the context.
REFERENCE_INVARIANCES = Invariances(
    True,
    True,
    "row attention has no positional encoding and renormalizes over identical copies (exact up to float32 rounding)",
)

_REGISTRY: dict[type, Invariances] = {ReferenceLTM: REFERENCE_INVARIANCES, TabularICLTransformer: REFERENCE_INVARIANCES}


def register_invariances(model_type: type, invariances: Invariances) -> None:
    """Declare the invariances of every model of ``model_type`` (and its subclasses)."""
    if not isinstance(invariances, Invariances):
        raise ProbeError(f"invariances must be an Invariances, got {type(invariances).__name__}.")
    _REGISTRY[model_type] = invariances


def model_invariances(model: Any) -> Invariances:
    """The invariances a model declares: its ``invariances`` attribute, else the registry by type, else none.

    The reference LTM (:class:`~iclmem.ltm.reference.ReferenceLTM`, fine-tuned or not) gets
    :data:`REFERENCE_INVARIANCES`; an unknown model the conservative :data:`NO_INVARIANCES`.
    """
    declared = getattr(model, "invariances", None)
    if isinstance(declared, Invariances):
        return declared
    for cls in type(model).__mro__:
        if cls in _REGISTRY:
            return _REGISTRY[cls]
    return NO_INVARIANCES


def float_rows(x: np.ndarray) -> np.ndarray:
    """float32 as the model reads it, with one NaN pattern and -0.0 as 0.0, so equal cells have equal bytes."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    return np.where(np.isnan(x), np.float32(np.nan), x + np.float32(0.0))


def canonical_rows(
    context_x: np.ndarray, context_y: np.ndarray, invariances: Invariances
) -> list[tuple[str, bytes, int]]:
    """The context as ``(label, feature bytes, multiplicity)`` rows, canonical under ``invariances``.

    Sorted and merged when row order does not matter, else runs of consecutive equal rows in order;
    multiplicities divided by their gcd when uniform duplication does not matter.
    """
    x = float_rows(context_x)
    keys = [(repr(y), x[i].tobytes()) for i, y in enumerate(np.asarray(context_y).tolist())]
    if invariances.row_order:
        rows = [(label, feats, n) for (label, feats), n in sorted(Counter(keys).items())]
    else:
        rows = []
        for key in keys:
            if rows and rows[-1][:2] == key:
                rows[-1] = (*key, rows[-1][2] + 1)
            else:
                rows.append((*key, 1))
    if invariances.uniform_duplication and rows:
        g = 0
        for _, _, n in rows:
            g = gcd(g, n)
        rows = [(label, feats, n // g) for label, feats, n in rows]
    return rows


def task_key(task: ICLTask, invariances: Invariances) -> tuple:
    """A hashable canonical form of a task: equal keys mean the model gets the same input up to ``invariances``.

    The context rows are ``(label, feature bytes)`` pairs: sorted and merged with their multiplicity
    when row order does not matter, else runs of consecutive equal rows; multiplicities divided by
    their gcd when uniform duplication does not matter. The queries (features and targets), the
    task type and the given target statistics are part of the key as they are. Without
    invariances only identical tasks share a key.
    """
    x = float_rows(task.context_x)
    rows = canonical_rows(x, task.context_y, invariances)
    q = float_rows(task.query_x)
    query_y = None if task.query_y is None else repr(np.asarray(task.query_y).tolist())
    return (tuple(rows), x.shape[1], q.tobytes(), q.shape, query_y, task.task, task.target_center, task.target_scale)


def distinct_tasks(tasks: Sequence[ICLTask], invariances: Invariances) -> tuple[list[int], np.ndarray]:
    """``(first, group)``: the index of the first task of each distinct key, and each task's group.

    ``tasks[first[group[i]]]`` is the task whose scores stand for task ``i``.
    """
    seen: dict[tuple, int] = {}
    first: list[int] = []
    group = np.empty(len(tasks), dtype=np.int64)
    for i, t in enumerate(tasks):
        key = task_key(t, invariances)
        g = seen.get(key)
        if g is None:
            g = seen[key] = len(first)
            first.append(i)
        group[i] = g
    return first, group


__all__ = [
    "Invariances",
    "NO_INVARIANCES",
    "REFERENCE_INVARIANCES",
    "register_invariances",
    "model_invariances",
    "float_rows",
    "canonical_rows",
    "task_key",
    "distinct_tasks",
]
