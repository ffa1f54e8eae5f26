"""The catalogue of bad inputs (appendix A3): every case raises its error, whose message names the problem and the fix.

The cases live in :data:`iclmem.chapters.ch_a3_bad_inputs.catalogue.CASES`, which the appendix page renders; each one
does
its mistake through a real entry point of the package (Python API or ``iclmem.cli.main``) on tiny inputs
written into ``tmp_path``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from iclmem.book.execute import notebook_parameters, read_notebook
from iclmem.chapters.ch_a3_bad_inputs.catalogue import CASES, catalogue, catalogue_html, message_of, raised, unmatched
from iclmem.chapters.ch_a3_bad_inputs.kit import BadInput, CommandFailed
from iclmem.chapters.ch_a3_bad_inputs.store_cases import STORE_CASES, store_catalogue

REPO = Path(__file__).resolve().parents[3]
torch.set_num_threads(1)  # tiny models: one thread is fastest and shares the machine well


def test_the_catalogue_is_large_and_covers_every_kind_of_mistake():
    ids = [c.case for c in CASES]
    assert len(ids) == len(set(ids)) >= 40
    assert all(c.did.strip() and c.problem and c.fix for c in CASES)
    must = {
        "parameter-unknown",
        "parameter-wrong-type",
        "parameter-secret",
        "data-file-missing",
        "data-file-unreadable",
        "target-missing",
        "table-too-small-for-q",
        "target-single-class",
        "target-nan",
        "more-classes-than-model",
        "more-features-than-model",
        "checkpoint-corrupt",
        "cli-sweep-grid-typo",
        "cli-sweep-unreachable-scheduler",
        "manipulation-unknown",
        "epochs-not-kept",
        "api-key-missing",
        "prompt-over-window",
        "claim-not-literal",
        "chapter-target-missing-values",
        "papermill-list-as-string",
    }
    assert must <= set(ids)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.case)
def test_bad_input_is_answered_with_the_problem_and_the_fix(
    case: BadInput, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)  # relative paths a case might create stay in its folder
    monkeypatch.setenv("ICLMEM_RESULTS", str(tmp_path / "results"))
    folder = tmp_path / "case"
    folder.mkdir()
    exc = raised(case, folder)
    assert isinstance(exc, case.error)
    message = message_of(exc)
    assert re.search(case.problem, message, re.S), (
        f"the message does not name the problem ({case.problem!r}):\n{message}"
    )
    assert re.search(case.fix, message, re.S), f"the message does not propose the fix ({case.fix!r}):\n{message}"
    assert "Traceback" not in message
    if isinstance(exc, CommandFailed):
        assert exc.status == 2  # a user error: exit status 2, no traceback
    if case.entry.startswith("notebooks/"):  # the fix names parameters of the notebook the user runs
        declared = notebook_parameters(read_notebook(REPO / case.entry))
        assert case.fix_names and set(case.fix_names) <= set(declared), (case.fix_names, sorted(declared))
        assert all(re.search(rf"\b{name}\b", message) for name in case.fix_names), message


def test_the_page_table_runs_the_cases_and_hides_the_temporary_folder():
    table = catalogue(only=["data-file-missing", "cli-book-no-toc", "backend-unknown"])
    assert not any(
        unmatched(c, m) for c, m in zip([c for c in CASES if c.case in set(table.case)], table.message, strict=True)
    )
    assert list(table["case"]) == [
        "cli-book-no-toc",
        "data-file-missing",
        "backend-unknown",
    ]  # in the catalogue's order
    assert list(table["error"]) == ["exit status 2", "DataFileNotFoundError", "ValueError"]
    assert table["names problem and fix"].all()
    assert table["message"].str.contains("<folder>").tolist() == [True, True, False]


# --- the store's cases (issue 41), beside the bad inputs -------------------------------------------


def test_the_store_cases_cover_what_issue_41_names():
    assert [c.case for c in STORE_CASES] == [
        "store-damaged-file",
        "store-truncated-file",
        "store-two-writers",
        "store-full-disk",
        "store-read-only",
    ]
    assert all(c.happened.strip() and c.expected and c.says for c in STORE_CASES)


@pytest.mark.parametrize("case", STORE_CASES, ids=lambda c: c.case)
def test_each_store_case_does_what_it_documents(case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICLMEM_RESULTS", str(tmp_path / "case" / "results"))
    folder = tmp_path / "case"
    folder.mkdir()
    answer = case.run(folder)
    assert answer.ok, answer
    assert re.search(case.says, answer.message, re.S), f"the line does not say ({case.says!r}):\n{answer.message}"
    assert "Traceback" not in answer.message and len(answer.message.splitlines()) == 1, answer.message


def test_the_store_table_runs_its_cases_and_hides_the_temporary_folder():
    table = store_catalogue(only=["store-truncated-file", "store-read-only"])
    assert list(table["case"]) == ["store-truncated-file", "store-read-only"]
    assert table["as documented"].all()
    assert table["what you read"].str.contains("<folder>").all()
    assert table["what it did"].str.contains("the same metrics").all()
    assert "as documented" not in catalogue_html(table) and "what you read" in catalogue_html(table)


def test_a_case_is_found_by_its_id_and_an_unknown_id_names_the_closest():
    from iclmem.chapters.ch_a3_bad_inputs import case_by_id

    assert [case_by_id(c.case) for c in CASES] == CASES
    with pytest.raises(KeyError, match=r"no bad-input case 'target-nann'; did you mean .*target-nan"):
        case_by_id("target-nann")
