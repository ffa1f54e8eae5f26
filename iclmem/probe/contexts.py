"""Zero-information multiple-choice contexts (Sec. 4.2 "Multiple-Choice Protocol").

For a query row ``q = (x_q, y_q)`` and a candidate set ``Y`` the base context ``C_base`` holds
exactly ``|Y|`` copies of ``x_q``, each paired with a distinct candidate ``y_i in Y``. The
context therefore carries no information about which candidate is right: a model that
prefers ``y_q`` must take that preference from its weights.

Candidate sets:

* **classification** — ``Y`` is the class set of the dataset / run (every label the model
  was fine-tuned or evaluated on). The reference LTM maps labels to output slots canonically
  (sorted unique context labels), and every candidate occurs in every context, so slot ``i``
  always holds the ``i``-th smallest class.
* **regression** (the paper leaves this open) — ``Y = {y_q}`` plus ``n_candidates - 1``
  distinct distractor values drawn *from the target's empirical distribution*: the given
  pool of target values (e.g. the context pool's targets) is visited in a random order and
  the first ``n_candidates - 1`` distinct values different from ``y_q`` are kept. Visiting
  the pool (not its set of distinct values) samples frequent values more often, as the
  empirical distribution does. The draw is deterministic per ``(seed, query_id)``. The
  regression output is a bar distribution over the standardized target, so candidates are
  context values, not output classes; the probing scores stay the bin cross-entropy,
  entropy and mass of the bin holding ``y_q`` (:class:`iclmem.ltm.Predictions`).

Base row order: candidates in ascending order (sorted classes or sorted values). The paper
replicates the query row 50 times (Tab. 2); the reference LTM's query rows attend to the
context only, never to each other, so one query row gives the same prediction and is used.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from iclmem.user_errors import UserError

from ..ltm import ICLTask


class ProbeError(UserError, ValueError):
    """Bad probing input: the message names the problem and the fix."""


def query_rng(seed: int, query_id: int, stream: str = "") -> np.random.Generator:
    """A generator determined by ``(seed, query_id, stream)`` only (stable across processes).

    ``stream`` names what the randomness is for (e.g. ``"candidates"``, ``"reduce_2"``), so
    independent random choices for one query do not share draws.
    """
    if int(seed) < 0 or int(query_id) < 0:
        raise ProbeError(
            f"seed ({seed}) and query_id ({query_id}) must be non-negative integers (row ids of the table)."
        )
    return np.random.default_rng([int(seed), int(query_id), zlib.crc32(stream.encode())])


@dataclass(frozen=True)
class MCContext:
    """A (possibly manipulated) multiple-choice context with its single query row.

    ``context_x`` (n, F) and ``query_x`` (1, F) are encoded features; ``context_y`` (n,) the
    candidate labels / values; ``query_y`` (1,) the true target. Manipulations (Tab. 7) map an
    MCContext to another, changing context and query together (e.g. dropping the same columns).
    """

    context_x: np.ndarray
    context_y: np.ndarray
    query_x: np.ndarray
    query_y: np.ndarray

    @property
    def true_label(self) -> Any:
        return self.query_y[0]

    @property
    def n_rows(self) -> int:
        return len(self.context_y)

    @property
    def n_features(self) -> int:
        return int(self.query_x.shape[1])

    def true_rows(self) -> np.ndarray:
        """Boolean mask of the context rows that carry the true target."""
        return np.asarray(self.context_y == self.true_label)

    def candidates(self) -> np.ndarray:
        """The distinct candidates present in the context (sorted)."""
        return np.unique(self.context_y)

    def with_(self, **changes: Any) -> MCContext:
        return replace(self, **changes)

    def to_task(self, task: str, target_center: float | None = None, target_scale: float | None = None) -> ICLTask:
        """The :class:`~iclmem.ltm.ICLTask` of this context (regression: pass the dataset-level target stats)."""
        if task == "regression" and (target_center is None or target_scale is None):
            raise ProbeError(
                "regression probing needs the dataset-level target_center and target_scale (RunData has them); "
                "standardizing by the candidates would change the meaning of the bins."
            )
        return ICLTask(self.context_x, self.context_y, self.query_x, self.query_y, task, target_center, target_scale)


def classification_candidates(labels: Any) -> np.ndarray:
    """The class set ``Y``: sorted distinct labels (of the dataset / run)."""
    y = np.unique(np.asarray(labels))
    if len(y) < 2:
        raise ProbeError(f"the class set has {len(y)} label(s); multiple-choice probing needs at least 2 candidates.")
    return y


def regression_candidates(
    y_q: float, pool: Any, n_candidates: int = 10, seed: int = 0, query_id: int = 0
) -> np.ndarray:
    """``{y_q}`` plus ``n_candidates - 1`` distinct distractors from the empirical distribution of ``pool``.

    See the module docstring. Deterministic per ``(seed, query_id)``; returns sorted values.
    """
    if n_candidates < 2:
        raise ProbeError(f"n_candidates must be at least 2 (the true value and one distractor), got {n_candidates}.")
    values = np.asarray(pool, dtype=np.float64)
    y_q = float(y_q)
    if not np.isfinite(y_q) or not np.isfinite(values).all():
        raise ProbeError("regression targets hold NaN or inf; drop those rows before probing.")
    rng = query_rng(seed, query_id, "candidates")
    visit = values[rng.permutation(len(values))]
    visit = visit[visit != y_q]
    _, first = np.unique(visit, return_index=True)
    distractors = visit[np.sort(first)][: n_candidates - 1]
    if len(distractors) < n_candidates - 1:
        raise ProbeError(
            f"the pool has only {len(distractors)} distinct values besides y_q={y_q:g}; "
            f"lower n_candidates (now {n_candidates}) or give a larger pool."
        )
    return np.sort(np.concatenate([[y_q], distractors]))


def mc_context(x_q: np.ndarray, y_q: Any, candidates: Any) -> MCContext:
    """The base context ``C_base``: one copy of ``x_q`` per candidate, in candidate order (Sec. 4.2)."""
    cand = np.asarray(candidates)
    if cand.ndim != 1 or len(cand) < 2:
        raise ProbeError(f"a multiple-choice context needs at least 2 candidates, got {cand.size}.")
    if len(np.unique(cand)) != len(cand):
        raise ProbeError("candidates must be distinct; pass each label or value once.")
    if not (cand == y_q).any():
        shown = ", ".join(map(str, cand[:10].tolist()))
        raise ProbeError(
            f"the query's label {y_q!r} is not among the candidates [{shown}{', ...' if len(cand) > 10 else ''}]; "
            "include the true label in the candidate set."
        )
    x = np.asarray(x_q, dtype=np.float32).reshape(1, -1)
    return MCContext(np.repeat(x, len(cand), axis=0), cand.copy(), x.copy(), np.asarray([y_q], dtype=cand.dtype))


__all__ = ["ProbeError", "MCContext", "query_rng", "classification_candidates", "regression_candidates", "mc_context"]
