"""Appendix A3 (no paper section): bad inputs given to the ``iclmem`` command line."""

from __future__ import annotations

from pathlib import Path

from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
    CommandFailed,
    tiny_checkpoint,
    tiny_cli,
    tiny_csv,
    tiny_frame,
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


def audit(folder: Path, *args: object, members=None, non_members=None, model: str = "reference") -> None:
    """``iclmem audit`` on two tiny files of the same table (members: 12 rows, non-members: 12 others), or on the
    frames given; ``args`` are added (or, with ``--target``, replace the default target ``y``)."""
    frame = tiny_frame(24)
    m = tiny_csv(folder, frame.iloc[:12] if members is None else members, "members.csv")
    n = tiny_csv(folder, frame.iloc[12:] if non_members is None else non_members, "non_members.csv")
    target = [] if "--target" in args else ["--target", "y"]
    tiny_cli("audit", "--model", model, "--base", "reference", "--members", m, "--non-members", n, *target, *args,
             "--no-progress", "--out", folder / "report")  # fmt: skip


#: Mistakes on ``iclmem audit`` (issue 56), each answered with one line and exit status 2 before anything is probed.
AUDIT_CASES: list[BadInput] = [
    BadInput(
        "cli-audit-unknown-column",
        "Named a column neither file has (`--drop idx`) on `iclmem audit`.",
        "iclmem audit",
        lambda d: audit(d, "--drop", "idx"),
        CommandFailed,
        r"unknown column\(s\) 'idx' in --drop: neither file has them",
        r"the columns are: a, b, c, y",
    ),
    BadInput(
        "cli-audit-target-in-one-file",
        "Gave `iclmem audit` a non-members file without the target column.",
        "iclmem audit",
        lambda d: audit(d, non_members=tiny_frame(24).iloc[12:].drop(columns="y")),
        CommandFailed,
        r"the target 'y' is a column of members\.csv but not of non_members\.csv",
        r"add the column to non_members\.csv",
    ),
    BadInput(
        "cli-audit-columns-differ",
        "Gave `iclmem audit` a non-members file with an extra column.",
        "iclmem audit",
        lambda d: audit(d, non_members=tiny_frame(24).iloc[12:].assign(extra=1.0)),
        CommandFailed,
        r"the files' columns differ: non_members\.csv has 'extra' that members\.csv lacks",
        r"give both files the same columns, or leave the extra ones out with --drop",
    ),
    BadInput(
        "cli-audit-empty-file",
        "Gave `iclmem audit` a non-members file with a header and no rows.",
        "iclmem audit",
        lambda d: audit(d, non_members=tiny_frame(24).iloc[:0]),
        CommandFailed,
        r"the non-members file .*non_members\.csv has no rows",
        r"pass the file that holds the non-members' rows",
    ),
    BadInput(
        "cli-audit-too-few-rows",
        "Gave `iclmem audit` 5 member rows.",
        "iclmem audit",
        lambda d: audit(d, members=tiny_frame(24).iloc[:5]),
        CommandFailed,
        r"too few rows: members\.csv keeps 5 rows .* fewer than the 10 the test can use",
        r"add rows to the file",
    ),
    BadInput(
        "cli-audit-wrong-architecture",
        "Gave `iclmem audit --model reference:PATH` a file that is not a reference-architecture checkpoint.",
        "iclmem audit",
        lambda d: audit(d, model=f"reference:{tiny_csv(d, name='weights.pt')}"),
        CommandFailed,
        r"weights\.pt is not a checkpoint of the reference architecture",
        r"pass one that ReferenceLTM\.save wrote .* or name its architecture: tabpfn:PATH or tabicl:PATH",
    ),
    BadInput(
        "cli-audit-rows-not-in-table",
        "Gave `iclmem audit --table` a table that lacks some of the members' and non-members' rows.",
        "iclmem audit",
        lambda d: audit(d, "--table", tiny_csv(d, tiny_frame(24).iloc[:20], "table.csv")),
        CommandFailed,
        r"4 rows of the two files are not in the table table\.csv \(0 of members\.csv, 4 of non_members\.csv",
        r"pass as --table the full table the model was fine-tuned from, holding every member and non-member row",
    ),
    BadInput(
        "cli-audit-no-target",
        "Ran `iclmem audit` without `--target`.",
        "iclmem audit",
        lambda d: tiny_cli("audit", "--model", "reference", "--base", "reference", "--members", tiny_csv(d)),
        CommandFailed,
        r"give --non-members, --target",
        r"or the key\(s\) non_members, target in the --config file",
    ),
]


def cli_cases() -> list[BadInput]:
    """Mistakes on the command line, answered by ``iclmem.cli.main`` (a :class:`CommandFailed`), in catalogue order."""
    return list(CLI_CASES) + list(AUDIT_CASES)


__all__ = ["AUDIT_CASES", "CLI_CASES", "audit", "cli_cases"]
