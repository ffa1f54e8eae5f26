"""The book's one table formatter (iclmem/report/display.py): no index, words, 1e-2, three significant digits."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from iclmem.report.display import DASH, and_list, book_table, book_table_html, power_of_ten, significant, words


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.1, "1e-1"),
        (0.01, "1e-2"),
        (3e-4, "3e-4"),
        (2.5e-3, "2.5e-3"),
        (0.00099999999, "1e-3"),
        (1.0, "1e0"),
        (float("nan"), DASH),
    ],
)
def test_learning_rates_as_powers_of_ten(value, shown):
    assert power_of_ten(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (18.07, "18.1"),
        (0.51234, "0.512"),
        (1.807e1, "18.1"),
        (1e-5, "1e-05"),
        (512, "512"),
        (20000, "20,000"),
        (1234.0, "1,234"),
        (12345.6, "12,346"),
        (np.float32(0.25), "0.25"),
        (None, DASH),
        ("spotify", "spotify"),
        (True, "True"),
    ],
)
def test_three_significant_digits(value, shown):
    assert significant(value) == shown


def test_a_frame_as_the_book_shows_it():
    frame = pd.DataFrame({"learning_rate": [0.1, 0.01], "train_loss": [18.07, np.nan], "query_size": [50, 512]})
    html = book_table_html(frame)
    headers = re.findall(r"<th[^>]*>(.*?)</th>", html)
    assert headers == ["learning rate", "train loss", "query size"]  # no index header, words
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html)
    assert cells == ["1e-1", "18.1", "50", "1e-2", DASH, "512"]  # no index cells
    assert html.startswith('<div class="iclmem-table-box">') and 'class="iclmem-table"' in html
    assert html == book_table_html(frame.copy())  # deterministic ids: the same table renders the same in every build


def test_a_meaningful_index_becomes_a_column_and_named_rates_are_found():
    frame = pd.DataFrame({"peak lr": [1e-3], "auc": [0.51234]}, index=pd.Index(["spotify"], name="dataset"))
    cells = re.findall(r"<td[^>]*>(.*?)</td>", book_table(frame).to_html())
    assert cells == ["spotify", "1e-3", "0.512"]
    assert words(("auc", "loss")) == "auc, loss"
    with pytest.raises(TypeError, match="takes a DataFrame"):
        book_table(pd.Series([1.0]))


def test_use_book_tables_is_a_no_op_outside_ipython():
    from iclmem.report.display import use_book_tables

    use_book_tables()  # no shell: nothing to register, no error


def test_and_list_lists_items_as_prose():
    assert and_list([1, 10, 50, 100]) == "1, 10, 50 and 100"
    assert (and_list(["N", "M"]), and_list([5]), and_list([])) == ("N and M", "5", "")
