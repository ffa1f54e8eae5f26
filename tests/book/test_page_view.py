"""A chapter's parameters as a table in the rendered book (iclmem.book.page_view), the executed notebook left as it
is."""

from __future__ import annotations

import nbformat

from iclmem.book.execute import parameter_comments
from iclmem.book.page_view import INJECTED_TAG, TABLE_TAG, parameters_table, reader_view

SOURCE = """epochs: int = 100  # the paper: 500
lr: float = 1e-3
mode: str = "a|b"  # a | b
"""


def _notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(SOURCE, metadata={"tags": ["parameters"]})
    injected = nbformat.v4.new_code_cell("epochs = 2\n", metadata={"tags": [INJECTED_TAG]})
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), params, injected, nbformat.v4.new_code_cell("x = 1")]
    nb.metadata["papermill"] = {"parameters": {"epochs": 2}}
    return nb


def test_parameter_comments_belong_to_their_assignment():
    assert parameter_comments(SOURCE) == {"epochs": "the paper: 500", "mode": "a | b"}
    assert parameter_comments("x = (1,\n     2)  # two lines\n") == {"x": "two lines"}
    assert parameter_comments("x = = 1") == {}


def test_the_table_shows_the_value_used_its_meaning_and_the_papers_value_where_it_differs():
    table = parameters_table(SOURCE, {"epochs": 2}, {"lr": {"meaning": "learning rate", "paper": "0.001"}})
    rows = table.splitlines()
    assert rows[0] == "| parameter | value | meaning | paper |"
    assert rows[2] == "| `epochs` | `2` (set for this build; default `100`) | the paper: 500 | 500 |"
    assert rows[3] == "| `lr` | `0.001` | learning rate |  |"  # the paper's value equals the value used: not repeated
    assert rows[4] == "| `mode` | `'a\\|b'` | a \\| b |  |"  # pipes escaped, or they would split the row


def test_reader_view_collapses_the_parameters_and_removes_the_injected_cell():
    nb = _notebook()
    view = reader_view(nb)
    assert [c.metadata.get("tags", []) for c in view.cells] == [
        [],
        [TABLE_TAG],
        ["parameters", "hide-cell"],
        [INJECTED_TAG, "remove-cell"],
        [],
    ]
    assert "`2` (set for this build" in view.cells[1].source
    table = view.cells[1].source.split("\n\n", 1)[1]  # in the box whose long values wrap (book/_static/iclmem.css)
    assert table.startswith(":::{container} iclmem-parameters\n| parameter |") and table.endswith("|\n:::")
    assert nb.cells[1].metadata["tags"] == ["parameters"] and len(nb.cells) == 4  # the executed notebook is untouched
    assert reader_view(view).cells == view.cells  # a second pass adds nothing
    reader = reader_view(nb, show_code=False)  # a reader page: the cells removed, no table
    assert [c.metadata.get("tags", []) for c in reader.cells] == [
        [],
        ["parameters", "remove-cell"],
        [INJECTED_TAG, "remove-cell"],
        [],
    ]
    bare = nbformat.v4.new_notebook()
    bare.cells = [nbformat.v4.new_code_cell("x = 1")]
    assert reader_view(bare).cells == bare.cells
