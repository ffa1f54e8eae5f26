"""Parameter inspection and checking, and running a notebook with papermill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclmem.book.execute import (
    NotebookExecutionError,
    Parameter,
    ParameterError,
    UsageError,
    check_parameters,
    default_output_path,
    format_parameters_table,
    notebook_parameters,
    parse_cli_parameters,
    parse_cli_value,
    parse_parameters_source,
    read_notebook,
    run_notebook,
)

DECLARED = {
    "n": Parameter("n", 3),
    "rate": Parameter("rate", 0.5),
    "name": Parameter("name", "abc"),
    "sizes": Parameter("sizes", [1, 2]),
    "rates": Parameter("rates", [0.1, 0.01]),
    "flag": Parameter("flag", False),
    "data_path": Parameter("data_path", None),
}


def _output_text(path: Path) -> str:
    nb = json.loads(path.read_text())
    return "".join(
        "".join(out.get("text", ""))
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
    )


# --- reading the parameters cell --------------------------------------------------------------


def test_parameters_cell_is_read_in_order_with_literal_defaults(tiny_notebook: Path) -> None:
    params = notebook_parameters(read_notebook(tiny_notebook))
    assert list(params) == ["n", "rate", "name", "sizes", "flag", "data_path"]
    assert params["sizes"].default == [1, 2]
    assert params["rate"].type_name == "float"
    assert params["data_path"].type_name == "any"


def test_parse_source_handles_annotations_and_chained_assignments() -> None:
    params = parse_parameters_source("a: int = 1\nb = c = 'x'\nimport os\nd = -2.5e-3  # comment\n")
    assert {k: p.default for k, p in params.items()} == {"a": 1, "b": "x", "c": "x", "d": -0.0025}


def test_non_literal_default_is_an_error() -> None:
    with pytest.raises(UsageError, match="not a literal"):
        parse_parameters_source("n = len([1, 2])\n")


def test_notebook_without_parameters_cell_has_none(tmp_path: Path, make_notebook) -> None:
    nb = make_notebook(tmp_path / "plain.py", "# %%\nx = 1\n")
    assert notebook_parameters(read_notebook(nb)) == {}
    with pytest.raises(ParameterError, match="unknown parameter 'x'"):
        check_parameters({}, {"x": 2})


def test_missing_notebook_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such notebook"):
        read_notebook(tmp_path / "nope.py")


def test_table_lists_name_type_default() -> None:
    table = format_parameters_table(DECLARED)
    lines = table.splitlines()
    assert lines[0].split() == ["name", "type", "default"]
    assert lines[2].split() == ["n", "int", "3"]
    assert "rates      list   [0.1, 0.01]" in table


# --- checking values --------------------------------------------------------------------------


def test_unknown_name_is_one_line_with_the_closest_and_every_valid_name() -> None:
    with pytest.raises(ParameterError) as err:
        check_parameters(DECLARED, {"querysize": 64, "rat": 1.0})
    message = str(err.value)
    assert "\n" not in message  # one line: the same in `iclmem run` and in a notebook's check cell
    assert "unknown parameters 'querysize', 'rat' (did you mean 'rate'?)" in message
    assert "valid names: n, rate, name, sizes, rates, flag, data_path" in message
    assert "-p NAME VALUE" in message and "`iclmem params" not in message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n", "abc"),
        ("n", 1.5),
        ("n", True),
        ("rate", "fast"),
        ("flag", 1),
        ("sizes", 3),
        ("sizes", [1, "x"]),
        ("rates", ["a"]),
        ("name", 5),
    ],
)
def test_wrong_type_is_refused(name: str, value: object) -> None:
    with pytest.raises(ParameterError, match=f"parameter '{name}' expects"):
        check_parameters(DECLARED, {name: value})


def test_accepted_values_and_int_to_float() -> None:
    checked = check_parameters(
        DECLARED, {"n": 7, "rate": 2, "rates": [1, 0.5], "flag": True, "data_path": "my.csv", "sizes": []}
    )
    assert checked == {"n": 7, "rate": 2.0, "rates": [1, 0.5], "flag": True, "data_path": "my.csv", "sizes": []}
    assert isinstance(checked["rate"], float)


@pytest.mark.parametrize("name", ["api_key", "HF_TOKEN", "db_password", "clientSecret", "keys"])
def test_secret_like_names_are_refused_even_if_declared(name: str) -> None:
    declared = {**DECLARED, name: Parameter(name, "")}
    with pytest.raises(ParameterError, match="environment variable"):
        check_parameters(declared, {name: "s3cr3t"})


def test_all_problems_are_reported_together() -> None:
    with pytest.raises(ParameterError) as err:
        check_parameters(DECLARED, {"nn": 1, "rate": "x"})
    assert "unknown parameter 'nn'" in str(err.value) and "parameter 'rate' expects" in str(err.value)


# --- command-line strings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "default", "expected"),
    [
        ("64", 1, 64),
        ("0.5", 1.0, 0.5),
        ("1e-4", 1.0, 1e-4),
        ("[1, 2]", [0], [1, 2]),
        ("[1e-3, 0.01]", [0.1], [1e-3, 0.01]),
        ("true", False, True),
        ("2020", "abc", "2020"),
        ("null", "abc", "null"),
        ("my.csv", None, "my.csv"),
        ("{a: 1}", {}, {"a": 1}),
    ],
)
def test_cli_values_are_parsed_as_yaml(raw: str, default: object, expected: object) -> None:
    value = parse_cli_value(raw, default)
    assert value == expected and type(value) is type(expected)


def test_cli_pairs_override_file_values_and_are_checked() -> None:
    values = parse_cli_parameters(DECLARED, [("n", "9"), ("rate", "1")], {"n": 4, "name": "wine"})
    assert values == {"n": 9, "rate": 1.0, "name": "wine"}
    with pytest.raises(ParameterError, match="'n' expects int"):
        parse_cli_parameters(DECLARED, [("n", "[1, 2]")])


# --- execution --------------------------------------------------------------------------------


def test_run_injects_parameters_into_the_executed_copy(tiny_notebook: Path, tmp_path: Path) -> None:
    out = run_notebook(
        tiny_notebook,
        {"n": 11, "rate": 2, "sizes": [5], "data_path": "x.csv"},
        tmp_path / "out" / "tiny.ipynb",
        progress=False,
    )
    assert out == tmp_path / "out" / "tiny.ipynb"
    assert "RESULT n=11 rate=2.0 name=abc sizes=[5] flag=False data_path=x.csv" in _output_text(out)
    # the source stays a text notebook: no .ipynb appears next to it, no temporary file is left
    assert sorted(p.name for p in tiny_notebook.parent.iterdir()) == ["out", "tiny.py"]
    assert [p.name for p in out.parent.iterdir()] == ["tiny.ipynb"]


def test_run_checks_before_executing(tiny_notebook: Path, tmp_path: Path) -> None:
    with pytest.raises(ParameterError):
        run_notebook(tiny_notebook, {"m": 1}, tmp_path / "o.ipynb", progress=False)
    assert not (tmp_path / "o.ipynb").exists()


def test_failing_notebook_keeps_partial_output_aside(tmp_path: Path, make_notebook) -> None:
    nb = make_notebook(tmp_path / "bad.py", '# %% tags=["parameters"]\nx = 1\n\n# %%\nraise ValueError(f"boom {x}")\n')
    out = tmp_path / "bad.ipynb"
    with pytest.raises(NotebookExecutionError, match="boom 5") as err:
        run_notebook(nb, {"x": 5}, out, progress=False)
    assert not out.exists()
    assert err.value.output == tmp_path / "bad.failed.ipynb"
    assert "boom 5" in err.value.output.read_text()


def test_default_output_is_under_build_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert default_output_path("notebooks/01_x.py") == tmp_path / "_build" / "runs" / "01_x.ipynb"


def test_kernel_runs_in_the_given_directory(tmp_path: Path, make_notebook) -> None:
    nb = make_notebook(tmp_path / "cwd.py", "# %%\nimport os\nprint('CWD', os.getcwd())\n")
    work = tmp_path / "work"
    work.mkdir()
    out = run_notebook(nb, {}, tmp_path / "cwd.ipynb", cwd=work, progress=False)
    assert f"CWD {work}" in _output_text(out)


def test_output_must_be_ipynb(tiny_notebook: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"\.ipynb"):
        run_notebook(tiny_notebook, {}, tmp_path / "out.html", progress=False)
