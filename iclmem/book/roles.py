"""The ``paper`` role: a value quoted from one of the two papers, in a chapter's prose.

Every number a chapter states is either glued from this build's computation (``{glue:text}`key```) or quoted from a
paper; a quoted one is written ``{paper}`0.668``` (or a short phrase of them, ``{paper}`241 of 530```), so that the
reader sees which numbers are the paper's and ``tests/book/test_no_typed_numbers.py`` can tell a quoted value from
a typed one. It renders as its text in a ``<span class="paper-value">`` (``book/_static/iclmem.css``);
:func:`iclmem.book.build.setup` registers it with Sphinx.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes

ROLE = "paper"
PAPER_CLASS = "paper-value"


def paper_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: dict | None = None, content: Any = None
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    """A docutils role: ``text`` as an inline node of class :data:`PAPER_CLASS`."""
    return [nodes.inline(rawtext, text, classes=[PAPER_CLASS])], []


__all__ = ["PAPER_CLASS", "ROLE", "paper_role"]
