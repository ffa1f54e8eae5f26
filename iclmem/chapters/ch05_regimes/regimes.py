"""Paper 1, Sec. 6 ("Limitations") and App. D (Tab. 12): realistic training regimes (notebook 05).

What only this chapter needs: the paper's Tab. 12 and its layout, the per-regime peak table and
its figure, the encoding-balance check of the probed splits and the regime-decay claim (C13),
read under two readings of Tab. 3 and judged against the membership null of the sweep's runs.
The regimes themselves (sampling, joint training, probed members) are the engine's
:mod:`iclmem.regimes`.

This module holds the notebook's sweep grid (:func:`notebook_grid`) and the encoding-balance check
(:func:`encoding_balance`), and re-exports its parts, one job each:
:mod:`~iclmem.chapters.ch05_regimes.peaks` (Tab. 12, its layout, counts and figure) and
:mod:`~iclmem.chapters.ch05_regimes.decay` (claim C13 and its membership null).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import fisher_exact

from iclmem.data import Dataset
from iclmem.finetune import RunData, prepare_run_data
from iclmem.grid import RunSpec, run_spec, table_of
from iclmem.regimes import MULTI_TASK, REGIMES, SINGLE_TASK_FIXED
from iclmem.sweep.gridfile import Grid, load_grid, parse_grid


def encoding_balance(
    specs: Sequence[RunSpec],
    results_dir: str | None = None,
    carte_dir: str | None = None,
    tables: Mapping[str, Dataset] | None = None,
) -> pd.DataFrame:
    """Per regime, dataset and encoded column: the missing-value share among probed members and among non-members.

    The runs are read from the results store (trained if missing). A column whose missing values
    track membership would let the attack detect the encoding instead of memorization (App. A.1,
    "Distributional shift"); ``p`` is Fisher's exact test of equal shares. ``tables``: the notebook's
    tables by name (a file of your own), else loaded by name.
    """
    rows = []
    for spec in specs:
        run = run_spec(spec, results_dir=results_dir, carte_dir=carte_dir, tables=tables)
        for name in spec.datasets:
            view = run.view(name) if spec.regime in MULTI_TASK else run
            table = table_of(name, tables, carte_dir)
            data = prepare_run_data(view.manifest, table, view.config)
            rows += [{"regime": spec.regime, "dataset": name, **r} for r in missing_balance(data)]
    return pd.DataFrame(rows)


def missing_balance(data: RunData) -> list[dict]:
    """Per encoded column of a run's data: missing share among members, among non-members, and Fisher's exact p."""
    rows = []
    for j, column in enumerate(np.asarray(data.encoder.columns)[data.feature_columns]):
        m, n = np.isnan(data.member_x[:, j]), np.isnan(data.non_member_x[:, j])
        p = float(fisher_exact([[m.sum(), (~m).sum()], [n.sum(), (~n).sum()]]).pvalue)
        rows.append(
            {"column": str(column), "missing members": float(m.mean()), "missing non-members": float(n.mean()), "p": p}
        )
    return rows


def balance_summary(balance: pd.DataFrame) -> pd.DataFrame:
    """Per regime: the largest member / non-member gap in missing share over all columns, and the smallest p-value."""
    gap = (balance["missing members"] - balance["missing non-members"]).abs()
    return (
        balance.assign(gap=gap)
        .groupby("regime", sort=False)
        .agg(columns=("column", "size"), largest_gap=("gap", "max"), smallest_p=("p", "min"))
        .reindex([r for r in REGIMES if r in set(balance.regime)])
    )


def notebook_grid(
    tables: Mapping[str, Dataset],
    data_path: str,
    learning_rates: Sequence[float],
    query_sizes: Sequence[int],
    regimes: Sequence[str],
    epochs: int,
    context_size: int,
    seed: int,
    n_candidates: int,
    max_queries: int,
    probe_epochs: Sequence[int],
    n_boot: int,
    grid_file: str | None = None,
    *,
    single_task_learning_rates: Sequence[float] = (),
) -> Grid:
    """Notebook 05's sweep grid: the grid file if one is given, else one built from the notebook's parameters.

    ``tables`` are the notebook's tables (:func:`iclmem.book.table_parameters.notebook_tables`); with
    ``data_path`` the one table is your file, given to the sweep by path, target and task. Two
    ``parts``: every regime at ``learning_rates`` (the joint regimes of Tab. 12 use lr 1e-4), and
    single-task fixed pairs at ``single_task_learning_rates`` (Tab. 12's single-task column is the
    peak over every learning rate; the paper's lie at 1e-3 and 1e-4). A spec in both parts is one
    task, and the grid keeps the name ``book``, so the tasks of the first part are those of a grid
    without the second, read from the store.
    """
    if grid_file:
        return load_grid(grid_file)
    if data_path:
        table = next(iter(tables.values()))
        entries: list = [
            {
                "path": str(Path(data_path).resolve()),
                "target": str(table.target.name),
                "task": table.task,
                "name": table.name,
            }
        ]
    else:
        entries = list(tables)
    parts: list[dict] = [{"name": "regimes"}]
    if SINGLE_TASK_FIXED in regimes and len(single_task_learning_rates):
        parts.append(
            {
                "name": "single-task peaks",
                "regimes": [SINGLE_TASK_FIXED],
                "learning_rates": list(single_task_learning_rates),
            }
        )
    return parse_grid(
        {
            "name": "book",
            "datasets": entries,
            "learning_rates": list(learning_rates),
            "query_sizes": list(query_sizes),
            "regimes": list(regimes),
            "epochs": epochs,
            "context_size": context_size,
            "seed": seed,
            "probe": {
                "n_candidates": n_candidates,
                "max_queries": max_queries,
                "epochs": list(probe_epochs),
                "n_boot": n_boot,
            },
            "parts": parts,
        },
        "notebook 05 parameters",
    )


__all__ = [
    "balance_summary",
    "encoding_balance",
    "missing_balance",
    "notebook_grid",
]
