"""Benchmark: in-process decoding of the book's k-shot prompts against llama.cpp on the same GGUF file, interleaved
in one run (issue 39, "Fast enough to decide", item 3).

On the same prompts (notebook 06's defaults: wine_vivino, setting ``full``, the largest of the book's ks,
``--instances`` instances, one ``complete_batch`` call as the notebook makes per (setting, k), up to
``--max-new-tokens`` new tokens, greedy, stop string ``"\\n"``):

* ``continuous B``: :class:`iclmem.llm.decoding.SharedPrefixDecoder` with ``B`` slots, the prefix read once
  per step, a row that has ended refilled from the queue at once (:func:`iclmem.llm.decoding.continuous_greedy`);
* ``static B``: the same decoder, the next ``B`` prompts admitted only when the whole batch has ended;
* ``one at a time``: one slot (the reference the batched ways must equal);
* ``plain 8``: the model's own forward, the prefix's KV cache copied per row (the backend before
  :mod:`iclmem.llm.decoding`), once, with ``--plain``;
* ``llama_cpp``: llama.cpp (``llama-cpp-python``, the ``bench`` extra) on the GGUF file the book's model is
  converted from, one prompt at a time as its high-level API decodes (it keeps the common prefix between
  prompts), with the same stop token, stop string and token budget.

The shared prefix is built once (timed apart) for every way; each timed run then decodes all prompts. The
machine may be shared, so the runs are **interleaved**: every round runs llama.cpp immediately before each
of our ways, the ratio of a way is llama.cpp's seconds over its own in that pair, and the result is the
median over ``--rounds`` rounds (the order of our ways rotates from round to round). The chosen batch is the
continuous batch with the best median ratio. Every batched way's completions are compared with one at a
time (greedy: identical token sequences expected; any difference is listed). Writes
``benchmarks/results/llm_decoding.json``.

    python benchmarks/llm_decoding.py [--threads 1] [--instances 48] [--k 50] [--batches 8 16 48] [--static 8]
        [--rounds 3] [--plain] [--shared-machine]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from iclmem.llm.backends import InProcessBackend
from iclmem.llm.chat import apply_stop
from iclmem.llm.replication import ReplicationConfig, build_experiment
from iclmem.store.atomic import atomic_write_text


def run_ours(backend: InProcessBackend, reqs: list, batch: int, cascade: bool = True, continuous: bool = True) -> dict:
    """Decode ``reqs`` with ``batch`` rows over the already built prefix; seconds, tokens and texts."""
    backend.cascade, backend.continuous, backend.batch_size = cascade, continuous, batch
    backend.generated_tokens = 0
    t0 = time.perf_counter()
    texts = [c.text for c in backend.complete_batch(reqs)]
    return {"seconds": time.perf_counter() - t0, "generated_tokens": backend.generated_tokens, "texts": texts}


def llama_cpp_runner(
    gguf: Path,
    prompts: list[list[int]],
    max_new: int,
    stops: set[int],
    stop_strings: tuple[str, ...],
    detokenize: Callable[[list[int]], str],
    threads: int,
) -> Callable[[], dict] | None:
    """A function that decodes ``prompts`` greedily with llama.cpp, one after another, under our stopping rules;
    None when llama-cpp-python is absent. Its shared prefix is evaluated once here, as ours is prebuilt."""
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    llm = Llama(
        model_path=str(gguf), n_ctx=8192, n_threads=threads, n_threads_batch=threads, n_batch=512, verbose=False
    )
    for _ in llm.generate(prompts[0], top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0):
        break  # the shared prefix once; later prompts reuse it (llama-cpp-python keeps the longest common prefix)

    def run() -> dict:
        generated, texts, t0 = 0, [], time.perf_counter()
        for ids in prompts:
            out: list[int] = []
            for tok in llm.generate(ids, top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0):
                if tok in stops:
                    break
                out.append(int(tok))
                if len(out) >= max_new or apply_stop(detokenize(out), stop_strings)[1]:
                    break
            generated += len(out)
            texts.append(apply_stop(detokenize(out), stop_strings)[0])
        return {"seconds": time.perf_counter() - t0, "generated_tokens": generated, "texts": texts}

    return run


def summary(runs: list[dict], n: int) -> dict:
    """Medians over the rounds of one way."""
    seconds = [r["seconds"] for r in runs]
    med = statistics.median(seconds)
    tokens = runs[0]["generated_tokens"]
    return {
        "seconds": med,
        "seconds_all": seconds,
        "generated_tokens": tokens,
        "tokens_per_s": tokens / med,
        "completions_per_s": n / med,
    }


def differences(texts: list[str], reference: list[str]) -> list[int]:
    """Indices of the prompts whose completion differs from the reference's."""
    return [i for i, (a, b) in enumerate(zip(texts, reference, strict=True)) if a != b]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--instances", type=int, default=48)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 16, 48])
    parser.add_argument("--static", type=int, nargs="*", default=[8], help="batches also run as static batches")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--book-batch", type=int, default=8, help="notebook 06's batch before this benchmark")
    parser.add_argument("--dataset", default="wine_vivino")
    parser.add_argument("--setting", default="full")
    parser.add_argument("--plain", action="store_true", help="also run the model's own forward once (slow)")
    parser.add_argument("--shared-machine", action="store_true", help="record that other jobs shared the CPU")
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
    backend = InProcessBackend()
    ids = [backend.prompt_ids(r) for r in reqs]
    prefix = 0
    while prefix < min(map(len, ids)) - 1 and all(i[prefix] == ids[0][prefix] for i in ids):
        prefix += 1
    t0 = time.perf_counter()
    with torch.inference_mode():
        backend._set_prefix(ids[0][:prefix])
    prefix_s = time.perf_counter() - t0
    run_ours(backend, reqs[:2], 2)  # warm-up of the decoder's kernels

    from iclmem.llm.model import gguf_path

    decode = lambda out: backend.tokenizer.decode(out, skip_special_tokens=True)  # noqa: E731
    dec = reqs[0].decoding
    llama = llama_cpp_runner(
        gguf_path(), ids, dec.max_new_tokens, backend.stop_token_ids, dec.stop, decode, args.threads
    )

    ways: dict[str, Callable[[], dict]] = {
        f"continuous {b}": (lambda b=b: run_ours(backend, reqs, b)) for b in args.batches
    }
    ways.update({f"static {b}": (lambda b=b: run_ours(backend, reqs, b, continuous=False)) for b in args.static})
    state: dict = {"runs": {name: [] for name in ways}, "ratios": {name: [] for name in ways}, "llama": []}
    started = time.perf_counter()
    state["alone"] = run_ours(backend, reqs, 1)
    if args.plain:
        state["plain"] = run_ours(backend, reqs, args.book_batch, cascade=False, continuous=False)
    names = list(ways)
    setup = {
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
        "rounds": args.rounds,
        "book_batch_before": args.book_batch,
    }
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            if llama is not None:
                state["llama"].append(llama())
            state["runs"][name].append(ways[name]())
            if llama is not None:
                state["ratios"][name].append(state["llama"][-1]["seconds"] / state["runs"][name][-1]["seconds"])
        result = report(setup, state, backend.tokenizer, r + 1, args.shared_machine)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")  # after every round: a stopped run keeps it
        print(f"round {r + 1}/{args.rounds} done after {time.perf_counter() - started:.0f} s", flush=True)
    print(json.dumps(result, indent=2))


def report(setup: dict, state: dict, tokenizer: Any, rounds_done: int, shared: bool) -> dict:
    """The result file: settings, the machine, every way's medians, ratios and differences, the chosen batch."""
    n, alone = setup["instances"], state["alone"]
    result: dict = {
        **setup,
        "rounds_done": rounds_done,
        "machine": {
            "cpu_count": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "shared": bool(shared),
            "note": (
                "other jobs shared this CPU during the run: seconds are noisy; ratios come from back-to-back pairs "
                "(llama.cpp, then ours) and are medians over the rounds"
                if shared
                else "no other job was known to share the CPU"
            ),
            "load_average": list(os.getloadavg()),
        },
        "one_at_a_time": {**summary([alone], n), "note": "one slot; the reference for every batched way"},
        "ways": {},
    }
    if "plain" in state:
        result["plain"] = {
            **summary([state["plain"]], n),
            "batch": setup["book_batch_before"],
            "differs_from_one_at_a_time": differences(state["plain"]["texts"], alone["texts"]),
        }
    for name, runs in state["runs"].items():
        out = {
            **summary(runs, n),
            "differs_from_one_at_a_time": sorted(
                {i for run in runs for i in differences(run["texts"], alone["texts"])}
            ),
        }
        if state["ratios"][name]:
            out["over_llama_cpp"] = statistics.median(state["ratios"][name])
            out["over_llama_cpp_all"] = state["ratios"][name]
        result["ways"][name] = out
    differing = [w["differs_from_one_at_a_time"] for w in result["ways"].values()]
    differing.append(result.get("plain", {}).get("differs_from_one_at_a_time", []))
    result["identical_greedy_text"] = not any(differing)
    for name in list(result["ways"]):
        static = "static " + name.split()[1]
        if name.startswith("continuous") and static in result["ways"]:
            result["ways"][name]["over_static"] = result["ways"][static]["seconds"] / result["ways"][name]["seconds"]
    if not state["llama"]:
        result["llama_cpp"] = "not installed (pip install '.[bench]')"
        key = "completions_per_s"
    else:
        result["llama_cpp"] = summary(state["llama"], n)
        theirs = state["llama"][0]["texts"]
        ours_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in alone["texts"]]
        their_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in theirs]
        result["llama_cpp"]["same_first_8_tokens"] = sum(
            a[:8] == b[:8] for a, b in zip(ours_ids, their_ids, strict=True)
        )
        result["llama_cpp"]["same_text"] = n - len(differences(theirs, alone["texts"]))
        key = "over_llama_cpp"
    continuous = {name: w for name, w in result["ways"].items() if name.startswith("continuous")}
    chosen = max(continuous, key=lambda name: continuous[name][key])
    result["chosen_batch"] = int(chosen.split()[1])
    result["chosen"] = continuous[chosen]
    return result


if __name__ == "__main__":
    main()
