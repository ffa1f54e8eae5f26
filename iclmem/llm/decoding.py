"""Greedy decoding of prompts that share a long prefix: the prefix's keys and values read once per step, and
continuous batching (a row that has ended is refilled from the queue at once).

Paper 2's k-shot prompts (Sec. 3) share everything up to the instance: the instruction and the k
demonstrations, thousands of tokens, while each instance adds a few dozen. The in-process backend
keeps the shared prefix's key/value cache once (:class:`iclmem.llm.backends.InProcessBackend`).
Hugging Face's attention needs that cache once *per batch row*, so a batch of 8 copies it 8 times
and every decoding step concatenates the grown copies again. This module computes attention in
two parts instead (*cascade* attention):

* every row's queries against the **shared prefix**: one attention per layer (batch 1, the rows'
  queries stacked) that reads the prefix's keys and values once for the whole batch, with its
  log-sum-exp (torch's fused CPU attention where it exists, else a matrix product and softmax), and
* against the row's **own suffix** (its prompt end and the tokens generated so far), from a
  preallocated cache of ``slots`` rows written in place, each row at its own length;

then the two parts are merged by their log-sum-exps, which is the softmax over the concatenated
sequence. The rest of each layer (norms, projections, rotary embedding, MLP) is the model's own
modules, so weights are shared with the loaded model. Supported: Llama-family causal LMs (SmolLM2);
other models take the backend's plain path.

:class:`SharedPrefixDecoder` works on *slots*: :meth:`~SharedPrefixDecoder.admit` feeds the prompt
ends of some slots (resetting them), :meth:`~SharedPrefixDecoder.step` one token for each of the
listed slots, so a row that has ended costs nothing and its slot takes the next prompt.
:func:`continuous_greedy` is the scheduler: greedy tokens, stop tokens and stop strings, and a row
handed over as soon as it ends. A row's tokens depend on its own prompt only; which rows share its
forward changes the order of floating-point sums (last digits), not the computation.
``tests/llm/test_llm_decoding.py`` checks logits against the model's own forward and continuous batches
against one prompt at a time; ``benchmarks/llm_decoding.py`` measures the batch sizes and llama.cpp.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

#: model types whose decoder layers this module drives (input norm, q/k/v/o projections, rotary, MLP)
SUPPORTED_MODEL_TYPES: tuple[str, ...] = ("llama",)

#: at most this many prompt-end tokens go through one admitting forward (bounds its attention's memory)
ADMIT_TOKENS = 512

_FUSED = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


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


def prefix_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention of ``q`` ``(kv_heads, M, d)`` over ``k``, ``v`` ``(kv_heads, P, d)``, unmasked; returns the
    output ``(kv_heads, M, d)`` and the log-sum-exp of the scaled scores ``(kv_heads, M)``."""
    if _FUSED is not None and q.device.type == "cpu":
        out, lse = _FUSED(q[None], k[None], v[None], scale=scale)
        return out[0], lse[0]
    scores = (q @ k.transpose(-1, -2)) * scale
    lse = torch.logsumexp(scores, -1)
    return torch.exp(scores - lse[..., None]) @ v, lse


@dataclass
class _Layer:
    """A layer's shared prefix ``(kv_heads, P, head_dim)``, slot caches ``(slots, kv_heads, capacity, head_dim)``."""

    prefix_k: torch.Tensor
    prefix_v: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor


class SharedPrefixDecoder:
    """``slots`` rows decoded over one shared prefix cache, each slot at its own length.

    ``prefix``: per layer ``(keys, values)`` of shape ``(1, kv_heads, P, head_dim)`` (a Hugging Face
    cache's layers), or None for no prefix. ``capacity``: the most tokens a slot holds after the
    prefix (its prompt end plus the tokens it generates).
    """

    def __init__(
        self,
        model: Any,
        prefix: list[tuple[torch.Tensor, torch.Tensor]] | None,
        prefix_len: int,
        slots: int,
        capacity: int,
    ) -> None:
        if not supports(model):
            kind = getattr(model.config, "model_type", type(model).__name__)
            raise ValueError(
                f"SharedPrefixDecoder drives {SUPPORTED_MODEL_TYPES} models; got {kind!r}. "
                "Use the model's own generate."
            )
        if slots < 1 or capacity < 1:
            raise ValueError(f"slots and capacity must be >= 1, got {slots} and {capacity}")
        cfg = model.config
        self.model = model
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.group = self.heads // self.kv_heads
        self.prefix_len = int(prefix_len) if prefix is not None else 0
        self.slots = int(slots)
        self.capacity = int(capacity)
        dtype = model.lm_head.weight.dtype
        shape = (self.slots, self.kv_heads, self.capacity, self.head_dim)
        self.layers = []
        for i in range(len(model.model.layers)):
            if self.prefix_len:
                pk, pv = prefix[i]  # type: ignore[index]
                pk, pv = pk[0, :, : self.prefix_len], pv[0, :, : self.prefix_len]
            else:
                pk = pv = torch.zeros((self.kv_heads, 0, self.head_dim), dtype=dtype)
            self.layers.append(_Layer(pk, pv, torch.zeros(shape, dtype=dtype), torch.zeros(shape, dtype=dtype)))
        self.lengths = torch.zeros(self.slots, dtype=torch.long)  # tokens held by each slot after the prefix

    # ------------------------------------------------------------------------------------------------
    def admit(self, rows: Sequence[int], suffixes: Sequence[Sequence[int]]) -> torch.Tensor:
        """Reset slots ``rows`` and feed each its prompt tokens after the prefix (at least one); returns their
        next-token logits ``(len(rows), vocab)``. Rows go through in forwards of at most :data:`ADMIT_TOKENS`
        padded tokens."""
        if len(rows) != len(suffixes):
            raise ValueError(f"{len(rows)} rows for {len(suffixes)} prompts")
        if any(len(s) == 0 for s in suffixes):
            raise ValueError("every row needs at least one prompt token after the shared prefix")
        over = [len(s) for s in suffixes if len(s) > self.capacity]
        if over:
            raise ValueError(f"a prompt end of {max(over)} tokens does not fit a slot of {self.capacity}")
        out, start = [], 0
        while start < len(rows):
            stop = start + 1
            while stop < len(rows) and (stop + 1 - start) * max(map(len, suffixes[start : stop + 1])) <= ADMIT_TOKENS:
                stop += 1
            out.append(self._admit(rows[start:stop], suffixes[start:stop]))
            start = stop
        return torch.cat(out) if out else torch.zeros((0, self.model.config.vocab_size))

    def step(self, rows: Sequence[int], tokens: torch.Tensor) -> torch.Tensor:
        """Feed one token (``tokens``, ``(len(rows),)``) to each slot of ``rows``; returns their next-token logits."""
        idx = torch.as_tensor(list(rows), dtype=torch.long)
        if bool((self.lengths[idx] >= self.capacity).any()):
            raise ValueError(f"a slot is full: the decoder was sized for {self.capacity} tokens after the prefix")
        cols = self.lengths[idx]
        x = tokens.reshape(len(idx), 1).long()
        t = int(cols.max()) + 1
        allowed = (torch.arange(t)[None, :] <= cols[:, None])[:, None, :]  # (n, 1, t)
        h = self._forward(x, self.prefix_len + cols[:, None], idx, cols[:, None], t, allowed)
        self.lengths[idx] = cols + 1
        return self.model.lm_head(self.model.model.norm(h[:, 0]))

    # ------------------------------------------------------------------------------------------------
    def _admit(self, rows: Sequence[int], suffixes: Sequence[Sequence[int]]) -> torch.Tensor:
        idx = torch.as_tensor(list(rows), dtype=torch.long)
        n, s = len(rows), max(map(len, suffixes))
        x = torch.zeros((n, s), dtype=torch.long)  # right padding: a padded column is seen by padded queries only
        for r, suf in enumerate(suffixes):
            x[r, : len(suf)] = torch.as_tensor(list(suf), dtype=torch.long)
        cols = torch.arange(s)
        allowed = (cols[None, :] <= cols[:, None])[None].expand(n, s, s)  # causal
        h = self._forward(x, (self.prefix_len + cols)[None].expand(n, s), idx, cols[None].expand(n, s), s, allowed)
        ends = torch.as_tensor([len(suf) for suf in suffixes], dtype=torch.long)
        self.lengths[idx] = ends
        return self.model.lm_head(self.model.model.norm(h[torch.arange(n), ends - 1]))

    def _attend(
        self, q: torch.Tensor, layer: _Layer, idx: torch.Tensor, t: int, allowed: torch.Tensor, scale: float
    ) -> torch.Tensor:
        """Attention of ``q`` ``(n, heads, S, d)`` over the shared prefix and slots ``idx``' columns ``[0, t)``."""
        n, s = q.shape[0], q.shape[2]
        kvh, g, d = self.kv_heads, self.group, self.head_dim
        qg = q.reshape(n, kvh, g * s, d)  # head h reads kv head h // group, as the model's repeat_kv does
        own = (qg @ layer.k[idx, :, :t].transpose(-1, -2)) * scale  # (n, kvh, g*S, t)
        mask = allowed[:, None, None].expand(n, 1, g, s, t).reshape(n, 1, g * s, t)
        own = own.masked_fill(~mask, float("-inf"))
        own_lse = torch.logsumexp(own, -1)
        own_out = torch.exp(own - own_lse[..., None]) @ layer.v[idx, :, :t]
        if not self.prefix_len:
            return own_out.reshape(n, kvh * g, s, d)
        q_flat = qg.transpose(0, 1).reshape(kvh, n * g * s, d)  # every row's queries: one product per layer
        pre_out, pre_lse = prefix_attention(q_flat, layer.prefix_k, layer.prefix_v, scale)
        pre_out = pre_out.reshape(kvh, n, g * s, d).transpose(0, 1)
        pre_lse = pre_lse.reshape(kvh, n, g * s).transpose(0, 1)
        top = torch.maximum(pre_lse, own_lse)
        w_pre, w_own = torch.exp(pre_lse - top), torch.exp(own_lse - top)
        out = (pre_out * w_pre[..., None] + own_out * w_own[..., None]) / (w_pre + w_own)[..., None]
        return out.reshape(n, kvh * g, s, d)

    def _forward(
        self, x: torch.Tensor, pos: torch.Tensor, idx: torch.Tensor, cols: torch.Tensor, t: int, allowed: torch.Tensor
    ) -> torch.Tensor:
        """Run ``x`` ``(n, S)`` at positions ``pos`` through every layer, writing keys and values into slots ``idx``
        at columns ``cols`` ``(n, S)``; queries see the columns where ``allowed`` ``(n, S, t)``."""
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        inner = self.model.model
        n, s = x.shape
        rows = idx[:, None].expand(n, s)
        h = inner.embed_tokens(x)
        cos, sin = inner.rotary_emb(h, pos)
        for block, layer in zip(inner.layers, self.layers, strict=True):
            attn = block.self_attn
            y = block.input_layernorm(h)
            q = attn.q_proj(y).view(n, s, self.heads, self.head_dim).transpose(1, 2)
            k = attn.k_proj(y).view(n, s, self.kv_heads, self.head_dim).transpose(1, 2)
            v = attn.v_proj(y).view(n, s, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            layer.k[rows, :, cols] = k.transpose(1, 2)  # (n, S, kvh, d) into (slot, :, column)
            layer.v[rows, :, cols] = v.transpose(1, 2)
            out = self._attend(q, layer, idx, t, allowed, attn.scaling)
            h = h + attn.o_proj(out.transpose(1, 2).reshape(n, s, -1))
            h = h + block.mlp(block.post_attention_layernorm(h))
        return h


# ----------------------------------------------------------------------------------------------------------
@dataclass
class Row:
    """One prompt to decode: its tokens after the shared prefix, its token budget and its stop strings."""

    suffix: list[int]
    max_new_tokens: int
    stop: tuple[str, ...] = ()


def continuous_greedy(
    decoder: SharedPrefixDecoder,
    rows: Sequence[Row],
    stop_token_ids: set[int],
    detokenize: Callable[[list[int]], str],
    apply_stop: Callable[[str, Sequence[str]], tuple[str, bool]],
    refill: bool = True,
) -> Iterator[tuple[int, str, list[int]]]:
    """Greedy decoding of ``rows`` in ``decoder``'s slots; yields ``(row index, text, new token ids)`` as each row ends.

    A row ends at a stop token (not kept), at ``max_new_tokens`` tokens, or when its text holds a stop string
    (``apply_stop(text, stop)`` gives the cut text and whether one was found). With ``refill`` a slot whose row
    has ended takes the next queued row before the next step (continuous batching); without it, the next rows
    wait until every slot is free (static batches of ``decoder.slots``). Work runs in inference mode, entered per
    step: the consumer runs between yields outside it.
    """
    queue = [i for i, r in enumerate(rows)]
    for i in [i for i in queue if rows[i].max_new_tokens <= 0]:
        queue.remove(i)
        yield i, apply_stop("", rows[i].stop)[0], []
    queue.reverse()  # pop() takes the first
    free = list(range(decoder.slots - 1, -1, -1))
    live: dict[int, int] = {}  # slot -> row index
    new: dict[int, list[int]] = {}
    nxt: dict[int, int] = {}  # slot -> its next token, argmax of its last logits
    while queue or live:
        with torch.inference_mode():
            admitted = []
            if free and queue and (refill or not live):
                while free and queue:
                    admitted.append((free.pop(), queue.pop()))
                logits = decoder.admit([s for s, _ in admitted], [rows[i].suffix for _, i in admitted])
                for (slot, i), tok in zip(admitted, logits.argmax(-1).tolist(), strict=True):
                    live[slot], new[i], nxt[slot] = i, [], tok
            stepping = [s for s in live if (s, live[s]) not in admitted]
            if stepping:
                logits = decoder.step(stepping, torch.as_tensor([nxt[s] for s in stepping]))
                for slot, tok in zip(stepping, logits.argmax(-1).tolist(), strict=True):
                    nxt[slot] = tok
        ended = []
        for slot in sorted(live):  # the token chosen last for each live row: keep it or end the row
            i, tok = live[slot], nxt[slot]
            if tok in stop_token_ids:
                ended.append((slot, i, detokenize(new[i])))
                continue
            new[i].append(tok)
            text = detokenize(new[i])
            if len(new[i]) >= rows[i].max_new_tokens or apply_stop(text, rows[i].stop)[1]:
                ended.append((slot, i, text))
        for slot, i, text in ended:
            del live[slot], nxt[slot]
            free.append(slot)
            yield i, apply_stop(text, rows[i].stop)[0], new.pop(i)


__all__ = [
    "ADMIT_TOKENS",
    "SUPPORTED_MODEL_TYPES",
    "Row",
    "SharedPrefixDecoder",
    "continuous_greedy",
    "prefix_attention",
    "supports",
]
