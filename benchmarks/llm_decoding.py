"""Benchmark: in-process decoding of the book's k-shot prompts, three ways in one run (issue: a fresh book in 30
minutes).

On the same prompts (notebook 06's defaults: wine_vivino, setting ``full``, the largest of the book's ks,
``--instances`` instances decoded together, up to ``--max-new-tokens`` new tokens, greedy):

* ``plain``: the model's own forward, the shared prefix's KV cache copied per batch row and grown
  by concatenation every step (the backend before :mod:`iclmem.llm.decoding`);
* ``cascade``: :class:`iclmem.llm.decoding.SharedPrefixDecoder`, the prefix read once per step;
* ``llama_cpp``: llama.cpp (``llama-cpp-python``, the ``bench`` extra) on the GGUF file the book's
  model is converted from, one prompt at a time (it keeps the common prefix between prompts).

The shared prefix is built once and timed apart; each way then decodes the same batch, and its
time covers the prompt ends and the decoding. Reported: wall seconds, generated tokens per
second, completions per second, and the ratios, all measured in this run, plus whether the greedy
texts agree. Writes ``benchmarks/results/llm_decoding.json``.

    python benchmarks/llm_decoding.py [--threads 2] [--instances 8] [--k 50] [--max-new-tokens 24]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from iclmem.atomic import atomic_write_text
from iclmem.llm.backends import InProcessBackend
from iclmem.llm.replication import ReplicationConfig, build_experiment


def run_backend(backend: InProcessBackend, reqs: list, cascade: bool) -> dict:
    """Decode ``reqs`` as one batch over an already built prefix; seconds, tokens and texts."""
    backend.cascade = cascade
    backend.generated_tokens = 0
    t0 = time.perf_counter()
    texts = [c.text for c in backend.complete_batch(reqs)]
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "generated_tokens": backend.generated_tokens, "texts": texts}


def run_llama_cpp(gguf: Path, prompts: list[list[int]], max_new: int, stops: set[int], threads: int) -> dict | None:
    """llama.cpp greedy decoding of token-id prompts, one after another; None when llama-cpp-python is absent."""
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    llm = Llama(
        model_path=str(gguf), n_ctx=8192, n_threads=threads, n_threads_batch=threads, n_batch=512, verbose=False
    )
    for _ in llm.generate(prompts[0], top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0):
        break  # the shared prefix once, as the other two ways get it prebuilt; later prompts reuse it
    generated, texts, t0 = 0, [], time.perf_counter()
    for ids in prompts:
        out = []
        for tok in llm.generate(ids, top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0):
            if tok in stops or len(out) >= max_new:
                break
            out.append(int(tok))
        generated += len(out)
        texts.append(out)
    return {"seconds": time.perf_counter() - t0, "generated_tokens": generated, "token_ids": texts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--dataset", default="wine_vivino")
    parser.add_argument("--setting", default="full")
    parser.add_argument("--out", default="benchmarks/results/llm_decoding.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    exp = build_experiment(
        ReplicationConfig(
            dataset=args.dataset,
            n_instances=args.instances,
            n_demonstrations=max(args.k, 1),
            ks=(args.k,),
            settings=(args.setting,),
            max_new_tokens=args.max_new_tokens,
        )
    )
    reqs = exp.memorization_requests(args.setting, args.k)
    backend = InProcessBackend(batch_size=len(reqs))
    backend.complete_batch(reqs[:1])  # warm-up: weights, kernels, and the shared prefix's cache
    ids = [backend.prompt_ids(r) for r in reqs]
    prefix = 0
    while prefix < min(map(len, ids)) - 1 and all(i[prefix] == ids[0][prefix] for i in ids):
        prefix += 1
    backend._prefix_ids, backend._prefix_cache = [], None
    t0 = time.perf_counter()
    with torch.inference_mode():
        backend._set_prefix(ids[0][:prefix])
    prefix_s = time.perf_counter() - t0

    ways = {"plain": run_backend(backend, reqs, cascade=False), "cascade": run_backend(backend, reqs, cascade=True)}
    from iclmem.llm.model import gguf_path

    llama = run_llama_cpp(gguf_path(), ids, args.max_new_tokens, backend.stop_token_ids, args.threads)
    result: dict = {
        "dataset": args.dataset,
        "setting": args.setting,
        "k": args.k,
        "threads": args.threads,
        "instances": len(reqs),
        "max_new_tokens": args.max_new_tokens,
        "mean_prompt_tokens": sum(map(len, ids)) / len(ids),
        "shared_prefix_tokens": prefix,
        "prefix_build_s": prefix_s,
        "gguf": gguf_path().name,
    }
    for name, out in ways.items():
        result[name] = {
            "seconds": out["seconds"],
            "generated_tokens": out["generated_tokens"],
            "tokens_per_s": out["generated_tokens"] / out["seconds"],
            "completions_per_s": len(reqs) / out["seconds"],
        }
    result["cascade_over_plain"] = ways["plain"]["seconds"] / ways["cascade"]["seconds"]
    result["identical_greedy_text"] = ways["plain"]["texts"] == ways["cascade"]["texts"]
    result["identical_rows"] = sum(
        a == b for a, b in zip(ways["plain"]["texts"], ways["cascade"]["texts"], strict=True)
    )
    if llama is None:
        result["llama_cpp"] = "not installed (pip install '.[bench]')"
    else:
        result["llama_cpp"] = {
            "seconds": llama["seconds"],
            "generated_tokens": llama["generated_tokens"],
            "tokens_per_s": llama["generated_tokens"] / llama["seconds"],
            "completions_per_s": len(reqs) / llama["seconds"],
        }
        result["cascade_over_llama_cpp"] = llama["seconds"] / ways["cascade"]["seconds"]
        ours = [backend.tokenizer(t, add_special_tokens=False)["input_ids"] for t in ways["cascade"]["texts"]]
        result["llama_cpp_same_first_tokens"] = sum(
            a[:8] == b[:8] for a, b in zip(ours, llama["token_ids"], strict=True)
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
