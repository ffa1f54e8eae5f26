"""The check a notebook runs on its own parameters, right after them, whoever runs it.

``iclmem run`` checks parameters before a notebook starts (:mod:`iclmem.book.execute`), but papermill,
Jupyter's "run all" and pipeline tools start it directly: papermill hands ``-p query_sizes "[50]"``
over as the string ``"[50]"`` and a misspelt name as one more variable. So every chapter's first
cell after its parameters calls :func:`check_notebook_parameters` with ``globals()``, which reads
from the kernel's input history:

* the ``parameters`` cell as it was run (its names and defaults, the declared types),
* papermill's ``injected-parameters`` cell after it, if any (the names a run passed in),

and checks the current values with :func:`iclmem.book.execute.parameter_problems`: the rules and
messages of ``iclmem run``. A problem stops the cell with one line (no traceback: the error
renders itself, see :meth:`NotebookParameterError._render_traceback_`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any

from iclmem.book.execute import (
    Parameter,
    ParameterError,
    UsageError,
    parameter_message,
    parameter_problems,
    parse_parameters_source,
    secret_problem,
)

#: papermill's injected cell starts with this comment (its Python translator's header).
INJECTED_HEADER = "# Parameters"


class NotebookParameterError(ParameterError):
    """A notebook's parameters are wrong; shown in the notebook as one line, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        """IPython shows these lines instead of a traceback."""
        return [f"{type(self).__name__}: {line}" for line in str(self).splitlines()]


def _is_assignments_only(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return bool(tree.body) and all(isinstance(node, ast.Assign | ast.AnnAssign) for node in tree.body)


def _assigned_names(source: str) -> list[str]:
    names: list[str] = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def cells_before(history: Sequence[str]) -> tuple[str | None, str | None]:
    """The ``parameters`` cell and papermill's injected cell (or None) as the kernel ran them before the current one.

    ``history`` is IPython's input history (``In``), whose last entry is the cell now running. Walking
    back, an entry that starts with papermill's header is the injected cell; the first entry made of
    assignments only that is not is the parameters cell. Anything else first (a notebook run out of
    order) means the parameters cell cannot be told: ``(None, None)``.
    """
    injected = None
    for source in reversed(list(history)[:-1]):
        if source.lstrip().startswith(INJECTED_HEADER) and _is_assignments_only(source):
            injected = injected or source
            continue
        if _is_assignments_only(source):
            return source, injected
        return None, None
    return None, None


def check_notebook_parameters(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Check the values of the notebook's parameters in ``namespace`` (pass ``globals()``); return them.

    Names a run passed that the parameters cell does not declare, values whose type differs from
    the default's and values out of range (:mod:`iclmem.book.parameter_rules`) raise
    :class:`NotebookParameterError`. When the kernel's history does not show the parameters cell
    (cells run by hand out of order), there is nothing to check against and the values pass.
    """
    history = namespace.get("In") or namespace.get("_ih") or []
    parameters_source, injected_source = cells_before(history)
    if parameters_source is None:
        return {}
    try:
        declared: dict[str, Parameter] = parse_parameters_source(parameters_source)
    except UsageError as exc:
        raise NotebookParameterError(str(exc)) from None
    passed = _assigned_names(injected_source) if injected_source else []
    secret = secret_problem(passed)
    if secret:
        raise NotebookParameterError(secret)
    values = {name: namespace[name] for name in declared if name in namespace}
    values.update({name: namespace[name] for name in passed if name not in declared and name in namespace})
    problems, checked = parameter_problems(declared, values)
    if problems:
        raise NotebookParameterError(parameter_message(problems))
    return checked
