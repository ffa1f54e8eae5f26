"""The one place a table is loaded and deduplicated (Sec. 4.1 "Deduplication", App. A.1).

Every chapter and the engine read a table through :func:`prepared_table`: the raw table of
:func:`iclmem.data.load_dataset` (a shipped or CARTE name, or a CSV/parquet file with its target),
then :func:`iclmem.data.deduplicate`. The result is cached per process, so the notebooks, the
grid of runs and the sweep share one copy per (table, target, task, name).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from iclmem.data.dataset import Dataset
from iclmem.data.dedup import deduplicate
from iclmem.data.errors import DataError
from iclmem.data.sources import load_dataset

#: What :func:`prepared_table` does with rows whose target is missing (the notebooks' ``missing_target``).
MISSING_TARGET: tuple[str, ...] = ("error", "drop")


@lru_cache(maxsize=32)
def prepared_table(
    name_or_path: str | Path,
    carte_dir: str | Path | None = None,
    target: str | None = None,
    task: str | None = None,
    name: str | None = None,
    missing_target: str = "error",
) -> Dataset:
    """The deduplicated table of a dataset name or file (cached per process).

    ``target``/``task`` override a named table's recipe (required/inferred for files, see
    :func:`iclmem.data.load_dataset`); empty strings mean "not given". ``name`` renames the table
    (a grid file's dataset name for a file path). ``missing_target`` says what rows without a target
    value do: ``error`` (the default: the message counts them) or ``drop`` (they are left out, and the
    table's notes say how many).
    """
    if missing_target not in MISSING_TARGET:
        raise DataError(
            f"missing_target must be one of {', '.join(MISSING_TARGET)}, got {missing_target!r}; set missing_target: "
            "drop to leave out rows without a target value, or error to be told about them"
        )
    table = deduplicate(
        load_dataset(
            name_or_path,
            target=target or None,
            task=task or None,
            carte_dir=carte_dir or None,
            dropna=missing_target == "drop",
        )
    )
    return table.with_(name=name) if name else table
