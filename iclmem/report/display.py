"""Every chapter of the book (notebooks 00-06, A1-A3): tables as a reader reads them, one formatter for all.

A DataFrame printed raw shows a 0..n index column, learning rates as ``1.000e-02``, losses as
``1.807e+01`` and wide tables cut at the right edge. :func:`book_table` renders a frame as the
paper's tables are printed:

* no index column (a meaningful index, such as a table name, becomes a first column);
* headers in words (``learning_rate`` -> ``learning rate``);
* learning rates as powers of ten (``1e-2``), other floats with three significant digits,
  integral values of 1,000 and more with thousands separators, missing values as a dash;
* the table in a box that scrolls sideways when it is wider than the page (``book/_static/iclmem.css``).

:func:`use_book_tables` makes it the HTML form of every DataFrame a notebook displays, so a
notebook calls it once after its imports.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from numbers import Integral, Real

import pandas as pd
from pandas.io.formats.style import Styler

#: Columns whose values are learning rates (shown as 1e-2), matched on the column name.
LEARNING_RATE = re.compile(r"(^|_|\b)(lr|learning[_ ]rate)s?($|_|\b)", re.I)
#: Class of the scrolling box around every table (styled in book/_static/iclmem.css).
TABLE_CLASS = "iclmem-table"
DASH = "\u2013"


def power_of_ten(value: object) -> str:
    """A learning rate as the paper writes it: ``1e-2``; ``3e-4``; a non-number as it is."""
    if not isinstance(value, Real) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        return DASH if _missing(value) else str(value)
    exponent = math.floor(math.log10(value))
    mantissa = float(f"{value / 10**exponent:.3g}")
    if mantissa >= 10:  # 9.9999 rounds up to the next power
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:g}e{exponent}"


def significant(value: object, digits: int = 3) -> str:
    """A number with ``digits`` significant digits; integral values >= 1,000 with thousands separators."""
    if _missing(value):
        return DASH
    if isinstance(value, bool) or not isinstance(value, Real):
        return str(value)
    if isinstance(value, Integral) or (abs(value) >= 1000 and float(value).is_integer()):
        return f"{int(value):,}"
    if abs(value) >= 10**digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT


def words(name: object) -> str:
    """A column header in words: underscores become spaces."""
    return (
        str(name).replace("_", " ")
        if isinstance(name, str)
        else ", ".join(map(str, name))
        if isinstance(name, tuple)
        else str(name)
    )


def and_list(items: Iterable[object]) -> str:
    """Items as prose lists them, for glued text: ``[1, 10, 50, 100]`` -> "1, 10, 50 and 100" ("" when empty)."""
    texts = [str(i) for i in items]
    return " and ".join([", ".join(texts[:-1]), texts[-1]]) if len(texts) > 1 else "".join(texts)


def book_table(frame: pd.DataFrame, digits: int = 3, learning_rate_columns: Iterable[str] = ()) -> Styler:
    """``frame`` as the book shows it (see the module docstring); returns a pandas Styler.

    ``learning_rate_columns`` adds columns shown as powers of ten to those whose name says so.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"book_table takes a DataFrame, got {type(frame).__name__}; use .to_frame() on a Series.")
    shown = frame.copy()
    if not isinstance(shown.index, pd.RangeIndex) or shown.index.name is not None:
        shown = shown.reset_index()
    shown.columns = [words(c) for c in shown.columns]
    rates = {words(c) for c in learning_rate_columns} | {
        c for c in shown.columns if LEARNING_RATE.search(c.replace(" ", "_"))
    }
    formats = {}
    for column in shown.columns:
        kind = shown[column].dtype.kind
        if column in rates:
            formats[column] = power_of_ten
        elif kind in "fiuc" or kind == "O":
            formats[column] = lambda v, d=digits: significant(v, d)
    # ids from the content, not random: the same table renders to the same HTML in every build
    uuid = hashlib.sha256(pd.util.hash_pandas_object(shown.astype(str), index=False).values.tobytes()).hexdigest()[:8]
    styler = Styler(shown, uuid=uuid, cell_ids=False).format(formats, na_rep=DASH).hide(axis="index")
    return styler.set_table_attributes(f'class="{TABLE_CLASS}"')


def book_table_html(frame: pd.DataFrame) -> str:
    """The HTML of :func:`book_table`, wrapped in the scrolling box."""
    return f'<div class="{TABLE_CLASS}-box">{book_table(frame).to_html()}</div>'


def use_book_tables() -> None:
    """Show every DataFrame of this IPython session through :func:`book_table` (its plain-text form is unchanged)."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, book_table_html)


__all__ = [
    "DASH",
    "LEARNING_RATE",
    "TABLE_CLASS",
    "and_list",
    "book_table",
    "book_table_html",
    "power_of_ten",
    "significant",
    "use_book_tables",
    "words",
]
