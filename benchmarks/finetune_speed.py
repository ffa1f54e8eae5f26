"""Benchmark: fine-tuning steps per second on this CPU (issue: controlled fine-tuning).

One AdamW step = forward + backward + update of the reference LTM on a 512-row context and
Q query rows (Q = 512 and Q = 50, Tab. 2), for the feature counts of the book's datasets.
Optionally (``--grid``) times the book's default grid of notebook 02 end to end in a
temporary results folder. Writes ``benchmarks/results/finetune_speed.json``.

    python benchmarks/finetune_speed.py [--threads 2] [--steps 10] [--grid]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from iclmem.ltm import ICLTask, LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.ltm.reference import REFERENCE_WEIGHTS, load_reference
from iclmem.store.atomic import atomic_write_text


def model() -> ReferenceLTM:
    if REFERENCE_WEIGHTS.exists():
        return load_reference()
    torch.manual_seed(0)  # same architecture, random weights: speed does not depend on the values
    return ReferenceLTM(TabularICLTransformer(LTMConfig()))


def training_step(ref: ReferenceLTM, n_context: int, n_query: int, n_features: int) -> Callable[[], None]:
    """One AdamW step of a copy of ``ref`` on a random binary task of the given shape (called repeatedly)."""
    rng = np.random.default_rng(0)
    task = ICLTask(
        rng.normal(size=(n_context, n_features)),
        rng.integers(0, 2, n_context),
        rng.normal(size=(n_query, n_features)),
        rng.integers(0, 2, n_query),
    )
    net = ref.clone()
    opt = torch.optim.AdamW(net.trainable_parameters(), lr=1e-4)

    def step() -> None:
        loss = net.predict([task], grad=True)[0].loss().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def steps_per_second(ref: ReferenceLTM, n_context: int, n_query: int, n_features: int, steps: int) -> float:
    step = training_step(ref, n_context, n_query, n_features)
    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--grid", action="store_true", help="also time notebook 02's default grid")
    parser.add_argument("--out", default="benchmarks/results/finetune_speed.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ref = model()
    rows = []
    for n_features, name in ((18, "spotify"), (15, "wine_pl")):
        for q in (512, 50):
            sps = steps_per_second(ref, 512, q, n_features, args.steps)
            rows.append({"like": name, "n_features": n_features, "n_context": 512, "query_size": q, "steps_per_s": sps})
            print(rows[-1])
    result = {"threads": args.threads, "trained_weights": REFERENCE_WEIGHTS.exists(), "rows": rows}
    if args.grid:
        from iclmem.training.grid import GridAxes, expand_grid, run_grid

        axes = GridAxes(["spotify", "wine_pl"], [1e-1, 1e-2, 1e-3, 1e-4], [50, 512], ["none"])
        specs = expand_grid(axes, epochs=100)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            run_grid(specs, ref, tmp)
            result["book_grid"] = {"runs": len(specs), "epochs": 100, "wall_s": time.perf_counter() - t0}
    atomic_write_text(Path(args.out), json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
