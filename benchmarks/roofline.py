"""Benchmark: probing and fine-tuning against this machine's own float32 matmul peak (issue: performance).

In one run, for 1 and 2 threads:

* **peak**: the best of several float32 matmuls, a large square one (2048^3) and one of the model's
  own shapes (4096 cells x 64 -> 192, the q/k/v projection of a probing batch);
* **probing**: the book's scoring path (:func:`iclmem.probe.score_tasks`: distinct contexts only,
  identical rows merged) on the 48 manipulations of synthetic queries shaped like the book's two
  tables (binary with 18 features like ``spotify``; 10 candidates with 15 features like ``wine_pl``);
* **fine-tuning**: one AdamW step (forward, backward, update) at the book's shapes (256 context
  rows, Q = 50 and Q = 512 query rows, 18 features).

FLOPs are counted on the real passes with ``torch.utils.flop_counter.FlopCounterMode`` (matmuls and
attention, torch's CPU flash attention included by ``flops.py``; elementwise work counts zero), so
``fraction = achieved GFLOP/s / square peak``. Work the
path avoids (contexts scored once, rows merged) is not counted: ``dense_mflop_per_probe`` is what
scoring every context row by row would cost, and ``dense_equivalent_fraction`` the rate of that
work. Writes ``benchmarks/results/roofline.json``; the A2 appendix plots it.

    python benchmarks/roofline.py [--threads 1 2] [--queries 16] [--steps 4] [--out PATH]

``--label`` names the code measured (e.g. ``before``): results go under that key, so one file can
hold the run of an older checkout next to this one (see ``--merge``).
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
from finetune_speed import training_step  # benchmarks/ is on the path when this script runs
from flops import counted_flops

from iclmem.atomic import atomic_write_text
from iclmem.ltm import ICLTask, ReferenceLTM, load_reference
from iclmem.probe import ProbeQuery, build_probe_tasks, score_tasks

PROBE_SHAPES = {"binary, 18 features (spotify-like)": (2, 18), "10 candidates, 15 features (wine_pl-like)": (10, 15)}
FINETUNE_SHAPES = {"context 256, Q 50": (256, 50, 18), "context 256, Q 512": (256, 512, 18)}


def best_seconds(fn, repeats: int) -> float:
    """The fastest of ``repeats`` timed calls (after one warm-up call)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def matmul_peak(m: int, k: int, n: int, repeats: int = 5) -> float:
    """GFLOP/s of the best of ``repeats`` rounds of (m x k) @ (k x n) in float32."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    inner = max(1, int(2e9 // (2 * m * k * n)))  # ~2 GFLOP per round

    def run() -> None:
        for _ in range(inner):
            a @ b

    return 2 * m * k * n * inner / best_seconds(run, repeats) / 1e9


def probe_workload(model: ReferenceLTM, n_classes: int, n_features: int, n_queries: int) -> list[ICLTask]:
    rng = np.random.default_rng(0)
    classes = np.arange(n_classes)
    queries = [
        ProbeQuery(i, rng.normal(size=n_features).astype(np.float32), int(classes[i % n_classes]), i % 2 == 0, classes)
        for i in range(n_queries)
    ]
    tasks, _ = build_probe_tasks(queries, max_context=model.cfg.max_context, max_features=model.cfg.max_features)
    return tasks


def dense_flops(model: ReferenceLTM, tasks: list[ICLTask]) -> int:
    """FLOPs of scoring every task row by row (no reuse, no merging): the work the fast path avoids."""
    dense = ReferenceLTM(model.network, model.checkpoint_sha256)
    dense.merge_rows = False

    def run() -> None:
        with torch.no_grad():
            for i in range(0, len(tasks), 64):
                dense.predict(tasks[i : i + 64])

    return counted_flops(run)


def probing(model: ReferenceLTM, tasks: list[ICLTask], peak: float, dense: int) -> dict:
    seconds = best_seconds(lambda: score_tasks(model, tasks), 2)
    flops = counted_flops(lambda: score_tasks(model, tasks))
    achieved = flops / seconds / 1e9
    return {
        "probes": len(tasks),
        "probes_per_s": len(tasks) / seconds,
        "mflop_per_probe": flops / len(tasks) / 1e6,
        "dense_mflop_per_probe": dense / len(tasks) / 1e6,
        "gflop_per_s": achieved,
        "fraction": achieved / peak,
        "dense_equivalent_fraction": dense / seconds / 1e9 / peak,
    }


def finetune_step(model: ReferenceLTM, n_context: int, n_query: int, n_features: int, steps: int, peak: float) -> dict:
    step = training_step(model, n_context, n_query, n_features)
    flops = counted_flops(step)
    seconds = best_seconds(step, steps)
    achieved = flops / seconds / 1e9
    return {
        "steps_per_s": 1 / seconds,
        "gflop_per_step": flops / 1e9,
        "gflop_per_s": achieved,
        "fraction": achieved / peak,
    }


def measure(threads: int, n_queries: int, steps: int) -> dict:
    torch.set_num_threads(threads)
    model = load_reference()
    peak = matmul_peak(2048, 2048, 2048)
    out = {
        "peak_gflop_per_s": peak,
        "model_shape_gflop_per_s": matmul_peak(4096, 64, 192),
        "probing": {},
        "finetuning": {},
    }
    for name, (n_classes, n_features) in PROBE_SHAPES.items():
        tasks = probe_workload(model, n_classes, n_features, n_queries)
        out["probing"][name] = probing(model, tasks, peak, dense_flops(model, tasks))
    for name, (n_context, n_query, n_features) in FINETUNE_SHAPES.items():
        out["finetuning"][name] = finetune_step(model, n_context, n_query, n_features, steps, peak)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--queries", type=int, default=16)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--label", default="current")
    parser.add_argument("--merge", action="store_true", help="keep the other labels already in --out")
    parser.add_argument("--out", default="benchmarks/results/roofline.json")
    args = parser.parse_args()
    out = Path(args.out)
    report = json.loads(out.read_text()) if args.merge and out.exists() else {}
    report["machine"] = {"platform": platform.platform(), "torch": torch.__version__, "cpus": os.cpu_count()}
    report.setdefault("runs", {})[args.label] = {str(t): measure(t, args.queries, args.steps) for t in args.threads}
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(report, indent=1))
    for t, r in report["runs"][args.label].items():
        print(f"[{args.label}] {t} thread(s): peak {r['peak_gflop_per_s']:.0f} GFLOP/s")
        for kind in ("probing", "finetuning"):
            for name, row in r[kind].items():
                rate = (
                    f"{row['probes_per_s']:.0f} probes/s" if kind == "probing" else f"{row['steps_per_s']:.2f} steps/s"
                )
                print(
                    f"  {kind:10s} {name:45s} {rate:>16s}  {row['gflop_per_s']:6.1f} GFLOP/s = {row['fraction']:.0%} "
                    "of peak"
                )


if __name__ == "__main__":
    main()
