"""Appendix A3 (no paper section): bad inputs given to a notebook's parameters and to the ``iclmem`` command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from iclmem.book.execute import ParameterError, UsageError, run_notebook
from iclmem.chapters.ch_a3_bad_inputs.kit import (
    TINY_NOTEBOOK,
    BadInput,
    CommandFailed,
    NotebookStopped,
    project_notebook,
    tiny_checkpoint,
    tiny_cli,
    tiny_free_port,
    tiny_grid_file,
    tiny_notebook_file,
    tiny_papermill,
    tiny_project,
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


def params_file(folder: Path, text: str) -> Path:
    path = folder / "params.yaml"
    path.write_text(text)
    return path


grid = tiny_grid_file
#: Mistakes on the command line, answered by ``iclmem.cli.main`` (a :class:`CommandFailed`), in catalogue order.
CLI_CASES: list[BadInput] = [
    BadInput(
        "cli-unknown-command",
        "Typed `iclmem rnu` for `iclmem run`.",
        "iclmem",
        lambda d: tiny_cli("rnu", "x.py"),
        CommandFailed,
        r"invalid choice: 'rnu'",
        r"choose from .*run",
    ),
    BadInput(
        "cli-run-unknown-parameter",
        "Typed `-p querysize 64` on `iclmem run`.",
        "iclmem run",
        lambda d: tiny_cli("run", tiny_notebook_file(d), "-p", "querysize", "64", "-o", d / "o.ipynb"),
        CommandFailed,
        r"error: unknown parameter 'querysize'",
        r"valid names: n, rate, name, sizes",
    ),
    BadInput(
        "cli-run-secret",
        "Gave a token with `-p hf_token ...` on `iclmem run`.",
        "iclmem run",
        lambda d: tiny_cli("run", tiny_notebook_file(d), "-p", "hf_token", "not-a-real-token"),
        CommandFailed,
        r"refusing to pass 'hf_token'",
        r"environment variable",
    ),
    BadInput(
        "cli-parameters-file-missing",
        "Gave `-f` a parameters file that does not exist.",
        "iclmem run",
        lambda d: tiny_cli("run", tiny_notebook_file(d), "-f", d / "nope.yaml"),
        CommandFailed,
        r"no such parameters file: .*nope\.yaml",
        r"check the path, or give the values with -p",
    ),
    BadInput(
        "cli-parameters-file-bad-yaml",
        "Gave `-f` a parameters file with broken YAML.",
        "iclmem run",
        lambda d: tiny_cli("run", tiny_notebook_file(d), "-f", params_file(d, "n: [1, 2\n")),
        CommandFailed,
        r"is not valid YAML",
        r"fix the syntax",
    ),
    BadInput(
        "cli-parameters-file-not-mapping",
        "Gave `-f` a YAML list instead of a mapping.",
        "iclmem run",
        lambda d: tiny_cli("run", tiny_notebook_file(d), "-f", params_file(d, "- 1\n- 2\n")),
        CommandFailed,
        r"must hold a mapping .*got list",
        r"one `name: value` per line",
    ),
    BadInput(
        "cli-book-no-toc",
        "Ran `iclmem book --root` on a folder without `_toc.yml`.",
        "iclmem book",
        lambda d: tiny_cli("book", "--root", d, "--no-html"),
        CommandFailed,
        r"no _toc\.yml in",
        r"pass --root the folder that holds _config\.yml and _toc\.yml",
    ),
    BadInput(
        "cli-book-toc-missing-page",
        "Listed a page in `_toc.yml` that does not exist.",
        "iclmem book",
        lambda d: tiny_cli("book", "--root", tiny_project(d, "chapters:\n  - file: notebooks/absent\n"), "--no-html"),
        CommandFailed,
        r"_toc\.yml lists 'notebooks/absent' but none of",
        r"create the page or remove its entry",
    ),
    BadInput(
        "cli-book-unknown-notebook",
        "Gave `-p tiyn n 3` on `iclmem book` (a typo of the notebook `tiny`).",
        "iclmem book",
        lambda d: tiny_cli("book", "--root", tiny_project(d), "-p", "tiyn", "n", "3", "--no-html"),
        CommandFailed,
        r"'tiyn' is not a notebook in _toc\.yml",
        r"notebooks: notebooks/tiny",
    ),
    BadInput(
        "cli-book-section-not-mapping",
        "Gave `iclmem book -f` a notebook section that is a number, not a mapping.",
        "iclmem book",
        lambda d: tiny_cli("book", "--root", tiny_project(d), "-f", params_file(d, "tiny: 3\n"), "--no-html"),
        CommandFailed,
        r"'tiny' must map to a mapping of parameters",
        r"e\.g\. tiny: \{query_sizes: \[64\]\}",
    ),
    BadInput(
        "cli-pretrain-config-missing",
        "Ran `iclmem pretrain --config` on a file that does not exist.",
        "iclmem pretrain",
        lambda d: tiny_cli("pretrain", "--config", d / "nope.yaml"),
        CommandFailed,
        r"no such config: .*nope\.yaml",
        r"configs/pretrain_reference\.yaml",
    ),
    BadInput(
        "cli-pretrain-config-typo",
        "Misspelled a key (`stesp`) in a pretraining config.",
        "iclmem pretrain",
        lambda d: tiny_cli("pretrain", "--config", params_file(d, "stesp: 10\n")),
        CommandFailed,
        r"unknown keys \['stesp'\]",
        r"valid keys: \[.*'steps'.*see configs/pretrain_reference\.yaml",
    ),
    BadInput(
        "cli-sweep-workers-negative",
        "Ran `iclmem sweep --workers -1`.",
        "iclmem sweep",
        lambda d: tiny_cli("sweep", grid(d), "--workers", "-1"),
        CommandFailed,
        r"--workers must be >= 0.*got -1",
        r"0 runs the tasks in this process",
    ),
    BadInput(
        "cli-sweep-reference-missing",
        "Gave `iclmem sweep --reference` a checkpoint that does not exist.",
        "iclmem sweep",
        lambda d: tiny_cli("sweep", grid(d), "--reference", d / "nope.pt"),
        CommandFailed,
        r"no checkpoint at .*nope\.pt",
        r"written by `iclmem pretrain`, or leave out --reference",
    ),
    BadInput(
        "cli-sweep-grid-typo",
        "Misspelled `datasets` as `datsets` in a grid file.",
        "iclmem sweep",
        lambda d: tiny_cli(
            "sweep",
            grid(d, text="name: tiny\ndatsets: [wine_pl]\nlearning_rates: [0.001]\nquery_sizes: [50]\n"),
            "--list",
        ),
        CommandFailed,
        r"unknown key\(s\) 'datsets'",
        r"valid keys: .*datasets",
    ),
    BadInput(
        "cli-sweep-unreachable-scheduler",
        "Ran `iclmem sweep --scheduler` at an address where no scheduler listens.",
        "iclmem sweep",
        lambda d: tiny_cli(
            "sweep",
            grid(d),
            "--scheduler",
            f"tcp://127.0.0.1:{tiny_free_port()}",
            "--timeout",
            "1",
            "--reference",
            tiny_checkpoint(d),
            "--results",
            d / "results",
            "--no-progress",
        ),
        CommandFailed,
        r"could not reach the Dask scheduler at 'tcp://127\.0\.0\.1:\d+' within 1 s",
        r"check the address .* and that a scheduler runs there",
    ),
]


def cli_cases() -> list[BadInput]:
    """Mistakes on the command line, answered by ``iclmem.cli.main`` (a :class:`CommandFailed`), in catalogue order."""
    return list(CLI_CASES)


__all__ = ["chapter_cases", "cli_cases", "notebook_cases"]
