"""What a tabular grid costs before it runs (Sec. 5, Tab. 2): CPU seconds per (table, Q) and the wall time on N workers.

A controlled run is one AdamW step per epoch on a fixed context and the Q members (Sec. 4.1), so its fine-tuning
cost is ``fixed + epochs * step_s``; probing one (run, epoch) costs in proportion to the probed queries (every query
gets the same 48 manipulations); M_ref's scores are computed once per (table, Q, label condition, seed), shared by
the learning rates (:func:`iclmem.probe.run.reference_owner`), and epoch 0 reuses them. The unit costs are
*measured* per shipped table and Q by ``benchmarks/paper_shipped_cost.py`` (``measured`` in its JSON), on one
thread; this module only multiplies them out, so a projection is as good as that measurement (its context size,
its machine's load) and is best read as a ratio between two grids measured the same way.

The wall time on ``workers`` processes: the runs are indivisible, largest first, so the greedy makespan
(:func:`lpt_makespan`) bounds it from below; divided by a measured parallel efficiency it estimates it.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..training.grid import GridAxes
from ..user_errors import UserError


class CostError(UserError, ValueError):
    """A projection that cannot be made: the message names what is missing and how to measure it."""


@dataclass(frozen=True)
class UnitCost:
    """Measured one-thread seconds of one shipped table at one Q (``benchmarks/paper_shipped_cost.py``)."""

    table: str
    query_size: int
    step_s: float  # one AdamW step = one epoch
    finetune_fixed_s: float  # split, encoding, M_ref's vanilla losses, the files
    ref_s_per_query: float  # M_ref's scores, per probed query (members and non-members counted)
    theta_s_per_query: float  # M_theta's scores at one epoch, per probed query
    summary_s: float  # one epoch's summary


def load_unit_costs(path: str | Path) -> dict[tuple[str, int], UnitCost]:
    """The ``measured`` rows of a ``paper_shipped_cost.json``, keyed by (table, Q)."""
    path = Path(path)
    if not path.exists():
        raise CostError(f"{path} does not exist: run `python benchmarks/paper_shipped_cost.py` to measure the costs.")
    rows = json.loads(path.read_text()).get("measured", [])
    out = {}
    for m in rows:
        probed = m["probed_queries"]
        out[(m["table"], int(m["Q"]))] = UnitCost(
            m["table"], int(m["Q"]), m["step_s"], m["finetune_fixed_s"], m["ref_s"] / probed, m["theta_s"] / probed,
            m["summary_s"],
        )  # fmt: skip
    return out


def probed_per_pool(query_size: int, max_queries: int | None) -> int:
    """Members (and as many non-members) a run probes: all Q unless ``max_queries`` caps them."""
    return query_size if max_queries is None else min(query_size, max_queries)


def grid_cost(
    units: dict[tuple[str, int], UnitCost],
    axes: GridAxes,
    epochs: int,
    probe_epochs: Sequence[int],
    max_queries: int | None,
) -> pd.DataFrame:
    """One row per (table, Q) of the single-task grid on ``axes``: runs, probed queries per pool, and the projected
    one-thread seconds of fine-tuning (notebook 02) and probing (notebook 03) those runs."""
    datasets, learning_rates, query_sizes = axes.datasets, axes.learning_rates, axes.query_sizes
    label_conditions = axes.label_conditions
    missing = [(d, q) for d in datasets for q in query_sizes if (d, q) not in units]
    if missing:
        raise CostError(
            f"no measured cost for {missing}: run `python benchmarks/paper_shipped_cost.py --tables ...` on them."
        )
    probed_epochs = [e for e in probe_epochs if e != 0 and e <= epochs]  # epoch 0 reuses M_ref's scores
    rows = []
    for d in datasets:
        for q in query_sizes:
            u, n = units[(d, q)], 2 * probed_per_pool(q, max_queries)
            runs = len(learning_rates) * len(label_conditions)
            rows.append(
                {
                    "table": d,
                    "Q": q,
                    "runs": runs,
                    "probed_per_pool": n // 2,
                    "finetune_s": runs * (u.finetune_fixed_s + epochs * u.step_s),
                    "probe_s": len(label_conditions) * n * u.ref_s_per_query
                    + runs * len(probed_epochs) * n * u.theta_s_per_query,
                    "run_s": u.finetune_fixed_s + epochs * u.step_s,
                }
            )
    return pd.DataFrame(rows)


def lpt_makespan(costs: Sequence[float], workers: int) -> float:
    """The wall time of ``workers`` taking the tasks largest first, each the next free one (no overhead)."""
    if workers < 1:
        raise CostError(f"workers must be at least 1, got {workers}.")
    loads = [0.0] * workers
    heapq.heapify(loads)
    for c in sorted(costs, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + c)
    return max(loads)


def grid_wall_s(cost: pd.DataFrame, workers: int, efficiency: float = 1.0) -> dict[str, float]:
    """Projected wall seconds of fine-tuning (runs as indivisible tasks) and probing (spread evenly) on ``workers``."""
    runs = [float(r.run_s) for r in cost.itertuples() for _ in range(int(r.runs))]
    eff = 1.0 if workers == 1 else efficiency
    return {
        "finetune_wall_s": lpt_makespan(runs, workers) / eff,
        "probe_wall_s": float(cost["probe_s"].sum()) / workers / eff,
    }


__all__ = ["CostError", "UnitCost", "grid_cost", "grid_wall_s", "load_unit_costs", "lpt_makespan", "probed_per_pool"]
