"""Greedy batch decoding of prompts that share a long prefix, with the prefix's keys and values read once per step.

Paper 2's k-shot prompts (Sec. 3) share everything up to the instance: the instruction and the k
demonstrations, thousands of tokens, while each instance adds a few dozen. The in-process backend
keeps the shared prefix's key/value cache once (:class:`iclmem.llm.backends.InProcessBackend`).
Hugging Face's attention needs that cache once *per batch row*, so a batch of 8 copies it 8 times
and every decoding step concatenates the grown copies again. This module computes attention in
two parts instead (*cascade* attention):

* scores of every row's queries against the **shared prefix**, one matrix product per layer that
  reads the prefix's keys and values once for the whole batch, and
* scores against the row's **own suffix** (its prompt end and the tokens generated so far), from
  a preallocated per-row cache written in place;

then one softmax over both parts, so the result is the attention over the concatenated sequence.
The rest of each layer (norms, projections, rotary embedding, MLP) is the model's own modules, so
weights are shared with the loaded model. Supported: Llama-family causal LMs (SmolLM2); other
models take the backend's plain path. ``tests/test_llm_decoding.py`` checks logits and greedy
tokens against the model's own forward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

#: model types whose decoder layers this module drives (input norm, q/k/v/o projections, rotary, MLP)
SUPPORTED_MODEL_TYPES: tuple[str, ...] = ("llama",)


def supports(model: Any) -> bool:
    """Whether ``model`` is a causal LM this decoder can drive (a Llama-family ``*ForCausalLM``)."""
    config = getattr(model, "config", None)
    inner = getattr(model, "model", None)
    return (
        getattr(config, "model_type", None) in SUPPORTED_MODEL_TYPES
        and hasattr(inner, "layers")
        and hasattr(inner, "rotary_emb")
        and hasattr(model, "lm_head")
    )


@dataclass
class _Layer:
    """One layer's shared prefix ``(kv_heads, P, head_dim)`` and per-row suffix caches ``(B, kv_heads, T,
    head_dim)``."""

    prefix_k: torch.Tensor
    prefix_v: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor


class SharedPrefixDecoder:
    """Batch decoding over one shared prefix cache; :meth:`start` feeds the prompt ends, :meth:`step` one token per row.

    ``prefix``: per layer ``(keys, values)`` of shape ``(1, kv_heads, P, head_dim)`` (a Hugging Face
    cache's layers), or None for no prefix. ``suffixes``: each row's prompt tokens after the prefix
    (at least one). ``max_new``: the most tokens a row will generate.
    """

    def __init__(
        self,
        model: Any,
        prefix: list[tuple[torch.Tensor, torch.Tensor]] | None,
        prefix_len: int,
        suffixes: list[list[int]],
        max_new: int,
        pad_id: int = 0,
    ) -> None:
        if not supports(model):
            kind = getattr(model.config, "model_type", type(model).__name__)
            raise ValueError(
                f"SharedPrefixDecoder drives {SUPPORTED_MODEL_TYPES} models; got {kind!r}. "
                "Use the model's own generate."
            )
        if any(len(s) == 0 for s in suffixes):
            raise ValueError("every row needs at least one prompt token after the shared prefix")
        cfg = model.config
        self.model = model
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.group = self.heads // self.kv_heads
        self.prefix_len = int(prefix_len)
        self.batch = len(suffixes)
        self.width = max(len(s) for s in suffixes)
        self.capacity = self.width + max(0, int(max_new))
        dtype = model.lm_head.weight.dtype
        b, kvh, d = self.batch, self.kv_heads, self.head_dim
        self.layers = []
        for i in range(len(model.model.layers)):
            if prefix is not None and self.prefix_len:
                pk, pv = prefix[i]
                pk, pv = pk[0, :, : self.prefix_len], pv[0, :, : self.prefix_len]
            else:
                pk = pv = torch.zeros((kvh, 0, d), dtype=dtype)
            self.layers.append(
                _Layer(
                    pk,
                    pv,
                    torch.zeros((b, kvh, self.capacity, d), dtype=dtype),
                    torch.zeros((b, kvh, self.capacity, d), dtype=dtype),
                )
            )
        # left padding: row r's suffix fills the last len(suffix) columns of the first `width` slots
        self.valid = torch.zeros((b, self.capacity), dtype=torch.bool)
        x = torch.full((b, self.width), pad_id, dtype=torch.long)
        pos = torch.zeros((b, self.width), dtype=torch.long)
        for r, suf in enumerate(suffixes):
            start = self.width - len(suf)
            x[r, start:] = torch.tensor(suf, dtype=torch.long)
            self.valid[r, start : self.width] = True
            pos[r, start:] = torch.arange(self.prefix_len, self.prefix_len + len(suf))
        self._x, self._pos = x, pos
        self.next_pos = torch.tensor([self.prefix_len + len(s) for s in suffixes], dtype=torch.long)
        self.filled = 0

    # ------------------------------------------------------------------------------------------------
    def start(self) -> torch.Tensor:
        """Feed every row's prompt end; returns the next-token logits ``(B, vocab)``."""
        return self._forward(self._x, self._pos)

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed one token per row (``(B,)``); returns the next-token logits ``(B, vocab)``."""
        if self.filled >= self.capacity:
            raise ValueError(f"the decoder was sized for {self.capacity - self.width} new tokens")
        self.valid[:, self.filled] = True
        logits = self._forward(tokens.reshape(self.batch, 1).long(), self.next_pos[:, None])
        self.next_pos = self.next_pos + 1
        return logits

    # ------------------------------------------------------------------------------------------------
    def _attend(self, q: torch.Tensor, layer: _Layer, t0: int, s: int, scaling: float) -> torch.Tensor:
        """Attention of ``q`` ``(B, heads, S, d)`` over the shared prefix and each row's suffix slots ``[0, t0+S)``."""
        b, kvh, g, d = self.batch, self.kv_heads, self.group, self.head_dim
        t = t0 + s
        qg = q.reshape(b, kvh, g, s, d)  # head h reads kv head h // group, as the model's repeat_kv does
        # shared prefix: one product per layer for the whole batch  (kvh, B*g*S, d) @ (kvh, d, P)
        q_flat = qg.permute(1, 0, 2, 3, 4).reshape(kvh, b * g * s, d)
        prefix_scores = (q_flat @ layer.prefix_k.transpose(-1, -2)).reshape(kvh, b, g, s, -1).permute(1, 0, 2, 3, 4)
        # own suffix  (B, kvh, g, S, d) @ (B, kvh, 1, d, T)
        own_scores = qg @ layer.k[:, :, :t].unsqueeze(2).transpose(-1, -2)
        slot = torch.arange(t)
        query_slot = t0 + torch.arange(s)
        allowed = self.valid[:, None, :t] & (slot[None, None, :] <= query_slot[None, :, None])  # (B, S, T)
        allowed = allowed | (slot[None, None, :] == query_slot[None, :, None])  # a padded row still sees itself
        own_scores = own_scores.masked_fill(~allowed[:, None, None], float("-inf"))
        probs = torch.softmax(torch.cat([prefix_scores, own_scores], -1) * scaling, dim=-1)
        p = self.prefix_len if layer.prefix_k.shape[1] else 0
        prefix_probs = probs[..., :p].permute(1, 0, 2, 3, 4).reshape(kvh, b * g * s, p)
        out = (prefix_probs @ layer.prefix_v).reshape(kvh, b, g, s, d).permute(1, 0, 2, 3, 4)
        out = out + probs[..., p:] @ layer.v[:, :, :t].unsqueeze(2)
        return out.reshape(b, kvh * g, s, d)

    def _forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        inner = self.model.model
        b, s = x.shape
        t0 = self.filled if s == 1 else 0
        h = inner.embed_tokens(x)
        cos, sin = inner.rotary_emb(h, pos)
        for block, layer in zip(inner.layers, self.layers, strict=True):
            attn = block.self_attn
            y = block.input_layernorm(h)
            q = attn.q_proj(y).view(b, s, self.heads, self.head_dim).transpose(1, 2)
            k = attn.k_proj(y).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
            v = attn.v_proj(y).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            layer.k[:, :, t0 : t0 + s] = k
            layer.v[:, :, t0 : t0 + s] = v
            out = self._attend(q, layer, t0, s, attn.scaling)
            h = h + attn.o_proj(out.transpose(1, 2).reshape(b, s, -1))
            h = h + block.mlp(block.post_attention_layernorm(h))
        self.filled = t0 + s
        return self.model.lm_head(inner.norm(h[:, -1]))


__all__ = ["SUPPORTED_MODEL_TYPES", "SharedPrefixDecoder", "supports"]
