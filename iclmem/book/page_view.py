"""How an executed notebook reads in the book: its parameters as a table, their cells out of the way.

Papermill needs a notebook's ``parameters`` cell as code, and adds an ``injected-parameters`` cell
after it with the values a run overrides. A reader needs neither as code: :func:`reader_view`
returns a copy of an executed notebook in which a markdown table (name, value, meaning) stands
before the parameters cell, the parameters cell is collapsed (``hide-cell``; on reader pages such
as the scorecard, which show no code and open on their result, it is removed and no table is
added) and the injected cell is removed. The
executed notebook itself is never changed: :mod:`iclmem.book.build` applies this to the copy it stages.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import nbformat
import yaml

from iclmem.book.execute import PARAMETERS_TAG, parameter_comments, parse_parameters_source

INJECTED_TAG = "injected-parameters"
#: The tag of the markdown cell this module adds (so a second pass does not add it twice).
TABLE_TAG = "iclmem-parameters-table"
#: The class of the box the table sits in: book/_static/iclmem.css wraps its long values so it fits a 1280 px page.
PARAMETERS_BOX = "iclmem-parameters"


def _text(value: Any, limit: int = 80) -> str:
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text.replace("|", "\\|").replace("\n", " ")


#: "the paper: 500" in a parameter's comment states the paper's value for that page.
_PAPER_SAYS = re.compile(r"the paper:\s*([^;)]+)")


def load_glossary(path: str | Path | None) -> dict[str, dict[str, str]]:
    """``name -> {meaning, paper}`` from a parameters file (the book's ``book/parameters.yaml``: its ``parameters``
    mapping); {} when absent."""
    if path is None or not Path(path).is_file():
        return {}
    data = (yaml.safe_load(Path(path).read_text()) or {}).get("parameters") or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: `parameters` maps each name to {{meaning: ..., paper: ..., ...}}")
    return {str(k): {kk: str(v[kk]) for kk in ("meaning", "paper") if kk in (v or {})} for k, v in data.items()}


def parameters_table(
    source: str, overrides: dict[str, Any] | None = None, glossary: dict[str, dict[str, str]] | None = None
) -> str:
    """A markdown table of a parameters cell: name, the value this run used (marked when overridden), meaning, the
    paper's value.

    The meaning is the parameter's own comment, else the glossary's; the paper's value ("the
    paper: X" in the comment, else the glossary's) is shown only where it differs from the value used.
    """
    declared = parse_parameters_source(source)
    comments = parameter_comments(source)
    overrides, glossary = overrides or {}, glossary or {}
    lines = ["| parameter | value | meaning | paper |", "|---|---|---|---|"]
    for name, parameter in declared.items():
        used = overrides.get(name, parameter.default)
        if name in overrides and overrides[name] != parameter.default:
            value = f"`{_text(used)}` (set for this build; default `{_text(parameter.default)}`)"
        else:
            value = f"`{_text(used)}`"
        entry = glossary.get(name, {})
        meaning = (comments.get(name) or entry.get("meaning", "")).replace("|", "\\|")
        stated = _PAPER_SAYS.search(comments.get(name, ""))
        paper = stated.group(1).strip() if stated else entry.get("paper", "")
        paper = (
            ""
            if not paper or paper.replace(" ", "") == str(used).replace(" ", "").replace("'", "")
            else paper.replace("|", "\\|")
        )
        lines.append(f"| `{name}` | {value} | {meaning} | {paper} |")
    return "\n".join(lines)


def _tags(cell: nbformat.NotebookNode) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _tag(cell: nbformat.NotebookNode, tag: str) -> None:
    cell.setdefault("metadata", {}).setdefault("tags", []).append(tag)


def reader_view(
    nb: nbformat.NotebookNode, *, show_code: bool = True, glossary: dict[str, dict[str, str]] | None = None
) -> nbformat.NotebookNode:
    """A copy of ``nb`` with its parameters shown as a table (see the module docstring).

    ``show_code=False`` (reader pages): the parameters cell is removed, and no table is added.
    A notebook without a parameters cell is returned unchanged (as a copy).
    """
    out = copy.deepcopy(nb)
    index = next((i for i, c in enumerate(out.cells) if c.cell_type == "code" and PARAMETERS_TAG in _tags(c)), None)
    if index is None or any(TABLE_TAG in _tags(c) for c in out.cells):
        return out
    cell = out.cells[index]
    if not show_code:  # a reader page (the scorecard): its parameters say where to read from, nothing a reader needs
        _tag(cell, "remove-cell")
        for other in out.cells:
            if INJECTED_TAG in _tags(other):
                _tag(other, "remove-cell")
        return out
    overrides = dict(out.metadata.get("papermill", {}).get("parameters", {}) or {})
    table = nbformat.v4.new_markdown_cell(
        "**Parameters of this page** (change them with `iclmem run` or `iclmem book -p`; "
        "the code cell below the table holds the same values):\n\n"
        f":::{{container}} {PARAMETERS_BOX}\n{parameters_table(cell.source, overrides, glossary)}\n:::"
    )
    table.metadata["tags"] = [TABLE_TAG]
    table["id"] = (
        TABLE_TAG  # a fixed id: the staged copy is the same bytes build after build (nbformat draws ids at random)
    )
    _tag(cell, "hide-cell" if show_code else "remove-cell")
    for other in out.cells:
        if INJECTED_TAG in _tags(other):
            _tag(other, "remove-cell")
    out.cells.insert(index, table)
    return out


__all__ = ["INJECTED_TAG", "PARAMETERS_BOX", "TABLE_TAG", "load_glossary", "parameters_table", "reader_view"]
