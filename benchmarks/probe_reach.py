"""Benchmark: where the probe sees, for one reference LTM against another (Sec. 4.2, App. A; issue 53).

The zero-information multiple-choice context of a binary table holds |Y| = 2 rows. The reference
LTM shipped until stage 4 (``reference-v1``) was pretrained on contexts of 16 rows or more, and its
probe read nothing on binary tables. This script runs notebook 04's instrument at the book's
defaults for each named model, through the same engine calls and the same results store:

* the positive control's sensitivity curve on ``breast_cancer`` (label condition All);
* the curve on every shipped CARTE table (N and All), and P1's cell by the book's rule (the weakest
  cell under All whose vanilla-attack lower bound exceeds 0.7);
* the context ladder at the control's strongest cell (from C' down to the MC rows alone).

Per model it records, per table, the strongest vanilla attack under All and the probe at that cell,
P1's cell with both AUCs and intervals, and the ladder. No null is drawn here (the book's notebook
draws it): the intervals are the stratified bootstrap's. Writes ``benchmarks/results/probe_reach.json``
(one entry per model; an existing file keeps the models not re-run).

    python benchmarks/probe_reach.py --models reference-v1 reference
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import pandas as pd

from iclmem.adapters import load_model
from iclmem.chapters.ch_a6_instrument import (
    CurveSetting,
    SensitivitySpec,
    context_ladder,
    curve_settings,
    recall_cells,
    recall_sensitivity,
    rule_p1,
    run_sensitivity,
    run_table_curves,
)
from iclmem.probe.settings import ProbeSettings
from iclmem.store.atomic import atomic_write_text
from iclmem.training.grid import table_of

OUT = Path(__file__).parent / "results" / "probe_reach.json"
# notebook 04's defaults (book/parameters.yaml, the chapter's parameters cell)
CONTROL = dict(
    dataset="breast_cancer",
    learning_rates=[3e-4, 1e-3, 3e-3],
    epochs=[10, 50, 250],
    query_size=50,
    context_size=64,
    label_condition="all",
)
CURVE = dict(
    datasets=["spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices"],
    learning_rates=[0.01, 0.001],
    epochs=[10, 100],
    context_size=256,
    conditions=["none", "all"],
)
PROBE = ProbeSettings(seed=0, n_candidates=10, max_queries=None, n_boot=200)
P1_BOUND = 0.7
CELL = [
    "dataset",
    "condition",
    "learning_rate",
    "epoch",
    "vanilla AUC",
    "vanilla lo",
    "vanilla hi",
    "probe AUC",
    "probe lo",
    "probe hi",
]


def _cell(row: pd.Series | None) -> dict | None:
    if row is None:
        return None
    out = {k: row[k] for k in CELL if k in row.index}
    return {
        k: (round(float(v), 4) if isinstance(v, float) else (int(v) if k == "epoch" else v)) for k, v in out.items()
    }


def reach(model_name: str) -> dict:
    """The instrument's readings for one model at the book's defaults."""
    t0, c0 = time.perf_counter(), time.process_time()
    reference = load_model(model_name)
    spec = SensitivitySpec(n_permutations=0, **CONTROL)
    sens = run_sensitivity(spec, reference, PROBE)
    control = CurveSetting(CONTROL["dataset"], CONTROL["learning_rates"], CONTROL["epochs"], CONTROL["context_size"])
    settings = curve_settings(
        CURVE["datasets"], CURVE["learning_rates"], CURVE["epochs"], CURVE["context_size"], control
    )
    curves = run_table_curves(settings, CURVE["conditions"], CONTROL["query_size"], reference, PROBE, progress=True)
    p1, _, _ = rule_p1(curves.curve, curves.vanilla_scores, curves.summary, curves.scores, P1_BOUND)
    under_all = curves.curve[curves.curve.condition == "all"]
    per_table = {
        d: _cell(rows.loc[rows["vanilla AUC"].idxmax()]) for d, rows in under_all.groupby("dataset", sort=False)
    }
    seen = {d: int((rows["probe lo"] > 0.5).sum()) for d, rows in curves.curve.groupby("dataset", sort=False)}
    top = sens.strongest()
    ladder = context_ladder(sens.runs[top.run_key], table_of(CONTROL["dataset"]), int(top.epoch), reference, PROBE)
    recall = recall_sensitivity(recall_cells(curves.curve))
    return {
        "model": model_name,
        "recall_control": {k: v for k, v in recall.items() if k != "text"} | {"text": recall["text"]},
        "checkpoint_sha256": reference.checkpoint_sha256,
        "p1_cell": _cell(p1),
        "strongest_under_all": per_table,
        "cells_seen": seen,
        "cells": {d: int(len(rows)) for d, rows in curves.curve.groupby("dataset", sort=False)},
        "control_strongest": _cell(top),
        "ladder": [
            {
                "context": r["context"],
                "rows": int(r["rows"]),
                "auc": round(float(r["all queries AUC"]), 4),
                "lo": round(float(r["all queries lo"]), 4),
                "hi": round(float(r["all queries hi"]), 4),
            }
            for r in ladder.to_dict("records")
        ],
        "wall_s": round(time.perf_counter() - t0, 1),
        "cpu_s": round(time.process_time() - c0, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["reference-v1", "reference"])
    args = parser.parse_args()
    out = json.loads(OUT.read_text()) if OUT.exists() else {"runs": {}}
    for name in args.models:
        print(f"[probe_reach] {name} ...", flush=True)
        out["runs"][name] = reach(name)
        out.update(
            machine=platform.processor() or platform.machine(),
            threads=os.environ.get("ICLMEM_THREADS"),
            command="python benchmarks/probe_reach.py --models " + " ".join(args.models),
            date=time.strftime("%Y-%m-%d"),
        )
        atomic_write_text(OUT, json.dumps(out, indent=2, default=str))
        print(json.dumps(out["runs"][name], indent=1, default=str), flush=True)


if __name__ == "__main__":
    main()
