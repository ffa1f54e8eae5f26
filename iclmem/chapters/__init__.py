"""The paper layer: one package per notebook of the book, in book order, holding what only that chapter needs.

``ch00_scorecard`` (notebook 00) to ``ch07_mitigation`` (07), then the appendices ``ch_a1_reference_ltm`` to
``ch_a4_audit`` (A1-A4). Each package has, where the chapter needs them, ``paper.py`` (the paper's values),
``claims.py`` (its claims and their rules), ``tables.py`` and ``figures.py``; its ``__init__`` is what the notebook
imports. The vocabulary the chapters share (claim records, verdicts, glue, display) is :mod:`iclmem.report`; the
book machinery is :mod:`iclmem.book`. Each module's docstring opens with the paper sections it covers. The engine
(the rest of :mod:`iclmem`) never imports from here.
"""
