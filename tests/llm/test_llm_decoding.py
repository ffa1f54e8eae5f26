"""Shared-prefix (cascade) decoding equals the model's own forward, and continuous batching equals one prompt at a
time (iclmem/llm/decoding.py)."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from iclmem.llm.backends import InProcessBackend
from iclmem.llm.chat import apply_stop
from iclmem.llm.decoding import Row, SharedPrefixDecoder, continuous_greedy, prefix_attention, supports
from iclmem.llm.replication import ReplicationConfig, build_experiment

VOCAB = 97


@pytest.fixture(scope="module")
def tiny() -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=3,
        num_attention_heads=6,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(cfg).eval()


def _prefix_kv(model, prefix: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
    if not prefix:
        return None
    cache = DynamicCache(config=model.config)
    model(input_ids=torch.tensor([prefix]), cache=cache, use_cache=True)
    return [(layer.keys, layer.values) for layer in cache.layers]


def _tokens(gen: torch.Generator, n: int) -> list[int]:
    return torch.randint(0, VOCAB, (n,), generator=gen).tolist()


def test_prefix_attention_with_its_log_sum_exp_equals_the_softmax():
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(shape, generator=gen) for shape in ((2, 7, 8), (2, 30, 8), (2, 30, 8)))
    out, lse = prefix_attention(q, k, v, 0.3)
    scores = (q @ k.transpose(-1, -2)) * 0.3
    assert torch.allclose(out, torch.softmax(scores, -1) @ v, atol=1e-6)
    assert torch.allclose(lse, torch.logsumexp(scores, -1), atol=1e-5)


@pytest.mark.parametrize("prefix_len", [0, 1, 20])
def test_every_step_gives_the_logits_of_the_full_sequence(tiny, prefix_len):
    """Slots at different lengths, stepped in varying subsets, and a slot refilled halfway."""
    gen = torch.Generator().manual_seed(prefix_len)
    prefix = _tokens(gen, prefix_len)
    seqs = [_tokens(gen, n) for n in (5, 1, 9)]  # uneven prompt ends
    with torch.no_grad():
        decoder = SharedPrefixDecoder(tiny, _prefix_kv(tiny, prefix), prefix_len, slots=3, capacity=14)

        def check(slots: list[int], logits: torch.Tensor) -> None:
            for slot, row in zip(slots, logits, strict=True):
                full = tiny(input_ids=torch.tensor([prefix + seqs[slot]])).logits[0, -1]
                assert torch.allclose(row, full, atol=1e-5), (slot, (row - full).abs().max())

        check([0, 1, 2], decoder.admit([0, 1, 2], seqs))
        for step, slots in enumerate([[0, 1, 2], [2, 0], [1], [0, 1, 2]]):
            tokens = torch.randint(0, VOCAB, (len(slots),), generator=gen)
            for slot, tok in zip(slots, tokens.tolist(), strict=True):
                seqs[slot].append(tok)
            check(slots, decoder.step(slots, tokens))
            if step == 1:  # slot 1 takes a new prompt while the others go on
                seqs[1] = _tokens(gen, 4)
                check([1], decoder.admit([1], [seqs[1]]))
        with pytest.raises(ValueError, match="slot is full"):
            for _ in range(14):
                decoder.step([2], torch.tensor([3]))


def test_models_it_does_not_drive_and_bad_prompts_are_refused(tiny):
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50, n_positions=32)).eval()
    assert supports(tiny) and not supports(gpt2)
    with pytest.raises(ValueError, match="llama"):
        SharedPrefixDecoder(gpt2, None, 0, slots=1, capacity=4)
    decoder = SharedPrefixDecoder(tiny, None, 0, slots=2, capacity=4)
    with pytest.raises(ValueError, match="at least one prompt token"):
        decoder.admit([0, 1], [[1, 2], []])
    with pytest.raises(ValueError, match="does not fit"):
        decoder.admit([0], [[1, 2, 3, 4, 5]])


def _reference(model, prefix: list[int], row: Row, stops: set[int]) -> list[int]:
    """Greedy tokens from the model's own forward over the whole sequence, no cache, one prompt."""
    new: list[int] = []
    while len(new) < row.max_new_tokens:
        tok = int(model(input_ids=torch.tensor([prefix + row.suffix + new])).logits[0, -1].argmax())
        if tok in stops:
            break
        new.append(tok)
        if apply_stop(_detok(new), row.stop)[1]:
            break
    return new


def _detok(ids: list[int]) -> str:
    return "".join(f"<{i}>" for i in ids)


def _decode(model, prefix, rows, stops, slots, refill=True) -> tuple[dict[int, list[int]], list[int], int]:
    """Completions by row, the order rows ended in, and how many steps the decoder took."""
    decoder = SharedPrefixDecoder(model, _prefix_kv(model, prefix), len(prefix), slots, capacity=30)
    steps = {"n": 0}
    step = decoder.step

    def counted(*args):
        steps["n"] += 1
        return step(*args)

    decoder.step = counted  # type: ignore[method-assign]
    out, order = {}, []
    with torch.no_grad():
        for i, text, new in continuous_greedy(decoder, rows, stops, _detok, apply_stop, refill=refill):
            assert text == apply_stop(_detok(new), rows[i].stop)[0]
            out[i] = new
            order.append(i)
    return out, order, steps["n"]


def test_continuous_batching_gives_the_completions_of_one_prompt_at_a_time(tiny):
    gen = torch.Generator().manual_seed(7)
    prefix = _tokens(gen, 12)
    lengths, budgets = (3, 8, 1, 5, 6, 2, 4, 7, 3), (12, 3, 9, 1, 14, 6, 10, 2, 8)
    rows = [Row(_tokens(gen, n), m) for n, m in zip(lengths, budgets, strict=True)]
    # a stop token and a stop string that do occur in the rows' greedy runs
    free = [_reference(tiny, prefix, r, set()) for r in rows]
    stops = {free[0][4]}
    rows[6].stop = (f"<{free[6][2]}>",)
    want = [_reference(tiny, prefix, r, stops) for r in rows]
    assert any(len(w) < r.max_new_tokens for w, r in zip(want, rows, strict=True))  # some end early
    alone, _, _ = _decode(tiny, prefix, rows, stops, slots=1)
    continuous, order, steps_continuous = _decode(tiny, prefix, rows, stops, slots=3)
    static, _, steps_static = _decode(tiny, prefix, rows, stops, slots=3, refill=False)
    assert [alone[i] for i in range(len(rows))] == want
    assert [continuous[i] for i in range(len(rows))] == want
    assert [static[i] for i in range(len(rows))] == want
    assert order != sorted(order)  # handed over as they end, not in request order
    assert steps_continuous < steps_static  # refilled slots: fewer forwards than static batches of 3
    again, order_again, _ = _decode(tiny, prefix, rows, stops, slots=3)
    assert again == continuous and order_again == order


@pytest.mark.slow
def test_the_backend_decodes_the_same_greedy_text_every_way():
    """On SmolLM2 and real k-shot prompts: the model's own forward, static and continuous batches, one at a time."""
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    exp = build_experiment(ReplicationConfig(n_instances=5, n_demonstrations=6, ks=(0, 6), max_new_tokens=10, seed=2))
    reqs = exp.memorization_requests("full", 6)
    backend = InProcessBackend(batch_size=2)
    texts = {}
    for way, (cascade, continuous) in {
        "plain": (False, False),
        "static": (True, False),
        "continuous": (True, True),
    }.items():
        backend.cascade, backend.continuous = cascade, continuous
        texts[way] = [c.text for c in backend.complete_batch(reqs)]
    assert texts["continuous"] == texts["static"] == texts["plain"] and any(texts["plain"])
    backend.batch_size = 1
    assert [c.text for c in backend.complete_batch(reqs[:2])] == texts["plain"][:2]
