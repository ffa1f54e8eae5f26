"""Appendix A3 (no paper section): bad inputs given to a notebook's parameters (iclmem.book.execute.run_notebook)."""

from __future__ import annotations

from pathlib import Path

from iclmem.book.execute import ParameterError, UsageError, run_notebook
from iclmem.chapters.ch_a3_bad_inputs.kit import (
    TINY_NOTEBOOK,
    BadInput,
    tiny_notebook_file,
)


def run(folder: Path, params: dict | None = None, source: str = TINY_NOTEBOOK, output: str = "out.ipynb") -> object:
    return run_notebook(tiny_notebook_file(folder, source), params or {}, folder / output, progress=False)


entry = "iclmem.book.execute.run_notebook"
#: Mistakes in a notebook's parameters, answered by :func:`iclmem.book.execute.run_notebook`, in catalogue order.
NOTEBOOK_CASES: list[BadInput] = [
    BadInput(
        "parameter-unknown",
        "Passed a parameter the notebook does not have (`querysize` for `n`).",
        entry,
        lambda d: run(d, {"querysize": 64}),
        ParameterError,
        r"unknown parameter 'querysize'",
        r"valid names: n, rate, name, sizes",
    ),
    BadInput(
        "parameter-wrong-type",
        "Passed a string where the notebook's default is an int.",
        entry,
        lambda d: run(d, {"n": "three"}),
        ParameterError,
        r"parameter 'n' expects int",
        r"got str 'three'",
    ),
    BadInput(
        "parameter-wrong-element-type",
        "Passed a list holding a string where the default is a list of ints.",
        entry,
        lambda d: run(d, {"sizes": [1, "two"]}),
        ParameterError,
        r"got list \[1, 'two'\]",
        r"expects list of int",
    ),
    BadInput(
        "parameter-secret",
        "Passed an API key as a notebook parameter.",
        entry,
        lambda d: run(d, {"api_key": "not-a-real-key"}),
        ParameterError,
        r"refusing to pass 'api_key'.*credentials",
        r"environment variable",
    ),
    BadInput(
        "parameters-cell-not-literal",
        "Wrote a function call as a default in the parameters cell.",
        entry,
        lambda d: run(d, source='# %% tags=["parameters"]\nn = compute()\n'),
        UsageError,
        r"'n' has a default that is not a literal",
        r"write a number, string, list or dict.*later cell",
    ),
    BadInput(
        "parameters-cell-syntax",
        "Left a syntax error in the parameters cell.",
        entry,
        lambda d: run(d, source='# %% tags=["parameters"]\nn = (3\n'),
        UsageError,
        r"parameters cell is not valid Python",
        r"fix the syntax of the cell tagged parameters",
    ),
    BadInput(
        "notebook-missing",
        "Ran a notebook path that does not exist.",
        entry,
        lambda d: run_notebook(d / "nope.py"),
        UsageError,
        r"no such notebook: .*nope\.py",
        r"check the path",
    ),
    BadInput(
        "output-not-ipynb",
        "Asked for the executed notebook as an .html file.",
        entry,
        lambda d: run(d, output="out.html"),
        UsageError,
        r"got .*out\.html",
        r"must be an \.ipynb file",
    ),
]


def notebook_cases() -> list[BadInput]:
    """Mistakes in a notebook's parameters, answered by :func:`iclmem.book.execute.run_notebook`, in catalogue order."""
    return list(NOTEBOOK_CASES)


__all__ = ["NOTEBOOK_CASES", "notebook_cases"]
