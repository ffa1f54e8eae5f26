"""Paper 1, Sec. 4.1 (Tab. 2's splits and label conditions) applied to the instrument's controls: whether a table can
carry them (appendix A6).

The controls of appendix A6 run on the table their parameters name (``control_dataset``, ``curve_datasets``,
``factor_seen``); a book of your own table names yours (:mod:`iclmem.book.own_book`). A control that cannot run on
that table is skipped with one line that says why and which parameter changes it, never moved to another table:

* :func:`control_unfit`: the positive control or a table's sensitivity curve, at ``control_query_size`` under its
  label conditions (``flip`` needs classes; Q members + Q non-members + a context pool need 2 Q + 1 rows; a
  regression split passes the KS criterion only for Q > 20);
* :func:`factors_unfit`: the factor table (and the strong signal read from its seen cell), which starts from a
  regression cell on a table of the curve and needs the control's strongest cell.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from iclmem.book.table_parameters import max_query_size
from iclmem.data import Dataset
from iclmem.data.randomize import FLIP_CONDITIONS
from iclmem.data.stats import KS_THRESHOLD


def control_unfit(table: Dataset, query_size: int, label_conditions: Sequence[str] = ("all",)) -> str:
    """Why a control cannot run on ``table`` with ``query_size`` members under ``label_conditions``, as one line
    naming the parameter that changes it; "" when it can."""
    flips = [c for c in label_conditions if c in FLIP_CONDITIONS]
    if flips and (table.task != "classification" or table.target.nunique() < 2):
        kind = "a regression table" if table.task == "regression" else "a table of one class"
        return (
            f"{table.name} is {kind}, and label condition {flips[0]!r} moves every label to another class; "
            "set control_label_condition to 'all'"
        )
    if query_size > max_query_size(table):
        return (
            f"{table.name} has {table.n} rows after deduplication, too few for control_query_size={query_size} "
            f"(2 Q + 1 rows); set control_query_size to at most {max_query_size(table)}"
        )
    if table.task == "regression" and 1 / query_size >= KS_THRESHOLD:
        return (
            f"{table.name} is a regression table, whose splits pass the KS criterion only for Q > "
            f"{int(1 / KS_THRESHOLD)}; set control_query_size above {int(1 / KS_THRESHOLD)}"
        )
    return ""


def factors_unfit(factor_seen: str, curve_tables: Collection[str], seen_task: str | None, control_ran: bool) -> str:
    """Why the factor table cannot run, as one line; "" when it can.

    ``curve_tables``: the tables of the per-table curve; ``seen_task``: the task of ``factor_seen``'s table (None when
    it is not among them); ``control_ran``: whether the positive control gave its strongest cell (the blind cell).
    """
    if not factor_seen:
        return "factor_seen is empty"
    if factor_seen not in curve_tables:
        return f"factor_seen {factor_seen!r} is not a table of the curve ({', '.join(curve_tables) or 'none'})"
    if seen_task != "regression":
        return f"factor_seen {factor_seen!r} is a {seen_task} table; the factors start from a regression cell"
    if not control_ran:
        return "the positive control was not run, so there is no blind cell to start from"
    return ""


def not_run_note(reasons: Mapping[str, str]) -> str:
    """One line per control that was not run (``what -> why``; an empty reason: it ran), for the page; "" if all
    ran."""
    return "\n\n".join(f"**Not run:** {what}: {why}." for what, why in reasons.items() if why)


__all__ = ["control_unfit", "factors_unfit", "not_run_note"]
