"""Benchmark: probing and fine-tuning against this machine's own float32 matmul peak (issue: performance).

In one run, for 1 and 2 threads:

* **peak**: the best of several float32 matmuls, a large square one (2048^3) and one of the model's
  own shapes (4096 cells x 64 -> 192, the q/k/v projection of a probing batch);
* **probing**: the book's scoring path (:func:`iclmem.probe.score_tasks`: distinct contexts only,
  identical rows merged) on the 48 manipulations of synthetic queries shaped like the book's two
  tables (binary with 18 features like ``spotify``; 10 candidates with 15 features like ``wine_pl``);
* **fine-tuning**: one AdamW step (forward, backward, update) at the book's shapes (256 context
  rows, Q = 50 and Q = 512 query rows, 18 features);
* **probing, the book's workload** (``probing_book``): the distinct contexts of every member and
  non-member of a real Q = 512 run of each shipped table (1,024 queries x 48 manipulations, as
  notebook 03 probes them since ``max_queries`` is None), planned and collated once and scored by
  M_ref: the time of one :meth:`~iclmem.probe.scoring.ScoringBatches.score`, which is what every
  probed model after the first costs the book (``iclmem.probe.run`` plans a run's batches once for
  M_ref and all its epochs). The synthetic ``probing`` rows above time 16 queries (768 probes) with
  the planning and deduplication inside the timed call, a few hundred contexts in half-filled
  batches: they understate the rate of the book's probing by 2-3x (``--book-queries`` sets the
  queries per pool; 0 skips these rows).

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
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from finetune_speed import training_step  # benchmarks/ is on the path when this script runs
from flops import counted_flops

from iclmem.chapters.ch_a2_benchmarks.tables import ROOFLINE_STAGES
from iclmem.ltm import ICLTask, ReferenceLTM, load_reference
from iclmem.probe import ProbeQuery, build_probe_tasks, run_queries, score_tasks
from iclmem.probe.invariances import distinct_tasks, model_invariances
from iclmem.probe.label_control import run_probe_tasks
from iclmem.probe.manipulations import resolve_manipulations
from iclmem.probe.scoring import ScoringBatches
from iclmem.store.atomic import atomic_write_text
from iclmem.sweep.gridfile import DatasetSource
from iclmem.training.finetune import prepare_run_data
from iclmem.training.grid import RunSpec, run_spec

PROBE_SHAPES = {"binary, 18 features (spotify-like)": (2, 18), "10 candidates, 15 features (wine_pl-like)": (10, 15)}
BOOK_TABLES = ("spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices")
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


def book_batches(model: ReferenceLTM, table: str, queries: int | None, store: str) -> ScoringBatches:
    """The planned batches of a Q = 512 run's distinct probe contexts on ``table`` (``queries`` per pool, None: all).

    The same contexts as notebook 03's suite (:mod:`iclmem.probe.run`): the run's members and non-members,
    their candidates, the 48 manipulations, deduplicated under the model's invariances. The run is
    M_ref itself (0 epochs): the scores' cost does not depend on the weights.
    """
    data = DatasetSource(table).load()
    run = run_spec(RunSpec(table, 1e-3, 512, "none", 0, 0, 256), model, store)
    run_data = prepare_run_data(run.manifest, data, run.config, model.max_classes)
    probes = run_queries(run_data, data, run, 10, 0, queries, model.max_classes)
    tasks, _ = run_probe_tasks(run_data, probes, resolve_manipulations(None), 0, model)
    first, _ = distinct_tasks(tasks, model_invariances(model))
    return ScoringBatches(model, [tasks[i] for i in first])


def probing_book(model: ReferenceLTM, batches: ScoringBatches, flops: int, peak: float) -> dict:
    """One :meth:`ScoringBatches.score` of the book's workload (after a first call that collates): rate and fraction."""
    seconds = best_seconds(lambda: batches.score(model), 1)
    achieved = flops / seconds / 1e9
    return {
        "contexts": len(batches.tasks),
        "batches": len(batches.chunks),
        "seconds_per_model": seconds,
        "contexts_per_s": len(batches.tasks) / seconds,
        "mflop_per_context": flops / len(batches.tasks) / 1e6,
        "gflop_per_s": achieved,
        "fraction": achieved / peak,
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


def measure(threads: int, n_queries: int, steps: int, book: dict[str, tuple[ScoringBatches, int]]) -> dict:
    """Every row of one thread count; ``book``: each table's planned batches and their FLOPs (counted once)."""
    torch.set_num_threads(threads)
    model = load_reference()
    peak = matmul_peak(2048, 2048, 2048)
    out = {
        "peak_gflop_per_s": peak,
        "model_shape_gflop_per_s": matmul_peak(4096, 64, 192),
        "probing": {},
        "probing_book": {},
        "finetuning": {},
    }
    for name, (n_classes, n_features) in PROBE_SHAPES.items():
        tasks = probe_workload(model, n_classes, n_features, n_queries)
        out["probing"][name] = probing(model, tasks, peak, dense_flops(model, tasks))
    for table, (batches, flops) in book.items():
        out["probing_book"][table] = probing_book(model, batches, flops, peak)
    for name, (n_context, n_query, n_features) in FINETUNE_SHAPES.items():
        out["finetuning"][name] = finetune_step(model, n_context, n_query, n_features, steps, peak)
    return out


def book_workloads(queries: int | None) -> dict[str, tuple[ScoringBatches, int]]:
    """Each shipped table's Q = 512 batches (:func:`book_batches`) with the FLOPs of one scoring pass."""
    model = load_reference()
    out = {}
    with tempfile.TemporaryDirectory() as store:
        for table in BOOK_TABLES:
            batches = book_batches(model, table, queries, store)
            out[table] = (batches, counted_flops(lambda b=batches: b.score(model)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--queries", type=int, default=16)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument(
        "--book-queries", type=int, default=None, help="members and non-members per Q = 512 run (default all; 0: skip)"
    )
    parser.add_argument("--label", default="current")
    parser.add_argument("--merge", action="store_true", help="keep the other labels already in --out")
    parser.add_argument("--out", default="benchmarks/results/roofline.json")
    args = parser.parse_args()
    out = Path(args.out)
    report = json.loads(out.read_text()) if args.merge and out.exists() else {}
    report["machine"] = {"platform": platform.platform(), "torch": torch.__version__, "cpus": os.cpu_count()}
    book = {} if args.book_queries == 0 else book_workloads(args.book_queries)
    report.setdefault("runs", {})[args.label] = {
        str(t): measure(t, args.queries, args.steps, book) for t in args.threads
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(report, indent=1))
    for t, r in report["runs"][args.label].items():
        print(f"[{args.label}] {t} thread(s): peak {r['peak_gflop_per_s']:.0f} GFLOP/s")
        for kind, unit, key in ROOFLINE_STAGES:
            for name, row in r.get(kind, {}).items():
                rate = f"{row[key]:.2f} {unit}"
                print(
                    f"  {kind:10s} {name:45s} {rate:>16s}  {row['gflop_per_s']:6.1f} GFLOP/s = {row['fraction']:.0%} "
                    "of peak"
                )


if __name__ == "__main__":
    main()
