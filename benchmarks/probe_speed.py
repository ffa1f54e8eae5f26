"""Benchmark: probes per second, batched vs one context at a time (issue: probing core, Sec. 4.2 / App. A.3).

A probe is one (query, manipulation) context scored by the LTM. The workload is the full suite of
48 manipulations on synthetic classification queries with 10 candidates (the model's largest
class set, so the largest contexts: up to 100 rows) and 12 features. Batched and naive scoring
run on the same tasks in the same process, interleaved block by block (4 queries = 192 probes
per block, the order alternating), ``--rounds`` times, so that load from other jobs on the
shared machine hits both alike. Rates are reported per CPU second of this process (robust to
waiting for a core) and per wall second; both paths are checked to agree to 1e-5.

Model: the shipped reference LTM if ``iclmem/ltm/weights/reference.pt`` exists, else the
real-size architecture ``LTMConfig(d_model=64, n_heads=4, n_layers=4, d_ff=128)``, randomly
initialized (speed does not depend on the weights). Writes ``benchmarks/results/probe_speed.json``.

    python benchmarks/probe_speed.py [--queries 16] [--rounds 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer, load_reference
from iclmem.ltm.reference import REFERENCE_WEIGHTS
from iclmem.probe import ProbeQuery, build_probe_tasks, score_tasks, score_tasks_naive
from iclmem.probe.scoring import DEFAULT_CELLS, DEFAULT_CHUNK, DEFAULT_PADDING, Batching
from iclmem.store.atomic import atomic_write_text

BENCH_CONFIG = LTMConfig(d_model=64, n_heads=4, n_layers=4, d_ff=128)


def benchmark_model() -> tuple[ReferenceLTM, str]:
    if REFERENCE_WEIGHTS.exists():
        return load_reference(), "load_reference()"
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(BENCH_CONFIG).eval(), "random-init"), f"random init {BENCH_CONFIG}"


def timed(fn):
    """(result, CPU seconds of this process, wall seconds)."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=16)
    parser.add_argument("--features", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/results/probe_speed.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, source = benchmark_model()
    rng = np.random.default_rng(0)
    classes = np.arange(10)
    queries = [
        ProbeQuery(i, rng.normal(size=args.features).astype(np.float32), int(classes[i % 10]), i % 2 == 0, classes)
        for i in range(args.queries)
    ]
    t0 = time.perf_counter()
    tasks, _ = build_probe_tasks(queries, max_context=model.cfg.max_context, max_features=model.cfg.max_features)
    build_s = time.perf_counter() - t0
    n = len(tasks)
    rows = [len(t.context_y) for t in tasks]
    per_block = 4 * 48
    blocks = [tasks[i : i + per_block] for i in range(0, n, per_block)]
    spent = {k: {"cpu_s": 0.0, "wall_s": 0.0} for k in ("batched", "naive")}
    max_diff = 0.0
    for r in range(args.rounds):
        for j, block in enumerate(blocks):
            out = {}
            names = ("batched", "naive") if (r + j) % 2 == 0 else ("naive", "batched")
            for name in names:
                fn = score_tasks if name == "batched" else score_tasks_naive
                out[name], cpu, wall = timed(lambda fn=fn, block=block: fn(model, block))
                spent[name]["cpu_s"] += cpu
                spent[name]["wall_s"] += wall
            max_diff = max(max_diff, float(np.abs(out["batched"] - out["naive"]).max()))
    probes = n * args.rounds
    rate = {
        k: {"probes_per_cpu_s": probes / v["cpu_s"], "probes_per_wall_s": probes / v["wall_s"], **v}
        for k, v in spent.items()
    }
    sweep = {}
    for cells in (2048, 4096, 8192, None):  # padded cells per batch, on the first block
        _, cpu, _ = timed(lambda cells=cells: score_tasks(model, blocks[0], Batching(max_cells=cells)))
        sweep[str(cells)] = len(blocks[0]) / cpu
    result = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "torch": torch.__version__,
            "threads": args.threads,
            "cpus": os.cpu_count(),
            "note": "machine shared with other jobs",
        },
        "model": source,
        "checkpoint_sha256": model.checkpoint_sha256,
        "workload": {
            "queries": args.queries,
            "manipulations": 48,
            "probes": n,
            "rounds": args.rounds,
            "candidates": 10,
            "features": args.features,
            "context_rows_mean": float(np.mean(rows)),
            "context_rows_max": int(np.max(rows)),
        },
        "batched": {
            "chunk_size": DEFAULT_CHUNK,
            "max_cells": DEFAULT_CELLS,
            "max_padding": DEFAULT_PADDING,
            **rate["batched"],
        },
        "naive": rate["naive"],
        "ratio_batched_over_naive_cpu": rate["batched"]["probes_per_cpu_s"] / rate["naive"]["probes_per_cpu_s"],
        "ratio_batched_over_naive_wall": rate["batched"]["probes_per_wall_s"] / rate["naive"]["probes_per_wall_s"],
        "max_abs_difference": max_diff,
        "max_cells_sweep_probes_per_cpu_s": sweep,
        "build_contexts_s": build_s,
    }
    atomic_write_text(Path(args.out), json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k not in ("machine", "model")}, indent=1))


if __name__ == "__main__":
    main()
