"""Benchmark: shared-prefix KV cache of the in-process LLM backend (issue: section 6, "Measured").

At the largest k whose prompts fit SmolLM2-135M-Instruct's context window (8192 tokens), every instance's
prompt starts with the same demonstrations. This times, in the same run and on the same prompts:

* ``uncached``: the whole prompt is recomputed for every instance (batch size 1);
* ``cached``: the shared prefix is computed once and its KV cache reused (batch size 1), reported per
  instance with and without the one-time prefix;
* ``cached_batched``: the same with ``--batch-size`` instances decoded together (the notebook's mode),
  reported as completions per second.

Greedy texts of all three must be identical (checked). Writes ``benchmarks/results/llm_prefix_cache.json``.

    python benchmarks/llm_prefix_cache.py [--threads 2] [--instances 4] [--max-new-tokens 16] [--k K]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from iclmem.llm.backends import InProcessBackend
from iclmem.llm.replication import ReplicationConfig, build_experiment, largest_fitting_k
from iclmem.store.atomic import atomic_write_text


def timed(backend: InProcessBackend, reqs: list, reset: bool = True) -> tuple[float, list[str], int]:
    if reset:
        backend._prefix_ids, backend._prefix_cache = [], None
    backend.prefill_tokens = 0
    t0 = time.perf_counter()
    texts = [c.text for c in backend.complete_batch(reqs)]
    return time.perf_counter() - t0, texts, backend.prefill_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--batched-instances", type=int, default=16, help="instances for the batched throughput run")
    parser.add_argument("--dataset", default="wine_vivino")
    parser.add_argument("--setting", default="full")
    parser.add_argument("--k", type=int, default=0, help="k to time (0: the largest that fits)")
    parser.add_argument("--out", default="benchmarks/results/llm_prefix_cache.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pool = 400
    n = max(args.instances, args.batched_instances)
    exp = build_experiment(
        ReplicationConfig(
            dataset=args.dataset,
            n_instances=n,
            n_demonstrations=pool,
            ks=(0,),
            settings=(args.setting,),
            max_new_tokens=args.max_new_tokens,
        )
    )
    backend = InProcessBackend(batch_size=1)
    k = args.k or largest_fitting_k(backend, exp, pool)
    reqs = exp.memorization_requests(args.setting, k)
    prompt_tokens = [backend.count_tokens(r) for r in reqs]
    small = reqs[: args.instances]
    backend.complete_batch([reqs[0]])  # warm-up (weights, kernels)

    backend.prefix_cache = False
    t_uncached, texts_uncached, prefill_uncached = timed(backend, small)
    backend.prefix_cache = True
    t_cached_total, texts_cached, prefill_cached = timed(backend, small)
    # the one-time prefix alone, then the per-instance cost with the prefix already cached
    backend._prefix_ids, backend._prefix_cache = [], None
    common = 0
    ids = [backend.prompt_ids(r) for r in small]
    while common < min(map(len, ids)) - 1 and all(i[common] == ids[0][common] for i in ids):
        common += 1
    t0 = time.perf_counter()
    with torch.inference_mode():
        backend._set_prefix(ids[0][:common])
    t_prefix = time.perf_counter() - t0
    t_cached_reuse, texts_reuse, _ = timed(backend, small, reset=False)  # prefix already there

    backend.batch_size = args.batch_size
    batched = reqs[: args.batched_instances]
    t_batched, texts_batched, _ = timed(backend, batched)

    per_uncached = t_uncached / len(small)
    per_cached_reuse = t_cached_reuse / len(small)
    result = {
        "dataset": args.dataset,
        "setting": args.setting,
        "k": k,
        "threads": args.threads,
        "instances": len(small),
        "max_new_tokens": args.max_new_tokens,
        "mean_prompt_tokens": sum(prompt_tokens) / len(prompt_tokens),
        "shared_prefix_tokens": common,
        "context_window": backend.context_window,
        "uncached_s_per_instance": per_uncached,
        "cached_s_per_instance_including_prefix": t_cached_total / len(small),
        "cached_s_per_instance_prefix_reused": per_cached_reuse,
        "prefix_build_s": t_prefix,
        "speedup_prefix_reused": per_uncached / per_cached_reuse,
        "speedup_including_prefix": t_uncached / t_cached_total,
        "prefill_tokens_uncached": prefill_uncached,
        "prefill_tokens_cached": prefill_cached,
        "batched_instances": len(batched),
        "batch_size": args.batch_size,
        "batched_completions_per_s_including_prefix": len(batched) / t_batched,
        "uncached_completions_per_s": 1 / per_uncached,
        "identical_greedy_text": texts_uncached == texts_cached == texts_reuse
        and texts_batched[: len(small)] == texts_uncached,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
