"""The report vocabulary every chapter shares: claim records, the claims registry, verdict rules, glue, display.

:mod:`~iclmem.report.records` (one claim's record and its verdict words), :mod:`~iclmem.report.registry` (the
claims of both papers, C1-C16 and D1-D9, and the book's own rows), :mod:`~iclmem.report.verdicts` (the rules that
turn a number, an interval or a null into a verdict), :mod:`~iclmem.report.glue` (records glued into a notebook
and read back) and :mod:`~iclmem.report.display` (tables as a reader reads them). Like :mod:`iclmem.chapters`, this
package presents results: the engine never imports it.
"""
