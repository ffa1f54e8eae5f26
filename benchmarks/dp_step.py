"""Benchmark: the cost of a DP-SGD step against a plain step (chapter 7, :mod:`iclmem.training.privacy`).

One AdamW step of the reference LTM on chapter 7's shape (a 64-row context, Q = 50 member queries,
30 features, binary), plain and with DP-SGD (per-member gradients, clipping, noise), timed in the
same process one after the other; and the per-member gradients alone, in chunks of
:data:`iclmem.training.privacy.PER_SAMPLE_CHUNK` members (the step's way) against all members in one ``vmap``.
Writes ``benchmarks/results/dp_step.json`` with the ratios.

    python benchmarks/dp_step.py [--threads 1] [--steps 3]
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

from iclmem.ltm import ICLTask, load_reference
from iclmem.store.atomic import atomic_write_text
from iclmem.training.privacy import PER_SAMPLE_CHUNK, DPStep, per_sample_gradients, private_backward


def seconds_per_step(private: DPStep | None, task: ICLTask, steps: int) -> float:
    """Median wall time of ``steps`` AdamW steps of a copy of M_ref (after one warm-up step)."""
    model = load_reference().clone()
    opt = torch.optim.AdamW(model.trainable_parameters(), lr=1e-3)
    times = []
    for i in range(steps + 1):
        start = time.perf_counter()
        opt.zero_grad()
        if private is None:
            model.predict([task], grad=True)[0].loss().mean().backward()
        else:
            private_backward(model, task, private, epoch=i + 1)
        opt.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times[1:]))


def seconds_per_gradients(task: ICLTask, chunk_size: int | None, steps: int) -> float:
    """Median wall time of :func:`per_sample_gradients` at ``chunk_size`` (after one warm-up call)."""
    model = load_reference().clone()
    times = []
    for _ in range(steps + 1):
        start = time.perf_counter()
        per_sample_gradients(model, task, chunk_size=chunk_size)
        times.append(time.perf_counter() - start)
    return float(np.median(times[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "dp_step.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    task = ICLTask(rng.normal(size=(64, 30)), rng.integers(0, 2, 64), rng.normal(size=(50, 30)), rng.integers(0, 2, 50))
    plain = seconds_per_step(None, task, args.steps)
    dp = seconds_per_step(DPStep(max_grad_norm=1.0, sigma=1.0), task, args.steps)
    chunked = seconds_per_gradients(task, PER_SAMPLE_CHUNK, args.steps)
    whole = seconds_per_gradients(task, None, args.steps)
    result = {
        "shape": "64 context rows, 50 member queries, 30 features, binary",
        "threads": args.threads,
        "steps": args.steps,
        "plain_s_per_step": plain,
        "dp_s_per_step": dp,
        "dp_over_plain": dp / plain,
        "per_sample_chunk": PER_SAMPLE_CHUNK,
        "gradients_chunked_s": chunked,
        "gradients_one_vmap_s": whole,
        "one_vmap_over_chunked": whole / chunked,
        "load_average_1min": os.getloadavg()[0],
        "machine": platform.machine(),
        "torch": torch.__version__,
    }
    atomic_write_text(Path(args.out), json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
