"""Appendix A3 (no paper section): bad inputs given to a real chapter (papermill on notebooks 01 and 02)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
    CommandFailed,
    NotebookStopped,
    project_notebook,
    tiny_cli,
    tiny_papermill,
)


def table(folder: Path, missing: int = 0) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120)})
    frame["y"] = np.where(frame.a > 0, "yes", "no").astype(object)
    frame.loc[: missing - 1, "y"] = None
    path = folder / "my_table.csv"
    frame.to_csv(path, index=False)
    return path


def chapter(folder: Path, stem: str, *params: str, missing: int = 0) -> None:
    args = ["-p", "data_path", table(folder, missing), *params, "-o", folder / "out.ipynb", "--no-progress"]
    tiny_cli("run", project_notebook(stem), *args)


split, finetuning = "01_split_validation", "02_controlled_finetuning"
#: Mistakes made through a real chapter: the fix names a parameter that chapter declares (``fix_names``).
CHAPTER_CASES: list[BadInput] = [
    BadInput(
        "chapter-target-missing-values",
        "Ran chapter 1 on a table whose target is missing in 11 rows.",
        f"notebooks/{split}.py",
        lambda d: chapter(d, split, "-p", "target", "y", "-p", "query_sizes", "[20]", missing=11),
        CommandFailed,
        r"target 'y' is missing in 11 of 120 rows",
        r"set missing_target: drop",
        ("missing_target",),
    ),
    BadInput(
        "chapter-target-not-a-column",
        "Ran chapter 1 with a target that is not a column of the table.",
        f"notebooks/{split}.py",
        lambda d: chapter(d, split, "-p", "target", "label", "-p", "query_sizes", "[20]"),
        CommandFailed,
        r"no target column 'label'; the columns are: a, b, y",
        r"Set target to one of them",
        ("target",),
    ),
    BadInput(
        "chapter-query-size-too-large",
        "Ran chapter 2 with a query size the table cannot hold.",
        f"notebooks/{finetuning}.py",
        lambda d: chapter(d, finetuning, "-p", "target", "y", "-p", "query_sizes", "[100]", "-p", "epochs", "1"),
        CommandFailed,
        r"too few for query size\(s\) \[100\]",
        r"Set query_sizes to sizes that fit .* or drop_unfit_sizes: true",
        ("query_sizes", "drop_unfit_sizes"),
    ),
    BadInput(
        "papermill-list-as-string",
        'Ran chapter 1 with plain papermill and `-p query_sizes "[50]"` (papermill passes a string).',
        f"notebooks/{split}.py",
        lambda d: tiny_papermill(d, project_notebook(split), "-p", "query_sizes", "[50]"),
        NotebookStopped,
        r"parameter 'query_sizes' expects list of int like its default \[50, 512\], got str '\[50\]'",
        r"-y 'NAME: \[1, 2\]'",
        ("query_sizes",),
    ),
    BadInput(
        "papermill-unknown-name",
        "Ran chapter 1 with plain papermill and a misspelt name, `-p querysize 64`.",
        f"notebooks/{split}.py",
        lambda d: tiny_papermill(d, project_notebook(split), "-p", "querysize", "64"),
        NotebookStopped,
        r"unknown parameter 'querysize' \(did you mean 'query_sizes'\?\)",
        r"valid names: datasets, query_sizes, .*give values as -p NAME VALUE",
        ("query_sizes",),
    ),
]


def chapter_cases() -> list[BadInput]:
    """Mistakes made through a real chapter: the fix names a parameter that chapter declares (``fix_names``)."""
    return list(CHAPTER_CASES)


__all__ = ["CHAPTER_CASES", "chapter_cases"]
