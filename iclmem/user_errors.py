"""The base of every error that is the user's to fix: it names the problem and the fix, and shows no traceback.

Raised in a notebook's cell (a table without its target column, a query size the table cannot
hold, ...), a traceback through the engine buries the one line that matters. IPython shows the
lines of an exception's ``_render_traceback_`` instead of a traceback, so a :class:`UserError`
reads as ``TargetError: <problem>; <fix>`` in Jupyter, in papermill's executed notebook and in
``iclmem run`` (which reports it with exit status 2, :func:`iclmem.book.execute.execute`).
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input (data, parameters, files, models): the message names the problem and the fix."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the error's name and message."""
        return [f"{type(self).__name__}: {line}" for line in str(self).splitlines() or [""]]


def user_error_names() -> set[str]:
    """The class names of every :class:`UserError` subclass defined so far (to recognise one raised in a kernel)."""
    found: set[str] = set()
    todo = [UserError]
    while todo:
        cls = todo.pop()
        found.add(cls.__name__)
        todo += cls.__subclasses__()
    return found
