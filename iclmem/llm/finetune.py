"""Controlled ground truth (beyond the paper): fine-tune the small model on a known member set.

The paper cannot tell which instances GPT-4 saw in training (its Sec. 4 "Data" relies on a contamination
pilot study). Here the in-process model is fully fine-tuned, as a causal language model, on the raw text
of the member instances for a few epochs; non-members never enter training. Memorization surfaced by the
k-shot prompts can then be compared between members and non-members, and against the model before
fine-tuning.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from iclmem.llm.datasets import stable_int


@dataclass(frozen=True)
class LLMFinetuneConfig:
    """Full fine-tuning with AdamW; one optimizer step per batch of ``batch_size`` member texts."""

    epochs: int = 6
    lr: float = 1e-4
    batch_size: int = 8
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    seed: int = 0

    def tag(self, texts: Sequence[str]) -> str:
        """A short id of the fine-tuned weights: config plus the member texts (part of cache keys)."""
        payload = repr((sorted(asdict(self).items()), sorted(texts)))
        return f"ft{stable_int(payload) % 16**10:010x}"


@dataclass
class FinetuneResult:
    model: Any
    model_id: str
    epoch_losses: list[float] = field(default_factory=list)
    n_texts: int = 0
    n_tokens: int = 0


def finetune(
    model: Any, tokenizer: Any, texts: Sequence[str], config: LLMFinetuneConfig, base_id: str
) -> FinetuneResult:
    """Return a fine-tuned copy of ``model`` (the original is left untouched) trained on ``texts``."""
    import torch

    with torch.inference_mode(False), torch.enable_grad():
        return _finetune(model, tokenizer, texts, config, base_id)


def _finetune(
    model: Any, tokenizer: Any, texts: Sequence[str], config: LLMFinetuneConfig, base_id: str
) -> FinetuneResult:
    import torch

    if not texts:
        raise ValueError("fine-tuning needs at least one member text")
    if config.epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {config.epochs}")
    torch.manual_seed(config.seed)
    tuned = copy.deepcopy(model).float().train()
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    if eos is None or eos == tokenizer.unk_token_id:
        eos = tokenizer.eos_token_id
    encoded = [tokenizer(t, add_special_tokens=False)["input_ids"] + [eos] for t in texts]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    opt = torch.optim.AdamW(tuned.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    rng = np.random.default_rng(config.seed)
    losses = []
    for _ in range(config.epochs):
        order = rng.permutation(len(encoded))
        total, count = 0.0, 0
        for start in range(0, len(order), config.batch_size):
            batch = [encoded[i] for i in order[start : start + config.batch_size]]
            width = max(len(b) for b in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            labels = torch.full((len(batch), width), -100, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for r, b in enumerate(batch):
                ids[r, : len(b)] = torch.tensor(b)
                labels[r, : len(b)] = torch.tensor(b)
                mask[r, : len(b)] = 1
            loss = tuned(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(tuned.parameters(), config.max_grad_norm)
            opt.step()
            total += float(loss.detach()) * len(batch)
            count += len(batch)
        losses.append(total / count)
    tuned.eval()
    return FinetuneResult(tuned, f"{base_id}+{config.tag(texts)}", losses, len(texts), sum(len(e) for e in encoded))
