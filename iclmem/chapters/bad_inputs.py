"""Appendix A3 of this book (no paper section): every bad input the package answers, and the message the user gets
(notebook A3).

:data:`CASES` is the catalogue: one :class:`BadInput` per mistake (an unknown or mistyped
parameter, a missing file, a target column that does not exist, a table too small for Q, more
classes than the model takes, a corrupt checkpoint, a grid file with a typo, an unreachable
scheduler, a missing API key, a prompt over the context window, ...). Each case does the mistake
through the package's real entry point (the Python API or ``iclmem.cli.main``) on tiny inputs it
writes into a temporary folder, and names the exception it must raise and two regular
expressions: one for the problem the message names, one for the fix it proposes.

The same table is the test suite's (``tests/test_bad_inputs.py`` runs every case and checks both
expressions) and the appendix page's (:func:`catalogue` runs every case and shows the message),
so the page shows exactly what the tests check. A command-line case raises :class:`CommandFailed`
with the exit status and what ``iclmem`` printed on stderr.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd


class CommandFailed(Exception):
    """``iclmem ...`` exited with a non-zero status; the message is what it printed on stderr."""

    def __init__(self, status: int, stderr: str) -> None:
        super().__init__(stderr)
        self.status = status


class CaseError(AssertionError):
    """A catalogue case did not raise the error it documents."""


@dataclass(frozen=True)
class BadInput:
    """One bad input: what the user did, through which entry point, and what the answer must say."""

    case: str  # short id, unique
    did: str  # what the user did, one sentence
    entry: str  # the entry point that answers
    run: Callable[[Path], object]  # does it, writing its inputs into the given (empty) folder
    error: type[BaseException]  # the exception it must raise
    problem: str  # regex the message must match: the problem it names
    fix: str  # regex the message must match: the fix it proposes


# --- tiny inputs --------------------------------------------------------------------------------------------

TINY_NOTEBOOK = """\
# %% tags=["parameters"]
n = 3
rate = 0.5
name = "abc"
sizes = [1, 2]

# %%
print(n, rate, name, sizes)
"""


def _notebook(folder: Path, source: str = TINY_NOTEBOOK, name: str = "tiny.py") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path


def _project(folder: Path, toc_extra: str = "") -> Path:
    """A book project: _config.yml, _toc.yml (one notebook page) and the notebook."""
    (folder / "_config.yml").write_text("title: tiny\n")
    (folder / "_toc.yml").write_text("format: jb-book\nroot: notebooks/tiny\n" + toc_extra)
    _notebook(folder / "notebooks")
    return folder


def _frame(n: int = 80, classes: int = 2, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y", "z"], size=n)})
    frame["y"] = np.arange(n) % classes
    return frame


def _csv(folder: Path, frame: pd.DataFrame | None = None, name: str = "table.csv") -> Path:
    path = folder / name
    (_frame() if frame is None else frame).to_csv(path, index=False)
    return path


def _table(folder: Path, n: int = 80, classes: int = 2, name: str = "table.csv"):
    from iclmem.data import deduplicate, load_dataset

    return deduplicate(load_dataset(_csv(folder, _frame(n, classes), name), target="y", task="classification"))


def _manifest(folder: Path, table, query_size: int = 10, label_condition: str = "none"):
    from iclmem.data import split_manifest

    return split_manifest(table, query_size, 0, label_condition, results_dir=folder / "results")


def _reference(sha: str = "tiny-bad-inputs-model"):
    """A tiny random-weight LTM (16-dim, 2 layers, contexts of up to 64 rows)."""
    import torch

    from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer

    torch.manual_seed(0)
    cfg = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)
    return ReferenceLTM(TabularICLTransformer(cfg).eval(), checkpoint_sha256=sha)


def _config(**changes):
    from iclmem.finetune import FinetuneConfig

    return FinetuneConfig(**{"learning_rate": 1e-3, "epochs": 1, "probe_epochs": (0, 1), "context_size": 20, **changes})


def _run(folder: Path):
    """A finished 1-epoch fine-tuning run of the tiny LTM on a tiny table: (table, run, reference)."""
    from iclmem.finetune import finetune

    table, reference = _table(folder), _reference()
    return (
        table,
        finetune(_manifest(folder, table), table, _config(), reference, folder / "results", progress=False),
        reference,
    )


def _checkpoint(folder: Path) -> Path:
    import torch

    path = folder / "tiny.pt"
    model = _reference()
    torch.save({"config": model.cfg.to_dict(), "model": model.state_dict()}, path)
    return path


def _grid(**changes) -> dict:
    return {
        "name": "tiny",
        "datasets": ["wine_pl"],
        "learning_rates": [1e-3],
        "query_sizes": [50],
        "epochs": 2,
        **changes,
    }


def _grid_file(folder: Path, text: str | None = None, **changes) -> Path:
    import yaml

    path = folder / "grid.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(_grid(**changes)))
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed on return: nothing listens there


def _glued(folder: Path, text: str) -> Path:
    """An executed notebook whose one output glues ``text`` as the record of claim C1 (as myst-nb's glue does)."""
    import nbformat

    prefix = "application/papermill.record/"
    output = nbformat.v4.new_output(
        "display_data",
        data={f"{prefix}text/plain": text},
        metadata={"scrapbook": {"name": "claim-C1", "mime_prefix": prefix}},
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("glue_claim(...)", outputs=[output])])
    path = folder / "chapter.ipynb"
    nbformat.write(nb, path)
    return path


def _task(context_rows: int = 20, features: int = 3, classes: int = 2, query_labels: Sequence | None = None):
    from iclmem.ltm import ICLTask

    rng = np.random.default_rng(0)
    y = np.arange(context_rows) % classes
    q = np.asarray(query_labels if query_labels is not None else [0, 1])
    return ICLTask(rng.normal(size=(context_rows, features)), y, rng.normal(size=(len(q), features)), q)


@contextlib.contextmanager
def _environ(**values: str | None) -> Iterator[None]:
    """Set (or, with None, remove) environment variables for the block; restore them afterwards."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cli(*args: object) -> None:
    """``iclmem ARGS``; raises :class:`CommandFailed` (exit status, stderr) unless it exits with 0."""
    from iclmem.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main([str(a) for a in args])
        except SystemExit as exc:  # argparse's own errors
            status = int(exc.code or 0)
    if status:
        raise CommandFailed(status, err.getvalue().strip())


# --- the cases, by entry point --------------------------------------------------------------------------------


def _notebook_cases() -> list[BadInput]:
    from iclmem.notebook import ParameterError, UsageError, run_notebook

    def run(folder: Path, params: dict | None = None, source: str = TINY_NOTEBOOK, output: str = "out.ipynb") -> object:
        return run_notebook(_notebook(folder, source), params or {}, folder / output, progress=False)

    entry = "iclmem.notebook.run_notebook"
    return [
        BadInput(
            "parameter-unknown",
            "Passed a parameter the notebook does not have (`querysize` for `n`).",
            entry,
            lambda d: run(d, {"querysize": 64}),
            ParameterError,
            r"unknown parameter 'querysize'",
            r"valid:\s+n = 3",
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


def _cli_cases() -> list[BadInput]:
    def params_file(folder: Path, text: str) -> Path:
        path = folder / "params.yaml"
        path.write_text(text)
        return path

    grid = _grid_file
    return [
        BadInput(
            "cli-unknown-command",
            "Typed `iclmem rnu` for `iclmem run`.",
            "iclmem",
            lambda d: _cli("rnu", "x.py"),
            CommandFailed,
            r"invalid choice: 'rnu'",
            r"choose from .*run",
        ),
        BadInput(
            "cli-run-unknown-parameter",
            "Typed `-p querysize 64` on `iclmem run`.",
            "iclmem run",
            lambda d: _cli("run", _notebook(d), "-p", "querysize", "64", "-o", d / "o.ipynb"),
            CommandFailed,
            r"error: unknown parameter 'querysize'",
            r"valid:\s+n = 3",
        ),
        BadInput(
            "cli-run-secret",
            "Gave a token with `-p hf_token ...` on `iclmem run`.",
            "iclmem run",
            lambda d: _cli("run", _notebook(d), "-p", "hf_token", "not-a-real-token"),
            CommandFailed,
            r"refusing to pass 'hf_token'",
            r"environment variable",
        ),
        BadInput(
            "cli-parameters-file-missing",
            "Gave `-f` a parameters file that does not exist.",
            "iclmem run",
            lambda d: _cli("run", _notebook(d), "-f", d / "nope.yaml"),
            CommandFailed,
            r"no such parameters file: .*nope\.yaml",
            r"check the path, or give the values with -p",
        ),
        BadInput(
            "cli-parameters-file-bad-yaml",
            "Gave `-f` a parameters file with broken YAML.",
            "iclmem run",
            lambda d: _cli("run", _notebook(d), "-f", params_file(d, "n: [1, 2\n")),
            CommandFailed,
            r"is not valid YAML",
            r"fix the syntax",
        ),
        BadInput(
            "cli-parameters-file-not-mapping",
            "Gave `-f` a YAML list instead of a mapping.",
            "iclmem run",
            lambda d: _cli("run", _notebook(d), "-f", params_file(d, "- 1\n- 2\n")),
            CommandFailed,
            r"must hold a mapping .*got list",
            r"one `name: value` per line",
        ),
        BadInput(
            "cli-book-no-toc",
            "Ran `iclmem book --root` on a folder without `_toc.yml`.",
            "iclmem book",
            lambda d: _cli("book", "--root", d, "--no-html"),
            CommandFailed,
            r"no _toc\.yml in",
            r"pass --root the folder that holds _config\.yml and _toc\.yml",
        ),
        BadInput(
            "cli-book-toc-missing-page",
            "Listed a page in `_toc.yml` that does not exist.",
            "iclmem book",
            lambda d: _cli("book", "--root", _project(d, "chapters:\n  - file: notebooks/absent\n"), "--no-html"),
            CommandFailed,
            r"_toc\.yml lists 'notebooks/absent' but none of",
            r"create the page or remove its entry",
        ),
        BadInput(
            "cli-book-unknown-notebook",
            "Gave `-p tiyn n 3` on `iclmem book` (a typo of the notebook `tiny`).",
            "iclmem book",
            lambda d: _cli("book", "--root", _project(d), "-p", "tiyn", "n", "3", "--no-html"),
            CommandFailed,
            r"'tiyn' is not a notebook in _toc\.yml",
            r"notebooks: notebooks/tiny",
        ),
        BadInput(
            "cli-book-section-not-mapping",
            "Gave `iclmem book -f` a notebook section that is a number, not a mapping.",
            "iclmem book",
            lambda d: _cli("book", "--root", _project(d), "-f", params_file(d, "tiny: 3\n"), "--no-html"),
            CommandFailed,
            r"'tiny' must map to a mapping of parameters",
            r"e\.g\. tiny: \{query_sizes: \[64\]\}",
        ),
        BadInput(
            "cli-pretrain-config-missing",
            "Ran `iclmem pretrain --config` on a file that does not exist.",
            "iclmem pretrain",
            lambda d: _cli("pretrain", "--config", d / "nope.yaml"),
            CommandFailed,
            r"no such config: .*nope\.yaml",
            r"configs/pretrain_reference\.yaml",
        ),
        BadInput(
            "cli-pretrain-config-typo",
            "Misspelled a key (`stesp`) in a pretraining config.",
            "iclmem pretrain",
            lambda d: _cli("pretrain", "--config", params_file(d, "stesp: 10\n")),
            CommandFailed,
            r"unknown keys \['stesp'\]",
            r"valid keys: \[.*'steps'.*see configs/pretrain_reference\.yaml",
        ),
        BadInput(
            "cli-sweep-workers-negative",
            "Ran `iclmem sweep --workers -1`.",
            "iclmem sweep",
            lambda d: _cli("sweep", grid(d), "--workers", "-1"),
            CommandFailed,
            r"--workers must be >= 0.*got -1",
            r"0 runs the tasks in this process",
        ),
        BadInput(
            "cli-sweep-reference-missing",
            "Gave `iclmem sweep --reference` a checkpoint that does not exist.",
            "iclmem sweep",
            lambda d: _cli("sweep", grid(d), "--reference", d / "nope.pt"),
            CommandFailed,
            r"no checkpoint at .*nope\.pt",
            r"written by `iclmem pretrain`, or leave out --reference",
        ),
        BadInput(
            "cli-sweep-grid-typo",
            "Misspelled `datasets` as `datsets` in a grid file.",
            "iclmem sweep",
            lambda d: _cli(
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
            lambda d: _cli(
                "sweep",
                grid(d),
                "--scheduler",
                f"tcp://127.0.0.1:{_free_port()}",
                "--timeout",
                "1",
                "--reference",
                _checkpoint(d),
                "--results",
                d / "results",
                "--no-progress",
            ),
            CommandFailed,
            r"could not reach the Dask scheduler at 'tcp://127\.0\.0\.1:\d+' within 1 s",
            r"check the address .* and that a scheduler runs there",
        ),
    ]


def _data_cases() -> list[BadInput]:
    from iclmem.data import (
        DataError,
        DataFileNotFoundError,
        ManifestError,
        MissingColumnError,
        PoolSizeError,
        SplitManifest,
        TargetError,
        UnknownDatasetError,
        UnreadableFileError,
        load_dataset,
        prepared_table,
        split_manifest,
    )
    from iclmem.finetune import finetune

    def load(folder: Path, frame: pd.DataFrame, **kw) -> object:
        return load_dataset(_csv(folder, frame), **kw)

    def manifest_file(folder: Path) -> Path:
        path = folder / "manifest.json"
        path.write_text('{"format_version": 1, "pools": ')
        return path

    def other_table(folder: Path) -> object:
        table = _table(folder)
        return finetune(
            _manifest(folder, table),
            _table(folder, n=90, name="other.csv"),
            _config(),
            _reference(),
            folder / "results",
            progress=False,
        )

    load_e, split_e = "iclmem.data.load_dataset", "iclmem.data.split_manifest"
    single = _frame().assign(y="red")
    nan = _frame().assign(y=lambda f: f.y.where(f.index % 10 > 0))
    text = _frame().assign(y=lambda f: np.where(f.index % 2, "high", "low"))
    return [
        BadInput(
            "dataset-unknown",
            "Asked for the dataset `winepl` (a typo of wine_pl).",
            load_e,
            lambda d: load_dataset("winepl"),
            UnknownDatasetError,
            r"unknown dataset 'winepl'",
            r"valid names are .*wine_pl.*or pass the path of a \.csv/\.parquet",
        ),
        BadInput(
            "data-file-missing",
            "Gave the path of a CSV file that does not exist.",
            load_e,
            lambda d: load_dataset(d / "nope.csv", target="y"),
            DataFileNotFoundError,
            r"no data file at .*nope\.csv",
            r"check the path",
        ),
        BadInput(
            "data-file-unreadable",
            "Gave a .parquet file that is not parquet inside.",
            load_e,
            lambda d: (d / "t.parquet").write_bytes(b"not parquet") and load_dataset(d / "t.parquet", target="y"),
            UnreadableFileError,
            r"could not read .*t\.parquet' as parquet",
            r"check that the file is a valid parquet file",
        ),
        BadInput(
            "data-file-wrong-format",
            "Gave a .txt file as the table.",
            load_e,
            lambda d: (d / "t.txt").write_text("a,b\n") and load_dataset(d / "t.txt", target="y"),
            DataError,
            r"is not a \.csv or \.parquet file",
            r"convert the table to one of these",
        ),
        BadInput(
            "target-not-given",
            "Loaded a CSV file without naming its target column.",
            load_e,
            lambda d: load(d, _frame()),
            MissingColumnError,
            r"name the target column",
            r"target=\.\.\.; the columns are: a, b, c, y",
        ),
        BadInput(
            "target-missing",
            "Named a target column (`label`) that the table does not have.",
            load_e,
            lambda d: load(d, _frame(), target="label"),
            MissingColumnError,
            r"no target column 'label'",
            r"the columns are: a, b, c, y\. Pass one of them as target=",
        ),
        BadInput(
            "no-feature-columns",
            "Loaded a CSV whose only column is the target.",
            load_e,
            lambda d: load(d, _frame()[["y"]], target="y"),
            DataError,
            r"no feature columns besides the target 'y'",
            r"check target= .* or add the feature columns",
        ),
        BadInput(
            "target-single-class",
            "Chose a target with one class in every row.",
            load_e,
            lambda d: load(d, single, target="y", task="classification"),
            TargetError,
            r"has a single class \('red' in all 80 rows\)",
            r"choose another target column",
        ),
        BadInput(
            "target-nan",
            "Loaded a table whose target is missing in some rows.",
            load_e,
            lambda d: load(d, nan, target="y"),
            TargetError,
            r"missing in 8 of 80 rows",
            r"drop those rows from the file or pass dropna=True",
        ),
        BadInput(
            "target-text-for-regression",
            "Asked for regression on a text target.",
            load_e,
            lambda d: load(d, text, target="y", task="regression"),
            TargetError,
            r"has non-numeric values",
            r"convert the column or pass task='classification'",
        ),
        BadInput(
            "task-unknown",
            "Gave `task='classify'`.",
            load_e,
            lambda d: load(d, _frame(), target="y", task="classify"),
            DataError,
            r"not 'classify'",
            r"task must be 'classification' or 'regression'",
        ),
        BadInput(
            "carte-dir-missing",
            "Pointed carte_dir at a folder that does not exist.",
            load_e,
            lambda d: load_dataset("coffee_ratings", carte_dir=d / "carte"),
            DataFileNotFoundError,
            r"the CARTE folder .*carte' does not exist",
            r"check carte_dir / ICLMEM_CARTE_DIR",
        ),
        BadInput(
            "carte-table-missing",
            "Pointed carte_dir at a folder without the table's file.",
            load_e,
            lambda d: load_dataset("coffee_ratings", carte_dir=d),
            DataFileNotFoundError,
            r"no file for CARTE table 'coffee_ratings'",
            r"Put CARTE's raw table .* there",
        ),
        BadInput(
            "table-too-small-for-q",
            "Asked for Q=50 members and non-members from a 60-row table.",
            split_e,
            lambda d: split_manifest(prepared_table(_csv(d, _frame(60)), target="y"), 50, results_dir=d),
            PoolSizeError,
            r"need 100 \+ 1 = 101 rows, but the deduplicated table has 60",
            r"use query_size <= 29",
        ),
        BadInput(
            "classes-too-small-for-q",
            "Asked for Q=14 from 30 rows spread over 10 classes of 3.",
            split_e,
            lambda d: split_manifest(_table(d, 30, 10), 14, results_dir=d),
            PoolSizeError,
            r"the classes allow only 10 \(half of each class's rows\)",
            r"use a smaller query_size",
        ),
        BadInput(
            "query-size-zero",
            "Asked for Q=0.",
            split_e,
            lambda d: split_manifest(_table(d), 0, results_dir=d),
            DataError,
            r"not 0",
            r"query_size must be a positive integer",
        ),
        BadInput(
            "label-condition-unknown",
            "Gave `label_condition='random'`.",
            split_e,
            lambda d: split_manifest(_table(d), 10, label_condition="random", results_dir=d),
            DataError,
            r"unknown label_condition 'random'",
            r"use one of none, members, non-members, all",
        ),
        BadInput(
            "manifest-corrupt",
            "Loaded a split manifest file that was cut off.",
            "iclmem.data.SplitManifest.load",
            lambda d: SplitManifest.load(manifest_file(d)),
            ManifestError,
            r"could not read manifest",
            r"delete it and rebuild",
        ),
        BadInput(
            "manifest-other-table",
            "Fine-tuned on a table with the split manifest of another table.",
            "iclmem.finetune.finetune",
            other_table,
            ManifestError,
            r"is not the one manifest 'table' was drawn from",
            r"rebuild the manifest with split_manifest\(\.\.\., refresh=True\)",
        ),
    ]


def _model_cases() -> list[BadInput]:
    from iclmem.device import DeviceError
    from iclmem.finetune import FinetuneError, finetune
    from iclmem.grid import RunSpec, expand_grid, probe_grid, run_spec
    from iclmem.ltm import CheckpointError, LTMInputError, load_checkpoint
    from iclmem.probe import ProbeError, get_manipulation, probe_run, resolve_manipulations
    from iclmem.regimes import RegimeError, train_joint

    def tune(folder: Path, classes: int = 2, n: int = 80, **changes) -> object:
        table = _table(folder, n, classes)
        return finetune(
            _manifest(folder, table), table, _config(**changes), _reference(), folder / "results", progress=False
        )

    def joint(folder: Path, regime: str, tables: int = 1, label_condition: str = "none") -> object:
        table = _table(folder)
        return train_joint(
            [_manifest(folder, table, label_condition=label_condition)],
            [table] * tables,
            _config(),
            regime,
            _reference(),
            folder / "results",
            progress=False,
        )

    def probe_grid_case(folder: Path) -> object:
        table, run, reference = _run(folder)
        return probe_grid(
            [RunSpec(run.manifest.dataset, 1e-3, 10, epochs=1)], [run], reference, epochs=[5], progress=False
        )

    def probe_other_reference(folder: Path) -> object:
        table, run, _ = _run(folder)
        return probe_run(run, table, reference=_reference("another-model"), progress=False)

    def probe_no_manipulations(folder: Path) -> object:
        table, run, reference = _run(folder)
        return probe_run(run, table, reference=reference, manipulations=[], progress=False)

    def predict(task) -> object:
        return _reference().predict([task])

    def card(folder: Path) -> object:
        (folder / "tiny.json").write_text(json.dumps({"sha256": "0" * 64}))
        return load_checkpoint(_checkpoint(folder), folder / "tiny.json")

    ft, grid, probe, ltm = "iclmem.finetune.finetune", "iclmem.grid", "iclmem.probe", "iclmem.ltm"
    return [
        BadInput(
            "learning-rate-zero",
            "Fine-tuned with learning_rate=0.",
            ft,
            lambda d: tune(d, learning_rate=0.0),
            FinetuneError,
            r"learning_rate must be positive, got 0\.0",
            r"the paper uses \(0\.1, 0\.01, 0\.001, 0\.0001\)",
        ),
        BadInput(
            "epochs-negative",
            "Fine-tuned with epochs=-1.",
            ft,
            lambda d: tune(d, epochs=-1, probe_epochs=()),
            FinetuneError,
            r"epochs must be >= 0, got -1",
            r"use 0 \(M_ref only\) or the number of AdamW steps",
        ),
        BadInput(
            "context-over-model",
            "Asked for a 1000-row training context from a model that takes 64.",
            ft,
            lambda d: tune(d, context_size=1000),
            FinetuneError,
            r"context_size 1000 is outside 1\.\.64",
            r"use at most 64 rows",
        ),
        BadInput(
            "probe-epochs-beyond-epochs",
            "Fine-tuned for 5 epochs, keeping the paper's probing epochs up to 500.",
            ft,
            lambda d: tune(d, epochs=5, probe_epochs=(0, 1, 2, 5, 10, 50)),
            FinetuneError,
            r"probe epochs \[10, 50\] lie outside 0\.\.5",
            r"raise epochs or drop them \(e\.g\. probe_epochs_up_to\(5\)\)",
        ),
        BadInput(
            "more-classes-than-model",
            "Fine-tuned on a classification target with 12 classes.",
            ft,
            lambda d: tune(d, classes=12, n=120),
            FinetuneError,
            r"has 12 classes; the model takes at most max_classes=10",
            r"treat it as regression \(task='regression'\)",
        ),
        BadInput(
            "grid-axis-empty",
            "Expanded a grid with no learning rates.",
            f"{grid}.expand_grid",
            lambda d: expand_grid(["wine_pl"], [], [50], ["none"], 10),
            ValueError,
            r"grid axis 'learning_rates' is empty",
            r"give at least one value",
        ),
        BadInput(
            "grid-joined-name",
            "Named a dataset `a+b` in a grid with a multi-task regime.",
            f"{grid}.expand_grid",
            lambda d: expand_grid(["a+b", "c"], [1e-3], [50], ["none"], 10, regimes=["multi_task_fixed"]),
            ValueError,
            r"dataset names \['a\+b'\] contain '\+'",
            r"rename them",
        ),
        BadInput(
            "regime-unknown",
            "Ran a RunSpec with regime `multitask`.",
            f"{grid}.run_spec",
            lambda d: run_spec(RunSpec("wine_pl", 1e-3, 50, regime="multitask")),
            RegimeError,
            r"unknown regime 'multitask'",
            r"use one of single_task_fixed, multi_task_fixed, multi_task_random",
        ),
        BadInput(
            "epochs-not-kept",
            "Probed a 1-epoch run at epoch 5, which it did not keep.",
            f"{grid}.probe_grid",
            probe_grid_case,
            ProbeError,
            r"probing epochs \[5\] were kept by none of the runs \(kept: \[0, 1\]\)",
            r"choose epochs among those",
        ),
        BadInput(
            "epochs-not-kept-probe-run",
            "Probed a 1-epoch run directly at epoch 5.",
            "iclmem.probe.probe_run",
            lambda d: (lambda t, r, ref: probe_run(r, t, [5], ref, progress=False))(*_run(d)),
            ProbeError,
            r"epochs \[5\] were not kept by the run; kept: \[0, 1\]",
            r"Probe those epochs, or fine-tune with more epochs",
        ),
        BadInput(
            "model-epoch-not-kept",
            "Asked a 1-epoch run for its model at epoch 5.",
            "iclmem.finetune.FinetuneRun.model",
            lambda d: (lambda t, r, ref: r.model(5, ref))(*_run(d)),
            FinetuneError,
            r"epoch 5 was not kept; kept epochs: \(0, 1\)",
            r"fine-tune again with it among probe_epochs",
        ),
        BadInput(
            "joint-single-task",
            "Called train_joint with the single-task regime.",
            "iclmem.regimes.train_joint",
            lambda d: joint(d, "single_task_fixed"),
            RegimeError,
            r"'single_task_fixed' is iclmem\.finetune\.finetune",
            r"train_joint runs the multi-task regimes",
        ),
        BadInput(
            "joint-tables-mismatch",
            "Gave train_joint one manifest and two tables.",
            "iclmem.regimes.train_joint",
            lambda d: joint(d, "multi_task_fixed", tables=2),
            RegimeError,
            r"got 1 manifests and 2 tables",
            r"give one table per manifest",
        ),
        BadInput(
            "joint-random-pairs-randomized",
            "Ran random pairs on a manifest with randomized member labels.",
            "iclmem.regimes.train_joint",
            lambda d: joint(d, "multi_task_random", label_condition="members"),
            RegimeError,
            r"have label_condition != 'none'",
            r"use label_condition 'none'",
        ),
        BadInput(
            "manipulation-unknown",
            "Asked for the manipulation `shuffle_frist`.",
            f"{probe}.get_manipulation",
            lambda d: get_manipulation("shuffle_frist"),
            ProbeError,
            r"unknown manipulation 'shuffle_frist'",
            r"valid names: baseline, .*shuffle_first",
        ),
        BadInput(
            "manipulation-twice",
            "Listed the manipulation `baseline` twice.",
            f"{probe}.resolve_manipulations",
            lambda d: resolve_manipulations(["baseline", "baseline"]),
            ProbeError,
            r"\['baseline'\] are given twice",
            r"pass each once",
        ),
        BadInput(
            "manipulations-empty",
            "Probed a run with an empty list of manipulations.",
            f"{probe}.probe_run",
            probe_no_manipulations,
            ProbeError,
            r"no manipulations given",
            r"pass None for the full suite of 48",
        ),
        BadInput(
            "probe-other-reference",
            "Probed a run with another M_ref than the one it was fine-tuned from.",
            f"{probe}.probe_run",
            probe_other_reference,
            ProbeError,
            r"was fine-tuned from reference tiny-bad-inp\.\.\., not another-mode\.\.\.",
            r"probe it with the same M_ref it started from",
        ),
        BadInput(
            "more-features-than-model",
            "Predicted with 40 feature columns on a model that takes 32.",
            f"{ltm}.ReferenceLTM.predict",
            lambda d: predict(_task(features=40)),
            LTMInputError,
            r"40 features exceed the model's 32",
            r"subsample them with iclmem\.ltm\.encoding\.subsample_features",
        ),
        BadInput(
            "more-context-than-model",
            "Predicted with a 100-row context on a model that takes 64.",
            f"{ltm}.ReferenceLTM.predict",
            lambda d: predict(_task(context_rows=100)),
            LTMInputError,
            r"context has 100 rows, more than the model's 64",
            r"draw a smaller context",
        ),
        BadInput(
            "more-classes-in-context",
            "Predicted with 12 classes in the context.",
            f"{ltm}.ReferenceLTM.predict",
            lambda d: predict(_task(context_rows=24, classes=12)),
            LTMInputError,
            r"holds 12 classes, more than the model's 10",
            r"merge rare classes or choose another dataset",
        ),
        BadInput(
            "query-label-not-in-context",
            "Asked for the loss of a query whose label no context row has.",
            f"{ltm}.ReferenceLTM.predict",
            lambda d: predict(_task(query_labels=[0, 7])),
            LTMInputError,
            r"query labels \[7\] do not occur in the context",
            r"every query label must be a context label",
        ),
        BadInput(
            "checkpoint-missing",
            "Loaded a checkpoint file that does not exist.",
            f"{ltm}.load_checkpoint",
            lambda d: load_checkpoint(d / "nope.pt"),
            CheckpointError,
            r"checkpoint .*nope\.pt does not exist",
            r"reinstall iclmem or run `iclmem pretrain`",
        ),
        BadInput(
            "checkpoint-corrupt",
            "Loaded a checkpoint file that holds garbage.",
            f"{ltm}.load_checkpoint",
            lambda d: (d / "bad.pt").write_bytes(b"garbage") and load_checkpoint(d / "bad.pt"),
            CheckpointError,
            r"checkpoint .*bad\.pt cannot be read",
            r"pass a checkpoint written by iclmem pretrain",
        ),
        BadInput(
            "checkpoint-hash-mismatch",
            "Loaded a checkpoint whose model card records another sha256.",
            f"{ltm}.load_checkpoint",
            card,
            CheckpointError,
            r"its model card says 000000000000\.\.\.: the file is corrupted or was replaced",
            r"restore the shipped one \(git checkout -- .*\) or pass a checkpoint whose card matches",
        ),
        BadInput(
            "device-unknown",
            "Set `ICLMEM_DEVICE=gpu` (not a torch device name).",
            f"{ltm}.load_checkpoint",
            lambda d: _load_on("gpu", d),
            DeviceError,
            r"ICLMEM_DEVICE='gpu' is not a device",
            r"use cpu, cuda, cuda:N or auto",
        ),
        *(
            []
            if __import__("torch").cuda.is_available()
            else [
                BadInput(
                    "device-no-gpu",
                    "Set `ICLMEM_DEVICE=cuda` on a machine without a CUDA GPU.",
                    f"{ltm}.load_checkpoint",
                    lambda d: _load_on("cuda", d),
                    DeviceError,
                    r"ICLMEM_DEVICE=cuda but this machine has no CUDA GPU",
                    r"unset it \(or set cpu, or auto\) to compute on the CPU",
                )
            ]
        ),
    ]


def _load_on(device: str, folder: Path) -> object:
    """Load a tiny checkpoint with ``$ICLMEM_DEVICE`` set to ``device``."""
    from iclmem.ltm import load_checkpoint

    with _environ(ICLMEM_DEVICE=device):
        return load_checkpoint(_checkpoint(folder))


def _adapter_cases() -> list[BadInput]:
    """TabPFN v2 / TabICL checkpoints named by the ``model`` parameter (:mod:`iclmem.adapters`), tiny random ones."""
    from iclmem.adapters import AdapterCheckpointError, load_model
    from iclmem.adapters.tiny import write_tiny_checkpoint
    from iclmem.ltm import ICLTask, LTMInputError

    ad = "iclmem.adapters.load_model"

    def garbage(folder: Path) -> object:
        (folder / "bad.ckpt").write_bytes(b"garbage")
        return load_model(f"tabpfn:{folder / 'bad.ckpt'}")

    def regression_on_classifier(folder: Path) -> object:
        rng = np.random.default_rng(0)
        model = load_model(f"tabpfn:{write_tiny_checkpoint('tabpfn', folder / 'cls.ckpt')}")
        return model.predict(
            [ICLTask(rng.normal(size=(8, 3)), rng.normal(size=8), rng.normal(size=(1, 3)), task="regression")]
        )

    return [
        BadInput(
            "model-spec-unknown",
            "Passed `-p model xgboost:model.json`.",
            ad,
            lambda d: load_model("xgboost:model.json"),
            LTMInputError,
            r"got 'xgboost:model\.json'",
            r"model must be 'reference', 'tabicl:PATH' or 'tabpfn:PATH'",
        ),
        BadInput(
            "adapter-weights-missing",
            "Named a TabPFN checkpoint that is not on disk (`-p model tabpfn:weights.ckpt`).",
            ad,
            lambda d: load_model(f"tabpfn:{d / 'weights.ckpt'}"),
            AdapterCheckpointError,
            r"no TabPFN checkpoint at .*weights\.ckpt: iclmem never downloads weights",
            r"Prior-Labs/TabPFN-v2-clf.*Put the file at",
        ),
        BadInput(
            "adapter-weights-corrupt",
            "Named a TabPFN checkpoint file that holds garbage.",
            ad,
            garbage,
            AdapterCheckpointError,
            r"bad\.ckpt cannot be read as a TabPFN checkpoint",
            r"download one yourself",
        ),
        BadInput(
            "adapter-other-architecture",
            "Named a TabICL checkpoint as `tabpfn:PATH`.",
            ad,
            lambda d: load_model(f"tabpfn:{write_tiny_checkpoint('tabicl', d / 'icl.ckpt')}"),
            AdapterCheckpointError,
            r"is a TabICL checkpoint, not a TabPFN one",
            r"load it with model=tabicl:",
        ),
        BadInput(
            "adapter-task-mismatch",
            "Predicted a regression target with a TabPFN classifier checkpoint.",
            "iclmem.adapters.tabpfn.TabPFNLTM.predict",
            regression_on_classifier,
            LTMInputError,
            r"this TabPFN checkpoint is a classification model; the task is regression",
            r"Use a tabpfn-v2-regressor checkpoint",
        ),
    ]


def _sweep_cases() -> list[BadInput]:
    from iclmem.sweep import SweepError, load_grid, parse_grid

    def parse(folder: Path, **changes) -> object:
        return parse_grid(_grid(**changes), "grid.yaml", folder)

    entry = "iclmem.sweep.parse_grid"
    return [
        BadInput(
            "grid-file-missing",
            "Loaded a grid file that does not exist.",
            "iclmem.sweep.load_grid",
            lambda d: load_grid(d / "nope.yaml"),
            SweepError,
            r"no grid file at .*nope\.yaml",
            r"see grids/book\.yaml",
        ),
        BadInput(
            "grid-file-bad-yaml",
            "Loaded a grid file with broken YAML.",
            "iclmem.sweep.load_grid",
            lambda d: load_grid(_grid_file(d, text="name: tiny\ndatasets: [wine_pl\n")),
            SweepError,
            r"not valid YAML",
            r"fix the syntax",
        ),
        BadInput(
            "grid-dataset-unknown",
            "Listed the dataset `wine_lp` in a grid.",
            entry,
            lambda d: parse(d, datasets=["wine_lp"]),
            SweepError,
            r"unknown dataset 'wine_lp'",
            r"valid names: .*wine_pl.*or give a file as \{path: data\.csv",
        ),
        BadInput(
            "grid-axis-missing",
            "Wrote a grid without `query_sizes`.",
            entry,
            lambda d: parse_grid({"name": "g", "datasets": ["wine_pl"], "learning_rates": [1e-3]}, "grid.yaml", d),
            SweepError,
            r"missing 'query_sizes'",
            r"every grid needs datasets, learning_rates and query_sizes",
        ),
        BadInput(
            "grid-axis-empty-in-file",
            "Wrote `learning_rates: []` in a grid.",
            entry,
            lambda d: parse(d, learning_rates=[]),
            SweepError,
            r"axis 'learning_rates' is empty",
            r"give at least one value",
        ),
        BadInput(
            "grid-name-bad",
            "Named a grid `my grid` (with a space).",
            entry,
            lambda d: parse(d, name="my grid"),
            SweepError,
            r"got 'my grid'",
            r"name must be a word of letters, digits",
        ),
        BadInput(
            "grid-learning-rate-text",
            "Wrote a learning rate as `fast`.",
            entry,
            lambda d: parse(d, learning_rates=["fast"]),
            SweepError,
            r"got 'fast'",
            r"learning_rates must be a number",
        ),
        BadInput(
            "grid-dataset-file-missing",
            "Listed a dataset file that does not exist in a grid.",
            entry,
            lambda d: parse(d, datasets=[{"path": "nope.csv", "target": "y"}]),
            SweepError,
            r"dataset file .*nope\.csv' does not exist",
            r"relative paths start at the grid file's folder",
        ),
        BadInput(
            "grid-probe-epoch-odd",
            "Asked to probe at epoch 3, which fine-tuning never keeps.",
            entry,
            lambda d: parse(d, probe={"epochs": [3]}),
            SweepError,
            r"probe\.epochs \[3\] are not probing epochs",
            r"fine-tuning keeps the paper's \[0, 1, 2, 5",
        ),
        BadInput(
            "grid-probe-epochs-beyond",
            "Asked to probe at epoch 5 in a grid of 2 epochs.",
            entry,
            lambda d: parse(d, probe={"epochs": [5]}),
            SweepError,
            r"are all beyond epochs=2",
            r"raise epochs or add earlier epochs",
        ),
        BadInput(
            "grid-random-pairs-labels",
            "Combined random pairs with randomized labels in one grid part.",
            entry,
            lambda d: parse(d, regimes=["multi_task_random"], label_conditions=["members"]),
            SweepError,
            r"multi_task_random samples queries with their true labels",
            r"use label_conditions \[none\]",
        ),
    ]


def _llm_cases() -> list[BadInput]:
    from iclmem.llm import (
        ChatRequest,
        ContextOverflowError,
        DatasetUnavailableError,
        Decoding,
        MissingAPIKeyError,
        ReplicationConfig,
        SamplingError,
        UnknownLLMDatasetError,
        build_experiment,
    )
    from iclmem.llm.backends import InProcessBackend, make_backend

    def overflow(folder: Path) -> None:
        backend = InProcessBackend()  # the tokenizer only: nothing is generated
        request = ChatRequest((("user", "word " * 9000),), Decoding(max_new_tokens=24))
        backend.check_fits(backend.count_tokens(request), request.decoding.max_new_tokens)

    def openai(**env: str | None) -> object:
        with _environ(**env):
            return make_backend("openai")

    def experiment(folder: Path, **kw) -> object:
        return build_experiment(ReplicationConfig(**{"n_instances": 4, "n_demonstrations": 4, "ks": (0, 2), **kw}))

    wrong_columns = pd.DataFrame({"text": ["a b c d", "e f g h"], "label": [0, 1]})
    replication = "iclmem.llm.build_experiment"
    return [
        BadInput(
            "api-key-missing",
            "Chose the OpenAI-compatible backend without setting OPENAI_API_KEY.",
            "iclmem.llm.backends.make_backend",
            lambda d: openai(OPENAI_API_KEY=None),
            MissingAPIKeyError,
            r"needs an API key",
            r"set the environment variable OPENAI_API_KEY",
        ),
        BadInput(
            "api-model-missing",
            "Chose the OpenAI-compatible backend without naming the model.",
            "iclmem.llm.backends.make_backend",
            lambda d: openai(OPENAI_API_KEY="local", ICLMEM_OPENAI_MODEL=None),
            MissingAPIKeyError,
            r"needs a model name",
            r"set the environment variable ICLMEM_OPENAI_MODEL",
        ),
        BadInput(
            "backend-unknown",
            "Chose the backend `gpt4`.",
            "iclmem.llm.backends.make_backend",
            lambda d: make_backend("gpt4"),
            ValueError,
            r"unknown backend 'gpt4'",
            r"choose 'inprocess' or 'openai'",
        ),
        BadInput(
            "prompt-over-window",
            "Sent a prompt of about 9000 tokens to the in-process model (window 8192).",
            "iclmem.llm.backends.InProcessBackend",
            overflow,
            ContextOverflowError,
            r"prompt of \d+ tokens \+ 24 new tokens exceeds the context window of 8192",
            r"use a smaller k or fewer new tokens",
        ),
        BadInput(
            "llm-dataset-unknown",
            "Asked for the LLM dataset `wnli2`.",
            replication,
            lambda d: experiment(d, dataset="wnli2"),
            UnknownLLMDatasetError,
            r"unknown dataset 'wnli2'",
            r"known: .*wnli",
        ),
        BadInput(
            "llm-data-file-missing",
            "Gave data_files a path that does not exist.",
            replication,
            lambda d: experiment(d, dataset="wnli", data_files=str(d / "wnli.csv")),
            DatasetUnavailableError,
            r"data file .*wnli\.csv does not exist",
            r"check the path given as data_files",
        ),
        BadInput(
            "llm-data-file-columns",
            "Gave data_files a table without the dataset's columns.",
            replication,
            lambda d: experiment(d, dataset="wnli", data_files=str(_csv(d, wrong_columns))),
            DatasetUnavailableError,
            r"lacks the columns \['sentence1', 'sentence2'\]",
            r"rename its columns to these",
        ),
        BadInput(
            "k-over-pool",
            "Asked for k=25 demonstrations from a pool of 10.",
            "iclmem.llm.ReplicationConfig",
            lambda d: ReplicationConfig(ks=(0, 25), n_demonstrations=10),
            SamplingError,
            r"k=25 is larger than the demonstration pool \(n_demonstrations=10\)",
            r"raise n_demonstrations to at least 25",
        ),
        BadInput(
            "setting-unknown",
            "Asked for the prompt setting `pairs`.",
            "iclmem.llm.ReplicationConfig",
            lambda d: ReplicationConfig(settings=("full", "pairs")),
            ValueError,
            r"unknown settings \['pairs'\]",
            r"choose from \['full', 'pairs_labels', 'pairs_only'\]",
        ),
        BadInput(
            "temperature-nonzero",
            "Asked for sampling at temperature 0.7.",
            "iclmem.llm.Decoding",
            lambda d: Decoding(temperature=0.7),
            ValueError,
            r"temperature 0\.7: only greedy decoding",
            r"leave temperature at 0",
        ),
    ]


def _claims_cases() -> list[BadInput]:
    from iclmem.chapters.claims import ClaimError, read_glued_claims

    record = {
        "id": "C1",
        "paper": "0.8",
        "ours": "0.7",
        "interval": None,
        "verdict": "maybe",
        "reason": "a reason",
        "null": None,
        "observed": None,
        "null_range": None,
        "null_rate": None,
        "points": None,
    }
    entry = "iclmem.chapters.claims.read_glued_claims"
    return [
        BadInput(
            "claim-not-literal",
            "Read claims from a notebook whose glued record is cut off (not a Python literal).",
            entry,
            lambda d: read_glued_claims(_glued(d, "{'id': 'C1', 'verdict': 'reproduced'")),
            ClaimError,
            r"glued 'claim-C1' is not a literal dict",
            r"re-execute the notebook that glued it",
        ),
        BadInput(
            "claim-fields",
            "Read claims from a notebook whose glued record lacks fields.",
            entry,
            lambda d: read_glued_claims(_glued(d, "{'id': 'C1', 'verdict': 'reproduced'}")),
            ClaimError,
            r"has fields \['id', 'verdict'\], a claim record has",
            r"re-execute the chapter \(records come from "
            r"iclmem\.chapters\.claims\.glue_claim\)",
        ),
        BadInput(
            "claim-verdict",
            "Read claims from a notebook whose glued record has the verdict `maybe`.",
            entry,
            lambda d: read_glued_claims(_glued(d, repr(record))),
            ClaimError,
            r"verdict 'maybe' is not one of",
            r"reproduced, differs, inconclusive, holds by construction, not testable here",
        ),
    ]


def _cases() -> list[BadInput]:
    cases = (
        _notebook_cases()
        + _cli_cases()
        + _data_cases()
        + _model_cases()
        + _adapter_cases()
        + _sweep_cases()
        + _llm_cases()
        + _claims_cases()
    )
    ids = [c.case for c in cases]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    return cases


#: Every catalogued bad input, grouped by entry point.
CASES: list[BadInput] = _cases()


# --- running them -----------------------------------------------------------------------------------------------


def message_of(exc: BaseException) -> str:
    """The message the user reads (a ``KeyError``'s text without the quotes ``str`` adds)."""
    if len(exc.args) == 1 and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc)


def raised(case: BadInput, folder: Path) -> BaseException:
    """Do the case in ``folder`` and return the exception it raised; :class:`CaseError` unless it is ``case.error``."""
    try:
        case.run(folder)
    except case.error as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - reported as the case's failure, with the cause chained
        raise CaseError(f"{case.case}: expected {case.error.__name__}, got {type(exc).__name__}: {exc}") from exc
    raise CaseError(f"{case.case}: {case.did} raised nothing; expected {case.error.__name__}")


def unmatched(case: BadInput, message: str) -> list[str]:
    """Which of the case's expressions (``problem``, ``fix``) the message does not match."""
    return [
        name
        for name, pattern in (("problem", case.problem), ("fix", case.fix))
        if not re.search(pattern, message, re.S)
    ]


def error_name(exc: BaseException) -> str:
    return f"exit status {exc.status}" if isinstance(exc, CommandFailed) else type(exc).__name__


def catalogue(cases: Sequence[BadInput] = CASES, only: Sequence[str] = ()) -> pd.DataFrame:
    """Run every case (or those named in ``only``), each in a fresh temporary folder; one row per case.

    Columns: case, what you did, entry point, error (exception type, or a command's exit status),
    the message (the temporary folder shown as ``<folder>``), and whether it names problem and fix.
    """
    rows = []
    for case in cases:
        if only and case.case not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="iclmem-bad-input-") as tmp:
            exc = raised(case, Path(tmp))
            text = message_of(exc)
            shown = text.replace(str(Path(tmp).resolve()), "<folder>").replace(tmp, "<folder>")
        rows.append(
            {
                "case": case.case,
                "what you did": case.did,
                "entry point": case.entry,
                "error": error_name(exc),
                "message": shown,
                "names problem and fix": not unmatched(case, text),
            }
        )
    return pd.DataFrame(rows)


def catalogue_html(table: pd.DataFrame) -> str:
    """The catalogue as an HTML table without index; messages keep their line breaks."""
    body = table.drop(columns=["names problem and fix"]).to_html(
        index=False, escape=True, classes="bad-inputs", border=0
    )
    style = (
        "<style>table.bad-inputs td{vertical-align:top;font-size:0.85em}"
        "table.bad-inputs td:nth-child(5){white-space:pre-wrap;font-family:monospace}</style>"
    )
    return style + body


def summary_text(table: pd.DataFrame) -> str:
    """One line: how many cases, entry points and error types the catalogue holds."""
    ok = int(table["names problem and fix"].sum())
    return (
        f"{len(table)} bad inputs through {table['entry point'].nunique()} entry points; {ok} of them answered with a "
        "message "
        f"that names the problem and the fix."
    )


__all__ = [
    "CASES",
    "BadInput",
    "CaseError",
    "CommandFailed",
    "catalogue",
    "catalogue_html",
    "error_name",
    "message_of",
    "raised",
    "summary_text",
    "unmatched",
]
