"""Batched scoring of manipulated multiple-choice contexts (Sec. 4.2): equality with the naive path, controls,
errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.probe import (
    MANIPULATIONS,
    SCORE_COLUMNS,
    ProbeError,
    ProbeQuery,
    ScoringBatches,
    build_probe_tasks,
    probe_scores,
    regression_candidates,
    score_tasks,
    score_tasks_naive,
)
from iclmem.probe.scoring import Batching, QueryTarget
from iclmem.stats.metrics import auc, delta_scores, split_members

torch.set_num_threads(1)

TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=128)


@pytest.fixture(scope="module")
def model() -> ReferenceLTM:
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny")


def cls_queries(n: int = 6, classes=(0, 1, 2, 3)) -> list[ProbeQuery]:
    rng = np.random.default_rng(0)
    cand = np.asarray(classes)
    return [
        ProbeQuery(10 + i, rng.normal(size=5).astype(np.float32), cand[i % len(cand)], i % 2 == 0, cand)
        for i in range(n)
    ]


def reg_queries(n: int = 4) -> list[ProbeQuery]:
    rng = np.random.default_rng(1)
    pool = rng.normal(3.0, 2.0, 200).round(2)
    ys = pool[:n] + 0.005
    return [
        ProbeQuery(
            i, rng.normal(size=3).astype(np.float32), ys[i], i < n // 2, regression_candidates(ys[i], pool, 8, 0, i)
        )
        for i in range(n)
    ]


def test_tidy_frame_one_row_per_query_and_manipulation(model):
    qs = cls_queries()
    f = probe_scores(model, qs, columns={"model": "theta", "epoch": 3})
    assert list(f.columns) == [*SCORE_COLUMNS, "model", "epoch"]
    assert len(f) == len(qs) * 48 and set(f.manipulation) == set(MANIPULATIONS)
    assert f.groupby("query_id").size().eq(48).all()
    assert (f.loss >= 0).all() and f.confidence.between(0, 1).all() and (f.entropy <= np.log(4) + 1e-5).all()
    assert np.allclose(f.loss, -np.log(f.confidence), atol=1e-5)  # classification: loss = -log p(true class)
    assert f.is_member.sum() == 3 * 48 and (f.epoch == 3).all()


def test_batches_planned_once_give_each_model_its_own_scores(model, monkeypatch):
    """One set of contexts scored by two models through ScoringBatches: each gets exactly score_tasks' scores,
    and the contexts are collated once (M_ref and M_theta at every epoch share them, Sec. 4.2)."""
    tasks, _ = build_probe_tasks(cls_queries(4), max_context=TINY.max_context, max_features=TINY.max_features)
    other = model.clone()
    with torch.no_grad():
        for p in other.network.parameters():
            p.add_(0.05 * torch.randn_like(p))
    alone = [score_tasks(m, tasks, Batching(chunk_size=16, distinct=False)) for m in (model, other)]
    assert not np.allclose(alone[0], alone[1])  # two different models
    calls = []
    collate = ReferenceLTM.collate
    monkeypatch.setattr(ReferenceLTM, "collate", lambda self, ts: calls.append(len(ts)) or collate(self, ts))
    batches = ScoringBatches(model, tasks, chunk_size=16)
    shared = [batches.score(m) for m in (model, other)]
    assert len(calls) == len(batches.chunks) > 1 and sum(calls) == len(tasks)  # collated for the first model only
    for a, b in zip(alone, shared, strict=True):
        assert np.array_equal(a, b)
    merged_off = model.clone()
    merged_off.merge_rows = False
    assert not batches.fits(merged_off)
    with pytest.raises(ProbeError, match="another architecture"):
        batches.score(merged_off)


@pytest.mark.parametrize("kind", ["classification", "regression"])
def test_batched_equals_naive(model, kind):
    if kind == "classification":
        tasks, _ = build_probe_tasks(cls_queries(3), target=QueryTarget("classification"), max_context=128)
    else:
        tasks, _ = build_probe_tasks(reg_queries(2), target=QueryTarget("regression", 3.0, 2.0), max_context=128)
    sizes = {(len(t.context_y), t.context_x.shape[1]) for t in tasks}
    assert len(sizes) > 5  # contexts of many shapes share a padded batch
    batched = score_tasks(model, tasks, Batching(chunk_size=64))
    naive = score_tasks_naive(model, tasks)
    assert np.abs(batched - naive).max() < 1e-5
    assert np.abs(score_tasks(model, tasks, Batching(chunk_size=7)) - naive).max() < 1e-5


@pytest.mark.parametrize("merge_rows", [False, True])
def test_batches_respect_the_cell_budget_and_padding_limit(model, merge_rows):
    from iclmem.probe.scoring import _chunks, _shapes

    tasks, _ = build_probe_tasks(cls_queries(4), target=QueryTarget("classification"), max_context=128)
    model.merge_rows = merge_rows
    try:
        shapes = _shapes(model, tasks)
    finally:
        model.merge_rows = True
    full = [(len(t.context_y) + 1, t.context_x.shape[1] + 1) for t in tasks]
    assert (shapes == full) != merge_rows  # merged contexts are shorter: the budget counts what the network gets
    order = sorted(range(len(tasks)), key=lambda i: shapes[i][::-1])
    chunks = _chunks(shapes, order, 50, 2048, 0.1)
    assert sorted(i for c in chunks for i in c) == list(range(len(tasks)))
    for c in chunks:
        r, f = [shapes[i][0] for i in c], [shapes[i][1] for i in c]
        padded, real = len(c) * max(r) * max(f), sum(a * b for a, b in zip(r, f, strict=True))
        assert len(c) <= 50
        assert len(c) == 1 or (padded <= 2048 and padded <= 1.1 * real)
    assert len(_chunks(shapes, order, 10**6, None, None)) == 1


def test_scores_are_deterministic_per_seed_and_depend_on_it(model):
    qs = cls_queries(2)
    a = probe_scores(model, qs, ["shuffle_and_random_5", "distractor_2"], seed=1)
    b = probe_scores(model, qs, ["shuffle_and_random_5", "distractor_2"], seed=1)
    c = probe_scores(model, qs, ["shuffle_and_random_5", "distractor_2"], seed=2)
    assert a.equals(b)
    assert not np.allclose(a.loss, c.loss)


def test_negative_control_same_model_zero_delta_chance_auc(model):
    qs = cls_queries(8)
    theta = probe_scores(model.clone(), qs, columns={"model": "theta", "epoch": 0})
    ref = probe_scores(model, qs, columns={"model": "ref", "epoch": -1})
    for metric in ("loss", "entropy", "confidence"):
        d = delta_scores(theta, ref, metric)
        assert (d.delta == 0).all()
        assert auc(*split_members(d)) == 0.5


def test_regression_needs_dataset_level_target_stats(model):
    with pytest.raises(ProbeError, match="target_center"):
        build_probe_tasks(reg_queries(2), target=QueryTarget("regression"))


def test_bad_queries(model):
    q = cls_queries(1)[0]
    wrong = ProbeQuery(1, q.x, 9, True, q.candidates)
    with pytest.raises(ProbeError, match="not among the candidates"):
        probe_scores(model, [wrong])
    with pytest.raises(ProbeError, match="unique"):
        probe_scores(model, [q, q])
    with pytest.raises(ProbeError, match="no queries"):
        probe_scores(model, [])
    with pytest.raises(ProbeError, match="valid names"):
        probe_scores(model, [q], ["skew_everything"])
    big = ProbeQuery(1, q.x, 0, True, np.arange(13))
    with pytest.raises(
        ProbeError, match="130 rows, more than the model's 128"
    ):  # the limit comes from the model's config
        probe_scores(model, [big], ["baseline", "uniform_10"])
