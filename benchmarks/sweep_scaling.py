"""Benchmark: the sweep on 1 and 2 local Dask workers, and the engine's per-task overhead (issue: section 5).

One small grid (``--tasks`` single-task runs of the shipped tables at Q=50, lr 1e-4, 2 epochs,
a 64-row context, 8 members + 8 non-members probed with 12 manipulations) is run three times,
each into a fresh results folder so every task computes:

* ``direct``: :func:`iclmem.sweep.run_task` called in a loop in this process (no engine);
* ``workers_1`` / ``workers_2``: :func:`iclmem.sweep.run_sweep` on a ``LocalCluster`` of 1 / 2
  worker processes (one thread each);
* ``workers_2_pinned``: the same 2 workers, each pinned to a core of its own (CPU affinity).

What the grid's granularity allows is computed from the direct per-task times: the wall time of
2 workers that take the tasks in order with no overhead (``ideal_2_worker_wall_s``).

Every engine is warmed first (imports, the reference LTM and the tables loaded in each
process), so the wall times compare steady-state task throughput, as in a long sweep; the
cluster start-up and warm-up times are reported separately. Reported: the speed-up
``workers_1 / workers_2`` (at most 2 on 2 cores, less when other jobs share them), and the
per-task overhead of the engine, measured twice: from the real tasks,
``(workers_1 - direct) / tasks``, and on tasks that do no work (summaries already in the store:
``run_task`` returns at once), ``--trivial`` of them submitted to a warm 1-worker cluster vs
called directly. Writes ``benchmarks/results/sweep_scaling.json``.

    python benchmarks/sweep_scaling.py [--tasks 6] [--trivial 40] [--note 'quiet machine']
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import torch

from iclmem.probe import MANIPULATIONS
from iclmem.store.atomic import atomic_write_text
from iclmem.sweep import local_client, parse_grid, run_sweep, run_task
from iclmem.sweep.engine import Cluster, _task
from iclmem.sweep.tasks import SweepContext, reference_sha, spec_key, sweep_code_version

DATASETS = ["spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices"]
#: one manipulation from each of the 11 categories of Tab. 7, plus the baseline's shuffled twin
MANIPS = list(
    dict.fromkeys(
        [
            next(m.name for m in MANIPULATIONS.values() if m.category == c)
            for c in dict.fromkeys(m.category for m in MANIPULATIONS.values())
        ]
        + ["shuffle_first"]
    )
)


def small_grid(tasks: int):
    datasets = (DATASETS * ((tasks + len(DATASETS) - 1) // len(DATASETS)))[:tasks]
    seeds = [i // len(DATASETS) for i in range(tasks)]  # more tasks than tables: other seeds
    parts = [{"datasets": [d], "seed": s} for d, s in zip(datasets, seeds, strict=True)]
    return parse_grid(
        {
            "name": "scaling",
            "learning_rates": [1e-4],
            "query_sizes": [50],
            "epochs": 2,
            "context_size": 64,
            "probe": {"max_queries": 8, "manipulations": MANIPS, "n_boot": 50, "epochs": [1, 2]},
            "datasets": DATASETS,
            "parts": parts,
        }
    )


def greedy_makespan(durations: list[float], workers: int) -> float:
    """Wall time of ``durations`` run in order, each on the first free of ``workers`` (no overhead)."""
    free = [0.0] * workers
    for d in durations:
        free[free.index(min(free))] += d
    return max(free)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def warm(datasets: list[str]) -> None:
    """Imports, the reference LTM and the deduplicated tables, loaded once in this process."""
    import torch

    from iclmem.sweep.gridfile import DatasetSource
    from iclmem.sweep.tasks import _reference_from

    torch.set_num_threads(1)
    _reference_from(None)
    for name in datasets:
        DatasetSource(name).load()


def pin_to_core(dask_worker) -> list[int]:  # noqa: ANN001 - client.run passes the worker by this name
    """Pin this worker process to one core of its own (worker ``i`` on core ``i``); returns its affinity."""
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[int(dask_worker.name) % len(cores)]})
    return sorted(os.sched_getaffinity(0))


def on_cluster(workers: int, grid, root: Path, pinned: bool = False) -> dict:
    client, startup = timed(lambda: local_client(workers))
    try:
        cores = client.run(pin_to_core) if pinned else {}
        _, warmup = timed(lambda: client.run(warm, DATASETS))
        result, wall = timed(lambda: run_sweep(grid, cluster=Cluster(client=client), results_dir=root, progress=False))
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    if result.failed:
        raise SystemExit(f"tasks failed: {[s['error'] for s in result.failed]}")
    out = {"startup_s": round(startup, 2), "warmup_s": round(warmup, 2), "wall_s": round(wall, 2)}
    return {**out, "cores": sorted(cores.values())} if pinned else out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--trivial", type=int, default=40)
    parser.add_argument("--out", default="benchmarks/results/sweep_scaling.json")
    parser.add_argument("--note", default="", help="what else ran on the machine (stored with the result)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    grid = small_grid(args.tasks)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="iclmem-sweep-scaling-") as tmp:
        root = Path(tmp)
        direct_context = SweepContext(grid.name, grid.probe, grid.sources, root / "direct")
        warm(DATASETS)
        per_task = [timed(lambda s=s: run_task(s, direct_context))[1] for s in grid.specs]
        direct = sum(per_task)
        one = on_cluster(1, grid, root / "w1")
        two = on_cluster(2, grid, root / "w2")
        pinned = on_cluster(2, grid, root / "w2p", pinned=True)
        client = local_client(1)
        try:
            sha, version = reference_sha(None), sweep_code_version()
            spec = grid.specs[0]
            key = spec_key(spec, grid.probe, grid.sources, sha, version)
            context = SweepContext(grid.name, grid.probe, grid.sources, str(root / "w1"), sha, None, 1)
            _, direct_trivial = timed(lambda: [run_task(spec, context, key=key) for _ in range(args.trivial)])
            client.submit(_task, spec, None, key, context, pure=False).result()  # warm: imports on the worker
            _, dask_trivial = timed(
                lambda: client.gather(
                    [client.submit(_task, spec, None, key, context, pure=False) for _ in range(args.trivial)]
                )
            )
        finally:
            cluster = client.cluster
            client.close()
            cluster.close()
    n = len(grid.specs)
    result = {
        "machine": {
            "platform": platform.platform(),
            "torch": torch.__version__,
            "threads_per_worker": 1,
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in load],
        },
        "grid": {
            "tasks": n,
            "datasets": sorted({s.dataset for s in grid.specs}),
            "query_size": 50,
            "epochs": 2,
            "context_size": 64,
            "max_queries": 8,
            "manipulations": len(MANIPS),
            "model": "load_reference()",
        },
        "wall_s": {
            "direct": round(direct, 2),
            "workers_1": one["wall_s"],
            "workers_2": two["wall_s"],
            "workers_2_pinned": pinned["wall_s"],
        },
        "speedup_2_over_1_workers": round(one["wall_s"] / two["wall_s"], 3),
        "speedup_2_pinned_over_1_workers": round(one["wall_s"] / pinned["wall_s"], 3),
        "cluster": {"workers_1": one, "workers_2": two, "workers_2_pinned": pinned},
        "overhead_per_real_task_s": round((one["wall_s"] - direct) / n, 3),
        "trivial_tasks": {
            "n": args.trivial,
            "direct_per_task_ms": round(1000 * direct_trivial / args.trivial, 2),
            "dask_per_task_ms": round(1000 * dask_trivial / args.trivial, 2),
            "overhead_per_task_ms": round(1000 * (dask_trivial - direct_trivial) / args.trivial, 2),
        },
        "direct_per_task_s": round(direct / n, 2),
        "direct_task_s": [round(t, 2) for t in per_task],
        # what the grid's granularity allows 2 workers: tasks in submission order to whichever worker is free
        "ideal_2_worker_wall_s": round(greedy_makespan(per_task, 2), 2),
        "ideal_speedup_2_over_1": round(direct / greedy_makespan(per_task, 2), 3),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "note": args.note,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
