"""Appendix A3 (no paper section): the case type of the bad-inputs catalogue and the tiny inputs its cases write
(tables, manifests, runs, checkpoints, grid files, notebooks) into a temporary folder."""

from __future__ import annotations

import contextlib
import io
import os
import socket
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
    fix_names: tuple[str, ...] = ()  # the parameters the fix names: declared by the notebook ``entry`` names


class NotebookStopped(Exception):
    """Plain papermill stopped a notebook on an error; the message is the one the notebook shows."""


def project_notebook(stem: str) -> Path:
    """A chapter of this project (``notebooks/<stem>.py`` of the checkout the package runs from)."""
    return Path(__file__).resolve().parents[3] / "notebooks" / f"{stem}.py"


def tiny_papermill(folder: Path, notebook: Path, *args: str) -> None:
    """Convert ``notebook`` with jupytext and run it with plain papermill (its own command line); raise
    :class:`NotebookStopped` with the error the notebook shows when it stops."""
    import subprocess
    import sys

    import jupytext
    import nbformat

    converted, out = folder / f"{notebook.stem}.ipynb", folder / f"{notebook.stem}.out.ipynb"
    jupytext.write(jupytext.read(notebook), converted)
    command = [sys.executable, "-m", "papermill", str(converted), str(out), "--log-level", "ERROR", *args]
    if subprocess.run(command, capture_output=True, text=True, timeout=300).returncode == 0:
        return
    executed = nbformat.read(out, as_version=4)
    for cell in executed.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                raise NotebookStopped("\n".join(output.get("traceback", [])))
    raise NotebookStopped(f"papermill failed before any cell ran: {command}")


TINY_NOTEBOOK = """\
# %% tags=["parameters"]
n = 3
rate = 0.5
name = "abc"
sizes = [1, 2]

# %%
print(n, rate, name, sizes)
"""


def tiny_notebook_file(folder: Path, source: str = TINY_NOTEBOOK, name: str = "tiny.py") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path


def tiny_project(folder: Path, toc_extra: str = "") -> Path:
    """A book project: _config.yml, _toc.yml (one notebook page) and the notebook."""
    (folder / "_config.yml").write_text("title: tiny\n")
    (folder / "_toc.yml").write_text("format: jb-book\nroot: notebooks/tiny\n" + toc_extra)
    tiny_notebook_file(folder / "notebooks")
    return folder


def tiny_frame(n: int = 80, classes: int = 2, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y", "z"], size=n)})
    frame["y"] = np.arange(n) % classes
    return frame


def tiny_csv(folder: Path, frame: pd.DataFrame | None = None, name: str = "table.csv") -> Path:
    path = folder / name
    (tiny_frame() if frame is None else frame).to_csv(path, index=False)
    return path


def tiny_table(folder: Path, n: int = 80, classes: int = 2, name: str = "table.csv"):
    from iclmem.data import deduplicate, load_dataset

    return deduplicate(load_dataset(tiny_csv(folder, tiny_frame(n, classes), name), target="y", task="classification"))


def tiny_manifest(folder: Path, table, query_size: int = 10, label_condition: str = "none"):
    from iclmem.data import split_manifest

    return split_manifest(table, query_size, 0, label_condition, results_dir=folder / "results")


def tiny_reference(sha: str = "tiny-bad-inputs-model"):
    """A tiny random-weight LTM (16-dim, 2 layers, contexts of up to 64 rows)."""
    import torch

    from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer

    torch.manual_seed(0)
    cfg = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)
    return ReferenceLTM(TabularICLTransformer(cfg).eval(), checkpoint_sha256=sha)


def tiny_config(**changes):
    from iclmem.training.finetune import FinetuneConfig

    return FinetuneConfig(**{"learning_rate": 1e-3, "epochs": 1, "probe_epochs": (0, 1), "context_size": 20, **changes})


def tiny_run(folder: Path):
    """A finished 1-epoch fine-tuning run of the tiny LTM on a tiny table: (table, run, reference)."""
    from iclmem.training.finetune import finetune

    table, reference = tiny_table(folder), tiny_reference()
    return (
        table,
        finetune(tiny_manifest(folder, table), table, tiny_config(), reference, folder / "results", progress=False),
        reference,
    )


def tiny_checkpoint(folder: Path) -> Path:
    import torch

    path = folder / "tiny.pt"
    model = tiny_reference()
    torch.save({"config": model.cfg.to_dict(), "model": model.state_dict()}, path)
    return path


def tiny_grid(**changes) -> dict:
    return {
        "name": "tiny",
        "datasets": ["wine_pl"],
        "learning_rates": [1e-3],
        "query_sizes": [50],
        "epochs": 2,
        **changes,
    }


def tiny_grid_file(folder: Path, text: str | None = None, **changes) -> Path:
    import yaml

    path = folder / "grid.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(tiny_grid(**changes)))
    return path


def tiny_free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed on return: nothing listens there


def tiny_glued(folder: Path, text: str) -> Path:
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


def tiny_task(context_rows: int = 20, features: int = 3, classes: int = 2, query_labels: Sequence | None = None):
    from iclmem.ltm import ICLTask

    rng = np.random.default_rng(0)
    y = np.arange(context_rows) % classes
    q = np.asarray(query_labels if query_labels is not None else [0, 1])
    return ICLTask(rng.normal(size=(context_rows, features)), y, rng.normal(size=(len(q), features)), q)


@contextlib.contextmanager
def tiny_environ(**values: str | None) -> Iterator[None]:
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


def tiny_cli(*args: object) -> None:
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


__all__ = [
    "CommandFailed",
    "CaseError",
    "BadInput",
    "TINY_NOTEBOOK",
    "tiny_notebook_file",
    "tiny_project",
    "tiny_frame",
    "tiny_csv",
    "tiny_table",
    "tiny_manifest",
    "tiny_reference",
    "tiny_config",
    "tiny_run",
    "tiny_checkpoint",
    "tiny_grid",
    "tiny_grid_file",
    "tiny_free_port",
    "tiny_glued",
    "tiny_task",
    "tiny_environ",
    "tiny_cli",
]
