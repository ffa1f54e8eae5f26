"""Paper 1, Sec. 6 ("Limitations") and App. D (Tab. 12): notebook 05's sweep grid.

The notebook's parameters, gathered once (:class:`RegimeGridSpec`), and the grid the sweep runs
(:func:`notebook_grid`): every regime of :mod:`iclmem.training.regimes` at the notebook's learning rates, and
single-task fixed pairs at the learning rates of Tab. 12's single-task column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from iclmem.data import Dataset
from iclmem.sweep.gridfile import Grid, load_grid, parse_grid
from iclmem.training.regimes import SINGLE_TASK_FIXED


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


#: The sweep grid of the paper's configuration (Tab. 2 and App. D on the CARTE tables), shipped beside the package.
PAPER_GRID = Path(__file__).resolve().parents[3] / "grids" / "paper.yaml"


def configuration_texts(grid: Grid, query_size: int, paper_grid: Path = PAPER_GRID) -> dict[str, str]:
    """The numbers notebook 05's prose states about the configuration it ran (issue 53 item 5), from its grid.

    ``probed_pair`` ("16 + 16": members and non-members probed per run at ``query_size``), ``one_non_member`` (one
    probed non-member's share of its pool), ``auc_halfwidth`` (half the width of a 95% interval of an AUC at chance
    with those counts, Hanley-McNeil), ``probed_epochs`` (the fine-tuned epochs probed), ``fire_epochs`` and
    ``fire_epochs_single`` (the probed epochs a table has to show a detectable one, joint regimes / single-task over
    its learning rates), ``context_size``, ``n_boot`` and ``paper_grid_tasks`` (the tasks of ``grids/paper.yaml``, "-"
    when it is not beside the package).
    """
    from iclmem.report.display import and_list
    from iclmem.stats.permutation import hanley_mcneil_se
    from iclmem.sweep.cost import probed_per_pool

    n = probed_per_pool(query_size, grid.probe.max_queries)
    from iclmem.training.finetune import PROBE_EPOCHS

    kept = {s.epochs: [e for e in PROBE_EPOCHS if e <= s.epochs] for s in grid.specs}  # a run keeps these epochs
    epochs = sorted({e for s in grid.specs for e in grid.probe.epochs_for(kept[s.epochs]) if e > 0})
    single_lrs = {s.learning_rate for s in grid.specs if s.regime == SINGLE_TASK_FIXED}
    return {
        "probed_pair": f"{n} + {n}",
        "one_non_member": f"{100 / n:.2g}%",
        "auc_halfwidth": f"{1.96 * hanley_mcneil_se(0.5, n, n):.2f}",
        "probed_epochs": and_list(epochs),
        "fire_epochs": str(len(epochs)),
        "fire_epochs_single": str(len(epochs) * max(len(single_lrs), 1)),
        "context_size": str(max(s.context_size for s in grid.specs)),
        "n_boot": str(grid.probe.n_boot),
        "paper_grid_tasks": str(len(load_grid(paper_grid).specs)) if paper_grid.is_file() else "-",
    }
