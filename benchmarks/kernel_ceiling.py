"""Benchmark: the ceiling the reference LTM's own shapes put on a fine-tuning step, and what batching runs buys.

Issue "Fast enough to decide" asks for fine-tuning and probing at 40% of the machine's float32 peak,
or for the measured ceiling of the model's shapes. In one run, on one thread:

* **peak**: the best 2048^3 float32 matmul (as ``roofline.py``);
* **kernels at the model's shapes**, each timed alone and counted with ``FlopCounterMode``:
  the q/k/v projection of a fine-tuning step (tokens x 96 -> 288), the row attention of a
  fine-tuning step (19 columns x 4 heads, 16-dimensional heads, 306 or 768 query rows over 256
  context rows; torch's flash kernel, forward and backward) and the feature attention (4 heads of
  16 over the 19 cells of each row: thousands of 19 x 19 attentions, by batched matmuls);
* **the step's ceiling**: the step's FLOPs split by kernel kind (``FlopCounterMode`` on a real
  step), each kind at the rate its kernel reaches alone: the step cannot beat
  ``flops / sum(flops_kind / rate_kind)`` even with free elementwise work (layer norms, GELU,
  copies, which count zero FLOPs and take the rest of the time);
* **batched runs**: ``G`` runs of a grid stacked in one forward share the shapes of ``G`` tasks in
  one batch of one model (the same matmuls, ``G`` times the rows); their seconds per task at
  ``G`` = 1, 2, 4, interleaved (``--rounds`` rounds, medians), bound what stacking the runs'
  weights could gain: if one model does not gain from ``G`` tasks per forward, ``G`` models cannot.

Writes ``benchmarks/results/kernel_ceiling.json``; the A2 appendix shows it.

    python benchmarks/kernel_ceiling.py [--rounds 3] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from finetune_speed import model  # benchmarks/ is on the path when this script runs
from flops import flops_by_op
from roofline import best_seconds

from iclmem.ltm import ICLTask
from iclmem.ltm.attention import small_attention
from iclmem.store.atomic import atomic_write_text

D_MODEL, HEADS, HEAD_DIM, COLUMNS, CONTEXT = 96, 4, 16, 19, 256
KINDS = {
    "linear": ("mm", "addmm"),
    "feature attention (bmm)": ("bmm", "baddbmm"),
    "row attention (flash)": ("_scaled_dot_product_flash_attention_for_cpu",),
}


def rate(fn: Callable[[], object]) -> float:
    """GFLOP/s of ``fn`` alone."""
    return sum(flops_by_op(fn).values()) / best_seconds(fn, 3) / 1e9


def kernel_rates(n_query: int) -> dict[str, float]:
    """GFLOP/s of each kernel kind at the shapes of a fine-tuning step with ``n_query`` query rows."""
    rows = CONTEXT + n_query
    x = torch.randn(rows * COLUMNS, D_MODEL)
    w = torch.randn(3 * D_MODEL, D_MODEL)
    b = torch.randn(3 * D_MODEL)

    def linear() -> None:
        F.linear(x, w, b)

    def grad(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, requires_grad=True)

    q, k, v = (
        grad(COLUMNS, HEADS, rows, HEAD_DIM),
        grad(COLUMNS, HEADS, CONTEXT, HEAD_DIM),
        grad(COLUMNS, HEADS, CONTEXT, HEAD_DIM),
    )

    def row_attention() -> None:
        F.scaled_dot_product_attention(q, k, v).sum().backward()

    qf = grad(rows, HEADS, COLUMNS, HEAD_DIM)
    kf = grad(rows, HEADS, COLUMNS, HEAD_DIM)
    vf = grad(rows, HEADS, COLUMNS, HEAD_DIM)

    def feature_attention() -> None:
        small_attention(qf, kf, vf, None).sum().backward()

    return {
        "linear": rate(linear),
        "row attention (flash)": rate(row_attention),
        "feature attention (bmm)": rate(feature_attention),
    }


def task(n_context: int, n_query: int, n_features: int, seed: int) -> ICLTask:
    rng = np.random.default_rng(seed)
    return ICLTask(
        rng.normal(size=(n_context, n_features)),
        rng.integers(0, 2, n_context),
        rng.normal(size=(n_query, n_features)),
        rng.integers(0, 2, n_query),
    )


def step_fn(net, tasks: list[ICLTask]) -> Callable[[], None]:
    """Forward and backward of one model on ``tasks`` in one batch (the optimizer update is elementwise)."""

    def step() -> None:
        net.network.zero_grad(set_to_none=True)
        sum(p.loss().mean() for p in net.predict(tasks, grad=True)).backward()

    return step


def kind_of(op: str) -> str:
    """The kernel kind of an aten op name (its backward counts with it)."""
    base = op.split(".")[0].removesuffix("_backward")
    return next((kind for kind, names in KINDS.items() if base in names), "other")


def ceiling(net, n_query: int, peak: float) -> dict:
    """The step's measured fraction of peak and the ceiling its kernels' own rates allow."""
    step = step_fn(net, [task(CONTEXT, n_query, COLUMNS - 1, 0)])
    by_op = flops_by_op(step)
    by_kind: dict[str, int] = {}
    for op, n in by_op.items():
        by_kind[kind_of(op)] = by_kind.get(kind_of(op), 0) + n
    rates = kernel_rates(n_query)
    total = sum(by_kind.values())
    known = {k: n for k, n in by_kind.items() if k in rates}
    floor_s = sum(n / (rates[k] * 1e9) for k, n in known.items()) + (total - sum(known.values())) / (peak * 1e9)
    step_s = best_seconds(step, 3)
    return {
        "gflop_per_step": total / 1e9,
        "gflop_by_kind": {k: n / 1e9 for k, n in by_kind.items()},
        "kernel_gflop_per_s": rates,
        "kernel_fraction_of_peak": {k: r / peak for k, r in rates.items()},
        "step_s": step_s,
        "step_fraction_of_peak": total / step_s / 1e9 / peak,
        "ceiling_fraction_of_peak": total / floor_s / 1e9 / peak,
        "kernel_share_of_step_time": floor_s / step_s,
    }


def batched_runs(net, n_query: int, groups: tuple[int, ...], rounds: int) -> dict:
    """Median seconds per task with ``G`` tasks in one forward, interleaved over ``rounds`` rounds."""
    steps = {g: step_fn(net, [task(CONTEXT, n_query, COLUMNS - 1, s) for s in range(g)]) for g in groups}
    times: dict[int, list[float]] = {g: [] for g in groups}
    for _ in range(rounds):
        for g in groups:
            times[g].append(best_seconds(steps[g], 1) / g)
    med = {g: statistics.median(t) for g, t in times.items()}
    return {
        "seconds_per_task": {str(g): med[g] for g in groups},
        "speedup_vs_one": {str(g): med[groups[0]] / med[g] for g in groups},
        "rounds": rounds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--out", default="benchmarks/results/kernel_ceiling.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    net = model()
    a = torch.randn(2048, 2048)
    peak = 2 * 2048**3 / best_seconds(lambda: a @ a, 5) / 1e9
    load = os.getloadavg()
    report = {
        "machine": {
            "platform": platform.platform(),
            "torch": torch.__version__,
            "cpus": os.cpu_count(),
            "threads": 1,
            "load_average_at_start": load,
        },
        "peak_gflop_per_s": peak,
        "ceiling": {f"context {CONTEXT}, Q {q}": ceiling(net, q, peak) for q in (50, 512)},
        "batched_runs": {
            f"context {CONTEXT}, Q {q}": batched_runs(net, q, tuple(args.groups), args.rounds) for q in (50, 512)
        },
    }
    report["machine"]["load_average_at_end"] = os.getloadavg()
    atomic_write_text(Path(args.out), json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
