"""Benchmark: the written-out softmax below 16 keys against torch's kernel (issue: fast enough to decide).

torch's CPU softmax over a last dimension shorter than one vector register takes a scalar path
(:mod:`iclmem.ltm.attention`). In one process, interleaved pair by pair, this measures:

* **kernel**: the small-attention path (:func:`~iclmem.ltm.attention.small_attention`) at key
  counts around 16, forward (probing) and forward + backward (fine-tuning), with
  ``VECTOR_KEYS = 0`` (torch's softmax at every size, the code before) and at its value;
* **probing**: M_ref and one probing epoch of a real Q = 512 run of every shipped CARTE table (1 epoch of
  fine-tuning at lr 1e-3, ``--queries`` members and as many non-members, all 48 manipulations),
  before and after, with the largest score difference between the two;
* **fine-tuning**: AdamW steps at 256 context + 50 query rows with each table's feature count.

Ratios are before / after seconds (above 1: the change is faster), medians of ``--rounds``
interleaved pairs. Writes ``benchmarks/results/softmax_keys.json``.

    python benchmarks/softmax_keys.py [--rounds 3] [--queries 64]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pandas as pd
import torch
from finetune_speed import training_step  # benchmarks/ is on the path when this script runs

from iclmem.data.dataset import Dataset
from iclmem.ltm import ReferenceLTM, load_reference
from iclmem.ltm import attention as attention_module
from iclmem.probe import probe_run
from iclmem.probe import run as probe_run_module
from iclmem.probe.settings import ProbeSettings
from iclmem.store.atomic import atomic_write_text
from iclmem.sweep.gridfile import DatasetSource
from iclmem.training.finetune import FinetuneRun
from iclmem.training.grid import RunSpec, run_spec

TABLES = ("spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices")
KEYS = (8, 10, 13, 16, 19, 25)


def paired(fn: Callable[[], object], rounds: int) -> dict:
    """Median seconds of ``fn`` with torch's softmax everywhere (before) and with the written-out one (after)."""
    spent: dict[str, list[float]] = {"before": [], "after": []}
    keys = attention_module.VECTOR_KEYS
    fn()  # warm-up
    for r in range(rounds):
        for label in ("before", "after") if r % 2 == 0 else ("after", "before"):
            attention_module.VECTOR_KEYS = 0 if label == "before" else keys
            t0 = time.perf_counter()
            fn()
            spent[label].append(time.perf_counter() - t0)
    attention_module.VECTOR_KEYS = keys
    before, after = statistics.median(spent["before"]), statistics.median(spent["after"])
    return {"before_s": before, "after_s": after, "speedup": before / after}


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, backward: bool) -> None:
    """One small attention, forward only (no gradient tracked) or forward and backward."""
    with torch.set_grad_enabled(backward):
        out = attention_module.small_attention(q, k, v, None)
    if backward:
        out.sum().backward()


def kernel_rows(rounds: int) -> dict:
    """The small-attention path at (tasks x heads, T = K keys, 16-dim heads), forward and forward + backward."""
    out = {}
    for k in KEYS:
        n = 1_600_000 // (k * k * 16) * 16  # about the same number of scores per key count
        g = torch.Generator().manual_seed(k)
        q, kk, v = (torch.randn(n // 4, 4, k, 16, generator=g, requires_grad=True) for _ in range(3))

        out[str(k)] = {
            "forward": paired(partial(attend, q, kk, v, False), rounds),
            "forward_backward": paired(partial(attend, q, kk, v, True), rounds),
        }
    return out


def probe(run: FinetuneRun, data: Dataset, ref: ReferenceLTM, queries: int, scored: dict) -> None:
    """M_ref's and epoch 1's scores of ``run`` computed afresh (no suite kept, an empty store), kept by path."""
    probe_run_module._SUITES.clear()
    with tempfile.TemporaryDirectory() as fresh:
        scores = probe_run(
            run,
            data,
            ref,
            ProbeSettings(n_candidates=10, max_queries=queries, epochs=(1,)),
            results_dir=fresh,
            progress=False,
        )
    scored[attention_module.VECTOR_KEYS] = scores


def probing_rows(rounds: int, queries: int) -> dict:
    """One probing epoch of a Q = 512 run per shipped table, scores compared before and after."""
    ref = load_reference()
    out = {}
    for table in TABLES:
        data = DatasetSource(table).load()
        with tempfile.TemporaryDirectory() as store:
            run = run_spec(RunSpec(table, 1e-3, 512, "none", 1, 0, 256), ref, store)
            scored: dict[int, pd.DataFrame] = {}
            row = paired(partial(probe, run, data, ref, queries, scored), rounds)
            before, after = scored[0], scored[attention_module.VECTOR_KEYS]
            cols = [c for c in before.columns if before[c].dtype.kind == "f"]
            row["max_abs_score_difference"] = float((before[cols] - after[cols]).abs().max().max())
            row["probes"] = int(len(after))
            out[table] = row
    return out


def repeat(fn: Callable[[], None], times: int) -> None:
    """Call ``fn`` ``times`` times."""
    for _ in range(times):
        fn()


def finetuning_rows(rounds: int) -> dict:
    """AdamW steps at 256 context + 50 query rows with each shipped table's feature count."""
    ref = load_reference()
    out = {}
    for table in TABLES:
        features = int(DatasetSource(table).load().features.shape[1])
        step = training_step(ref, 256, 50, features)
        out[table] = {"features": features, **paired(partial(repeat, step, 3), rounds)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/results/softmax_keys.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    report = {
        "machine": {
            "platform": platform.platform(),
            "torch": torch.__version__,
            "cpus": os.cpu_count(),
            "threads": args.threads,
            "load_average_at_start": list(os.getloadavg()),
        },
        "vector_keys": attention_module.VECTOR_KEYS,
        "kernel": kernel_rows(args.rounds),
        "probing": probing_rows(args.rounds, args.queries),
        "finetuning": finetuning_rows(args.rounds),
    }
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    report["benchmark_wall_s"] = time.perf_counter() - start
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(report, indent=1))
    for kind in ("kernel", "probing", "finetuning"):
        for name, row in report[kind].items():
            rows = row.items() if kind == "kernel" else [("", row)]
            for sub, r in rows:
                print(
                    f"{kind:10s} {name:20s} {sub:16s} {r['before_s']:.4f} -> {r['after_s']:.4f} s: {r['speedup']:.2f}x"
                )


if __name__ == "__main__":
    main()
