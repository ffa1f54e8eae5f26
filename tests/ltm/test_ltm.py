"""Tests of the reference LTM (issue: reference tabular in-context model)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from iclmem.ltm import ICLTask, LTMConfig, LTMInputError, TabularICLTransformer
from iclmem.ltm.outputs import bin_index, per_row_loss
from iclmem.ltm.pretrain import PretrainConfig, pretrain, sample_batch
from iclmem.ltm.reference import (
    CheckpointError,
    ReferenceLTM,
    collate_tasks,
    export_checkpoint,
    load_checkpoint,
    load_reference,
    pretraining_stages,
)

torch.set_num_threads(1)  # tiny models: one thread is fastest and shares the machine well

TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)


def tiny_model(seed: int = 0) -> ReferenceLTM:
    torch.manual_seed(seed)
    return ReferenceLTM(TabularICLTransformer(TINY).eval())


def cls_task(rng: np.random.Generator, n_ctx: int = 20, n_q: int = 6, f: int = 3, k: int = 3) -> ICLTask:
    labels = np.array(["a", "b", "c", "d", "e"][:k])
    cy = labels[np.arange(n_ctx) % k]
    qy = labels[rng.integers(k, size=n_q)]
    return ICLTask(rng.normal(size=(n_ctx, f)), cy, rng.normal(size=(n_q, f)), qy)


def reg_task(rng: np.random.Generator, n_ctx: int = 20, n_q: int = 5, f: int = 4) -> ICLTask:
    return ICLTask(
        rng.normal(size=(n_ctx, f)),
        rng.normal(size=n_ctx),
        rng.normal(size=(n_q, f)),
        rng.normal(size=n_q),
        "regression",
    )


def test_context_permutation_invariance():
    """Permuting context rows changes predictions by float rounding only (tolerance 1e-5)."""
    rng = np.random.default_rng(0)
    model, t = tiny_model(), cls_task(rng)
    perm = rng.permutation(len(t.context_x))
    t2 = ICLTask(t.context_x[perm], t.context_y[perm], t.query_x, t.query_y)
    a, b = model.predict([t])[0].log_probs, model.predict([t2])[0].log_probs
    assert torch.allclose(a, b, atol=1e-5)


def test_query_independence_and_batching():
    """A query's prediction does not depend on the other queries, nor on other tasks in the batch."""
    rng = np.random.default_rng(1)
    model, t, r = tiny_model(), cls_task(rng, n_q=8), reg_task(rng, f=2)
    single = ICLTask(t.context_x, t.context_y, t.query_x[:1], t.query_y[:1])
    full = model.predict([t])[0].log_probs[0]
    alone = model.predict([single])[0].log_probs[0]
    batched = model.predict([r, t])[1].log_probs[0]
    assert torch.allclose(full, alone, atol=1e-5)
    assert torch.allclose(full, batched, atol=1e-5)


def test_label_slot_mapping_is_canonical():
    """Sorted unique context labels map to slots 0..k-1 whatever their order of appearance."""
    rng = np.random.default_rng(2)
    t = cls_task(rng, k=3)
    assert list(t.classes()) == ["a", "b", "c"]
    pred = tiny_model().predict([t])[0]
    assert pred.log_probs.shape == (len(t.query_x), 3)
    slots = np.searchsorted(t.classes(), t.query_y)
    expected = -pred.log_probs[torch.arange(len(slots)), torch.as_tensor(slots)]
    assert torch.allclose(pred.loss(), expected)
    assert set(pred.point()) <= {"a", "b", "c"}


def test_bar_distribution_sums_to_one_and_nll_by_hand():
    rng = np.random.default_rng(3)
    t = reg_task(rng)
    t.target_center, t.target_scale = 0.0, 1.0
    pred = tiny_model().predict([t])[0]
    assert torch.allclose(pred.log_probs.exp().sum(-1), torch.ones(len(t.query_x)), atol=1e-5)
    width = 2 * TINY.bin_bound / TINY.n_bins
    y0 = float(t.query_y[0])
    idx = int(math.floor((min(max(y0, -TINY.bin_bound), TINY.bin_bound) + TINY.bin_bound) / width))
    idx = min(idx, TINY.n_bins - 1)
    hand = -math.log(float(pred.log_probs[0, idx].exp()) / width)
    assert pred.nll()[0].item() == pytest.approx(hand, rel=1e-5)
    assert pred.loss()[0].item() == pytest.approx(hand - math.log(width), rel=1e-5)
    assert pred.target_confidence()[0].item() == pytest.approx(float(pred.log_probs[0, idx].exp()), rel=1e-6)
    assert 0 <= pred.entropy()[0].item() <= math.log(TINY.n_bins) + 1e-6


def test_bin_index_clips_to_range():
    y = torch.tensor([-100.0, -4.0, 0.0, 3.99, 100.0])
    assert bin_index(y, 16, 4.0).tolist() == [0, 0, 8, 15, 15]


def test_finetuning_tiny_batch_drives_loss_down():
    """The model can memorize: repeated steps on one fixed task shrink its loss a lot."""
    rng = np.random.default_rng(4)
    model = tiny_model().clone()
    t = cls_task(rng, n_q=10)
    t.query_y = rng.permutation(t.query_y)  # random labels: only memorization helps
    opt = torch.optim.Adam(model.trainable_parameters(), lr=1e-3)
    start = model.predict([t])[0].loss().mean().item()
    for _ in range(300):
        loss = model.predict([t], grad=True)[0].loss().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.3 * start


def test_clone_is_independent():
    model = tiny_model()
    copy = model.clone()
    with torch.no_grad():
        copy.trainable_parameters()[0].add_(1.0)
    assert not torch.equal(model.trainable_parameters()[0], copy.trainable_parameters()[0])


def _tiny_pretrain(tmp_path, steps: int, name: str) -> PretrainConfig:
    cfg = PretrainConfig(
        steps=steps,
        warmup=2,
        cells_per_step=600,
        max_query=8,
        checkpoint_every=2,
        threads=1,
        out_dir=str(tmp_path / name),
        model=TINY,
    )
    cfg = replace(cfg, prior=replace(cfg.prior, max_context=48, max_features=4))
    return cfg


def test_pretraining_is_deterministic_and_resumable(tmp_path):
    a = torch.load(pretrain(_tiny_pretrain(tmp_path, 6, "a"), progress=False), weights_only=False)
    b = torch.load(pretrain(_tiny_pretrain(tmp_path, 6, "b"), progress=False), weights_only=False)
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k])
    # resume: run 4 of 6 steps under the 6-step config, then finish
    cfg = _tiny_pretrain(tmp_path, 6, "c")
    part = torch.load(pretrain(replace(cfg, steps=6, checkpoint_every=4), progress=False), weights_only=False)
    assert part["step"] == 6
    state_path = tmp_path / "c" / "state.pt"
    state = torch.load(state_path, weights_only=False)
    assert state["step"] == 6
    cfg_d = _tiny_pretrain(tmp_path, 6, "d")
    interrupted = _interrupt_after(cfg_d, 4)
    assert interrupted == 4
    c = torch.load(pretrain(cfg_d, progress=False), weights_only=False)
    for k in a["model"]:
        assert torch.allclose(a["model"][k], c["model"][k], atol=1e-6)


def _interrupt_after(cfg: PretrainConfig, n: int) -> int:
    """Run pretraining and kill it (KeyboardInterrupt) right after the checkpoint at step n."""
    import iclmem.ltm.pretrain as mod

    original = mod.atomic_torch_save

    def save_then_stop(obj, path):
        original(obj, path)
        if obj["step"] >= n:
            raise KeyboardInterrupt

    mod.atomic_torch_save = save_then_stop
    try:
        with pytest.raises(KeyboardInterrupt):
            pretrain(replace(cfg, checkpoint_every=2), progress=False)
    finally:
        mod.atomic_torch_save = original
    return torch.load(__import__("pathlib").Path(cfg.out_dir) / "state.pt", weights_only=False)["step"]


def test_resume_refuses_other_config(tmp_path):
    cfg = _tiny_pretrain(tmp_path, 2, "e")
    pretrain(cfg, progress=False)
    with pytest.raises(ValueError, match="different pretraining config"):
        pretrain(replace(cfg, lr=0.5), progress=False)


def test_staged_pretraining_continues_weights_curve_and_card(tmp_path):
    first = _tiny_pretrain(tmp_path, 4, "s1")
    s1 = torch.load(pretrain(first, progress=False), weights_only=False)
    second = replace(_tiny_pretrain(tmp_path, 3, "s2"), seed=1, lr=5e-4, init_from=str(tmp_path / "s1" / "state.pt"))
    s2 = torch.load(pretrain(second, progress=False), weights_only=False)
    assert [c[0] for c in s2["curve"]] == list(range(7))  # stage 1's curve, then global steps 4..6
    assert s2["curve"][:4] == s1["curve"] and s2["global_offset"] == 4
    assert len(s2["stages"]) == 1 and s2["stages"][0]["steps"] == 4 and len(s2["stages"][0]["state_sha256"]) == 64
    assert any(not torch.equal(s1["model"][k], s2["model"][k]) for k in s1["model"])
    card = json.loads(
        (
            export_checkpoint(tmp_path / "s2" / "state.pt", {}, out_dir=tmp_path / "w").parent / "reference.json"
        ).read_text()
    )
    assert card["steps_done"] == 7 and card["earlier_stages"][0]["config"]["seed"] == 0
    assert card["wall_s"] >= s2["stages"][0]["wall_s"]
    stages = pretraining_stages(card)
    assert [r["steps"] for r in stages] == [4, 3] and [r["ends at step"] for r in stages] == [4, 7]
    assert [r["peak lr"] for r in stages] == [first.lr, 5e-4] and [r["data seed"] for r in stages] == [0, 1]
    again = torch.load(pretrain(replace(second, out_dir=str(tmp_path / "s2b")), progress=False), weights_only=False)
    assert all(torch.equal(again["model"][k], s2["model"][k]) for k in s2["model"])  # deterministic given stage 1
    with pytest.raises(FileNotFoundError, match="earlier stage"):
        pretrain(replace(second, init_from=str(tmp_path / "missing.pt"), out_dir=str(tmp_path / "s3")), progress=False)
    with pytest.raises(ValueError, match="keep the architecture"):
        pretrain(replace(second, model=replace(TINY, d_ff=TINY.d_ff * 2), out_dir=str(tmp_path / "s4")), progress=False)


def test_prior_batch_is_deterministic():
    cfg = PretrainConfig(cells_per_step=2000)
    a, b = sample_batch(cfg, 7), sample_batch(cfg, 7)
    assert all(torch.equal(torch.nan_to_num(a[k]), torch.nan_to_num(b[k])) for k in a)
    assert not torch.equal(torch.nan_to_num(sample_batch(cfg, 8)["x"]).sum(), torch.nan_to_num(a["x"]).sum())


def test_prior_categorical_levels_follow_max_categories():
    from iclmem.ltm.prior import PriorConfig, _categorize

    def levels(max_levels: int) -> list[int]:
        x = np.random.default_rng(0).normal(size=(3000, 40))
        coded = _categorize(np.random.default_rng(1), x, 2000, 1.0, max_levels)
        return [len(np.unique(coded[:, j])) for j in range(coded.shape[1])]

    default, wide = levels(10), levels(48)
    assert max(default) <= 10 and max(wide) <= 48 and max(wide) > 10
    assert all(n >= 2 for n in default + wide)
    with pytest.raises(ValueError, match="at least 2 levels"):
        PriorConfig(max_categories=1)


def test_prior_cluster_family_is_learnable_by_similarity():
    from sklearn.neighbors import KNeighborsClassifier

    from iclmem.ltm.prior import PriorConfig, sample_table

    cfg = PriorConfig(tree_share=0.0, scm_share=0.0, cluster_share=1.0, missing_share=0.0)
    rng, gains = np.random.default_rng(0), []
    for _ in range(12):
        t = sample_table(rng, cfg, 300, 200, 16, False)
        c = t.n_context
        acc = KNeighborsClassifier().fit(t.x[:c], t.y[:c]).score(t.x[c:], t.y[c:])
        gains.append(acc - np.bincount(t.y[:c].astype(int)).max() / c)  # over the majority class
    assert np.mean(gains) > 0.1
    with pytest.raises(ValueError, match="sum to at most 1"):
        PriorConfig(tree_share=0.5, scm_share=0.3, cluster_share=0.3)


def test_checkpoint_roundtrip_and_corruption(tmp_path):
    state = _tiny_pretrain(tmp_path, 2, "f")
    path = pretrain(state, progress=False)
    weights = export_checkpoint(path, {"seed": 0}, out_dir=tmp_path / "w")
    model = load_checkpoint(weights, tmp_path / "w" / "reference.json")
    t = cls_task(np.random.default_rng(5))
    assert model.predict([t])[0].log_probs.shape == (6, 3)
    raw = bytearray(weights.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    weights.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="corrupted"):
        load_checkpoint(weights, tmp_path / "w" / "reference.json")
    weights.write_bytes(bytes(raw[: len(raw) // 3]))  # truncated file
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_checkpoint(weights)


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda r: cls_task(r, k=3).__class__(r.normal(size=(12, 2)), np.arange(12), r.normal(size=(2, 2)), None),
            "classes",
        ),
        (lambda r: ICLTask(np.zeros((0, 2)), np.zeros(0), r.normal(size=(2, 2))), "empty"),
        (lambda r: ICLTask(np.full((3, 2), np.inf), np.arange(3), r.normal(size=(2, 2))), "inf"),
        (
            lambda r: ICLTask(
                r.normal(size=(3, 2)), np.array([0.0, np.nan, 1.0]), r.normal(size=(2, 2)), None, "regression"
            ),
            "NaN",
        ),
        (lambda r: ICLTask(r.normal(size=(3, 2)), np.arange(3), r.normal(size=(2, 3))), "features"),
        (lambda r: ICLTask(r.normal(size=(3, 2)), np.arange(3), r.normal(size=(1, 2)), np.array([7])), "do not occur"),
    ],
)
def test_bad_input_is_a_clear_error(make, message):
    with pytest.raises(LTMInputError, match=message):
        tiny_model().predict([make(np.random.default_rng(6))])


def test_per_row_loss_matches_interface():
    rng = np.random.default_rng(7)
    t = cls_task(rng)
    model = tiny_model()
    from iclmem.ltm.reference import collate_tasks

    batch = collate_tasks([t], TINY)
    logits = model.network(**batch)
    n_c = len(t.context_x)
    y = batch["y"].clone()
    y[0, n_c:] = torch.as_tensor(np.searchsorted(t.classes(), t.query_y), dtype=torch.float32)
    rows = per_row_loss(
        logits, y, batch["is_regression"], torch.tensor([3]), TINY.max_classes, TINY.n_bins, TINY.bin_bound
    )
    assert torch.allclose(rows[0, n_c:], model.predict([t])[0].loss(), atol=1e-5)


def test_thread_count_comes_from_the_environment(monkeypatch):
    from iclmem.runtime.threads import THREADS_ENV, configure_threads

    before = torch.get_num_threads()
    try:
        monkeypatch.setenv(THREADS_ENV, "2")
        assert configure_threads() == 2 and torch.get_num_threads() == 2
        monkeypatch.setenv(THREADS_ENV, "1")
        load_reference()  # loading the model applies it
        assert torch.get_num_threads() == 1
        monkeypatch.delenv(THREADS_ENV)
        assert configure_threads() == 1  # unset: left as it is
        for bad in ("0", "two", "-1"):
            monkeypatch.setenv(THREADS_ENV, bad)
            with pytest.raises(ValueError, match="positive integer"):
                configure_threads()
    finally:
        torch.set_num_threads(before)


def test_shipped_reference_loads_with_its_card_and_learns_in_context():
    """The committed checkpoint: hash checked against its card, and a genuine in-context learner
    (breast_cancer, 3 splits: mean ROC AUC 0.98 for stage 1 and for stage 2, 0.5 for a model that ignores the
    context)."""
    from iclmem.ltm.quality import encode, load_table, ltm_predict, split_table
    from iclmem.ltm.reference import REFERENCE_CARD

    model = load_reference()
    card = json.loads(REFERENCE_CARD.read_text())
    assert model.checkpoint_sha256 == card["sha256"] and card["steps_done"] >= 1500
    assert LTMConfig(**card["architecture"]) == model.cfg
    from sklearn.metrics import roc_auc_score

    table, aucs = load_table("breast_cancer"), []
    for seed in range(3):
        train, test = split_table(table, seed)
        xtr, xte = encode(table, train, test)
        proba = ltm_predict(model, xtr, table.target[train], xte, "classification")["proba"]
        aucs.append(roc_auc_score(table.target[test] == 1, proba[:, 1]))
    assert np.mean(aucs) > 0.95, aucs


def _with_copies(t: ICLTask, rng: np.random.Generator) -> ICLTask:
    """The task with its context rows repeated unevenly (1 to 4 copies each), shuffled, plus one NaN cell."""
    reps = rng.integers(1, 5, size=len(t.context_x))
    cx, cy = np.repeat(t.context_x, reps, axis=0), np.repeat(t.context_y, reps)
    cx[cx[:, 0] == cx[0, 0], 1] = np.nan  # a missing cell on every copy of the first row
    order = rng.permutation(len(cx))
    return ICLTask(cx[order], cy[order], t.query_x, t.query_y, t.task, t.target_center, t.target_scale)


@pytest.mark.parametrize("make", [cls_task, reg_task])
def test_merged_duplicate_rows_equal_every_row_with_gradients(make):
    """Merging identical context rows (weighted by their count) gives the predictions and gradients of the full
    context."""
    rng = np.random.default_rng(11)
    tasks = [_with_copies(make(rng, n_ctx=12), rng), _with_copies(make(rng, n_ctx=7), rng)]  # two sizes: padding
    full = tiny_model(3)
    full.merge_rows = False
    merged = tiny_model(3)
    assert merged.merge_rows  # the default
    batch = collate_tasks(tasks, TINY, merge_rows=True)
    assert int(batch["ctx_mask"].sum()) == 12 + 7  # one row per distinct row
    assert float(batch["ctx_count"][batch["ctx_mask"]].sum()) == sum(len(t.context_x) for t in tasks)
    grads = []
    for model in (full, merged):
        preds = model.predict(tasks, grad=True)
        loss = sum(p.loss().mean() for p in preds)
        model.network.zero_grad()
        loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.network.parameters() if p.grad is not None]))
        if model is full:
            probs = [p.probabilities() for p in preds]
    for p, q in zip(probs, [p.probabilities() for p in merged.predict(tasks)], strict=True):
        assert np.allclose(p, q, atol=1e-5)
    assert torch.allclose(grads[0], grads[1], atol=1e-4, rtol=1e-3)


def _full_attention_forward(net: TabularICLTransformer, batch: dict) -> torch.Tensor:
    """The network as first written: every row projected to q, k and v, attention over all R rows masked to the
    context."""
    import torch.nn.functional as F

    def attend(block, x, qkv, out, mask):
        n, t, d = x.shape
        q, k, v = qkv(x).view(n, t, 3, block.n_heads, d // block.n_heads).permute(2, 0, 3, 1, 4)
        return out(F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(n, t, d))

    captured = {}

    def run_blocks(block, h, fm, key_mask, n_keys):  # replaces _Block.forward, ignoring the key slicing
        b, r, c, d = h.shape
        ctx, feat = captured["ctx"], captured["feat"]
        xf = h.reshape(b * r, c, d)
        fmask = feat[:, None, None, None, :].expand(b, r, 1, 1, c).reshape(b * r, 1, 1, c)
        xf = xf + attend(block, block.norm_feat(xf), block.qkv_feat, block.out_feat, fmask)
        xr = xf.view(b, r, c, d).transpose(1, 2).reshape(b * c, r, d)
        rmask = ctx[:, None, None, None, :].expand(b, c, 1, 1, r).reshape(b * c, 1, 1, r)
        xr = xr + attend(block, block.norm_row(xr), block.qkv_row, block.out_row, rmask)
        xr = xr + block.ff(block.norm_ff(xr))
        return xr.view(b, c, r, d).transpose(1, 2)

    captured["ctx"] = batch["ctx_mask"]
    captured["feat"] = torch.cat([batch["feat_mask"], torch.ones(len(batch["feat_mask"]), 1, dtype=torch.bool)], dim=1)
    originals = [(blk.forward, blk.target_cells) for blk in net.blocks]
    try:
        for blk in net.blocks:
            blk.forward = lambda h, fm, km, nk, blk=blk: run_blocks(blk, h, fm, km, nk)
            blk.target_cells = lambda h, fm, km, nk, blk=blk: run_blocks(blk, h, fm, km, nk)[:, :, -1]
        return net(**batch)
    finally:
        for blk, (fwd, target) in zip(net.blocks, originals, strict=True):
            blk.forward, blk.target_cells = fwd, target


def test_key_sliced_row_attention_equals_full_masked_attention():
    """Keys from the context block only (no mask when unpadded) give the outputs of attention over all rows, masked."""
    rng = np.random.default_rng(12)
    model = tiny_model(4)
    tasks = [cls_task(rng, n_ctx=9, n_q=4, f=3), cls_task(rng, n_ctx=5, n_q=7, f=2), reg_task(rng, n_ctx=9, n_q=2, f=3)]
    for group in (tasks[:1], tasks):  # one task (no mask at all) and a padded batch (rows and features)
        batch = collate_tasks(group, TINY)
        with torch.no_grad():
            fast, full = model.network(**batch), _full_attention_forward(model.network, batch)
        start = int(batch["ctx_mask"].sum(1).max())
        assert torch.allclose(fast[:, start:], full[:, start:], atol=1e-5)


def test_last_layer_on_target_cells_equals_the_full_layer_forward_and_backward():
    """The last layer computed on the target cells only gives the full layer's decoded outputs and gradients."""
    rng = np.random.default_rng(13)
    tasks = [cls_task(rng, n_ctx=9, n_q=4, f=3), reg_task(rng, n_ctx=6, n_q=5, f=2)]
    tasks[0] = ICLTask(
        np.vstack([tasks[0].context_x, tasks[0].context_x[:3]]),
        np.concatenate([tasks[0].context_y, tasks[0].context_y[:3]]),
        tasks[0].query_x,
        tasks[0].query_y,
    )  # duplicated rows: merged, an additive key mask
    model = tiny_model(5)
    batch = collate_tasks(tasks, TINY, merge_rows=True)
    assert batch["ctx_count"] is not None and float(batch["ctx_count"].max()) > 1
    net = model.network
    last = net.blocks[-1]
    pruned = last.target_cells
    outputs, grads = [], []
    for full in (False, True):
        if full:
            last.target_cells = lambda h, fm, km, nk: last.forward(h, fm, km, nk)[:, :, -1]
        try:
            net.zero_grad()
            out = net(**batch)
            (out[torch.isfinite(out)] ** 2).sum().backward()
        finally:
            last.target_cells = pruned
        outputs.append(out.detach())
        grads.append({n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None})
    finite = torch.isfinite(outputs[1])
    assert torch.equal(finite, torch.isfinite(outputs[0]))
    assert torch.allclose(outputs[0][finite], outputs[1][finite], atol=1e-5)
    assert grads[0].keys() == grads[1].keys() and any("blocks.1.ff" in n for n in grads[0])
    for name, g in grads[1].items():
        assert torch.allclose(grads[0][name], g, atol=1e-5, rtol=1e-4), name


def test_an_ltm_without_layers_is_refused():
    with pytest.raises(ValueError, match="at least one layer"):
        LTMConfig(n_layers=0)


def test_stage_four_prior_draws_small_contexts_scaled_on_the_table_and_leaves_earlier_stages_unchanged():
    """Issue 53: contexts of 2-15 rows (the probe's |Y|-row contexts), scaled on population rows; share 0 replays."""
    from dataclasses import replace
    from pathlib import Path

    from iclmem.ltm.pretrain import PretrainConfig, _context_rows
    from iclmem.ltm.prior import PriorConfig, sample_table

    small = PriorConfig(small_context_share=1.0, small_context_min=2, population_rows=128)
    sizes = [_context_rows(np.random.default_rng([3, s]), small) for s in range(300)]
    assert {n for n, _ in sizes} <= set(range(2, 16)) and min(n for n, _ in sizes) == 2
    assert {pop for _, pop in sizes} == {128}
    old = PriorConfig()
    assert all(
        _context_rows(np.random.default_rng([0, s]), old)[1] is None
        and _context_rows(np.random.default_rng([0, s]), old)
        == _context_rows(np.random.default_rng([0, s]), replace(old, small_context_min=3))
        for s in range(50)
    )
    # stats_rows = the context (the default) draws the table it always drew
    a = sample_table(np.random.default_rng(5), old, 40, 10, 6, False)
    b = sample_table(np.random.default_rng(5), old, 40, 10, 6, False, stats_rows=40)
    assert np.array_equal(a.x, b.x, equal_nan=True) and np.array_equal(a.y, b.y)
    # a 2-row context scaled on 128 rows of its table: two classes, and features not forced to the context's centre
    cfg = replace(old, missing_share=0.0, categorical_share=0.0)
    tables = [sample_table(np.random.default_rng([7, i]), cfg, 2, 8, 5, False, stats_rows=128) for i in range(20)]
    assert all(t.n_context == 2 and len(np.unique(t.y[:2])) == 2 for t in tables)
    spread = np.mean([np.abs(t.x[:2].mean(axis=0)).mean() for t in tables])
    assert spread > 0.2  # scaled on the context alone, the two rows' mean would be 0 in every column
    with pytest.raises(ValueError, match="small_context_min"):
        PriorConfig(small_context_min=20)
    cfg4 = PretrainConfig.from_yaml(Path(__file__).parents[2] / "configs" / "pretrain_reference_stage4.yaml")
    assert cfg4.prior.small_context_share > 0 and cfg4.init_from.endswith("stage3-state.pt")
