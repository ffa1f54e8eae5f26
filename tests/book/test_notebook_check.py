"""The notebooks check their own parameters (issue 32): plain papermill, Jupyter and ``iclmem run`` get the same rules
(names, types, ranges) and the same one-line message, from the check cell after each chapter's parameters."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from iclmem.book.execute import ParameterError, check_parameters, notebook_parameters, read_notebook
from iclmem.book.parameter_check import NotebookParameterError, cells_before, check_notebook_parameters
from iclmem.book.parameter_rules import RULES, range_problems

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.py"))
CHECK_CALL = "check_notebook_parameters(globals())"

PARAMETERS = 'epochs: int = 5  # fine-tuning epochs\nsizes: list = [50, 512]\nname: str = "abc"\n'
CHECKING_NOTEBOOK = f"""\
# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
{PARAMETERS}
# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

{CHECK_CALL}

# %%
print("RESULT", epochs, sizes, name)
"""


def _namespace(history: list[str], **values: object) -> dict[str, object]:
    return {"In": ["", *history], **values}


def test_the_check_reads_the_parameters_cell_and_the_injected_one_from_the_history() -> None:
    injected = "# Parameters\nsizes = '[50]'\n"
    assert cells_before(["import os", PARAMETERS, injected, CHECK_CALL]) == (PARAMETERS, injected)
    assert cells_before([PARAMETERS, CHECK_CALL]) == (PARAMETERS, None)
    assert cells_before(["print(1)", CHECK_CALL]) == (None, None)  # run out of order: nothing to check against


def test_defaults_pass_and_each_kind_of_problem_is_one_line_naming_the_fix() -> None:
    ok = _namespace([PARAMETERS, CHECK_CALL], epochs=5, sizes=[50, 512], name="abc")
    assert check_notebook_parameters(ok) == {"epochs": 5, "sizes": [50, 512], "name": "abc"}
    cases = {
        "wrong type": (
            ["# Parameters\nsizes = '[50]'\n"],
            {"sizes": "[50]"},
            r"'sizes' expects list of int .* got str",
        ),
        "unknown": (
            ["# Parameters\nsize = 64\n"],
            {"size": 64},
            r"unknown parameter 'size' \(did you mean 'sizes'\?\)",
        ),
        "range": (["# Parameters\nepochs = 0\n"], {"epochs": 0}, r"parameter 'epochs' must be >= 1, got 0"),
    }
    for what, (injected, values, problem) in cases.items():
        namespace = _namespace([PARAMETERS, *injected, CHECK_CALL], **{"epochs": 5, "sizes": [50], "name": "abc"})
        namespace.update(values)
        with pytest.raises(NotebookParameterError) as err:
            check_notebook_parameters(namespace)
        message = str(err.value)
        assert re.search(problem, message), what
        assert "\n" not in message and "-p NAME VALUE" in message and "-y 'NAME: [1, 2]'" in message, what
        assert err.value._render_traceback_() == [f"NotebookParameterError: {message}"]


def test_the_check_and_iclmem_run_give_the_same_message() -> None:
    declared = notebook_parameters(read_notebook(REPO / "notebooks" / "01_split_validation.py"))
    for values in ({"query_sizes": "[50]"}, {"querysize": 64}, {"max_redraws": -1}, {"query_sizes": []}):
        with pytest.raises(ParameterError) as run_error:
            check_parameters(declared, values)
        cell = next(
            c.source
            for c in read_notebook(REPO / "notebooks" / "01_split_validation.py").cells
            if "parameters" in c.metadata.get("tags", [])
        )
        injected = "# Parameters\n" + "".join(f"{k} = {v!r}\n" for k, v in values.items())
        defaults = {name: p.default for name, p in declared.items()}
        with pytest.raises(NotebookParameterError) as cell_error:
            check_notebook_parameters(_namespace([cell, injected, CHECK_CALL], **{**defaults, **values}))
        assert str(cell_error.value) == str(run_error.value)


def test_secret_names_given_to_papermill_are_refused_in_the_notebook_too() -> None:
    namespace = _namespace([PARAMETERS, "# Parameters\napi_key = 'x'\n", CHECK_CALL], epochs=5, sizes=[1], name="a")
    with pytest.raises(NotebookParameterError, match="refusing to pass 'api_key'.*environment variable"):
        check_notebook_parameters(namespace)


def test_range_rules_name_the_bound_and_leave_unlisted_names_alone() -> None:
    assert range_problems({"learning_rates": [0.1, 0.0]}) == [
        "parameter 'learning_rates': every value must be > 0, got 0.0 in [0.1, 0.0]"
    ]
    assert range_problems({"segment_min": 1.5}) == ["parameter 'segment_min' must be >= 0 and <= 1, got 1.5"]
    assert range_problems({"task": "classify"}) == [
        "parameter 'task' must be one of: '', 'classification', 'regression', got 'classify'"
    ]
    assert range_problems({"epochs": float("nan")}) == ["parameter 'epochs' must be >= 1, got nan"]
    assert range_problems({"whatever": -5, "epochs": 3, "query_sizes": [20]}) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_chapter_checks_its_parameters_right_after_them_and_its_defaults_pass(path: Path) -> None:
    nb = read_notebook(path)
    index = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    after = nb.cells[index + 1]
    assert after.cell_type == "code" and CHECK_CALL in after.source, f"{path.name}: no check cell after parameters"
    assert "remove-cell" in after.metadata.get("tags", [])  # plumbing: not on the page
    declared = notebook_parameters(nb)
    assert range_problems({n: p.default for n, p in declared.items()}) == []


def test_every_rule_names_a_parameter_some_chapter_declares() -> None:
    declared = set().union(*(notebook_parameters(read_notebook(p)) for p in NOTEBOOKS))
    assert set(RULES) - declared == set()


def _papermill(notebook: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "papermill", str(notebook), str(out), "--log-level", "ERROR", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_plain_papermill_on_a_converted_notebook_stops_in_the_check_cell_with_one_line(tmp_path: Path) -> None:
    import jupytext
    import nbformat

    source = tmp_path / "check.py"
    source.write_text(CHECKING_NOTEBOOK)
    converted = tmp_path / "check.ipynb"
    jupytext.write(jupytext.read(source), converted)  # what `jupytext --to ipynb` writes

    good = _papermill(converted, tmp_path / "good.ipynb", "-y", "sizes: [50]", "-p", "epochs", "2")
    assert good.returncode == 0, good.stderr
    assert "RESULT 2 [50] abc" in (tmp_path / "good.ipynb").read_text()

    for args, problem in (
        (["-p", "sizes", "[50]"], "parameter 'sizes' expects list of int like its default [50, 512], got str '[50]'"),
        (["-p", "epoch", "3"], "unknown parameter 'epoch' (did you mean 'epochs'?); valid names: epochs, sizes, name"),
        (["-p", "epochs", "0"], "parameter 'epochs' must be >= 1, got 0"),
    ):
        out = tmp_path / "bad.ipynb"
        proc = _papermill(converted, out, *args)
        assert proc.returncode != 0
        executed = nbformat.read(out, as_version=4)
        errors = [
            o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"
        ]
        assert len(errors) == 1 and errors[0].ename == "NotebookParameterError"
        assert len(errors[0].traceback) == 1 and problem in errors[0].traceback[0]  # one line, no traceback
        assert "-p NAME VALUE" in errors[0].traceback[0]
        assert not executed.cells[-1].get("outputs")  # it stopped in the check cell


def test_label_conditions_accept_the_data_stages_spellings_and_name_the_valid_words() -> None:
    from iclmem.data.randomize import _ALIASES, LABEL_CONDITIONS

    assert range_problems({"label_conditions": [*LABEL_CONDITIONS, *_ALIASES, "Members"]}) == []
    assert range_problems({"label_conditions": ["member"]}) == [
        "parameter 'label_conditions': every value must be one of: 'none', 'members', 'non-members', 'all', 'flip', "
        "got 'member' in ['member']"
    ]
    assert range_problems({"label_conditions": []}) == [
        "parameter 'label_conditions' needs at least one value, got an empty list"
    ]
