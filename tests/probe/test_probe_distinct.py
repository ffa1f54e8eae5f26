"""Each distinct context is scored once, and the reused scores equal scoring every context (Sec. 4.2, App. A.3).

The shipped reference LTM on every one of the 48 manipulated contexts of real queries (scikit-learn's
breast_cancer: 2 classes; iris: 3 classes; diabetes: regression, 10 candidates): scores reused
across a class of equivalent contexts, with identical context rows merged, equal brute-force
scoring (one context per ``predict`` call, no reuse, every row its own token) to float32 rounding: ``CONF_ATOL = 5e-6``
on the target confidence and ``LOSS_ATOL = 1e-4``
on the loss and entropy, the tolerances of ``tests/probe/test_probe_equivalence.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_probe_equivalence import reference, table_queries  # noqa: F401 - the module-scoped fixture

from iclmem.ltm import ICLTask, ReferenceLTM
from iclmem.probe import MANIPULATIONS, build_probe_tasks, probe_scores, score_tasks, score_tasks_naive
from iclmem.probe.equivalence import suite_equivalence
from iclmem.probe.invariances import NO_INVARIANCES, REFERENCE_INVARIANCES, distinct_tasks, model_invariances, task_key
from iclmem.probe.scoring import Batching, QueryTarget, scored_frame

torch.set_num_threads(1)

LOSS_ATOL = 1e-4
CONF_ATOL = 5e-6


class Counting:
    """The reference LTM, counting the tasks it is asked to score; it declares the model's invariances or the given
    ones."""

    def __init__(self, model, invariances=None) -> None:
        self.model, self.cfg, self.tasks = model, model.cfg, 0
        self.invariances = model_invariances(model) if invariances is None else invariances

    def predict(self, tasks, grad=False):
        self.tasks += len(tasks)
        return self.model.predict(tasks, grad)


@pytest.mark.parametrize(("name", "n"), [("breast_cancer", 4), ("iris", 3), ("diabetes", 3)])
def test_reused_scores_equal_brute_force_for_every_manipulation(reference, name, n):  # noqa: F811
    queries, task, center, scale = table_queries(name, n)
    tasks, meta = build_probe_tasks(queries, target=QueryTarget(task, center, scale))
    assert sorted(set(meta["manipulation"])) == sorted(MANIPULATIONS)
    counting = Counting(reference)
    reused = score_tasks(counting, tasks)
    brute = score_tasks_naive(ReferenceLTM(reference.network, reference.checkpoint_sha256, merge_rows=False), tasks)
    assert np.abs(reused[:, [0, 1]] - brute[:, [0, 1]]).max() < LOSS_ATOL
    assert np.abs(reused[:, 2] - brute[:, 2]).max() < CONF_ATOL
    # fewer contexts were scored, exactly one per class of the equivalence module's canonical forms
    classes = sum(
        suite_equivalence(None, q.x, q.y, q.candidates, REFERENCE_INVARIANCES, query_id=q.query_id)["group"].nunique()
        for q in queries
    )
    assert counting.tasks == classes < len(tasks)


def test_a_model_without_invariances_only_shares_identical_contexts(reference):  # noqa: F811
    queries, task, center, scale = table_queries("breast_cancer", 3)
    tasks, _ = build_probe_tasks(queries, target=QueryTarget(task, center, scale))
    unknown = Counting(reference, NO_INVARIANCES)
    scores = score_tasks(unknown, tasks)
    identical = len({task_key(t, NO_INVARIANCES) for t in tasks})
    assert unknown.tasks == identical
    assert identical > len(distinct_tasks(tasks, REFERENCE_INVARIANCES)[0])
    every = Counting(reference)
    assert np.abs(score_tasks(every, tasks, Batching(distinct=False)) - scores).max() < LOSS_ATOL
    assert every.tasks == len(tasks)


def test_task_key_separates_what_the_model_can_tell_apart():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4)).astype(np.float32)
    y = np.array([0, 1, 1])
    q = rng.normal(size=(1, 4)).astype(np.float32)
    base = ICLTask(x, y, q, np.array([1]))
    key = task_key(base, REFERENCE_INVARIANCES)
    assert task_key(ICLTask(x[::-1], y[::-1], q, np.array([1])), REFERENCE_INVARIANCES) == key  # row order
    assert (
        task_key(ICLTask(np.repeat(x, 3, 0), np.repeat(y, 3), q, np.array([1])), REFERENCE_INVARIANCES) == key
    )  # uniform x3
    assert task_key(ICLTask(x[::-1], y[::-1], q, np.array([1])), NO_INVARIANCES) != task_key(base, NO_INVARIANCES)
    different = [
        ICLTask(np.concatenate([x, x[:1]]), np.append(y, 0), q, np.array([1])),  # one row duplicated: a skew
        ICLTask(x, y, q, np.array([0])),  # another query target
        ICLTask(x, y, q + 1, np.array([1])),  # another query
        ICLTask(x, np.array([0, 1, 0]), q, np.array([1])),  # another label on a row
        ICLTask(x, y.astype(float), q, np.array([1.0]), task="regression", target_center=0.0, target_scale=1.0),
    ]
    assert all(task_key(t, REFERENCE_INVARIANCES) != key for t in different)


def test_probe_scores_distinct_by_default_and_equal_to_every_context(reference):  # noqa: F811
    queries, task, center, scale = table_queries("iris", 2)
    target = QueryTarget(task, center, scale)
    fast = probe_scores(reference, queries, target=target)
    tasks, meta = build_probe_tasks(queries, target=target, max_context=reference.cfg.max_context,
                                    max_features=reference.cfg.max_features)  # fmt: skip
    slow = scored_frame(meta, score_tasks_naive(reference, tasks))  # one context per predict call
    assert (fast[["query_id", "manipulation"]].to_numpy() == slow[["query_id", "manipulation"]].to_numpy()).all()
    assert np.abs(fast["loss"] - slow["loss"]).max() < LOSS_ATOL
