"""The book's notebook parameters of a sweep grid: chapters 02-05 and the scorecard from a sweep's store.

A sweep task (:func:`iclmem.sweep.run_task`) fine-tunes and probes through the same cached functions
as notebooks 02-04 (:func:`iclmem.training.grid.run_spec` for :func:`~iclmem.training.grid.run_grid`,
:func:`iclmem.training.grid.probe_views` for :func:`~iclmem.training.grid.probe_grid`), so the split manifests, the
fine-tuning runs and the probe scores of a (dataset, learning rate, Q, label condition) land under the
same store keys either way. The notebooks find them, and compute nothing, when they run with the
grid's values: :func:`grid_book_values` maps a grid onto those parameters (Sec. 5, Tab. 2's axes,
the probe settings of Sec. 4.2), and notebook 05 reads the grid file itself (``grid_file``, App. D).

A grid part the notebooks cannot render is refused with a message that says why: 02-04 take one
product of axes with one ``epochs``, ``seed`` and ``context_size``, probe all 48 manipulations with
an integer ``max_queries`` and the grid's ``seed``, and read one table file at most.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..training.finetune import probe_epochs_up_to
from ..training.grid import GridAxes, expand_grid
from ..training.regimes import SINGLE_TASK_FIXED
from .gridfile import Grid, SweepError

#: What ``iclmem book --grid`` renders by default: the chapters that read the grid's runs, and the scorecard.
GRID_CHAPTERS: tuple[str, ...] = (
    "02_controlled_finetuning",
    "03_multiple_choice_probing",
    "04_calibration",
    "05_realistic_regimes",
    "A6_instrument",
    "00_scorecard",
)


def _one(values: list, name: str, where: str) -> Any:
    if len(set(values)) != 1:
        raise SweepError(
            f"{where}: the single-task runs use several values of {name} ({sorted(set(values))}); notebooks 02-04 take "
            f"one: put each {name} in a grid file of its own"
        )
    return values[0]


def _data_values(grid: Grid, datasets: list[str], where: str) -> dict[str, Any]:
    """``datasets``, or one file as ``data_path``/``target``/``task`` (the notebooks' own-table parameters)."""
    files = [grid.sources[d] for d in datasets if d in grid.sources and grid.sources[d].path is not None]
    if not files:
        return {"datasets": datasets}
    source = files[0]
    if len(datasets) > 1 or Path(str(source.path)).stem != source.name:
        raise SweepError(
            f"{where}: the notebooks read one table file, named by its file name; this grid's single-task runs use "
            f"{datasets}: give one file without a name of its own, or named tables"
        )
    return {"datasets": [], "data_path": str(source.path), "target": str(source.target), "task": source.task or ""}


def grid_book_values(grid: Grid, grid_file: str | Path) -> dict[str, Any]:
    """The notebooks' parameters (one flat mapping, as ``iclmem book --chapters -f`` takes) that read ``grid``'s store.

    Notebooks 02-04 get the single-task fixed runs (Tab. 2) as their axes and the grid's probe
    settings; notebook 05 gets ``grid_file`` (every regime of the grid, App. D). Raises
    :class:`SweepError` for a grid the notebooks would not find in the store as it is.
    """
    where = str(grid_file)
    single = [s for s in grid.specs if s.regime == SINGLE_TASK_FIXED]
    if not single:
        raise SweepError(
            f"{where}: no single_task_fixed runs, and chapters 02-04 render those; render chapter 05 alone with "
            f"`iclmem run notebooks/05_realistic_regimes.py -p grid_file {where}`"
        )
    datasets = list(dict.fromkeys(s.dataset for s in single))
    axes = {
        "learning_rates": list(dict.fromkeys(s.learning_rate for s in single)),
        "query_sizes": list(dict.fromkeys(s.query_size for s in single)),
        "label_conditions": list(dict.fromkeys(s.label_condition for s in single)),
    }
    scalars = {k: _one([getattr(s, k) for s in single], k, where) for k in ("epochs", "seed", "context_size")}
    product = expand_grid(GridAxes(datasets, *axes.values()), **scalars)
    absent = [s for s in product if s not in single]
    if absent:
        first = absent[0]
        raise SweepError(
            f"{where}: the single-task runs are not one product of datasets x learning_rates x query_sizes x "
            f"label_conditions ({len(absent)} combination(s) missing, e.g. {first.dataset}, "
            f"lr {first.learning_rate:g}, Q {first.query_size}, {first.label_condition}); notebooks 02-04 would "
            "compute those: make the single-task part one product"
        )
    probe = grid.probe
    if probe.manipulations is not None:
        raise SweepError(f"{where}: probe.manipulations is set, and the notebooks probe all 48 (Tab. 7): remove it")
    if probe.max_queries is None:
        raise SweepError(
            f"{where}: probe.max_queries is unset (all queries), and notebooks 03-04 take an integer: set it to the "
            f"largest query size ({max(axes['query_sizes'])}), which probes the same queries (Q members, Q non-members)"
        )
    if probe.seed != scalars["seed"]:
        raise SweepError(
            f"{where}: probe.seed {probe.seed} differs from seed {scalars['seed']}, and the notebooks probe with seed: "
            "make them equal"
        )
    return {
        **_data_values(grid, datasets, where),
        **axes,
        **scalars,
        "probe_epochs": probe.epochs_for(probe_epochs_up_to(scalars["epochs"])),
        "n_candidates": probe.n_candidates,
        "max_queries": probe.max_queries,
        "n_boot": probe.n_boot,
        "grid_file": str(Path(grid_file).resolve()),
    }


__all__ = ["GRID_CHAPTERS", "grid_book_values"]
