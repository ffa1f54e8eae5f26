"""Benchmark: bootstrap intervals of AUC and TPR@FPR, vectorized vs a loop over resamples (Sec. 4.2, App. A.4).

Every probed (run, epoch) gets bootstrap intervals for three metrics. The loop computes
:func:`iclmem.stats.metrics.attack_statistics` (a sort and an ROC curve) once per resample;
:func:`iclmem.stats.metrics.bootstrap_attack_statistics` draws the same resamples and computes all of
them at once from per-value counts. Both run on the same scores in the same process, alternating,
``--rounds`` times; the largest difference between their statistics is reported (it must be
floating-point rounding). Sizes: the book's 50 + 50 probed queries, and Q = 512 members against
512 non-members. Writes ``benchmarks/results/bootstrap_speed.json``.

    python benchmarks/bootstrap_speed.py [--n-boot 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from iclmem.stats.metrics import attack_statistics, bootstrap, bootstrap_attack_statistics
from iclmem.store.atomic import atomic_write_text


def cpu_seconds(fn) -> tuple[object, float]:
    c0 = time.process_time()
    out = fn()
    return out, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results/bootstrap_speed.json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for n_member, n_non_member in ((50, 50), (512, 512)):
        member, non_member = rng.normal(0.3, 1, n_member), rng.normal(0, 1, n_non_member)
        loop_s = vec_s = 0.0
        diff = 0.0
        for r in range(args.rounds):
            runs = [
                ("loop", lambda m=member, n=non_member, s=r: bootstrap(m, n, attack_statistics, args.n_boot, s)),
                ("vectorized", lambda m=member, n=non_member, s=r: bootstrap_attack_statistics(m, n, args.n_boot, s)),
            ]
            if r % 2:
                runs.reverse()
            out = {}
            for name, fn in runs:
                out[name], seconds = cpu_seconds(fn)
                if name == "loop":
                    loop_s += seconds
                else:
                    vec_s += seconds
            diff = max(
                diff, float(np.abs(out["loop"].to_numpy() - out["vectorized"][out["loop"].columns].to_numpy()).max())
            )
        rows.append(
            {
                "members": n_member,
                "non_members": n_non_member,
                "n_boot": args.n_boot,
                "loop_cpu_s": round(loop_s / args.rounds, 4),
                "vectorized_cpu_s": round(vec_s / args.rounds, 4),
                "ratio_loop_over_vectorized": round(loop_s / vec_s, 2),
                "max_abs_difference": diff,
            }
        )
        print(rows[-1])
    result = {
        "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "rounds": args.rounds,
        "rows": rows,
    }
    atomic_write_text(args.out, json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
