"""Paper 1, Sec. 6 ("Limitations") and App. D (Tab. 12): notebook 05's sweep grid.

The notebook's parameters, gathered once (:class:`RegimeGridSpec`), and the grid the sweep runs
(:func:`notebook_grid`): every regime of :mod:`iclmem.regimes` at the notebook's learning rates, and single-task
fixed pairs at the learning rates of Tab. 12's single-task column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from iclmem.data import Dataset
from iclmem.regimes import SINGLE_TASK_FIXED
from iclmem.sweep.gridfile import Grid, load_grid, parse_grid


@dataclass(frozen=True)
class RegimeGridSpec:
    """Notebook 05's grid parameters, as the notebook names them (Tab. 12's sweep, App. D).

    ``data_path``: your own table's file (then the one table of the notebook's tables is given to the sweep by
    path, target and task); ``grid_file``: a grid file that replaces all the rest.
    """

    data_path: str
    learning_rates: Sequence[float]
    query_sizes: Sequence[int]
    regimes: Sequence[str]
    epochs: int
    context_size: int
    seed: int
    n_candidates: int
    max_queries: int
    probe_epochs: Sequence[int]
    n_boot: int
    grid_file: str | None = None
    single_task_learning_rates: Sequence[float] = ()


def notebook_grid(spec: RegimeGridSpec, tables: Mapping[str, Dataset]) -> Grid:
    """Notebook 05's sweep grid: the grid file if ``spec`` names one, else one built from the notebook's parameters.

    ``tables`` are the notebook's tables (:func:`iclmem.book.table_parameters.notebook_tables`); with
    ``spec.data_path`` the one table is your file, given to the sweep by path, target and task. Two
    ``parts``: every regime at ``learning_rates`` (the joint regimes of Tab. 12 use lr 1e-4), and
    single-task fixed pairs at ``single_task_learning_rates`` (Tab. 12's single-task column is the
    peak over every learning rate; the paper's lie at 1e-3 and 1e-4). A spec in both parts is one
    task, and the grid keeps the name ``book``, so the tasks of the first part are those of a grid
    without the second, read from the store.
    """
    if spec.grid_file:
        return load_grid(spec.grid_file)
    if spec.data_path:
        table = next(iter(tables.values()))
        entries: list = [
            {
                "path": str(Path(spec.data_path).resolve()),
                "target": str(table.target.name),
                "task": table.task,
                "name": table.name,
            }
        ]
    else:
        entries = list(tables)
    parts: list[dict] = [{"name": "regimes"}]
    if SINGLE_TASK_FIXED in spec.regimes and len(spec.single_task_learning_rates):
        parts.append(
            {
                "name": "single-task peaks",
                "regimes": [SINGLE_TASK_FIXED],
                "learning_rates": list(spec.single_task_learning_rates),
            }
        )
    return parse_grid(
        {
            "name": "book",
            "datasets": entries,
            "learning_rates": list(spec.learning_rates),
            "query_sizes": list(spec.query_sizes),
            "regimes": list(spec.regimes),
            "epochs": spec.epochs,
            "context_size": spec.context_size,
            "seed": spec.seed,
            "probe": {
                "n_candidates": spec.n_candidates,
                "max_queries": spec.max_queries,
                "epochs": list(spec.probe_epochs),
                "n_boot": spec.n_boot,
            },
            "parts": parts,
        },
        "notebook 05 parameters",
    )
