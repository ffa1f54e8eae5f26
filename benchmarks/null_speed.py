"""Benchmark: the membership null's bootstrap lower bounds, win matrices vs sorted scores (Sec. 4.2, Tab. 3).

Notebooks 03, 04 and 05 recompute every probed (run, epoch) under 1,000 membership permutations,
each with a 200-resample bootstrap lower bound of its AUC (the ``bound`` reading of Tab. 3):
:func:`iclmem.probe.null.auc_lower_bounds`. Two paths give the same bounds bit for bit: one win
matrix product per permutation (``matrix``), or cumulative resample weights over sorted scores
(``ranks``), which :data:`iclmem.probe.null.RANK_PATH_PAIRS` picks above a pool size. Both run on the
same scores in this process, alternating, ``--rounds`` times (the least CPU seconds of each kept,
all threads of the process counted: the matrix product may use several BLAS threads), at the pool
sizes around the crossover and the book's two query sizes; equality is asserted. Then
:func:`iclmem.probe.null.null_summaries` end to end on a synthetic grid of Q = 512 runs, in one
thread and in two (``workers``), wall seconds. Writes ``benchmarks/results/null_speed.json``.

    python benchmarks/null_speed.py [--rounds 3] [--runs 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import pandas as pd

from iclmem.probe import null
from iclmem.stats.permutation import NullDraws, permuted_labels
from iclmem.store.atomic import atomic_write_text

SIZES = (50, 100, 128, 181, 256, 512)
N_PERM, N_BOOT = 1000, 200


def best_cpu(fn, rounds: int) -> tuple[object, float]:
    """(result, the least CPU seconds of ``rounds`` calls)."""
    best, out = float("inf"), None
    for _ in range(rounds):
        c0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - c0)
    return out, best


def bounds_row(n: int, rounds: int) -> dict:
    """Both paths at ``n`` members and ``n`` non-members (scores with ties), CPU seconds and their ratio."""
    rng = np.random.default_rng(n)
    score = np.round(rng.normal(size=2 * n), 2)
    labels = permuted_labels(np.arange(2 * n) < n, N_PERM, 7)
    seconds, bounds = {}, {}
    default = null.RANK_PATH_PAIRS
    try:
        for _ in range(rounds):  # alternate the two paths, so that load from elsewhere hits both
            for path, pairs in (("matrix", 10**12), ("ranks", 0)):
                null.RANK_PATH_PAIRS = pairs
                bounds[path], s = best_cpu(lambda: null.auc_lower_bounds(score, labels, N_BOOT, 0), 1)
                seconds[path] = min(seconds.get(path, float("inf")), s)
    finally:
        null.RANK_PATH_PAIRS = default
    if not np.array_equal(bounds["matrix"], bounds["ranks"]):
        raise AssertionError(f"the two paths disagree at {n} + {n}")
    return {
        "members": n,
        "non_members": n,
        "matrix_cpu_s": seconds["matrix"],
        "ranks_cpu_s": seconds["ranks"],
        "matrix_over_ranks": seconds["matrix"] / seconds["ranks"],
        "path_taken": "ranks" if n * n > default else "matrix",
    }


def grid_scores(runs: int, n: int = 512, manipulations: int = 48, epochs=(1, 10, 100)) -> dict[str, pd.DataFrame]:
    """Synthetic probe scores of ``runs`` Q = ``n`` runs (``n`` members, ``n`` non-members, M_ref and 3 epochs)."""
    rng = np.random.default_rng(0)
    queries = np.arange(2 * n)
    out = {}
    for r in range(runs):
        frames = []
        for model, epoch in (("ref", -1), *(("theta", e) for e in epochs)):
            size = len(queries) * manipulations
            frames.append(
                pd.DataFrame(
                    {
                        "query_id": np.repeat(queries, manipulations),
                        "is_member": np.repeat(queries < n, manipulations),
                        "manipulation": np.tile([f"m{i}" for i in range(manipulations)], len(queries)),
                        "category": "c",
                        "model": model,
                        "epoch": epoch,
                        "loss": rng.gamma(2.0, size=size),
                        "entropy": rng.random(size),
                        "confidence": rng.random(size),
                    }
                )
            )
        out[f"run{r}"] = pd.concat(frames, ignore_index=True)
    return out


def grid_row(runs: int) -> dict:
    """:func:`null.null_summaries` of ``runs`` x 3 epochs, one thread and two, wall seconds (same frame asserted)."""
    scores = grid_scores(runs)
    summary = pd.DataFrame(
        [{"run_key": k, "epoch": e, "collapsed": False, "outcome": "x"} for k in scores for e in (0, 1, 10, 100)]
    )
    frames, seconds = {}, {}
    for workers in (1, 2):
        t0 = time.perf_counter()
        frames[workers] = null.null_summaries(
            summary, scores, NullDraws(N_PERM, 0, N_BOOT), progress=False, workers=workers
        )
        seconds[workers] = time.perf_counter() - t0
    pd.testing.assert_frame_equal(frames[1], frames[2])
    return {
        "runs": runs,
        "epochs_per_run": 3,
        "queries": "512 + 512",
        "one_thread_wall_s": seconds[1],
        "two_threads_wall_s": seconds[2],
        "speedup": seconds[1] / seconds[2],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--out", default="benchmarks/results/null_speed.json")
    args = parser.parse_args()
    report = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_at_start": list(os.getloadavg()),
        },
        "permutations": N_PERM,
        "resamples": N_BOOT,
        "rank_path_pairs": null.RANK_PATH_PAIRS,
        "bounds": [bounds_row(n, args.rounds) for n in SIZES],
        "null_summaries": grid_row(args.runs),
    }
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    atomic_write_text(args.out, json.dumps(report, indent=1))
    for row in report["bounds"]:
        print(
            f"{row['members']:4d} + {row['non_members']:4d}: matrix {row['matrix_cpu_s']:.3f} s, ranks "
            f"{row['ranks_cpu_s']:.3f} s, matrix/ranks {row['matrix_over_ranks']:.2f} ({row['path_taken']})"
        )
    g = report["null_summaries"]
    print(
        f"null_summaries, {g['runs']} runs x 3 epochs: {g['one_thread_wall_s']:.1f} s on one thread, "
        f"{g['two_threads_wall_s']:.1f} s on two ({g['speedup']:.2f}x)"
    )


if __name__ == "__main__":
    main()
