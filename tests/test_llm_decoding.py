"""Shared-prefix (cascade) decoding equals the model's own forward (iclmem/llm/decoding.py)."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from iclmem.llm.backends import InProcessBackend
from iclmem.llm.decoding import SharedPrefixDecoder, supports
from iclmem.llm.replication import ReplicationConfig, build_experiment


@pytest.fixture(scope="module")
def tiny() -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=97,
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=3,
        num_attention_heads=6,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(cfg).eval()


def _prefix_kv(model, prefix: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    cache = DynamicCache(config=model.config)
    model(input_ids=torch.tensor([prefix]), cache=cache, use_cache=True)
    return [(layer.keys, layer.values) for layer in cache.layers]


@pytest.mark.parametrize("prefix_len", [0, 1, 20])
def test_every_step_gives_the_logits_of_the_full_sequence(tiny, prefix_len):
    gen = torch.Generator().manual_seed(prefix_len)
    prefix = torch.randint(0, 97, (prefix_len,), generator=gen).tolist()
    suffixes = [torch.randint(0, 97, (n,), generator=gen).tolist() for n in (5, 1, 9)]  # uneven: left padding
    with torch.no_grad():
        decoder = SharedPrefixDecoder(
            tiny, _prefix_kv(tiny, prefix) if prefix else None, prefix_len, suffixes, max_new=4
        )
        logits = decoder.start()
        new: list[list[int]] = [[] for _ in suffixes]
        for _ in range(4):
            for r, suf in enumerate(suffixes):
                full = tiny(input_ids=torch.tensor([prefix + suf + new[r]])).logits[0, -1]
                assert torch.allclose(logits[r], full, atol=1e-5), (r, (logits[r] - full).abs().max())
            nxt = logits.argmax(-1)
            for r in range(len(suffixes)):
                new[r].append(int(nxt[r]))
            logits = decoder.step(nxt)
        with pytest.raises(ValueError, match="new tokens"):
            decoder.step(nxt)


def test_models_it_does_not_drive_are_refused_and_fall_back(tiny):
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50, n_positions=32)).eval()
    assert supports(tiny) and not supports(gpt2)
    with pytest.raises(ValueError, match="llama"):
        SharedPrefixDecoder(gpt2, None, 0, [[1, 2]], max_new=2)
    with pytest.raises(ValueError, match="at least one prompt token"):
        SharedPrefixDecoder(tiny, None, 0, [[1, 2], []], max_new=2)


def test_the_backend_decodes_the_same_greedy_text_with_and_without_cascade():
    """On SmolLM2 and real k-shot prompts: batches over a shared prefix, and one row at a time."""
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    exp = build_experiment(ReplicationConfig(n_instances=4, n_demonstrations=6, ks=(0, 6), max_new_tokens=10, seed=2))
    reqs = exp.memorization_requests("full", 6)
    backend = InProcessBackend(batch_size=4)
    texts = {}
    for cascade in (False, True):
        backend.cascade, backend.batch_size = cascade, 4
        texts[cascade] = [c.text for c in backend.complete_batch(reqs)]
    assert texts[True] == texts[False] and any(texts[True])
    backend.batch_size = 1
    assert [c.text for c in backend.complete_batch(reqs[:2])] == texts[False][:2]
