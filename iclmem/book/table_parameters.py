"""Paper 1, Sec. 4.1 ("Data Pre-Processing"), Tab. 2: the data parameters every tabular chapter shares (notebooks
01-05).

One vocabulary in every tabular notebook, so one parameters file drives the whole chain:
``datasets`` (names of shipped or CARTE tables), or ``data_path`` (a CSV/parquet file of your
own) with its ``target`` column and ``task`` (``classification`` | ``regression``; inferred when
empty) and what rows without a target value do (``missing_target``: ``error`` | ``drop``), and
``carte_dir`` (the folder of the paper's CARTE tables). :func:`notebook_tables` turns them into
the deduplicated tables, through the engine's one loader (:func:`iclmem.data.prepared_table`).

Before any compute, :func:`fitting_query_sizes` checks that every table fits every query size Q
of the grid (members + non-members + a context pool: ``2 Q + 1`` rows at least), that a regression
table's Q can pass the KS criterion at all (Q > 20), and that a classification target has at most
the model's number of classes; an error names the table, the
sizes that fit and the parameter to change. Wider tables than the model takes are reduced, as the
engine documents: :data:`iclmem.training.finetune.FinetuneConfig.max_features` columns, a seeded subset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from iclmem.book.shareable import shareable_label
from iclmem.data import Dataset, prepared_table
from iclmem.data.stats import KS_THRESHOLD
from iclmem.ltm import MAX_CLASSES
from iclmem.user_errors import UserError


class TableFitError(UserError, ValueError):
    """A table does not fit the notebook's parameters: the message names the table, what fits and the fix."""


def table_names(datasets: Sequence[str] = (), data_path: str = "") -> list[str]:
    """The tables a notebook runs on: ``data_path`` (your own file) wins over ``datasets``."""
    if data_path:
        return [str(data_path)]
    if not datasets:
        raise TableFitError(
            "no table given: set datasets (e.g. ['spotify']) or data_path (a CSV/parquet file) with target and task."
        )
    return [str(d) for d in datasets]


def notebook_tables(
    datasets: Sequence[str] = (),
    data_path: str = "",
    target: str = "",
    task: str = "",
    carte_dir: str = "",
    missing_target: str = "error",
) -> dict[str, Dataset]:
    """The deduplicated tables of a notebook's data parameters, by table name (a file's name is its stem).

    ``target`` and ``task`` apply to ``data_path`` (required / inferred for a file); for named
    tables they override the recipe when given. Loading errors name the column or file and the fix.
    """
    tables = [
        prepared_table(name, carte_dir or None, target or None, task or None, missing_target=missing_target)
        for name in table_names(datasets, data_path)
    ]
    by_name = {t.name: t for t in tables}
    if len(by_name) != len(tables):
        raise TableFitError(f"two tables share a name: {[t.name for t in tables]}; rename one of the files.")
    return by_name


def max_query_size(table: Dataset) -> int:
    """The largest Q a table fits: Q members, Q non-members and at least one context row (Sec. 4.1)."""
    return (table.n - 1) // 2


def fitting_query_sizes(
    tables: Mapping[str, Dataset], query_sizes: Sequence[int], drop_unfit: bool = False, max_classes: int = MAX_CLASSES
) -> list[int]:
    """The query sizes the grid uses, checked against every table before any compute.

    A size some table cannot hold is an error that names the table and the sizes that fit;
    with ``drop_unfit`` those sizes are left out instead (an error if none is left). A
    classification target with more classes than the model takes (``max_classes``: the model's
    :attr:`~iclmem.ltm.interface.LTM.max_classes`, the reference's by default) is an error that proposes
    ``task='regression'``.
    """
    not_positive = [q for q in query_sizes if int(q) != q or q < 1]
    if not_positive or not query_sizes:
        raise TableFitError(
            f"query sizes must be positive integers, got {list(query_sizes)}: set query_sizes to a non-empty list of "
            "sizes of at least 1 (the paper: [50, 512])."
        )
    for table in tables.values():
        if table.task == "classification" and table.target.nunique() > max_classes:
            raise TableFitError(
                f"{table.name}: its target has {table.target.nunique()} classes, the model takes at "
                f"most max_classes={max_classes}; treat it as regression (task: regression) or group "
                "the classes."
            )
    regression = [t.name for t in tables.values() if t.task == "regression"]
    hopeless = [int(q) for q in query_sizes if regression and 1 / int(q) >= KS_THRESHOLD]
    if hopeless:
        raise TableFitError(
            f"query size(s) {hopeless} cannot pass split validation for the regression table(s) {regression}: the KS "
            f"statistic of two samples of Q is a multiple of 1/Q, so it stays >= {KS_THRESHOLD} (Sec. 4.1) unless "
            f"Q > {int(1 / KS_THRESHOLD)}; use query sizes above {int(1 / KS_THRESHOLD)} (the paper: 50 and 512)."
        )
    fit = [int(q) for q in query_sizes if all(int(q) <= max_query_size(t) for t in tables.values())]
    unfit = [int(q) for q in query_sizes if int(q) not in fit]
    if unfit and not drop_unfit or not fit:
        smallest = min(tables.values(), key=max_query_size)
        raise TableFitError(
            f"{smallest.name} has {smallest.n} rows after deduplication, too few for query size(s) "
            f"{unfit or list(query_sizes)} "
            f"(Q members + Q non-members + a context pool need 2 Q + 1 rows): sizes up to {max_query_size(smallest)} "
            "fit. "
            f"Set query_sizes to sizes that fit (e.g. [{min(50, max_query_size(smallest))}]), or drop_unfit_sizes: "
            "true to skip the others."
        )
    return fit


def run_banner(tables: Mapping[str, Dataset], data_path: str = "", target: str = "", task: str = "") -> str:
    """One line saying which table(s) a page was run on, for the top of an adapted page: your file by its name and
    content fingerprint (never its folder, :mod:`iclmem.book.shareable`)."""
    if data_path:
        table = next(iter(tables.values()))
        named = shareable_label(data_path) if Path(data_path).is_file() else Path(data_path).name
        return (
            f"Run on your table `{named}` ({table.n} rows after deduplication, target "
            f"`{target or table.target.name}`, "
            f"{table.task})."
        )
    return "Run on " + ", ".join(f"`{name}` ({t.n} rows, {t.task})" for name, t in tables.items()) + "."


__all__ = [
    "TableFitError",
    "fitting_query_sizes",
    "max_query_size",
    "notebook_tables",
    "run_banner",
    "table_names",
]
