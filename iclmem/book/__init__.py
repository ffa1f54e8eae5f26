"""The book machinery: executing the notebooks, checking their parameters, staging and rendering the book.

:mod:`~iclmem.book.build` (``iclmem book``: keys, cache, staging, Jupyter Book), :mod:`~iclmem.book.lanes` (chapters
that execute side by side), :mod:`~iclmem.book.execute` (papermill with parameter checks, ``iclmem run``),
:mod:`~iclmem.book.parameter_check` (the check each notebook runs on its own parameters),
:mod:`~iclmem.book.table_parameters` (the data parameters every tabular chapter shares),
:mod:`~iclmem.book.page_view` (how an executed notebook reads in the book), :mod:`~iclmem.book.shareable`
(executed notebooks without absolute paths) and :mod:`~iclmem.book.own_book` (a book of your own table). The
command line, :mod:`iclmem.cli`, sits beside it. The engine never imports this package.
"""
