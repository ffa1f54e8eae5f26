"""Benchmark: the cost of ``grids/paper_shipped.yaml`` (Sec. 5, Tab. 2; App. D) per task; its wall time on N workers.

Measured here, on one core (``torch.set_num_threads(1)``, as every sweep worker runs), per shipped
table and Q in {50, 512}, at the grid's settings (context 512, lr 1e-3, label condition none, the
shipped reference LTM), each in a fresh temporary store, after one untimed warm-up run:

* **fine-tuning**: a run of ``--epochs`` E1 and one of E2 epochs (split manifest included). One
  AdamW step per epoch (Sec. 4.1), so ``step_s = (t(E2) - t(E1)) / (E2 - E1)`` and the run's fixed
  cost ``t(E1) - E1 * step_s``; a 500-epoch run is extrapolated linearly: ``fixed + 500 * step_s``;
* **probing one (run, epoch)**: M_ref's scores of the run (``ref_s``) and M_theta's at epoch 1
  (``theta_s``), all 48 manipulations, 10 candidates. At Q = 50 every member and non-member is
  probed (100 queries, as the grid's ``max_queries: 512`` does); at Q = 512 ``--probe-queries``
  members + as many non-members, scaled linearly to the grid's 1,024 queries (``scaled_from``);
* **summary**: :func:`iclmem.probe.summarize_run` of one epoch at the grid's ``n_boot`` (1000).

A single-task task of the grid is then ``fine-tune(500) + ref + 8 theta (epochs 1-500; epoch 0
reuses M_ref's scores) + 9 summaries``. A joint task (App. D: one AdamW step per table per epoch,
every table probed) is estimated as the sum of the four tables' Q = 512 single-task tasks; it is not
measured. M_ref's scores are counted in every task (a task on a worker of its own computes them
unless another task of the same split stored them first), so the total is an upper bound by at
most one ``ref_s`` per task.

The wall time on N workers: the tasks are indivisible, largest first (as ``iclmem sweep`` submits
them), so the makespan of that greedy schedule (``lpt_s``) bounds it from below; it is divided by
the efficiency measured by ``benchmarks/sweep_scaling.py`` (``benchmarks/results/sweep_scaling.json``:
the 2-worker speed-up over what the grid's granularity allowed), the only measured multi-worker
number. Beyond 2 workers that efficiency is an extrapolation. ``--slice-store`` adds the wall times
of a slice already run by ``iclmem sweep benchmarks/paper_shipped_slice.yaml``. Writes
``benchmarks/results/paper_shipped_cost.json``.

    python benchmarks/paper_shipped_cost.py [--epochs 2 12] [--probe-queries 32] [--slice-store DIR]
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

from iclmem.ltm import load_reference
from iclmem.probe import probe_run, summarize_run
from iclmem.probe.settings import ProbeSettings
from iclmem.store.atomic import atomic_write_text
from iclmem.sweep import load_grid, summary_dir
from iclmem.sweep.cost import lpt_makespan
from iclmem.sweep.gridfile import DatasetSource, Grid
from iclmem.training.grid import RunSpec, run_spec

REPO = Path(__file__).resolve().parents[1]
GRID = REPO / "grids" / "paper_shipped.yaml"
SLICE = REPO / "benchmarks" / "paper_shipped_slice.yaml"
OUT = REPO / "benchmarks" / "results" / "paper_shipped_cost.json"
WORKERS = (1, 2, 8, 32, 128)


def measure(table: str, q: int, epochs: tuple[int, int], probe_queries: int, grid: Grid) -> dict:
    """Fine-tuning, probing and summary seconds of one (table, Q) at the grid's settings."""
    ref = load_reference()
    data = DatasetSource(table).load()
    spec0, p = grid.specs[0], grid.probe
    out: dict = {"table": table, "Q": q, "features": int(data.features.shape[1])}
    for e in epochs:
        with tempfile.TemporaryDirectory() as store:
            spec = RunSpec(table, 1e-3, q, "none", e, spec0.seed, spec0.context_size)
            start = time.perf_counter()
            run = run_spec(spec, ref, store)
            out[f"finetune_{e}_epochs_s"] = time.perf_counter() - start
            if e != max(epochs):
                continue
            n = probe_queries if q == 512 else p.max_queries  # Q = 50: every query, as the grid
            start = time.perf_counter()
            probe_run(
                run,
                data,
                ref,
                ProbeSettings(n_candidates=p.n_candidates, max_queries=n, epochs=(), seed=p.seed),
                results_dir=store,
                progress=False,
            )
            out["ref_s"] = time.perf_counter() - start
            start = time.perf_counter()
            scores = probe_run(
                run,
                data,
                ref,
                ProbeSettings(n_candidates=p.n_candidates, max_queries=n, epochs=(1,), seed=p.seed),
                results_dir=store,
                progress=False,
            )
            out["theta_s"] = time.perf_counter() - start
            out["probed_queries"] = int(scores[scores.model == "ref"].query_id.nunique())
            start = time.perf_counter()
            summarize_run(scores, run, n_boot=p.n_boot, seed=p.seed)
            out["summary_s"] = time.perf_counter() - start
    e1, e2 = epochs
    step = (out[f"finetune_{e2}_epochs_s"] - out[f"finetune_{e1}_epochs_s"]) / (e2 - e1)
    out["step_s"] = step
    out["finetune_fixed_s"] = max(out[f"finetune_{e1}_epochs_s"] - e1 * step, 0.0)
    full = 2 * q  # the grid probes Q members and Q non-members
    scale = full / out["probed_queries"]
    out["scaled_from"] = out["probed_queries"]
    out["ref_full_s"], out["theta_full_s"] = out["ref_s"] * scale, out["theta_s"] * scale
    out["summary_full_s"] = out["summary_s"] * scale
    return out


def task_cost(m: dict, epochs: int, probe_epochs: int) -> dict:
    """A single-task task's projected seconds: fine-tune to ``epochs``, probe and summarize ``probe_epochs``."""
    finetune = m["finetune_fixed_s"] + epochs * m["step_s"]
    probe = m["ref_full_s"] + (probe_epochs - 1) * m["theta_full_s"]
    summary = probe_epochs * m["summary_full_s"]
    return {"finetune_s": finetune, "probe_s": probe, "summary_s": summary, "task_s": finetune + probe + summary}


def warm_up(table: str, grid: Grid) -> None:
    """One untimed 1-epoch run and probe: imports, the reference and the table's encoding are loaded before timing."""
    ref, data, spec0 = load_reference(), DatasetSource(table).load(), grid.specs[0]
    with tempfile.TemporaryDirectory() as store:
        run = run_spec(RunSpec(table, 1e-3, 50, "none", 1, spec0.seed, spec0.context_size), ref, store)
        probe_run(
            run,
            data,
            ref,
            ProbeSettings(n_candidates=grid.probe.n_candidates, max_queries=2, epochs=(1,)),
            results_dir=store,
            progress=False,
        )


def slice_times(store: Path) -> list[dict]:
    grid = load_grid(SLICE)
    found = []
    for path in sorted(summary_dir(grid.name, store).glob("*.json")):
        s = json.loads(path.read_text())
        found.append({"key": s["key"], "status": s["status"], "wall_s": s["wall_s"], "host": s["host"]})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, nargs=2, default=[2, 12], metavar=("E1", "E2"))
    parser.add_argument("--probe-queries", type=int, default=32, help="members (and non-members) probed at Q = 512")
    parser.add_argument("--tables", nargs="*", help="default: the grid's four")
    parser.add_argument(
        "--slice-store", type=Path, help="results folder of `iclmem sweep benchmarks/paper_shipped_slice.yaml`"
    )
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    torch.set_num_threads(1)
    grid = load_grid(GRID)
    tables = args.tables or list(dict.fromkeys(d for s in grid.specs for d in s.datasets))
    load_start = os.getloadavg()
    started = time.perf_counter()
    warm_up(tables[0], grid)
    measured = [
        measure(t, q, tuple(args.epochs), args.probe_queries, grid) for t in tables for q in (50, 512)
    ]  # fmt: skip
    by = {(m["table"], m["Q"]): m for m in measured}
    print(json.dumps(measured, indent=1))
    tasks = []
    for spec in grid.specs:
        if any((d, spec.query_size) not in by for d in spec.datasets):
            raise SystemExit(f"{spec.dataset} Q={spec.query_size} was not measured: the projection needs every table")
        probe_epochs = len(grid.probe.epochs_for(spec.config().probe_epochs))
        if spec.regime == "single_task_fixed":
            cost = task_cost(by[(spec.dataset, spec.query_size)], spec.epochs, probe_epochs)
        else:  # joint: one step per table per epoch, every table probed: the tables' single-task tasks summed
            parts = [task_cost(by[(d, spec.query_size)], spec.epochs, probe_epochs) for d in spec.datasets]
            cost = {k: sum(p[k] for p in parts) for k in parts[0]}
        tasks.append({"regime": spec.regime, "dataset": spec.dataset, "Q": spec.query_size, **cost})
    costs = [t["task_s"] for t in tasks]
    scaling = json.loads((REPO / "benchmarks" / "results" / "sweep_scaling.json").read_text())
    efficiency = scaling["speedup_2_over_1_workers"] / scaling["ideal_speedup_2_over_1"]
    n_probe = len(grid.probe.epochs_for(grid.specs[0].config().probe_epochs))
    per_task = {f"{t}-Q{q}": task_cost(by[(t, q)], grid.specs[0].epochs, n_probe) for t, q in by}
    result = {
        "machine": {
            "platform": platform.platform(),
            "torch": torch.__version__,
            "threads": 1,
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in load_start],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "grid": {"file": "grids/paper_shipped.yaml", "tasks": len(grid.specs), "epochs": grid.specs[0].epochs},
        "method": {
            "finetune_epochs_measured": args.epochs,
            "finetune_extrapolation": "fixed + 500 * step_s, linear",
            "probe_queries_at_Q512": 2 * args.probe_queries,
            "probe_extrapolation": "seconds scaled linearly to 2 Q probed queries",
            "joint_tasks": "estimated: sum of the four tables' Q=512 single-task tasks (not measured)",
        },
        "measured": measured,
        "per_task_s": per_task,
        "total_cpu_s": sum(costs),
        "largest_task_s": max(costs),
        "efficiency": {
            "value": efficiency,
            "source": "benchmarks/results/sweep_scaling.json: speedup_2_over_1_workers / ideal_speedup_2_over_1 "
            f"= {scaling['speedup_2_over_1_workers']} / {scaling['ideal_speedup_2_over_1']} (2 local workers, "
            "unpinned, 2-core machine); beyond 2 workers an extrapolation",
        },
        "projected_wall_s": {
            str(n): {
                "lpt_s": lpt_makespan(costs, n),
                "wall_s": lpt_makespan(costs, n) / (1.0 if n == 1 else efficiency),
            }
            for n in WORKERS
        },
        "benchmark_wall_s": time.perf_counter() - started,
        "note": args.note,
    }
    if args.slice_store:
        result["slice"] = {"grid": "benchmarks/paper_shipped_slice.yaml", "tasks": slice_times(args.slice_store)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT, json.dumps(result, indent=1, default=float))
    shown = ("per_task_s", "total_cpu_s", "largest_task_s", "projected_wall_s")
    print(json.dumps({k: result[k] for k in shown}, indent=1))


if __name__ == "__main__":
    main()
