"""Benchmark: how far a recomputed result drifts from a results bundle's, and where the check's tolerance sits.

A results bundle (``iclmem/bundle``, issue 55) is accepted on a machine when a recomputed sample lands within
``|a - b| <= atol + rtol |b|`` (:data:`iclmem.bundle.recheck.TOLERANCE`). Two things set that tolerance:

* **drift that is not a change**: the same run computed with another float32 summation order. Here, one torch thread
  against two (``torch.set_num_threads``): the matmuls split their sums otherwise, as another CPU does. Fine-tuning
  amplifies the drift epoch by epoch (Sec. 4.1: one AdamW step per epoch), so it is measured at every probed epoch.
* **the smallest change the check must see**: the same run with the learning rate moved by a relative 1e-3 (a
  change to one number of the engine, far smaller than any edit that would matter to a verdict).

For each table and learning rate (Q = 50, context 256, 100 epochs, the shipped reference LTM, all 48 manipulations,
16 members + 16 non-members probed, as a check's draw probes them), the run is computed three times in fresh
temporary stores: one thread (the "bundle"), two threads (drift), one thread with the changed learning rate
(change). Per probed epoch: the largest absolute and relative differences of the training losses up to it, the
vanilla metrics at it, and M_theta's probe scores (loss and entropy per query and manipulation); and the largest
excess over the shipped tolerance (at most 1 is within). The tables are the book's control tables, not suite tables:
no AUC is read. Writes ``benchmarks/results/bundle_drift.json``, keeping the rows of (table, learning rate) pairs
measured before.

    python benchmarks/bundle_drift.py [--tables breast_cancer diabetes] [--learning-rates 1e-3 1e-1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from iclmem.bundle.recheck import TOLERANCE, max_abs, run_pairs
from iclmem.bundle.serve import bundles_off
from iclmem.data import prepared_table, split_manifest
from iclmem.ltm import load_reference
from iclmem.probe import probe_run
from iclmem.probe.settings import ProbeSettings
from iclmem.training.finetune import FinetuneConfig, finetune

EPOCHS = (1, 10, 50, 100)
OUT = Path(__file__).parent / "results" / "bundle_drift.json"


def _computed(table, learning_rate: float, threads: int, reference, work: Path) -> dict:
    """The run's curve, metrics and M_theta's scores at each probed epoch, computed with ``threads`` threads."""
    torch.set_num_threads(threads)
    manifest = split_manifest(table, 50, 0, "none", results_dir=work)
    config = FinetuneConfig(learning_rate, 100, (0, 1, 2, 5, 10, 50, 100), 256, 0)
    run = finetune(manifest, table, config, reference, work, progress=False)
    scores = probe_run(
        run, table, reference, ProbeSettings(max_queries=16, epochs=tuple(EPOCHS)), results_dir=work, progress=False
    )
    torch.set_num_threads(1)
    return {"curve": run.curve, "metrics": run.metrics, "scores": scores[scores.model == "theta"]}


def _differences(a: dict, b: dict, epoch: int) -> dict:
    """Largest absolute, relative and over-tolerance differences of b against a (the bundle) at ``epoch``: the check's
    own pairs (:func:`iclmem.bundle.recheck.run_pairs`) and M_theta's loss and entropy scores."""
    pairs = run_pairs((b["curve"].iloc[:epoch], b["metrics"]), (a["curve"], a["metrics"]), epoch)
    s_a = a["scores"][a["scores"].epoch == epoch].sort_values(["query_id", "manipulation"])
    s_b = b["scores"][b["scores"].epoch == epoch].sort_values(["query_id", "manipulation"])
    pairs |= {f"scores {c}": (s_b[c].to_numpy(float), s_a[c].to_numpy(float)) for c in ("loss", "entropy")}
    out = {}
    for name, (x, y) in pairs.items():
        rel = np.abs(x - y) / np.maximum(np.abs(y), 1e-12)
        out[name] = {
            "max_abs": max_abs(x, y),
            "max_rel": float(np.nanmax(rel, initial=0.0)),
            "x_tolerance": TOLERANCE.excess(x, y),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", default=["breast_cancer", "diabetes"])
    parser.add_argument("--learning-rates", nargs="+", type=float, default=[1e-3, 1e-1])
    parser.add_argument("--change", type=float, default=1e-3, help="relative change of the learning rate")
    args = parser.parse_args()
    torch.set_num_threads(1)
    reference = load_reference()
    rows, started = [], time.perf_counter()
    with bundles_off():
        for name in args.tables:
            table = prepared_table(name)
            for lr in args.learning_rates:
                with tempfile.TemporaryDirectory() as tmp:
                    base = _computed(table, lr, 1, reference, Path(tmp) / "one")
                    drift = _computed(table, lr, 2, reference, Path(tmp) / "two")
                    change = _computed(table, lr * (1 + args.change), 1, reference, Path(tmp) / "changed")
                for epoch in EPOCHS:
                    row = {"table": name, "task": table.task, "learning_rate": lr, "epoch": epoch}
                    rows.append({**row, "compared": "two threads", **_flat(_differences(base, drift, epoch))})
                    rows.append({**row, "compared": "lr changed", **_flat(_differences(base, change, epoch))})
                print(f"{name} lr={lr:g}: done ({time.perf_counter() - started:.0f} s)", flush=True)
    done = {(r["table"], r["learning_rate"]) for r in rows}
    if OUT.is_file():  # rows of other (table, learning rate) pairs measured before are kept
        rows = [r for r in json.loads(OUT.read_text())["rows"] if (r["table"], r["learning_rate"]) not in done] + rows
    result = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch": torch.__version__},
        "settings": {"Q": 50, "context_size": 256, "epochs": 100, "max_queries": 16, "change": args.change},
        "tolerance": asdict(TOLERANCE),
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(OUT)
    print(f"wrote {OUT}")


def _flat(diffs: dict) -> dict:
    return {f"{name} {k}": v for name, d in diffs.items() for k, v in d.items()}


if __name__ == "__main__":
    main()
