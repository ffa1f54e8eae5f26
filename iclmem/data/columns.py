"""Which columns are numbers: one rule for the dataset cards (Tab. 5) and the LTM's table encoder.

Numeric dtypes (not bool) are numbers. A text column is read as numbers too when at least
``NUMERIC_TEXT_SHARE`` of its non-missing values parse as numbers, e.g. a vintage year stored
as text with "N.V." for the rest (the CARTE wine tables); its other values become missing.
"""

from __future__ import annotations

import pandas as pd

NUMERIC_TEXT_SHARE = 0.9


def as_numbers(column: pd.Series) -> pd.Series:
    """A column as floats: numbers stay, text that parses as a number is read, the rest is NaN."""
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        return pd.to_numeric(column, errors="coerce")
    return pd.to_numeric(column.astype("string").str.strip(), errors="coerce")


def is_numeric_column(column: pd.Series, numeric_text_share: float | None = NUMERIC_TEXT_SHARE) -> bool:
    """Numeric dtype (not bool), or text whose non-missing values are at least ``numeric_text_share`` numbers.

    ``numeric_text_share=None`` keeps every text column non-numeric.
    """
    if pd.api.types.is_bool_dtype(column):
        return False
    if pd.api.types.is_numeric_dtype(column):
        return True
    present = column.dropna()
    if numeric_text_share is None or len(present) == 0:
        return False
    return float(as_numbers(present).notna().mean()) >= numeric_text_share
