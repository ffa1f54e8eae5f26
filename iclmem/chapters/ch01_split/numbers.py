"""Paper 1, Sec. 4.1: the section's summary numbers that notebook 01 glues into its text."""

from __future__ import annotations

import pandas as pd

from iclmem.report.records import PlainText


def summary_numbers(table6: pd.DataFrame, dedup: pd.DataFrame) -> dict[str, PlainText]:
    """Key numbers of the section as display strings ("-" where no table has that task), for myst-nb glue."""
    reg, cls = table6[table6.task == "regression"], table6[table6.task == "classification"]

    def fmt(values: pd.Series, how: str, digits: int) -> str:
        return f"{getattr(values.astype(float), how)():.{digits}f}" if len(values) else "-"

    numbers = {
        "n_datasets": str(len(dedup)),
        "rows_dropped_dedup": str(int(dedup[["n_exact_duplicates_dropped", "n_conflicting_dropped"]].to_numpy().sum())),
        "max_ks_stat": fmt(reg["KS stat"], "max", 4),
        "min_ks_p": fmt(reg["KS p"], "min", 3),
        "max_tvd": fmt(cls["TVD"], "max", 4),
        "max_redraws_used": str(int((table6["draws"] - 1).max())),
    }
    return {k: PlainText(v) for k, v in numbers.items()}


def glue_values(table6: pd.DataFrame, dedup: pd.DataFrame) -> dict[str, object]:
    """Every value notebook 01 glues (besides claim C14): :func:`summary_numbers` and ``n_<table>``, rows after
    dedup."""
    return {**summary_numbers(table6, dedup), **{f"n_{name}": int(row["n_output"]) for name, row in dedup.iterrows()}}


__all__ = [
    "summary_numbers",
    "glue_values",
]
