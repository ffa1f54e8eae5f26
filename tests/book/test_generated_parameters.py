"""Generated notebook parameters (Hypothesis) against a real notebook's declared parameters (notebook 01).

Values nobody wrote by hand (wrong types, unknown and credential-like names, out-of-range numbers,
empty lists, NaN and inf, nested containers, YAML text that is broken, deep or odd, parameter files
that are not UTF-8) go through :func:`iclmem.book.execute.check_parameters`,
:func:`~iclmem.book.execute.parse_cli_parameters` and :func:`~iclmem.book.execute.read_parameters_file`; the
only acceptable exceptions are :class:`~iclmem.book.execute.ParameterError` and
:class:`~iclmem.book.execute.UsageError`, whose message names the offending parameter (or file) and a fix.
Values that pass are then given to notebook 01's data cells (load, deduplicate, split validation) on
a small table, where only the package's user errors may end a case.
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iclmem.book.execute import (
    ParameterError,
    UsageError,
    check_parameters,
    notebook_parameters,
    parse_cli_parameters,
    project_parameter_names,
    read_notebook,
    read_parameters_file,
    shared_file_values,
)
from iclmem.book.parameter_rules import range_problems
from iclmem.book.table_parameters import TableFitError, table_names
from iclmem.chapters.ch01_split.manifests import split_manifests
from iclmem.data import DataError
from iclmem.data.validation import load_tables

REPO = Path(__file__).resolve().parents[2]
DECLARED = notebook_parameters(read_notebook(REPO / "notebooks" / "01_split_validation.py"))
KNOWN = project_parameter_names(REPO)
SETTINGS = {"derandomize": True, "database": None, "deadline": None, "suppress_health_check": list(HealthCheck)}
#: A message proposes a fix when it holds one of these verbs (as every notebook case of the catalogue does).
FIX_HINT = re.compile(r"\b(set|use|give|check|fix|put|write|pass|must|valid|expects|needs|name|save)\b", re.IGNORECASE)

WORDS = ["spotify", "wine_pl", "iris", "none", "members", "all", "classification", "regression", "drop", "error", ""]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.sampled_from([0, 1, -1, 50, 512]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(WORDS),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=6,
)


def typed_values(default: Any) -> st.SearchStrategy:
    """Values of a default's type, in range or not: what a user who read the parameters table might pass."""
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, int):
        return st.integers(-5, 600)
    if isinstance(default, float):
        return st.floats(allow_nan=True, allow_infinity=True)
    if isinstance(default, str):
        return st.one_of(st.sampled_from(WORDS), st.text(max_size=6))
    if isinstance(default, list) and default:
        return st.lists(typed_values(default[0]), max_size=3)
    return VALUES


#: A declared name with a value of its type (often), or any name with any value.
ENTRIES = st.one_of(
    st.sampled_from(sorted(DECLARED)).flatmap(lambda n: st.tuples(st.just(n), typed_values(DECLARED[n].default))),
    st.sampled_from(sorted(DECLARED)).flatmap(lambda n: st.tuples(st.just(n), typed_values(DECLARED[n].default))),
    st.tuples(st.deferred(lambda: NAMES), st.one_of(VALUES, VALUES.map(lambda v: [v]))),
)
NAMES = st.one_of(
    st.sampled_from(list(DECLARED)),
    st.sampled_from(["querysize", "Seed", "datasets ", "api_key", "hf_token", "", "é", "query_size", "epochs"]),
    st.text(max_size=6),
)
RAW = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["[1, 2", "{a: 1}", "!!python/object/apply:os.system ['true']", "1e-4", ".inf", ".nan", "~", "", "[]", "[0]"]
        + ["[-1, 50]", "[50, 512]", "['none']", "[members, all]", "yes", "0x10", "1_000", "2020-01-01", "[[1]]"]
        + ["&a [*a]", "{[1]: 2}", "[" * 1000 + "]" * 1000, "- 1\n- 2", "'unclosed", "\x00", "é: [é]"]
    ),
)


def same_type(value: Any, default: Any) -> bool:
    """What a declared default admits (the type rule of the module docstring of :mod:`iclmem.book.execute`)."""
    if default is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, int | float)
    if isinstance(default, list | tuple):
        uniform = len({type(x) for x in default}) == 1
        return isinstance(value, list | tuple) and (not uniform or all(same_type(v, default[0]) for v in value))
    return isinstance(value, type(default))


def check_accepted(values: dict[str, Any], checked: dict[str, Any]) -> None:
    """Accepted values are declared names, of the default's type and in range; nothing is added or dropped."""
    assert set(checked) == set(values) <= set(DECLARED)
    for name, value in checked.items():
        assert same_type(value, DECLARED[name].default), f"{name}={value!r} accepted for {DECLARED[name].default!r}"
    assert not range_problems(checked)


def check_refused(exc: UsageError, names: list[str]) -> None:
    """A refusal names an offending parameter (or the file) and proposes a fix."""
    assert isinstance(exc, UsageError)
    message = str(exc)
    assert message.strip() and "Traceback" not in message
    assert any(repr(n) in message or (n and n in message) for n in names), f"names none of {names}: {message}"
    assert FIX_HINT.search(message), f"the message proposes no fix: {message}"


def bad_names(values: dict[str, Any]) -> list[str]:
    """The names the type and name rules alone must refuse (range problems come on top)."""
    return [n for n, v in values.items() if n not in DECLARED or not same_type(v, DECLARED[n].default)]


@settings(max_examples=400, **SETTINGS)
@given(values=st.lists(ENTRIES, max_size=4).map(dict))
def test_generated_values_are_accepted_with_their_types_or_refused_by_name(values: dict[str, Any]) -> None:
    try:
        checked = check_parameters(DECLARED, values)
    except ParameterError as exc:
        event("refused")
        check_refused(exc, list(values))
        return
    event("accepted")
    assert not bad_names(values), f"accepted {values!r}"
    check_accepted(values, checked)


@settings(max_examples=300, **SETTINGS)
@given(
    pairs=st.lists(st.tuples(NAMES, RAW), max_size=3),
    file_values=st.lists(ENTRIES, max_size=2).map(dict),
)
def test_generated_command_lines_are_parsed_and_checked_or_refused(
    pairs: list[tuple[str, str]], file_values: dict[str, Any]
) -> None:
    try:
        checked = parse_cli_parameters(DECLARED, pairs, file_values)
    except ParameterError as exc:
        event("refused")
        check_refused(exc, [n for n, _ in pairs] + list(file_values))
        return
    event("accepted")
    values = {**file_values, **{n: checked[n] for n, _ in pairs}}
    check_accepted(values, checked)
    for name, raw in pairs:  # a str parameter keeps the raw text of its last -p
        if isinstance(DECLARED[name].default, str):
            assert checked[name] == dict(pairs)[name] == raw or checked[name] == dict(pairs)[name]


FILE_TEXT = st.one_of(
    st.lists(ENTRIES, max_size=4).map(lambda e: yaml.safe_dump(dict(e), allow_unicode=True).encode()),
    st.lists(RAW, max_size=3).map(lambda parts: "\n".join(parts).encode()),
    st.binary(max_size=24),
    st.sampled_from([b"", b"\xff\xfe bad: 1", b"- 1\n- 2\n", b"a: 1\na: 2\n", b"1: one\n", b"\xef\xbb\xbfseed: 3\n"]),
)


@settings(max_examples=250, **SETTINGS)
@given(content=FILE_TEXT)
def test_generated_parameter_files_are_read_and_checked_or_refused(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "params.yaml"
        path.write_bytes(content)
        try:
            data = read_parameters_file(path)
        except UsageError as exc:
            event("file refused")
            check_refused(exc, [str(path), path.name])
            return
    assert isinstance(data, dict) and all(isinstance(k, str) for k in data)
    try:
        values, skipped = shared_file_values(DECLARED, data, KNOWN)
        checked = check_parameters(DECLARED, values)
    except ParameterError as exc:
        event("values refused")
        check_refused(exc, list(data))
        return
    event("accepted")
    assert set(values) | set(skipped) == set(data) and set(skipped) <= KNOWN
    check_accepted(values, checked)


def small_table(folder: Path) -> Path:
    """A 60-row CSV with a 3-class target ``y`` and a regression-ready ``v``."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=60), "b": rng.choice(["x", "y"], 60), "y": np.arange(60) % 3})
    frame["v"] = rng.normal(size=60)
    path = folder / "small.csv"
    frame.to_csv(path, index=False)
    return path


DATA_VALUES = st.fixed_dictionaries(
    {},
    optional={
        "datasets": st.lists(st.sampled_from(["iris", "winepl", "", "small"]), max_size=2),
        "data_path": st.sampled_from(["small.csv", "missing.csv", "small.txt", ""]),
        "target": st.sampled_from(["y", "v", "a", "nope", ""]),
        "task": st.sampled_from(["", "classification", "regression", "classify"]),
        "query_sizes": st.lists(st.sampled_from([1, 2, 5, 21, 0, -3, 512]), max_size=2),
        "label_conditions": st.lists(st.sampled_from(["none", "members", "all", "random", "non-members"]), max_size=2),
        "seed": st.sampled_from([0, 1, -1, 7]),
        "max_redraws": st.sampled_from([0, 2, -1]),
        "missing_target": st.sampled_from(["error", "drop", "keep"]),
    },
)


@settings(max_examples=80, **SETTINGS)
@given(values=DATA_VALUES)
def test_generated_parameters_drive_notebook_01_data_cells_or_name_the_problem(values: dict[str, Any]) -> None:
    """The checked values go through notebook 01's cells up to the split manifests (tables, Q, label conditions)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        small_table(folder)
        params = {**{n: p.default for n, p in DECLARED.items()}, "datasets": ["iris"], "query_sizes": [5]}
        if values.get("data_path"):
            values = {**values, "data_path": str(folder / values["data_path"])}
        try:
            params.update(check_parameters(DECLARED, values))
        except ParameterError as exc:
            event("parameters refused")
            check_refused(exc, list(values))
            return
        try:
            names = table_names(params["datasets"], params["data_path"])
            tables = load_tables(
                names,
                target=params["target"],
                task=params["task"],
                carte_dir=params["carte_dir"],
                missing_target=params["missing_target"],
            )
            manifests, _ = split_manifests(
                tables,
                params["query_sizes"],
                params["seed"],
                params["label_conditions"],
                max_redraws=params["max_redraws"],
                results_dir=folder / "results",
            )
        except (DataError, TableFitError, UsageError) as exc:
            event(f"notebook: {type(exc).__name__}")
            message = str(exc)
            assert message.strip() and FIX_HINT.search(message), message
            assert not list(folder.rglob("*.tmp"))
            return
        event("notebook: split")
        assert len(manifests) == len(tables) * len(params["query_sizes"])
        assert all(m.statistics["tvd"] is None or m.statistics["tvd"] < 0.05 for m in manifests)
        assert not list(folder.rglob("*.tmp"))
        assert not math.isnan(sum(m.query_size for m in manifests))
