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
# keep, a missing API key, a prompt over the context window, and more. Beside them we list what the
# results store does when the fault is not the user's: a damaged or truncated file, two processes on
# one run, a full disk and a read-only store.
#
# The table is generated: each row was run while this page was built, through the package's own
# entry point (the Python API, or the `iclmem` command, whose user errors exit with status 2 and
# print no traceback), on tiny inputs written into a temporary folder (shown as `<folder>`). The
# cases live in `iclmem/chapters/ch_a3_bad_inputs/`, one module per entry point (`cli_cases.py`,
# `data_cases.py`, ...), collected in order by `catalogue.py`; `tests/chapters/ch_a3_bad_inputs/test_bad_inputs.py`
# runs the same cases and checks each message against two patterns, one for the problem and one for the fix. To add
# a case, add a `BadInput` record to its entry point's list: the test and this page pick it up.

# %% tags=["parameters"]
cases: list = []  # ids of the cases to show (empty: every case of the catalogue)
store_cases: list = []  # ids of the store cases to show (empty: every store case)

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["hide-input"]
from IPython.display import HTML

from iclmem.chapters.ch_a3_bad_inputs import (
    catalogue,
    catalogue_html,
    store_catalogue,
    store_summary_text,
    summary_text,
)
from iclmem.report.display import use_book_tables

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

# %% [markdown]
# ## The store
#
# We will show what the results store does when a file in it is damaged or cut short, when two
# processes start the same fine-tuning run, when its disk fills up, and when it is a read-only copy
# (a pre-computed store handed to a class or a reviewer). Each row was run while this page was built,
# on a tiny store in a temporary folder: "what it did" is measured (the numbers computed again are
# compared with the undamaged ones; the two processes' results with each other). The full disk and
# the read-only mount are simulated in the process (`iclmem/store/faults.py`); `tests/store/test_store_disks.py`
# makes them on a real, deliberately small tmpfs and a read-only bind mount, through `iclmem run`. The cases live in
# `iclmem/chapters/ch_a3_bad_inputs/store_cases.py`; `tests/chapters/ch_a3_bad_inputs/test_bad_inputs.py` runs them too.

# %% tags=["hide-input"]
store_table = store_catalogue(only=store_cases)
print(store_summary_text(store_table))
HTML(catalogue_html(store_table))

# %% [markdown]
# We showed that a damaged or truncated file is never served: it is moved to `quarantine/` with one
# line naming it and computed again to the same numbers; that two writers of one key do the work
# once; and that a full or read-only store stops with one line (exit status 2 under `iclmem run`)
# naming the store and the space needed, or what it would have to compute, and leaves nothing
# partial. `iclmem store verify [--repair]` and `iclmem store gc` check and tidy a whole store
# ({doc}`../book/reproduce`).
