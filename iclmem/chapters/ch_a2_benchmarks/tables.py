"""Appendix A2 of this book (no paper section): the tables of the speed benchmarks (notebook A2).

Each function shapes one benchmark's result (read by :func:`~iclmem.chapters.ch_a2_benchmarks.results.read_results`)
into the appendix's tables: ratios within one run, as ``benchmarks/`` measured them.
"""

from __future__ import annotations

import pandas as pd


def finetune_speed_table(result: dict) -> pd.DataFrame:
    """Fine-tuning steps per second per configuration, with seconds per step."""
    return pd.DataFrame(result["rows"]).assign(seconds_per_step=lambda d: 1 / d.steps_per_s)


def settings(result: dict) -> pd.DataFrame:
    """A benchmark's scalar settings and results (everything but its per-configuration ``rows``)."""
    return pd.Series({k: v for k, v in result.items() if k != "rows"}).to_frame("value")


def probe_speed_tables(result: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Batched vs naive probing throughput, and the ratios (with the largest score difference between the two)."""
    columns = ["probes_per_cpu_s", "probes_per_wall_s", "wall_s"]
    table = pd.DataFrame({k: result[k] for k in ("batched", "naive")}).T[columns]
    ratios = {k: v for k, v in result.items() if k.startswith("ratio") or k == "max_abs_difference"}
    return table, pd.Series(ratios).to_frame("value")


#: The stages of ``benchmarks/roofline.py``: result key, unit of the rate, key of the rate.
ROOFLINE_STAGES = (
    ("probing", "probes/s", "probes_per_s"),
    ("probing_book", "contexts/s", "contexts_per_s"),
    ("finetuning", "steps/s", "steps_per_s"),
)
ROOFLINE_STAGE_NAMES = {
    "probing": "probing, 16 synthetic queries",
    "probing_book": "probing, a Q=512 run",
    "finetuning": "fine-tuning",
}


def roofline_table(result: dict) -> pd.DataFrame:
    """One row per (code measured, threads, stage) of ``benchmarks/roofline.py``: rate, GFLOP/s, peak, fraction of peak.

    ``probing, a Q=512 run`` is the book's own probing workload (every query of a Q = 512 run of one
    shipped table, its batches planned once and scored per model); ``probing, 16 synthetic queries``
    times 768 probes with the planning inside, in half-filled batches.

    ``dense-equivalent`` is the rate of the work that scoring every context row by row would do,
    against the same peak: it exceeds the fraction when contexts are reused or rows merged.
    """
    rows = []
    for label, by_threads in result["runs"].items():
        for threads, run in by_threads.items():
            for kind, unit, rate in ROOFLINE_STAGES:
                for shape, r in run.get(kind, {}).items():
                    rows.append(
                        {
                            "code": label,
                            "threads": int(threads),
                            "stage": f"{ROOFLINE_STAGE_NAMES[kind]}: {shape}",
                            "rate": r[rate],
                            "unit": unit,
                            "GFLOP/s": r["gflop_per_s"],
                            "peak GFLOP/s": run["peak_gflop_per_s"],
                            "fraction of peak": r["fraction"],
                            "dense-equivalent fraction": r.get("dense_equivalent_fraction", r["fraction"]),
                        }
                    )
    return pd.DataFrame(rows)


def roofline_speedups(table: pd.DataFrame, baseline: str = "before", current: str = "current") -> pd.DataFrame:
    """Rate of ``current`` over ``baseline`` per (threads, stage), measured in the same session."""
    wide = table.pivot_table(index=["threads", "stage"], columns="code", values="rate")
    if baseline not in wide or current not in wide:
        return pd.DataFrame()
    return (wide[current] / wide[baseline]).rename("speed-up").reset_index()


def openai_concurrency_table(result: dict) -> pd.DataFrame:
    """One row per concurrency of ``benchmarks/openai_concurrency.py``: requests per second through the real
    OpenAI-compatible backend and its disk cache against a loopback server of fixed latency, the speed-up over the
    first row (one request in flight), the most requests the server held at once, and the paper's 36,000 requests
    (:func:`iclmem.llm.plan.paper_scale_requests`) in hours at that rate and latency."""
    table = pd.DataFrame(result["rows"])
    table["speed-up"] = table.requests_per_s / table.requests_per_s.iloc[0]
    columns = [
        "concurrency",
        "requests",
        "wall_s",
        "requests_per_s",
        "speed-up",
        "server_max_in_flight",
        "paper_scale_hours",
        "in_request_order",
    ]
    return table[[c for c in columns if c in table]]


def decoding_table(result: dict) -> pd.DataFrame:
    """One row per way of ``benchmarks/llm_decoding.py`` on the same prompts: one at a time, the model's own forward,
    static and continuous batches of the shared-prefix decoder, and llama.cpp on the same GGUF file. Median wall
    seconds over the rounds, generated tokens, tokens and completions per second; ``speed / llama.cpp`` is the
    median, over the rounds, of llama.cpp's seconds over the way's in a back-to-back pair (above 1: faster than
    llama.cpp; empty for the ways that ran once, unpaired); ``differs`` counts the prompts whose completion is not
    the one-at-a-time completion."""
    rows = []
    singles = {
        "one at a time": result.get("one_at_a_time"),
        f"plain {result.get('book_batch_before', '')}".strip(): result.get("plain"),
    }
    for name, way in [*singles.items(), *result.get("ways", {}).items()]:
        if isinstance(way, dict):
            rows.append(
                {
                    "way": name,
                    "seconds": way["seconds"],
                    "generated_tokens": way["generated_tokens"],
                    "tokens_per_s": way["tokens_per_s"],
                    "completions_per_s": way["completions_per_s"],
                    "speed / llama.cpp": way.get("over_llama_cpp", float("nan")),
                    "differs": len(way.get("differs_from_one_at_a_time", [])),
                }
            )
    llama = result.get("llama_cpp")
    if isinstance(llama, dict):
        rows.append(
            {
                "way": "llama.cpp",
                **{k: llama[k] for k in ("seconds", "generated_tokens", "tokens_per_s", "completions_per_s")},
                "speed / llama.cpp": 1.0,
                "differs": result["instances"] - llama["same_text"],
            }
        )
    return pd.DataFrame(rows).set_index("way")


def decoding_summary(result: dict) -> str:
    """One paragraph (Markdown) on a ``benchmarks/llm_decoding.py`` run: prompts, threads, rounds, whether the
    machine was shared, the chosen batch and its speed against llama.cpp, and whether every completion equalled
    the one-at-a-time completion."""
    machine = result.get("machine", {})
    text = (
        f"{result['instances']} prompts of about {result['mean_prompt_tokens']:.0f} tokens "
        f"({result['shared_prefix_tokens']} shared), k = {result['k']}, {result['threads']} thread(s), "
        f"{result.get('rounds', 1)} rounds. "
    )
    if machine.get("shared"):
        note = machine.get("note", "other jobs shared this CPU during the run")
        text += f"{note[0].upper()}{note[1:]}. "
    chosen = result.get("chosen", {})
    if "over_llama_cpp" in chosen:
        text += (
            f"Chosen batch: **{result['chosen_batch']}**, **{chosen['over_llama_cpp']:.2f}x** llama.cpp's speed "
            f"(median of {len(chosen['over_llama_cpp_all'])} back-to-back pairs: "
            f"{', '.join(f'{r:.2f}x' for r in chosen['over_llama_cpp_all'])}). "
        )
    text += f"Every batched completion equals the one-at-a-time completion: **{result['identical_greedy_text']}**."
    return text


def kill_random_table(result: dict) -> pd.DataFrame:
    """One row per random SIGKILL of ``benchmarks/kill_random.py``: when (seconds into the build), where it
    landed, the resume's seconds and what it executed, whether everything equals the uninterrupted build,
    and how many temporary files were left."""
    return pd.DataFrame(
        [
            {
                "kill at (s)": row["instant_s"],
                "landed in": row["landed"],
                "resume (s)": row["resume_s"],
                "resume": row["resume_summary"],
                "equal": row["equal"],
                "temporary files left": len(row["temporary_left"]),
            }
            for row in result["rows"]
        ]
    )


def kernel_ceiling_tables(result: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``benchmarks/kernel_ceiling.py``: per step shape, each kernel kind's FLOPs and rate against the peak with the
    step's measured fraction and its ceiling; and the seconds per task of ``G`` tasks in one forward."""
    peak = result["peak_gflop_per_s"]
    rows = []
    for shape, c in result["ceiling"].items():
        for kind, rate in c["kernel_gflop_per_s"].items():
            rows.append(
                {
                    "step": shape,
                    "kernel": kind,
                    "GFLOP per step": c["gflop_by_kind"].get(kind, 0.0),
                    "kernel GFLOP/s alone": rate,
                    "kernel fraction of peak": rate / peak,
                    "step fraction of peak": c["step_fraction_of_peak"],
                    "step ceiling (fraction of peak)": c["ceiling_fraction_of_peak"],
                }
            )
    batched = [
        {
            "step": shape,
            "tasks per forward (G)": int(g),
            "seconds per task": s,
            "speed-up vs G = 1": b["speedup_vs_one"][g],
        }
        for shape, b in result["batched_runs"].items()
        for g, s in b["seconds_per_task"].items()
    ]
    return pd.DataFrame(rows), pd.DataFrame(batched)


def softmax_keys_table(result: dict) -> pd.DataFrame:
    """One row per measurement of ``benchmarks/softmax_keys.py``: torch's softmax at every key count (before) against
    the written-out one below 16 keys (after), median seconds of interleaved pairs and their ratio; probing rows carry
    the largest score difference between the two paths."""
    rows = []
    for keys, by_pass in result["kernel"].items():
        for which, r in by_pass.items():
            rows.append({"stage": "small attention", "shape": f"{keys} keys, {which.replace('_', ' + ')}", **r})
    for table, r in result["probing"].items():
        rows.append({"stage": "probing (M_ref + epoch 1, Q = 512)", "shape": f"{table}, {r['probes']} probes", **r})
    for table, r in result["finetuning"].items():
        shape = f"{table}, {r['features']} features"
        rows.append({"stage": "fine-tuning (3 steps, 256 + 50 rows)", "shape": shape, **r})
    columns = ["stage", "shape", "before_s", "after_s", "speedup", "max_abs_score_difference"]
    return pd.DataFrame(rows).reindex(columns=columns)
