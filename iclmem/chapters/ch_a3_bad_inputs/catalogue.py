"""Appendix A3 of this book (no paper section): every bad input the package answers, and the message the user gets
(notebook A3).

:data:`CASES` is the catalogue: one :class:`BadInput` per mistake (an unknown or mistyped
parameter, a missing file, a target column that does not exist, a table too small for Q, more
classes than the model takes, a corrupt checkpoint, a grid file with a typo, an unreachable
scheduler, a missing API key, a prompt over the context window, ...). Each case does the mistake
through the package's real entry point (the Python API or ``iclmem.cli.main``) on tiny inputs it
writes into a temporary folder, and names the exception it must raise and two regular
expressions: one for the problem the message names, one for the fix it proposes. Each case is a
module-level record in its entry point's module (``notebook_cases``, ``cli_cases``, ``chapter_cases``,
``data_cases``, ``model_cases``, ``adapter_cases``, ``sweep_cases``, ``llm_cases``, ``claims_cases``), so
searching for its id finds its definition; :data:`CASES` collects them in that order and :func:`case_by_id`
looks one up.

The same table is the test suite's (``tests/chapters/ch_a3_bad_inputs/test_bad_inputs.py`` runs every case and checks
both
expressions) and the appendix page's (:func:`catalogue` runs every case and shows the message),
so the page shows exactly what the tests check. A command-line case raises :class:`CommandFailed`
with the exit status and what ``iclmem`` printed on stderr.

Beside them, :data:`STORE_CASES` (:mod:`iclmem.chapters.ch_a3_bad_inputs.store_cases`, issue 41): what the results store
does with a damaged file, a truncated file, two writers of one key, a full disk and a read-only store, each run on
a tiny store by :func:`store_catalogue` (the page's second table), with what the package did measured.
"""

from __future__ import annotations

import difflib
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from iclmem.chapters.ch_a3_bad_inputs.adapter_cases import adapter_cases
from iclmem.chapters.ch_a3_bad_inputs.chapter_cases import chapter_cases
from iclmem.chapters.ch_a3_bad_inputs.claims_cases import claims_cases
from iclmem.chapters.ch_a3_bad_inputs.cli_cases import cli_cases
from iclmem.chapters.ch_a3_bad_inputs.data_cases import data_cases
from iclmem.chapters.ch_a3_bad_inputs.kit import BadInput, CaseError, CommandFailed
from iclmem.chapters.ch_a3_bad_inputs.llm_cases import llm_cases
from iclmem.chapters.ch_a3_bad_inputs.model_cases import model_cases
from iclmem.chapters.ch_a3_bad_inputs.notebook_cases import notebook_cases
from iclmem.chapters.ch_a3_bad_inputs.sweep_cases import sweep_cases


def _cases() -> list[BadInput]:
    """Every entry point's cases, in the catalogue's order (notebook, CLI, chapters, data, models, adapters, sweep,
    LLM, claims); their ids must be unique."""
    cases = (
        notebook_cases()
        + cli_cases()
        + chapter_cases()
        + data_cases()
        + model_cases()
        + adapter_cases()
        + sweep_cases()
        + llm_cases()
        + claims_cases()
    )
    ids = [c.case for c in cases]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    return cases


CASES: list[BadInput] = _cases()
_BY_ID: dict[str, BadInput] = {c.case: c for c in CASES}


def case_by_id(case_id: str) -> BadInput:
    """The case of :data:`CASES` whose id is ``case_id``; a ``KeyError`` naming the closest ids when there is none."""
    try:
        return _BY_ID[case_id]
    except KeyError:
        close = difflib.get_close_matches(case_id, _BY_ID, n=3)
        hint = (
            f"did you mean {', '.join(close)}?"
            if close
            else f"the {len(_BY_ID)} ids are listed by [c.case for c in CASES]"
        )
        raise KeyError(f"no bad-input case {case_id!r}; {hint}") from None


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
    """The table's error column: a command's exit status, else the exception's type name."""
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


#: The columns of :func:`catalogue` and :func:`store_catalogue` that say whether a case did what it documents (the
#: summary line counts them; the table does not show them).
CHECK_COLUMNS = ("names problem and fix", "as documented")


def catalogue_html(table: pd.DataFrame) -> str:
    """A catalogue (:func:`catalogue` or :func:`store_catalogue`) as an HTML table without index; the fifth column
    (the message the user reads) keeps its line breaks."""
    body = table.drop(columns=[c for c in CHECK_COLUMNS if c in table]).to_html(
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


def store_summary_text(table: pd.DataFrame) -> str:
    """One line: how many store cases ran and how many did what they document."""
    ok = int(table["as documented"].sum())
    return (
        f"{len(table)} store cases, each run on a tiny store while this page was built; {ok} of them did what they "
        "document (nothing damaged served, the work done once, nothing partial left)."
    )


__all__ = [
    "CASES",
    "CHECK_COLUMNS",
    "case_by_id",
    "catalogue",
    "catalogue_html",
    "error_name",
    "message_of",
    "raised",
    "store_summary_text",
    "summary_text",
    "unmatched",
]
