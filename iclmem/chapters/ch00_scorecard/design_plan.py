"""Paper 1, Sec. 4.1, Sec. 4.2, Sec. 5, Tab. 2, App. D: what a registered decision design holds and what it costs
(``grids/decide.yaml``; the scorecard's registered power, :mod:`.design_power`).

:class:`DesignFacts` reads a grid (:func:`iclmem.sweep.load_grid`) without running it: one row per (run, table of the
run, probed fine-tuned epoch), the units every claim counts (tables, runs per Q, rows, learning-rate groups,
non-member sets, regimes). :func:`design_cost` multiplies the unit costs that ``benchmarks/design_costs.py`` measured
on suite tables (``benchmarks/results/design_costs.json``: CPU seconds per AdamW step, per probed query, per summary,
per null of a (run, epoch); per kind of table, binary, multi-class or regression) into the CPU seconds of every task
of the grid, and projects the wall time on 2 cores and on N Dask workers: the tasks are indivisible, largest first
(:func:`iclmem.sweep.cost.lpt_makespan`), divided by the parallel efficiency ``benchmarks/sweep_scaling.py`` measured
(``benchmarks/results/sweep_scaling.json``; beyond 2 workers an extrapolation).

Each unit is read per table: a line in the number of features through the two measured tables of its kind
(:func:`table_units`). A task's cost (Sec. 4.1: one AdamW step per table per epoch; Sec. 4.2: every probed query
gets the 48 manipulations): fine-tuning ``fixed + epochs * step``; M_ref's scores once per query set (table, Q,
label condition, seed, regime: shared by the learning rates, :func:`iclmem.probe.run.reference_owner`), charged to
the first task of the set; M_theta's scores per probed fine-tuned epoch; one summary per probed epoch; the
membership null per probed fine-tuned epoch (linear in the probed queries between the measured 50 + 50 and
512 + 512). A joint task (App. D) is its tables' single-task tasks summed. The engine's per-task overhead
(``overhead_per_real_task_s`` of the scaling benchmark) is added.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from iclmem.data.suite import suite_tables
from iclmem.sweep.cost import lpt_makespan, probed_per_pool
from iclmem.sweep.gridfile import Grid
from iclmem.training.regimes import SINGLE_TASK_FIXED

#: The measured unit costs and the measured scaling, relative to the repository root.
DESIGN_COSTS = Path("benchmarks/results/design_costs.json")
SWEEP_SCALING = Path("benchmarks/results/sweep_scaling.json")
#: The budget of the design (issue 57): CPU-hours on this 2-core machine; the design is projected to stay within
#: ``BUDGET_MARGIN`` of it, a margin for the spread of CPU seconds measured on a shared machine.
BUDGET_CPU_HOURS, BUDGET_MARGIN = 10.0, 0.85
#: The Dask workers the design's wall time is projected to, besides this machine's 2 cores.
CLUSTER_WORKERS = 16


def table_kind(name: str) -> str:
    """binary, multiclass or regression, from the suite's cards (:func:`iclmem.data.suite.suite_tables`)."""
    card = suite_tables().get(name)
    if card is None:
        raise KeyError(f"{name} is not a suite table: the design's cost is projected per kind of suite table")
    return str(card["kind"])


@dataclass(frozen=True)
class DesignFacts:
    """What a grid holds, claim by claim: ``rows`` has one row per (task, table, probed fine-tuned epoch) with the
    columns ``task`` (index of the grid's spec), ``dataset``, ``kind``, ``regime``, ``learning_rate``, ``query_size``,
    ``label_condition``, ``seed``, ``epoch``, ``pool`` (members probed, as many non-members) and ``run`` (task and
    table: one fine-tuning run's view)."""

    grid: Grid
    rows: pd.DataFrame

    @classmethod
    def of(cls, grid: Grid) -> DesignFacts:
        out = []
        for i, spec in enumerate(grid.specs):
            epochs = [e for e in grid.probe.epochs_for(spec.config().probe_epochs) if e > 0]
            for d in spec.datasets:
                out += [
                    {
                        "task": i,
                        "dataset": d,
                        "kind": table_kind(d),
                        "regime": spec.regime,
                        "learning_rate": spec.learning_rate,
                        "query_size": spec.query_size,
                        "label_condition": spec.label_condition,
                        "seed": spec.seed,
                        "epoch": e,
                        "pool": probed_per_pool(spec.query_size, grid.probe.max_queries),
                        "run": f"{i}:{d}",
                    }
                    for e in epochs
                ]
        return cls(grid, pd.DataFrame(out))

    def single(self, conditions: tuple[str, ...] | None = ("none", "all")) -> pd.DataFrame:
        """The single-task rows (the controlled setup, Sec. 5) of ``conditions`` (None: every condition)."""
        r = self.rows[self.rows.regime == SINGLE_TASK_FIXED]
        return r if conditions is None else r[r.label_condition.isin(conditions)]

    def runs(self, rows: pd.DataFrame) -> pd.DataFrame:
        """One row per run of ``rows``, with its probed epochs counted (``rows``)."""
        return (
            rows.groupby("run", sort=True)
            .agg(
                dataset=("dataset", "first"),
                kind=("kind", "first"),
                query_size=("query_size", "first"),
                learning_rate=("learning_rate", "first"),
                label_condition=("label_condition", "first"),
                seed=("seed", "first"),
                pool=("pool", "first"),
                rows=("epoch", "size"),
            )
            .reset_index()
        )

    def joined(self, extension: DesignFacts) -> DesignFacts:
        """This design and a registered ``extension`` of it as one design (the extension's tasks numbered after this
        design's, so that their runs stay apart)."""
        offset = len(self.grid.specs)
        rows = extension.rows.assign(task=extension.rows.task + offset)
        rows = rows.assign(run=rows.task.astype(str) + ":" + rows.dataset)
        return DesignFacts(self.grid, pd.concat([self.rows, rows], ignore_index=True))

    def epochs(self) -> list[int]:
        """The probed fine-tuned epochs of the single-task runs, ascending."""
        return sorted(set(self.single(None).epoch))


UNIT_KEYS = ("step_s", "finetune_fixed_s", "ref_s_per_query", "theta_s_per_query", "summary_s")


def table_units(costs: Mapping, kind: str, q: int, features: int) -> dict[str, float]:
    """The unit costs of a table of ``kind`` with ``features`` features at query size ``q``: each unit a line in the
    number of features through the measured tables of that kind (``measured`` of design_costs.json), never below
    the cheapest of them (a narrower table is not taken to cost less than the narrowest measured)."""
    rows = [m for m in costs["measured"] if m["kind"] == kind and int(m["Q"]) == q]
    if not rows:
        raise KeyError(f"no measured {kind} table at Q={q} in the unit costs: run benchmarks/design_costs.py")
    x = np.array([m["features"] for m in rows], dtype=float)
    out = {}
    for k in UNIT_KEYS:
        y = np.array([m[k] for m in rows], dtype=float)
        slope = np.polyfit(x, y, 1)[0] if len(set(x)) > 1 else 0.0
        out[k] = float(max(y.mean() + slope * (features - x.mean()), y.min()))
    return out


def _null_s(costs: Mapping, queries: int) -> float:
    """The membership null of one (run, epoch) at ``queries`` probed, linear between the two measured sizes."""
    at = costs["null"]["per_run_epoch_s"]
    small, large = at["50+50"], at["512+512"]
    return small + (large - small) * (queries - 100) / (1024 - 100)


def task_costs(facts: DesignFacts, costs: Mapping) -> pd.DataFrame:
    """One row per task of the grid: its projected one-thread CPU seconds of fine-tuning, probing, summaries and
    null (module docstring)."""
    grid, out, owners = facts.grid, [], set()
    cards = suite_tables()
    for i, spec in enumerate(grid.specs):
        probed = grid.probe.epochs_for(spec.config().probe_epochs)
        fine = [e for e in probed if e > 0]
        parts = {"finetune_s": 0.0, "probe_s": 0.0, "summary_s": 0.0, "null_s": 0.0}
        for d in spec.datasets:
            u = table_units(costs, table_kind(d), spec.query_size, int(cards[d]["n_features"]))
            queries = 2 * probed_per_pool(spec.query_size, grid.probe.max_queries)
            owner = (d, spec.query_size, spec.label_condition, spec.seed, spec.regime)
            parts["finetune_s"] += u["finetune_fixed_s"] + spec.epochs * u["step_s"]
            parts["probe_s"] += queries * (
                len(fine) * u["theta_s_per_query"] + u["ref_s_per_query"] * (owner not in owners)
            )
            parts["summary_s"] += len(probed) * u["summary_s"]
            parts["null_s"] += len(fine) * _null_s(costs, queries)
            owners.add(owner)
        out.append({"task": i, "regime": spec.regime, "dataset": spec.dataset, "Q": spec.query_size, **parts})
    frame = pd.DataFrame(out)
    frame["task_s"] = frame[["finetune_s", "probe_s", "summary_s", "null_s"]].sum(axis=1)
    return frame


def design_cost(facts: DesignFacts, costs_path: str | Path, scaling_path: str | Path) -> dict:
    """The design's projected CPU-hours, and its wall hours on this machine's 2 cores and on
    :data:`CLUSTER_WORKERS` workers (module docstring); ``costs``: the per-task frame."""
    costs = json.loads(Path(costs_path).read_text())
    scaling = json.loads(Path(scaling_path).read_text())
    tasks = task_costs(facts, costs)
    seconds = (tasks.task_s + scaling["overhead_per_real_task_s"]).tolist()
    efficiency = scaling["speedup_2_over_1_workers"] / scaling["ideal_speedup_2_over_1"]
    return {
        "tasks": int(len(tasks)),
        "cpu_hours": sum(seconds) / 3600,
        "largest_task_hours": max(seconds) / 3600,
        "wall_hours_2_cores": lpt_makespan(seconds, 2) / efficiency / 3600,
        f"wall_hours_{CLUSTER_WORKERS}_workers": lpt_makespan(seconds, CLUSTER_WORKERS) / efficiency / 3600,
        "efficiency": efficiency,
        "machine": costs["machine"]["processor"] + f", {costs['machine']['cpus']} cores",
        "costs": tasks,
    }


__all__ = [
    "BUDGET_CPU_HOURS",
    "BUDGET_MARGIN",
    "CLUSTER_WORKERS",
    "DESIGN_COSTS",
    "SWEEP_SCALING",
    "DesignFacts",
    "design_cost",
    "table_kind",
    "table_units",
    "task_costs",
]
