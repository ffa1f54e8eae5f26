# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A3. Bad inputs and their messages
#
# Every mistake below is one the package answers with an error whose message names the problem and
# proposes the fix: unknown or mistyped parameters, credentials passed as parameters, missing or
# unreadable files, a target column that does not exist, a table too small for $Q$, a single-class
# or partly missing target, more classes or features than the model takes, corrupt checkpoints, a
# grid file with a typo, an unreachable scheduler, an unknown manipulation, epochs a run did not
# keep, a missing API key, a prompt over the context window, and more.
#
# The table is generated: each row was run while this page was built, through the package's own
# entry point (the Python API, or the `iclmem` command, whose user errors exit with status 2 and
# print no traceback), on tiny inputs written into a temporary folder (shown as `<folder>`). The
# cases live in `iclmem/chapters/bad_inputs.py`; `tests/test_bad_inputs.py` runs the same cases and
# checks each message against two patterns, one for the problem and one for the fix. To add a case,
# add a `BadInput` there: the test and this page pick it up.

# %% tags=["parameters"]
cases: list = []  # ids of the cases to show (empty: every case of the catalogue)

# %% tags=["remove-cell"]
from iclmem.notebook_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["hide-input"]
from IPython.display import HTML

from iclmem.chapters.bad_inputs import catalogue, catalogue_html, summary_text
from iclmem.chapters.display import use_book_tables

table = catalogue(only=cases)
print(summary_text(table))
use_book_tables()  # every table below: no index, 3 significant digits, lr as 1e-2

# %% [markdown]
# ## The catalogue
#
# One row per bad input, in the order of the package's layers: notebooks and their parameters, the
# command line, data loading and splits, fine-tuning, grids, regimes, probing and the model,
# sweeps, the LLM replication and the claims scorecard.

# %% tags=["hide-input"]
HTML(catalogue_html(table))
