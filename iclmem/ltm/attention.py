"""Scaled dot-product attention of the reference LTM, with a kernel for the many small attentions.

Each layer of the LTM (see :mod:`iclmem.ltm.model`) attends across the ~20 columns of every row
and, in probing, across the ~20 rows of every multiple-choice context (Sec. 4.2): thousands of
independent attentions of a few dozen tokens with 16-dimensional heads. torch's CPU kernel
(``F.scaled_dot_product_attention``, a flash kernel) pays a fixed cost per (batch, head) that
dominates at these sizes, where three batched matmuls and a softmax are faster
(``benchmarks/roofline.py`` measures a fine-tuning step; its results are in the book's appendix).
For large attentions (the 768 x 256 row attention of a fine-tuning step) the flash kernel is
faster and is kept.

:func:`attention` picks the kernel by size; both compute ``softmax(q k^T / sqrt(d) + mask) v``
and agree to float32 rounding (``tests/ltm/test_attention.py``).

torch's CPU softmax over a last dimension shorter than one vector register (16 floats with
AVX-512) takes a scalar path, about 8x slower per element than at 16 keys: the feature attention
of a narrow table (7 or 9 features) and the row attention of a 10-row multiple-choice context
fall there. Below :data:`VECTOR_KEYS` keys the softmax and its backward are written out
(:func:`softmax_last`, :func:`softmax_last_backward`), 2.6-3x faster for the whole attention at
those sizes (``benchmarks/softmax_keys.py``). The rule is a fixed key count, not a timing taken at
run time, so the same input always takes the same path and gives the same numbers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

#: Attentions with at most this many (query, key) pairs per head use :class:`SmallAttention`
#: (the crossover between the two kernels, measured with ``benchmarks/roofline.py``).
SMALL_ATTENTION_PAIRS = 128 * 128
#: Below this many keys the softmax is written out (:func:`softmax_last`): torch's kernel vectorizes
#: the last dimension in blocks of 16 floats and is several times slower below one block.
VECTOR_KEYS = 16


def softmax_last(scores: torch.Tensor) -> torch.Tensor:
    """softmax over the last dimension; below :data:`VECTOR_KEYS` keys by max, exp and sum (in place when no
    gradient is tracked; out of place, the max detached, when autograd must differentiate it)."""
    if scores.shape[-1] >= VECTOR_KEYS:
        return torch.softmax(scores, dim=-1)
    top = scores.amax(dim=-1, keepdim=True)
    if scores.requires_grad:
        e = (scores - top.detach()).exp()
        return e / e.sum(dim=-1, keepdim=True)
    e = scores.sub_(top).exp_()
    return e.div_(e.sum(dim=-1, keepdim=True))


def softmax_last_backward(grad: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """The gradient of the scores, given the gradient of ``p = softmax_last(scores)``: p * (grad - sum(grad * p))."""
    if p.shape[-1] >= VECTOR_KEYS:
        return torch._softmax_backward_data(grad, p, -1, p.dtype)
    return (grad - (grad * p).sum(dim=-1, keepdim=True)).mul_(p)


def additive_bias(mask: torch.Tensor | None, heads: int) -> torch.Tensor | None:
    """A (N, 1, 1, K) attention mask (bool: True attends; float: added to the scores) as a (N * heads, 1, K) float
    bias."""
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).masked_fill_(~mask, float("-inf"))
    n, k = mask.shape[0], mask.shape[-1]
    return mask.reshape(n, 1, 1, k).expand(n, heads, 1, k).reshape(n * heads, 1, k)


def attention_weights(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """softmax(q k^T / sqrt(d) + bias) of (B, T, d) queries and (B, K, d) keys: (B, T, K)."""
    scale = q.shape[-1] ** -0.5
    scores = (
        torch.bmm(q, k.transpose(1, 2)).mul_(scale)
        if bias is None
        else torch.baddbmm(bias, q, k.transpose(1, 2), alpha=scale)
    )
    return softmax_last(scores)


class SmallAttention(torch.autograd.Function):
    """softmax(q k^T * scale + bias) v on (B, T, d) tensors, by batched matmuls; backward by hand.

    The hand-written backward keeps every matmul on contiguous (or plainly transposed) operands;
    autograd's own backward of the same expression was 3-5x slower here (per-matrix fallbacks).
    """

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:  # noqa: D102
        p = attention_weights(q, k, bias)
        ctx.save_for_backward(q, k, v, p)
        return torch.bmm(p, v)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):  # noqa: D102
        q, k, v, p = ctx.saved_tensors
        scale = q.shape[-1] ** -0.5
        grad_out = grad_out.contiguous()
        grad_v = torch.bmm(p.transpose(1, 2), grad_out)
        grad_p = torch.bmm(grad_out, v.transpose(1, 2))
        grad_s = softmax_last_backward(grad_p, p).mul_(scale)
        grad_q = torch.bmm(grad_s, k)
        grad_k = torch.bmm(grad_s.transpose(1, 2), q)
        return grad_q, grad_k, grad_v, None


def small_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """:func:`attention` by :class:`SmallAttention`: q (N, h, T, d), k and v (N, h, K, d) -> (N, h, T, d)."""
    n, h, t, d = q.shape
    q3, k3, v3 = (x.reshape(n * h, x.shape[2], d) for x in (q, k, v))
    bias = additive_bias(mask, h)
    if not torch.is_grad_enabled() or not (
        q.requires_grad or k.requires_grad or v.requires_grad
    ):  # probing: nothing to save
        return torch.bmm(attention_weights(q3, k3, bias), v3).view(n, h, t, d)
    return SmallAttention.apply(q3, k3, v3, bias).view(n, h, t, d)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Multi-head attention of q (N, h, T, d) over k, v (N, h, K, d); ``mask`` (N, 1, 1, K) bool or additive, or None.

    Small attentions (T * K <= :data:`SMALL_ATTENTION_PAIRS`) on the CPU go through
    :func:`small_attention`; the rest (and every attention on a GPU) through torch's fused kernel.
    """
    if q.device.type == "cpu" and q.shape[2] * k.shape[2] <= SMALL_ATTENTION_PAIRS:
        return small_attention(q, k, v, mask)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


__all__ = [
    "SMALL_ATTENTION_PAIRS",
    "VECTOR_KEYS",
    "SmallAttention",
    "additive_bias",
    "attention",
    "attention_weights",
    "small_attention",
    "softmax_last",
    "softmax_last_backward",
]
