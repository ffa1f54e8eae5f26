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
# # A5. The results bundle and its check on this machine
#
# Some results of this book cost CPU-hours: a registered design of fine-tuning and probing runs across the table
# suite. They are computed once (`iclmem sweep`), copied without model weights into a *results bundle* in the
# repository (`iclmem bundle make`), and read from it by every build. A bundle is named by the inputs of each
# result, not by the code's hash, so a change that moves no number (a module moved, a docstring) keeps it.
#
# Hashes alone do not show that the shipped numbers still come from the code. So before a build serves a bundle,
# it recomputes a random sample of it here, from scratch, and compares: one draw is one (task, probed epoch), its
# run fine-tuned again from M_ref up to that epoch and probed again. The training losses, the vanilla metrics and
# every probe score (loss and entropy, per query and manipulation) must land within tolerance. If one draw does
# not, the build serves nothing of the bundle and computes instead; `iclmem book --recompute` (`make book-full`)
# always computes.
#
# The default book's own runs are served the same way. A bundle of a whole results store (`iclmem bundle collect`)
# keeps every run a default build fine-tuned (notebooks 02-04, appendix A6's controls, chapter 07's DP runs, each
# with its split and configuration), every model's probe scores and chapter 06's completions, so that a fresh
# clone renders the book without fine-tuning the runs again. Its check draws a run at a probed epoch as above, or a
# completion of the base LLM, decoded again and compared word for word (greedy decoding). The completions are one
# stratum with one draw: their keys hold every input of a request, and one long prompt costs a minute on one thread.
# The fine-tuned LLM's completions are not drawn: a draw would fine-tune the LLM again, which costs more than the
# rest of a check.
#
# This build: {glue:text}`a5-bundles`.

# %% tags=["parameters"]
check_here: bool = True  # recompute a bundle's sample when this machine has no check of it under this code

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["remove-cell"]
from IPython.display import display
from myst_nb import glue

from iclmem.chapters.ch_a5_bundle import (bundle_table, bundle_texts, bundles_in_use, contents_table, cost_projection,
    drift_table, landing_table, plot_landings, precision_table, registered_designs, size_projection)
from iclmem.report.display import use_book_tables

use_book_tables()
views = bundles_in_use(check=check_here)
for key, text in bundle_texts(views).items():
    glue(key, text, display=False)

# %% [markdown]
# ## What ships
#
# One row per bundle: the grid it holds, how many of the grid's tasks, the CPU-hours they took, its size in the
# repository, and what made it (the date, the machine and the commit of the code).

# %% tags=["hide-input"]
bundle_table(views)

# %% [markdown]
# ## What a bundle keeps, and what the whole design would take
#
# A small grid's bundle keeps every probe score. A design's would not fit the repository, so a design bundle keeps,
# per probed run, what the claims read instead: its membership null (every permuted value exactly, the AUCs and
# TPRs as the integer counts they are), its manipulation effects (C12's rank sums per category, Fig. 4's AUCs),
# and the scores of the few queries a check probes again (witnesses). Per kind of item, then per stratum
# ($Q$ x regime) with the size the bundle's whole grid would take at the bytes per task measured so far:
# {glue:text}`a5-grid-size`.

# %% tags=["hide-input"]
for view in views:
    display(contents_table(view))
    display(size_projection(view).drop(columns="bytes"))

# %% [markdown]
# ## At what precision the nulls are kept
#
# The membership nulls dominate a design bundle, and within them the four columns kept as float64 (the bootstrap
# lower bounds of the AUCs and the loss gaps; the AUCs and TPRs are exact integer counts).
# `benchmarks/bundle_precision.py` reads every design claim of chapters 02-05 with those columns rounded to a narrower float and compares each
# claim's record with the shipped reading. Float32 would change no record and move no verdict, so it is the
# precision the book needs; float16 already moves null rates. The shipped bundle keeps float64 all the same: its
# nulls are in the repository's history, and rewriting them at float32 would add the whole float32 set to that
# history for good. A regenerated bundle (`iclmem bundle make` into an empty folder) is the time to narrow them.

# %% tags=["hide-input"]
precision_table("benchmarks/results/bundle_precision.json")

# %% [markdown]
# ## What the design costs, against its registration
#
# The design's cost was projected before it ran, from unit costs measured on this project's machine
# (`benchmarks/results/design_costs.json`), and registered with it (`grids/decide_power.csv`). Per stratum: the
# seconds each bundled task took in the sweep (its wall time, one thread per task) against the projection for the
# same tasks, and the whole stratum at the measured rate. A sweep that shares its machine with other work (the
# sessions that ran this one also built and tested the book) measures more than the task alone costs: read the ratio
# as an upper bound.

# %% tags=["hide-input"]
for view in registered_designs(views):
    display(cost_projection(view))

# %% [markdown]
# ## The sample recomputed here
#
# The draw takes one (task, epoch) from each stratum (classification or regression, each $Q$, each regime,
# trained or not) and the rest at random, seed {glue:text}`a5-seed`: {glue:text}`a5-draws` draws. A change that
# moves the numbers of a tenth of the bundle is caught with probability {glue:text}`a5-detection`. The verdict
# here: {glue:text}`a5-verdict`. A value $b$ of the bundle recomputed as $a$ lands within tolerance when
# {glue:text}`a5-tolerance`: float32 sums taken in another order (another CPU, another thread count) drift, and
# fine-tuning amplifies the drift with the epochs.

# %% tags=["hide-input"]
for view in (v for v in views if v.check):  # a design whose sweep is still running is not checked here
    display(landing_table(view))
    plot_landings(view)

# %% [markdown]
# ## How far a recomputation drifts, and where the tolerance sits
#
# `benchmarks/bundle_drift.py` computes the same run three times on this project's machine (the book's control
# tables at the settings the file records, with as many queries as a draw probes): with one torch thread, with two
# (float32 sums in another order, as on another CPU), and with one thread and the learning rate moved by a relative
# $10^{-3}$ (a change to one number of the engine). Each row gives the largest excess over the tolerance at a
# probed epoch: the tolerance must hold the drift (an excess of one or less) and miss the change (above one). At
# the aggressive learning rates fine-tuning is chaotic: past the first epochs two thread counts land as far apart
# as a changed learning rate, so a check draws those runs only at the epochs where the drift stays within
# tolerance ({glue:text}`a5-chaotic`). An empty table means the benchmark has not been run on this commit.

# %% tags=["hide-input"]
drift_table("benchmarks/results/bundle_drift.json")
