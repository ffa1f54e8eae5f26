"""The small-attention kernel equals torch's fused attention, with and without masks, forward and backward."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclmem.ltm import ICLTask, LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.ltm import attention as attention_module
from iclmem.ltm.attention import SMALL_ATTENTION_PAIRS, attention, small_attention


def _qkv(n: int = 6, h: int = 4, t: int = 9, k: int = 7, d: int = 24, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, h, s, d, generator=g, requires_grad=True) for s in (t, k, k)]


def _masks(n: int = 6, k: int = 7) -> dict[str, torch.Tensor | None]:
    keep = torch.ones(n, 1, 1, k, dtype=torch.bool)
    keep[0, ..., 3:] = False  # a padded task: 3 keys
    keep[2, ..., -1] = False
    counts = torch.ones(n, k)
    counts[1, :2] = 3.0  # merged duplicate rows: additive log-multiplicity, -inf off the context
    additive = torch.where(keep[:, 0, 0], counts.log(), torch.full_like(counts, float("-inf")))
    return {"none": None, "bool": keep, "additive": additive[:, None, None, :]}


@pytest.mark.parametrize("mask_kind", ["none", "bool", "additive"])
def test_small_attention_equals_fused_attention_forward_and_backward(mask_kind):
    q, k, v = _qkv()
    mask = _masks()[mask_kind]
    grad = torch.randn(6, 4, 9, 24, generator=torch.Generator().manual_seed(1))
    ours = small_attention(q, k, v, mask)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.allclose(ours, theirs, atol=1e-6)
    g_ours = torch.autograd.grad(ours, (q, k, v), grad)
    g_theirs = torch.autograd.grad(theirs, (q, k, v), grad)
    for a, b in zip(g_ours, g_theirs, strict=True):
        assert torch.allclose(a, b, atol=1e-5)
    with torch.no_grad():  # the inference branch (probing) computes the same
        assert torch.allclose(small_attention(q, k, v, mask), theirs, atol=1e-6)


def test_small_attention_is_checked_against_autograd_on_its_own_backward():
    """The hand-written backward equals the numerical gradient (float64)."""
    q, k, v = (x.detach().double().requires_grad_() for x in _qkv(n=3, h=2, t=4, k=5, d=5))
    bias = _masks(n=3, k=5)["additive"].double()

    def fn(q, k, v):
        n, h, t, d = q.shape
        return attention_module.SmallAttention.apply(
            q.reshape(n * h, t, d),
            k.reshape(n * h, 5, d),
            v.reshape(n * h, 5, d),
            attention_module.additive_bias(bias, h),
        )

    assert torch.autograd.gradcheck(fn, (q, k, v))


def test_the_kernel_is_picked_by_size(monkeypatch):
    calls = []
    monkeypatch.setattr(
        attention_module, "small_attention", lambda *a: calls.append("small") or F.scaled_dot_product_attention(*a[:3])
    )
    q, k, v = _qkv(n=1, h=1, t=128, k=128, d=4)
    attention(q, k, v)
    assert calls == ["small"] and 128 * 128 <= SMALL_ATTENTION_PAIRS
    q, k, v = _qkv(n=1, h=1, t=256, k=128, d=4)
    attention(q, k, v)
    assert calls == ["small"]  # the large one went to the fused kernel


def _task(rng: np.random.Generator, n_ctx: int, n_q: int, f: int) -> ICLTask:
    context_y = np.arange(n_ctx) % 3  # every class in the context
    return ICLTask(rng.normal(size=(n_ctx, f)), context_y, rng.normal(size=(n_q, f)), rng.integers(0, 3, n_q))


def test_a_training_step_gives_the_same_loss_and_gradients_with_either_kernel(monkeypatch):
    """The whole LTM (padded batch, masks on both attentions): the small kernel vs the fused one everywhere."""
    rng = np.random.default_rng(3)
    tasks = [_task(rng, 12, 5, 4), _task(rng, 7, 9, 3)]  # two sizes: row and feature padding
    torch.manual_seed(0)
    model = ReferenceLTM(TabularICLTransformer(LTMConfig(d_model=32, n_heads=4, n_layers=2, d_ff=64, n_bins=16)))
    results = []
    for pairs in (SMALL_ATTENTION_PAIRS, 0):  # 0: every attention through the fused kernel
        monkeypatch.setattr(attention_module, "SMALL_ATTENTION_PAIRS", pairs)
        model.network.zero_grad()
        loss = sum(p.loss().mean() for p in model.predict(tasks, grad=True))
        loss.backward()
        results.append(
            (loss.detach(), torch.cat([p.grad.flatten() for p in model.network.parameters() if p.grad is not None]))
        )
    (loss_small, grad_small), (loss_fused, grad_fused) = results
    assert torch.allclose(loss_small, loss_fused, atol=1e-6)
    assert torch.allclose(grad_small, grad_fused, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("keys", [1, 2, 10, 15, 16, 19])
def test_the_softmax_below_one_vector_register_equals_torchs(keys):
    """softmax_last (written out below VECTOR_KEYS keys, torch's kernel from there) and its backward equal torch's,
    with -inf entries (masked keys), with and without autograd tracking."""
    g = torch.Generator().manual_seed(keys)
    scores = torch.randn(64, 7, keys, generator=g) * 4
    if keys > 1:
        scores[::3, :, -1] = float("-inf")  # a masked key
    expected = torch.softmax(scores, dim=-1)
    assert torch.allclose(attention_module.softmax_last(scores.clone()), expected, atol=1e-6)  # in place, no grad
    tracked = scores.clone().requires_grad_()
    p = attention_module.softmax_last(tracked)  # out of place: autograd differentiates it (privacy.plain_attention)
    grad = torch.randn(p.shape, generator=g)
    (ours,) = torch.autograd.grad(p, tracked, grad)
    (theirs,) = torch.autograd.grad(torch.softmax(tracked, -1), tracked, grad)
    assert torch.allclose(p, expected, atol=1e-6)
    assert torch.allclose(ours, theirs, atol=1e-5)
    assert torch.allclose(attention_module.softmax_last_backward(grad, expected), theirs, atol=1e-5)


def test_the_written_out_softmax_is_what_small_contexts_take(monkeypatch):
    """Below VECTOR_KEYS keys torch.softmax is not called; at VECTOR_KEYS and above it is."""
    calls = []
    real = torch.softmax
    monkeypatch.setattr(torch, "softmax", lambda *a, **k: calls.append(a[0].shape[-1]) or real(*a, **k))
    attention_module.softmax_last(torch.randn(3, 4, 10))
    attention_module.softmax_last(torch.randn(3, 4, 16))
    assert calls == [16]
