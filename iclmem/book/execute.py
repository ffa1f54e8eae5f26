"""Run jupytext text notebooks with papermill, checking parameters first.

Papermill injects any name it is given, so a typo (``-p querysize 64``) silently runs the
notebook with its defaults. Here the ``parameters``-tagged cell is read with :mod:`ast`, and
every value passed in is checked against it before anything executes:

* an unknown name is an error that lists the valid names and their defaults;
* a value whose type differs from the default's type is an error (an ``int`` is fine where the
  default is a ``float``; a ``None`` default accepts anything);
* a name that looks like a secret (``*key*``, ``*token*``, ``*secret*``, ``*password*``) is
  refused, because papermill writes parameters into the executed notebook.

Command-line values arrive as strings and are parsed with YAML (like papermill's ``-y``),
using YAML 1.2 number rules so that ``1e-4`` is a float.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shutil
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import yaml

from iclmem.runtime.progress import LABEL_ENV, PROGRESS_ENV
from iclmem.store.atomic import atomic_write
from iclmem.user_errors import UserError

PARAMETERS_TAG = "parameters"
SECRET_PATTERN = re.compile(r"key|token|secret|password", re.IGNORECASE)


class UsageError(UserError):
    """A mistake by the user (bad path, bad parameter): reported without a traceback."""


class ParameterError(UsageError):
    """A parameter passed to a notebook is unknown, mistyped or looks like a secret."""


class NotebookExecutionError(Exception):
    """A notebook raised while executing; ``output`` holds the partially executed copy."""

    def __init__(self, message: str, output: Path | None = None) -> None:
        super().__init__(message)
        self.output = output


class NotebookUserError(UsageError):
    """A notebook stopped on a :class:`~iclmem.user_errors.UserError` (its message names the problem and the fix):
    reported in one line, as a usage error; ``output`` holds the partially executed copy."""

    def __init__(self, message: str, output: Path | None = None) -> None:
        super().__init__(message)
        self.output = output


@dataclass(frozen=True)
class Parameter:
    """One assignment of a notebook's ``parameters`` cell."""

    name: str
    default: Any

    @property
    def type_name(self) -> str:
        """The default's type as shown to users (``any`` for a ``None`` default)."""
        return "any" if self.default is None else type(self.default).__name__


# --- reading notebooks and their parameters cell ------------------------------------------------


def read_notebook(path: str | Path) -> nbformat.NotebookNode:
    """Read a jupytext text notebook (``.py``, ``.md``) or an ``.ipynb`` into a NotebookNode."""
    import jupytext

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such notebook: {path}; check the path (relative paths start at {Path.cwd()})")
    try:
        return jupytext.read(path)
    except Exception as exc:  # jupytext raises many kinds of errors on malformed input
        raise UsageError(f"cannot read notebook {path}: {exc}") from exc


def _parameters_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    for cell in nb.cells:
        if cell.cell_type == "code" and PARAMETERS_TAG in cell.get("metadata", {}).get("tags", []):
            return cell
    return None


def parse_parameters_source(source: str) -> dict[str, Parameter]:
    """Read ``name = literal`` assignments (annotated or not) from a parameters cell's source."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise UsageError(
            f"the parameters cell is not valid Python: {exc}; fix the syntax of the cell tagged parameters"
        ) from exc
    found: dict[str, Parameter] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names:
            continue
        try:
            default = ast.literal_eval(value)
        except ValueError as exc:
            raise UsageError(
                f"parameter {names[0]!r} has a default that is not a literal ({ast.unparse(value)}); "
                "parameters cells hold plain values so they can be checked and overridden: write a number, string, "
                "list or dict there "
                "and compute the value in a later cell"
            ) from exc
        for name in names:
            found[name] = Parameter(name, default)
    return found


def parameter_comments(source: str) -> dict[str, str]:
    """The trailing comment of each assignment of a parameters cell (``name = 1  # what it is`` -> ``what it is``)."""
    import io
    import tokenize

    comments: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = tok.string.lstrip("#").strip()
        tree = ast.parse(source)
    except (tokenize.TokenError, SyntaxError):
        return {}
    out: dict[str, str] = {}
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            if isinstance(target, ast.Name) and node.end_lineno in comments:
                out[target.id] = comments[node.end_lineno]
    return out


def notebook_parameters(nb: nbformat.NotebookNode) -> dict[str, Parameter]:
    """The parameters declared in the notebook's ``parameters``-tagged cell, in order."""
    cell = _parameters_cell(nb)
    if cell is None:
        return {}
    return parse_parameters_source(cell.source)


def format_parameters_table(params: Mapping[str, Parameter], ranges: Mapping[str, str] | None = None) -> str:
    """A plain-text table of name, type and default, one parameter per row; and a ``range`` column where ``ranges``
    (name -> the range in words, :meth:`iclmem.book.parameter_rules.Rule.describe`) holds one of them."""
    if not params:
        return "(this notebook has no parameters cell)"
    ranges = {n: r for n, r in (ranges or {}).items() if n in params and r}
    rows = [("name", "type", "default", *(("range",) if ranges else ()))] + [
        (p.name, p.type_name, repr(p.default), *((ranges.get(p.name, ""),) if ranges else ())) for p in params.values()
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --- parsing and checking values ------------------------------------------------------------------


class _Yaml12Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-4`` as a float (YAML 1.2), not as the string ``"1e-4"``."""


_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def load_yaml(text: str) -> Any:
    """Parse YAML text with YAML 1.2 float rules."""
    return yaml.load(text, Loader=_Yaml12Loader)  # a SafeLoader subclass: safe


def parse_cli_value(raw: str, default: Any = None) -> Any:
    """Turn a command-line string into a value, as papermill's ``-y`` would.

    ``"64"`` becomes ``64``, ``"[1, 2]"`` a list, ``"true"`` a bool. Where the default is a
    string, the raw text is kept (so ``-p dataset 2020`` stays ``"2020"``).
    """
    if isinstance(default, str):
        return raw
    try:
        return load_yaml(raw)
    except (yaml.YAMLError, RecursionError):  # nested deeper than the parser goes: text, which the type check names
        return raw


def _matches(value: Any, default: Any) -> bool:
    """Whether ``value`` may replace ``default``; containers are checked element by element."""
    if default is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, int | float)
    if isinstance(default, list | tuple):
        if not isinstance(value, list | tuple):
            return False
        kinds = {type(x) for x in default}
        if len(kinds) != 1:  # empty or mixed default: only the container type is known
            return True
        return all(_matches(v, default[0]) for v in value)
    if isinstance(default, dict):
        return isinstance(value, dict)
    return isinstance(value, type(default))


def is_secret_name(name: str) -> bool:
    """Whether a parameter name looks like it holds a credential."""
    return bool(SECRET_PATTERN.search(name))


#: How values are given, appended to every parameter error: the fix from where the user stands.
PASSING_HINT = (
    "give values as -p NAME VALUE (iclmem run, papermill) or, for lists and dicts, as YAML: "
    "-y 'NAME: [1, 2]' (papermill) or -f params.yaml"
)


def unknown_parameter_problem(unknown: Iterable[str], declared: Mapping[str, Parameter]) -> str:
    """One line naming the unknown names, the closest valid name of each and every valid name."""
    import difflib

    unknown = list(unknown)
    close = {n: difflib.get_close_matches(n, list(declared), n=1, cutoff=0.6) for n in unknown}
    named = ", ".join(f"{n!r}" + (f" (did you mean {close[n][0]!r}?)" if close[n] else "") for n in unknown)
    valid = ", ".join(declared) or "(none)"
    return f"unknown parameter{'s' if len(unknown) > 1 else ''} {named}; valid names: {valid}"


def type_problem(name: str, default: Any, value: Any) -> str:
    """One line: the type a parameter expects (its default's) and what it got."""
    uniform = isinstance(default, list | tuple) and len({type(x) for x in default}) == 1
    element = f" of {type(default[0]).__name__}" if uniform else ""
    type_name = "any" if default is None else type(default).__name__
    got = f"{type(value).__name__} {value!r}"
    return f"parameter {name!r} expects {type_name}{element} like its default {default!r}, got {got}"


def parameter_problems(
    declared: Mapping[str, Parameter], values: Mapping[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """Every problem of ``values`` (unknown names, wrong types, values out of range: one line each) and the values
    that passed, floats normalised. The one rule set of ``iclmem run`` and of the notebooks' own check cell."""
    from iclmem.book.parameter_rules import range_problems

    problems: list[str] = []
    unknown = [name for name in values if name not in declared]
    if unknown:
        problems.append(unknown_parameter_problem(unknown, declared))
    checked: dict[str, Any] = {}
    for name, value in values.items():
        if name not in declared:
            continue
        default = declared[name].default
        if not _matches(value, default):
            problems.append(type_problem(name, default, value))
            continue
        if isinstance(default, float) and isinstance(value, int):
            value = float(value)
        elif isinstance(default, tuple) and isinstance(value, list):
            value = tuple(value)
        checked[name] = value
    problems += range_problems(checked)
    return problems, checked


def parameter_message(problems: list[str]) -> str:
    """The problems, one line each, the last followed by how to give values: one line for one problem."""
    return "\n".join([*problems[:-1], f"{problems[-1]} ({PASSING_HINT})"])


def secret_problem(names: Iterable[str]) -> str | None:
    """The refusal of names that look like credentials (papermill writes parameters into the executed notebook)."""
    secret = [name for name in names if is_secret_name(name)]
    if not secret:
        return None
    return (
        f"refusing to pass {', '.join(map(repr, secret))}: names like this look like credentials, and "
        "papermill writes parameters into the executed notebook. Put the value in an environment "
        "variable and read it in the notebook with os.environ instead."
    )


def check_parameters(declared: Mapping[str, Parameter], values: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ``values`` against the declared parameters; return them with floats normalised.

    Raises :class:`ParameterError` naming every problem at once, one line each, and how to give values.
    """
    secret = secret_problem(values)
    if secret:
        raise ParameterError(secret)
    problems, checked = parameter_problems(declared, values)
    if problems:
        raise ParameterError(parameter_message(problems))
    return checked


def parse_cli_parameters(
    declared: Mapping[str, Parameter],
    pairs: list[tuple[str, str]] | None = None,
    file_values: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Combine ``-f params.yaml`` values and ``-p NAME VALUE`` strings (the latter win), then check."""
    values: dict[str, Any] = dict(file_values or {})
    for name, raw in pairs or []:
        default = declared[name].default if name in declared else None
        values[name] = parse_cli_value(raw, default)
    return check_parameters(declared, values)


def read_parameters_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping of parameter values (``-f params.yaml``)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such parameters file: {path}; check the path, or give the values with -p NAME VALUE")
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8 text, one `name: value` "
            "per line"
        ) from exc
    except RecursionError as exc:
        raise UsageError(
            f"{path} nests its values too deeply to be read; write one `name: value` per line with flat lists"
        ) from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"{path} is not valid YAML: {exc}; fix the syntax (one `name: value` per line)") from exc
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise UsageError(
            f"{path} must hold a mapping of parameter names to values (one `name: value` per line), got "
            f"{type(data).__name__}"
        )
    return data


def shared_file_values(
    declared: Mapping[str, Parameter],
    file_values: Mapping[str, Any],
    known: Iterable[str],
    source: str = "the parameters file",
) -> tuple[dict[str, Any], list[str]]:
    """The values of a parameters file shared by a chain of notebooks that this notebook takes, and the names it skips.

    One file can drive every chapter (``data_path``, ``target``, ``learning_rates``, ...): a name
    this notebook does not declare is skipped when another notebook of the project (``known``)
    declares it, and is an error (a typo) when none does.
    """
    known = set(known)
    stray = sorted(n for n in file_values if n not in declared and n not in known)
    if stray:
        raise ParameterError(
            f"{source}: {', '.join(map(repr, stray))} {'is' if len(stray) == 1 else 'are'} a parameter of no notebook "
            f"of this project; check the spelling (`iclmem params <notebook>` lists each notebook's parameters)."
        )
    return {n: v for n, v in file_values.items() if n in declared}, sorted(n for n in file_values if n not in declared)


def project_parameter_names(root: str | Path) -> set[str]:
    """Every parameter name declared by a notebook of the project (``<root>/notebooks/*.py``)."""
    names: set[str] = set()
    for path in sorted(Path(root, "notebooks").glob("*.py")):
        names |= set(notebook_parameters(read_notebook(path)))
    return names


# --- the book's shared defaults ------------------------------------------------------------------

#: The file that declares the book's parameters, their groups and shared defaults, relative to the project root (see
#: the file's header; :mod:`iclmem.book.parameter_rules` reads its ranges, :mod:`iclmem.book.page_view` its meanings).
SHARED_DEFAULTS = "book/parameters.yaml"


@dataclass(frozen=True)
class SharedGroup:
    """Parameter values a group of notebooks must agree on (they share results in the store, Sec. 4.1-4.2)."""

    name: str
    notebooks: tuple[str, ...]
    values: Mapping[str, Any]


def read_shared_defaults(path: str | Path) -> list[SharedGroup]:
    """The groups of a parameters file (``groups: {name: {notebooks: [stems]}}``), each with the defaults of the
    parameters that name it (``parameters: {name: {group: g, default: value}}``); [] when the file is absent."""
    path = Path(path)
    if not path.is_file():
        return []
    data = load_yaml(path.read_text()) or {}
    groups, parameters = data.get("groups") or {}, data.get("parameters") or {}
    values: dict[str, dict[str, Any]] = {str(name): {} for name in groups}
    for name, spec in parameters.items():
        group = (spec or {}).get("group")
        if group is None:
            continue
        if group not in values or "default" not in spec:
            raise UsageError(
                f"{path}: parameter {name!r} names group {group!r}; a shared parameter needs a group of `groups` "
                f"({', '.join(values) or 'none'}) and a `default`"
            )
        values[group][str(name)] = spec["default"]
    out = []
    for name, group in groups.items():
        if not isinstance(group, dict) or not isinstance(group.get("notebooks"), list):
            raise UsageError(f"{path}: group {name!r} must hold `notebooks: [stems]`, got {group!r}")
        out.append(SharedGroup(str(name), tuple(str(s) for s in group["notebooks"]), values[str(name)]))
    return out


def shared_defaults_of(groups: Iterable[SharedGroup], stem: str) -> dict[str, Any]:
    """The shared values of one notebook (by stem): the union of the groups that list it; a name two of them set is
    an error."""
    values: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for group in groups:
        if stem not in group.notebooks:
            continue
        for name, value in group.values.items():
            if name in values:
                raise UsageError(
                    f"{SHARED_DEFAULTS}: {name!r} of {stem} is set by both {owner[name]!r} and {group.name!r}; "
                    "keep it in one group"
                )
            values[name], owner[name] = value, group.name
    return values


def shared_default_conflicts(root: str | Path) -> list[str]:
    """Every disagreement between ``<root>/book/parameters.yaml`` and the parameters cells of the notebooks it lists.

    A notebook that lacks a shared name, or declares it with another default, is one line each:
    run on its own it would key its results differently from the notebooks it shares them with.
    """
    root = Path(root)
    groups = read_shared_defaults(root / SHARED_DEFAULTS)
    problems = []
    for stem in sorted({s for g in groups for s in g.notebooks}):
        source = root / "notebooks" / f"{stem}.py"
        if not source.is_file():
            problems.append(f"{stem}: listed in {SHARED_DEFAULTS} but {source} does not exist")
            continue
        declared = notebook_parameters(read_notebook(source))
        for name, value in shared_defaults_of(groups, stem).items():
            if name not in declared:
                problems.append(f"{stem}: declares no {name!r} (shared default {value!r})")
            elif declared[name].default != value or type(declared[name].default) is not type(value):
                problems.append(f"{stem}: {name} = {declared[name].default!r}, the shared default is {value!r}")
    return problems


def with_shared_defaults(
    declared: Mapping[str, Parameter], shared: Mapping[str, Any], values: Mapping[str, Any]
) -> dict[str, Any]:
    """``values`` (the user's, they win) over the shared defaults of a notebook.

    A shared value is passed only where the notebook declares the name with another default, so a
    notebook whose cell agrees with the shared file runs with no injected parameter (and the
    book's cache keys stay those of its parameters alone).
    """
    merged = {n: v for n, v in shared.items() if n in declared and n not in values and v != declared[n].default}
    return {**merged, **values}


def is_user_error(ename: str, traceback: list[str]) -> bool:
    """Whether a notebook's error is a :class:`~iclmem.user_errors.UserError`: it rendered itself as its name and
    message, one line each, in place of a traceback."""
    return bool(traceback) and all(line.startswith(f"{ename}: ") for line in traceback)


# --- executing --------------------------------------------------------------------------------


def project_root(start: str | Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: cwd) holding ``pyproject.toml``; else ``start``."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return here


#: The files that make a folder a book project ``iclmem book`` can build (the checkout, or a copy of its book files).
BOOK_FILES: tuple[str, ...] = ("_config.yml", "_toc.yml")


def is_book_project(folder: Path) -> bool:
    """Whether ``folder`` holds every file of :data:`BOOK_FILES`."""
    return all((folder / name).is_file() for name in BOOK_FILES)


def package_checkout() -> Path | None:
    """The checkout the imported ``iclmem`` package lives in (an editable install, or ``PYTHONPATH``) when it is a
    book project; None for an installed copy without the book (a wheel in ``site-packages``)."""
    folder = Path(__file__).resolve().parents[2]  # <checkout>/iclmem/book/execute.py
    return folder if is_book_project(folder) else None


def book_root(start: str | Path | None = None) -> Path:
    """The book project ``iclmem book`` builds when ``--root`` is not given.

    The nearest folder at or above ``start`` (default: cwd) that is a book project (:data:`BOOK_FILES`), so a
    checkout, or a copy of its book files, is found from inside it; else the checkout of the imported package, so the
    command also runs from a folder of your own (your table and parameters file beside you); else a
    :class:`UsageError` that says what was searched.
    """
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if is_book_project(folder):
            return folder
    checkout = package_checkout()
    if checkout is None:
        raise UsageError(
            f"no book project found: no folder at or above {here} holds {' and '.join(BOOK_FILES)}, and the iclmem "
            f"package ({Path(__file__).resolve().parents[1]}) is not in a checkout of the project; run from the "
            "project's folder or pass --root PATH (the folder that holds _config.yml and _toc.yml)"
        )
    return checkout


def default_output_path(notebook: str | Path) -> Path:
    """Where ``iclmem run`` writes an executed notebook by default: ``_build/runs/<stem>.ipynb``."""
    return project_root() / "_build" / "runs" / f"{Path(notebook).stem}.ipynb"


#: Kernel options: output written to the kernel's file descriptors (``sys.__stderr__``: the progress bars
#: of :mod:`iclmem.runtime.progress`) goes to the terminal, not into the notebook; the kernel logs errors only
#: (not its warning that it talks to this process over local TCP).
KERNEL_ARGUMENTS = ["--IPKernelApp.capture_fd_output=False", "--IPKernelApp.log_level=ERROR"]


def shareable_copy(path: Path, parameters: Mapping[str, Any], cwd: Path, name: str) -> None:
    """Rewrite an executed notebook so it names, not locates, the files it read (:mod:`iclmem.book.shareable`; their
    absolute paths go to the results store) and papermill's record of where it ran (``name``: the output's file name,
    not the temporary path it was written to)."""
    from iclmem.book.shareable import make_shareable, path_values

    executed = nbformat.read(path, as_version=4)
    record = executed.metadata.get("papermill", {})
    record["output_path"] = name
    source = record.get("input_path")  # a path, or the notebook itself when papermill was given one (random cell ids)
    record["input_path"] = Path(source).name if isinstance(source, str) and source else None
    if path_values(parameters, cwd):
        from iclmem.data.manifest import results_root

        store = results_root()
        make_shareable(executed, parameters, cwd, store if store.is_absolute() else cwd / store)
    nbformat.write(executed, path)


def execute(
    nb: nbformat.NotebookNode,
    output: Path,
    parameters: Mapping[str, Any],
    *,
    cwd: Path,
    progress: bool = True,
    label: str | None = None,
) -> None:
    """Execute ``nb`` with papermill, writing the result to ``output`` atomically.

    The notebook is written to ``output`` only once every cell ran, with the user's files named, not
    located (:func:`shareable_copy`); on failure the partly
    executed notebook is written next to it as ``<stem>.failed.ipynb``. The kernel's loops draw
    one live line on this process's terminal (:mod:`iclmem.runtime.progress`), prefixed with ``label``
    (default: the output's stem); ``progress=False`` silences it.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    kernel = nb.metadata.get("kernelspec", {}).get("name") or "python3"
    failed = output.with_name(f"{output.stem}.failed.ipynb")

    def run(tmp: Path) -> None:
        try:
            papermill.execute_notebook(
                nb,
                str(tmp),
                parameters=dict(parameters),
                kernel_name=kernel,
                language="python",
                progress_bar=False,  # the kernel's own line (iclmem.runtime.progress) says more than a cell count
                cwd=str(cwd),
                extra_arguments=KERNEL_ARGUMENTS,
            )
        except PapermillExecutionError:
            if tmp.is_file():
                shutil.copyfile(tmp, failed)
            raise
        shareable_copy(tmp, parameters, cwd, output.name)

    try:
        with warnings.catch_warnings():
            # papermill warns about the temporary file's suffix; its content is an .ipynb
            warnings.filterwarnings("ignore", message="The specified file .* does not end in one of")
            with kernel_environment({PROGRESS_ENV: "1" if progress else "0", LABEL_ENV: label or output.stem}):
                atomic_write(output, run)
    except PapermillExecutionError as exc:
        if is_user_error(exc.ename, exc.traceback):
            raise NotebookUserError(f"{exc.evalue}\n(partly executed notebook: {failed})", output=failed) from None
        raise NotebookExecutionError(
            f"{str(exc).strip()}\n\n(partly executed notebook: {failed})",
            output=failed,
        ) from exc
    failed.unlink(missing_ok=True)


@contextlib.contextmanager
def kernel_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the kernels started inside the block (they inherit this
    process's environment), and restore the previous values afterwards."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_notebook(
    notebook: str | Path,
    parameters: Mapping[str, Any] | None = None,
    output: str | Path | None = None,
    *,
    cwd: str | Path | None = None,
    progress: bool = True,
) -> Path:
    """Check ``parameters`` against ``notebook``'s parameters cell, execute it, return the output path.

    ``parameters`` are Python values (not strings). ``output`` defaults to
    ``_build/runs/<stem>.ipynb``; the kernel runs in ``cwd`` (default: the current directory, so
    relative data paths given as parameters mean what they say).
    """
    nb = read_notebook(notebook)
    checked = check_parameters(notebook_parameters(nb), parameters or {})
    out = Path(output) if output is not None else default_output_path(notebook)
    if out.suffix != ".ipynb":
        raise UsageError(f"the output must be an .ipynb file, got {out}")
    from iclmem.data.manifest import results_root
    from iclmem.store.atomic import remove_dead_leftovers

    here = Path(cwd) if cwd is not None else Path.cwd()
    store = results_root()
    remove_dead_leftovers(store if store.is_absolute() else here / store)  # of a run killed mid-write into the store
    execute(nb, out, checked, cwd=here, progress=progress, label=Path(notebook).stem)
    return out
