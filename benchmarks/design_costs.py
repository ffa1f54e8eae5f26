"""Benchmark: the unit costs of the decision design ``grids/decide.yaml`` (Sec. 4.1, Sec. 4.2, Sec. 5, Tab. 2).

Measured here, on one thread (``torch.set_num_threads(1)``, as every sweep worker runs), at the book's context of
256 rows, lr 1e-3, label condition none, the shipped reference LTM, on suite tables of different widths
(``--tables``; default: two tables of each kind, a narrow and a wide one: binary ``daag_spam7`` with 6 features and
``islr_caravan`` with 85, multi-class ``cardata_chile`` with 7 and ``wooldridge_happiness`` with 31, regression
``hlmdiag_wages`` with 13 and ``wooldridge_card`` with 31), each (table, Q) in a fresh temporary store after one
untimed warm-up run:

* **fine-tuning per epoch**: a run of E1 and one of E2 epochs at Q = 50 and Q = 512 (one AdamW step per epoch,
  Sec. 4.1): ``step_s = (t(E2) - t(E1)) / (E2 - E1)``, the fixed cost ``t(E1) - E1 * step_s`` (split, encoding,
  M_ref's vanilla losses, the files);
* **probing one (run, epoch)**: M_ref's scores of the run (``ref_s``, computed once per query set and shared by its
  epochs and learning rates) and M_theta's at epoch 1 (``theta_s``), all 48 manipulations (Tab. 7), 10 candidates;
  every member and non-member at Q = 50 (100 queries), ``--probe-queries`` members + as many non-members at
  Q = 512; per probed query, both, since a probe's cost is linear in its queries;
* **the membership null of one (run, epoch)**: :func:`iclmem.probe.null.null_summaries` of the Q = 50 run's epoch
  (100 queries, 1,000 permutations, 200 bootstrap resamples, the bound reading), CPU seconds; at larger pools it is
  read from ``benchmarks/results/null_speed.json`` (the same function end to end at 512 + 512, measured there), not
  measured again.

``--pilot`` adds, on a table that is *not* in the suite (``breast_cancer``, the book's control table), one Q = 50
run at lr 1e-4 probed at epochs 1, 5 and 10, and only its membership-permuted draws (never the real labels'
values): the null spread of one configuration's Delta AUC per manipulation category (C12a's skew_true, C12c's
feature_reduction and distractor_injection; :func:`iclmem.chapters.ch03_probing.claims.effect_draws`), the
correlation of those draws between the run's epochs, and the share of permuted (run, epoch) rows that read
detectable memorization under the bound reading (:func:`iclmem.probe.null.null_summaries`): the noise the power of
C12 is computed from (``pilot``).

No AUC or outcome of a suite table is read or printed: the probe's and the null's outputs are timed and discarded
(the design is registered before any suite table is probed for evidence).

The fine-tuning and probing seconds per table are compared with ``benchmarks/results/paper_shipped_cost.json``
(context 512, the four shipped tables), as ratios (``vs_paper_shipped``). The design's projection
(:func:`iclmem.chapters.ch00_scorecard.design_plan.design_cost`) reads ``measured``: per kind of table and Q, each
unit as a line in the number of features through that kind's two tables; ``units`` gives the means per kind, and over
all tables with their spread (``max_over_mean``). Writes
``benchmarks/results/design_costs.json``.

    ICLMEM_THREADS=1 python benchmarks/design_costs.py [--epochs 2 8] [--probe-queries 16] [--pilot] [--note '...']
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from iclmem.bundle.collect import machine
from iclmem.ltm import load_reference
from iclmem.probe import probe_run, summarize_run
from iclmem.probe.null import null_summaries
from iclmem.probe.settings import ProbeSettings
from iclmem.stats.permutation import NullDraws
from iclmem.store.atomic import atomic_write_text
from iclmem.sweep.gridfile import DatasetSource
from iclmem.training.grid import RunSpec, run_spec

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "design_costs.json"
SHIPPED = REPO / "benchmarks" / "results" / "paper_shipped_cost.json"
NULL_SPEED = REPO / "benchmarks" / "results" / "null_speed.json"
TABLES = ("daag_spam7", "islr_caravan", "cardata_chile", "wooldridge_happiness", "hlmdiag_wages", "wooldridge_card")
CONTEXT, LR, N_CANDIDATES, N_PERM, N_BOOT = 256, 1e-3, 10, 1000, 200


def measure(table: str, q: int, epochs: tuple[int, int], probe_queries: int) -> dict:
    """Fine-tuning, probing and (at Q = 50) null CPU seconds of one (table, Q); every output is timed, none read."""
    ref = load_reference()
    data = DatasetSource(table).load()
    kind = "regression" if data.task == "regression" else "binary" if data.target.nunique() == 2 else "multiclass"
    out: dict = {"table": table, "Q": q, "features": int(data.features.shape[1]), "kind": kind}
    n = probe_queries if q == 512 else q
    for e in epochs:
        with tempfile.TemporaryDirectory() as store:
            c0 = time.process_time()
            run = run_spec(RunSpec(table, LR, q, "none", e, 0, CONTEXT), ref, store)
            out[f"finetune_{e}_epochs_s"] = time.process_time() - c0
            if e != max(epochs):
                continue
            c0 = time.process_time()
            probe_run(
                run,
                data,
                ref,
                ProbeSettings(n_candidates=N_CANDIDATES, max_queries=n, epochs=()),
                results_dir=store,
                progress=False,
            )
            c1 = time.process_time()
            scores = probe_run(
                run,
                data,
                ref,
                ProbeSettings(n_candidates=N_CANDIDATES, max_queries=n, epochs=(1,)),
                results_dir=store,
                progress=False,
            )
            c2 = time.process_time()
            summary = summarize_run(scores, run, n_boot=N_BOOT, seed=0).assign(run_key=run.key)
            c3 = time.process_time()
            out.update(ref_s=c1 - c0, theta_s=c2 - c1, summary_s=c3 - c2)
            out["probed_queries"] = int(scores[scores.model == "ref"].query_id.nunique())
            if q == 50:
                null_summaries(
                    summary, {run.key: scores}, NullDraws(N_PERM, 0, N_BOOT), reading="bound", progress=False, workers=1
                )
                out["null_s"] = time.process_time() - c3
    e1, e2 = epochs
    out["step_s"] = (out[f"finetune_{e2}_epochs_s"] - out[f"finetune_{e1}_epochs_s"]) / (e2 - e1)
    out["finetune_fixed_s"] = max(out[f"finetune_{e1}_epochs_s"] - e1 * out["step_s"], 0.0)
    out["ref_s_per_query"] = out["ref_s"] / out["probed_queries"]
    out["theta_s_per_query"] = out["theta_s"] / out["probed_queries"]
    return out


PILOT_TABLE, PILOT_LR, PILOT_EPOCHS = "breast_cancer", 1e-4, (1, 5, 10)
PILOT_CATEGORIES = ("skew_true", "feature_reduction", "distractor_injection")


def pilot() -> dict:
    """The null noise of one configuration on a non-suite table (module docstring): permuted draws only."""
    from iclmem.chapters.ch03_probing.claims import effect_draws
    from iclmem.probe.effects import group_ranks

    ref, data = load_reference(), DatasetSource(PILOT_TABLE).load()
    with tempfile.TemporaryDirectory() as store:
        run = run_spec(RunSpec(PILOT_TABLE, PILOT_LR, 50, "none", max(PILOT_EPOCHS), 0, CONTEXT), ref, store)
        settings = ProbeSettings(n_candidates=N_CANDIDATES, max_queries=50, epochs=tuple(PILOT_EPOCHS))
        scores = probe_run(run, data, ref, settings, results_dir=store, progress=False)
        summary = summarize_run(scores, run, n_boot=N_BOOT, seed=0).assign(run_key=run.key)
        null = null_summaries(
            summary, {run.key: scores}, NullDraws(N_PERM, 0, N_BOOT), reading="bound", progress=False, workers=1
        )
        spread, draws = {}, {}
        for e in PILOT_EPOCHS:
            d = effect_draws([group_ranks(scores, e)], N_PERM, 0)
            for cat in PILOT_CATEGORIES:
                stat = d.statistic(cat)
                draws.setdefault(cat, []).append(stat[1:])  # row 0 (the real labels) is never read
        for cat, per_epoch in draws.items():
            m = np.vstack(per_epoch)
            corr = np.corrcoef(m)[np.triu_indices(len(m), 1)]
            spread[cat] = {"sd_per_config": float(m.std(axis=1, ddof=1).mean()), "epoch_corr": float(corr.mean())}
        live = null[null.outcome != "representational_collapse"]
        return {
            "table": PILOT_TABLE,
            "learning_rate": PILOT_LR,
            "Q": 50,
            "probed_per_pool": 50,
            "epochs": list(PILOT_EPOCHS),
            "permutations": N_PERM,
            "delta_auc_null": spread,
            "null_rows": int(len(live)),
            "null_detectable_share": float((live.outcome == "detectable_memorization").mean()),
            "null_inversion_share": float((live.outcome == "loss_inversion").mean()),
        }


def warm_up(table: str) -> None:
    """One untimed 1-epoch run and probe: imports, the reference and the table's encoding loaded before timing."""
    ref, data = load_reference(), DatasetSource(table).load()
    with tempfile.TemporaryDirectory() as store:
        run = run_spec(RunSpec(table, LR, 50, "none", 1, 0, CONTEXT), ref, store)
        probe_run(
            run,
            data,
            ref,
            ProbeSettings(n_candidates=N_CANDIDATES, max_queries=2, epochs=(1,)),
            results_dir=store,
            progress=False,
        )


UNIT_KEYS = ("step_s", "finetune_fixed_s", "ref_s_per_query", "theta_s_per_query", "summary_s")


def units(measured: list[dict]) -> dict:
    """Per kind of table (binary, multiclass, regression, and ``all``) and Q: the mean over its measured tables of
    each unit cost, and (``all``) the largest over the mean: the tables' spread."""
    out: dict = {}
    for kind in ("binary", "multiclass", "regression", "all"):
        for q in (50, 512):
            rows = [m for m in measured if m["Q"] == q and kind in (m["kind"], "all")]
            if not rows:
                continue
            mean = {k: float(np.mean([m[k] for m in rows])) for k in UNIT_KEYS}
            out.setdefault(kind, {})[str(q)] = mean
            if kind == "all":
                out[kind][str(q)] = {
                    **mean,
                    "max_over_mean": {k: float(max(m[k] for m in rows) / max(mean[k], 1e-12)) for k in UNIT_KEYS},
                }
    return out


def null_units(measured: list[dict]) -> dict:
    """The null's CPU seconds per (run, epoch): measured at 50 + 50, read from null_speed.json at 512 + 512."""
    at50 = float(np.mean([m["null_s"] for m in measured if "null_s" in m]))
    speed = json.loads(NULL_SPEED.read_text())
    ns = speed["null_summaries"]
    at512 = ns["one_thread_wall_s"] / (ns["runs"] * ns["epochs_per_run"])
    return {
        "per_run_epoch_s": {"50+50": at50, "512+512": at512},
        "source_512": f"benchmarks/results/null_speed.json: null_summaries end to end, {ns['runs']} runs x "
        f"{ns['epochs_per_run']} epochs at {ns['queries']}, one thread, {speed['permutations']} permutations, "
        f"{speed['resamples']} resamples",
        "between": "linear in the probed queries between the two (the ranks path is O(n) per permutation)",
    }


def versus_shipped(measured: list[dict]) -> dict:
    """This measurement's per-epoch and per-query seconds over paper_shipped_cost.json's means (context 512)."""
    shipped = json.loads(SHIPPED.read_text())["measured"]
    out = {}
    for q in (50, 512):
        ours = [m for m in measured if m["Q"] == q]
        theirs = [m for m in shipped if m["Q"] == q]
        out[str(q)] = {
            "step_s": float(np.mean([m["step_s"] for m in ours]) / np.mean([m["step_s"] for m in theirs])),
            "theta_s_per_query": float(
                np.mean([m["theta_s_per_query"] for m in ours])
                / np.mean([m["theta_s"] / m["probed_queries"] for m in theirs])
            ),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, nargs=2, default=[2, 8], metavar=("E1", "E2"))
    parser.add_argument("--probe-queries", type=int, default=16, help="members (and non-members) probed at Q = 512")
    parser.add_argument("--tables", nargs="*", default=list(TABLES))
    parser.add_argument("--pilot", action="store_true", help="the null noise of C12 on breast_cancer (docstring)")
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_start, started = os.getloadavg(), time.perf_counter()
    warm_up(args.tables[0])
    measured = []
    for t in args.tables:
        for q in (50, 512):
            measured.append(measure(t, q, tuple(args.epochs), args.probe_queries))
            print(json.dumps({k: v for k, v in measured[-1].items() if k.endswith("_s") or k in ("table", "Q")}))
    result = {
        "machine": {
            "platform": platform.platform(),
            "processor": machine()["processor"],
            "torch": torch.__version__,
            "threads": 1,
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in load_start],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "seconds": "CPU seconds of this one-thread process (time.process_time)",
        },
        "settings": {
            "context_size": CONTEXT,
            "learning_rate": LR,
            "n_candidates": N_CANDIDATES,
            "manipulations": 48,
            "finetune_epochs_measured": args.epochs,
            "probe_queries_at_Q512": 2 * args.probe_queries,
            "null": {"permutations": N_PERM, "resamples": N_BOOT, "reading": "bound"},
        },
        "measured": measured,
        "units": units(measured),
        "null": null_units(measured),
        "vs_paper_shipped": versus_shipped(measured),
        "pilot": pilot() if args.pilot else None,
        "benchmark_wall_s": time.perf_counter() - started,
        "note": args.note,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT, json.dumps(result, indent=1, default=float))
    print(json.dumps({k: result[k] for k in ("units", "null", "vs_paper_shipped")}, indent=1))


if __name__ == "__main__":
    main()
