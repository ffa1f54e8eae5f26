"""Paper 1, Sec. 5, Tab. 2: what each step of the book's grid toward the paper's buys in power and costs (nb. 04).

The power plan (:mod:`.power_plan`) says what size would decide each claim; this table says what the grid's
dimensions cost on the way there. Each option changes one dimension of the book's controlled grid (notebooks 02-04)
toward the paper's Tab. 2, the last one changes them all (``grids/book_powered.yaml``). The cost is the projected
one-thread compute of fine-tuning and probing (:func:`iclmem.sweep.cost.grid_cost`, on the unit costs measured by
``benchmarks/paper_shipped_cost.py``), shown as a multiple of today's grid: a ratio of two projections from one
measurement carries to other machines better than either number. The power column is the smallest AUC(Delta S) a
run at Q = 512 detects with 80% power (one-sided 5%, Hanley-McNeil), from its probed members and non-members.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

import iclmem
from iclmem.chapters.ch04_calibration.paper import PAPER_CONDITIONS, PAPER_PROBE_EPOCHS
from iclmem.stats.permutation import min_detectable_auc
from iclmem.sweep.cost import CostError, UnitCost, grid_cost, load_unit_costs, probed_per_pool
from iclmem.training.grid import GridAxes

#: The four CARTE tables carte-ai ships (none is among the paper's ten, Tab. 5).
SHIPPED_TABLES = ("spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices")
#: Where ``benchmarks/paper_shipped_cost.py`` writes the unit costs (relative to the repository root).
UNIT_COSTS = Path("benchmarks/results/paper_shipped_cost.json")


def _options(grid: dict) -> list[tuple[str, dict]]:
    """The grid options, each one step of ``grid`` toward Tab. 2 and the last all of them: (name, changed keys)."""
    epochs = [e for e in PAPER_PROBE_EPOCHS if e <= grid["epochs"]]
    steps = [
        ("every member and non-member probed at Q = 512", {"max_queries": None}),
        ("label condition All beside N and M", {"label_conditions": list(PAPER_CONDITIONS)}),
        ("all four shipped tables", {"datasets": list(SHIPPED_TABLES)}),
        (f"the paper's probing epochs up to {grid['epochs']}", {"probe_epochs": epochs}),
    ]
    steps = [(name, change) for name, change in steps if any(grid[k] != v for k, v in change.items())]
    everything = {k: v for _, change in steps for k, v in change.items()}
    return [("today's grid", {}), *steps, ("all of the above (grids/book_powered.yaml)", everything)]


def grid_options(
    axes: GridAxes,
    epochs: int,
    probe_epochs: Sequence[int],
    max_queries: int | None,
    unit_costs: str | Path = UNIT_COSTS,
) -> pd.DataFrame:
    """One row per option: what it changes, the runs, the probed queries per pool at the largest Q, the smallest
    AUC(Delta S) detectable there, and the projected compute as a multiple of today's grid on ``axes`` (module
    docstring).

    A table without measured unit costs (your own table) gives one row, ``note``, that says how to measure them.
    """
    grid = {
        "datasets": list(axes.datasets),
        "learning_rates": list(axes.learning_rates),
        "query_sizes": list(axes.query_sizes),
        "label_conditions": list(axes.label_conditions),
        "epochs": int(epochs),
        "probe_epochs": list(probe_epochs),
        "max_queries": max_queries,
    }
    path = Path(unit_costs)
    if not path.is_absolute():
        path = Path(iclmem.__file__).resolve().parents[1] / path  # the repository (iclmem's parent folder)
    try:
        return _option_rows(load_unit_costs(path), grid)
    except CostError as e:
        return pd.DataFrame({"note": [f"not projected: {e}"]})


def _option_rows(units: dict[tuple[str, int], UnitCost], grid: dict) -> pd.DataFrame:
    """:func:`grid_options`'s rows for ``grid`` (the keyword arguments of :func:`~iclmem.sweep.cost.grid_cost`)."""
    q = max(grid["query_sizes"])
    rows, today = [], None
    for name, change in _options(grid):
        g = {**grid, **change}
        axes = GridAxes(g["datasets"], g["learning_rates"], g["query_sizes"], g["label_conditions"])
        cost = grid_cost(units, axes, g["epochs"], g["probe_epochs"], g["max_queries"])
        finetune, probe = float(cost["finetune_s"].sum()), float(cost["probe_s"].sum())
        today = today or (finetune, probe)
        n = probed_per_pool(q, g["max_queries"])
        rows.append(
            {
                "option": name,
                "runs": int(cost["runs"].sum()),
                f"probed per pool at Q={q}": n,
                "smallest detectable AUC": round(min_detectable_auc(n, n), 3),
                "fine-tuning (x today)": finetune / today[0],
                "probing (x today)": probe / today[1],
                "fine-tuning + probing (x today)": (finetune + probe) / sum(today),
            }
        )
    return pd.DataFrame(rows)


__all__ = ["SHIPPED_TABLES", "UNIT_COSTS", "grid_options"]
