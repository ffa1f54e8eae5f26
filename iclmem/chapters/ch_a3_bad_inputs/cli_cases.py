"""Appendix A3 (no paper section): bad inputs given to the ``iclmem`` command line."""

from __future__ import annotations

from pathlib import Path

from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
    CommandFailed,
    tiny_checkpoint,
    tiny_cli,
    tiny_free_port,
    tiny_grid_file,
    tiny_notebook_file,
    tiny_project,
)


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


__all__ = ["CLI_CASES", "cli_cases"]
