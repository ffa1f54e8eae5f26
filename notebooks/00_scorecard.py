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
# # Claims scorecard

# %% tags=["parameters"]
executed_dir: str = "_build/executed"  # where `iclmem book` writes the executed chapters (relative to the repository root)

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["remove-input"]
from IPython.display import HTML
from myst_nb import glue

from iclmem.report.glue import glue_text, scorecard_table, verdict_counts
from iclmem.report.design_glue import design_state_text, with_registered_power
from iclmem.chapters.ch00_scorecard import compact_html, counts_html, plot_points, split_beyond

table = with_registered_power(scorecard_table(executed_dir), executed_dir)  # the design's power, registered before it ran
glue_text("design_state", design_state_text(executed_dir))
for verdict, n in verdict_counts(table).items():
    glue(f"n_{verdict.replace(' ', '_')}", int(n), display=False)
glue("n_claims", len(table), display=False)
HTML(counts_html(table))

# %% [markdown]
# One row per quantitative claim of *Probing Memorization of Tabular In-Context Learning* (IclMem,
# C1-C16; C12 as its three sub-claims) and *Memorization In In-Context Learning* (Golchin et al.
# 2024, D1-D9): the paper's value, this build's, and the verdict. Open *why* for the rule's reason,
# how often the rule says "reproduced" by chance alone (the *null rate*) and what that null
# permutes; the claim's id links to the section that computes it.

# %% [markdown]
# The book's own grid is small (two tables, a few dozen runs). Chapters 02-05 also read their claims on the
# *registered decision design* (`grids/decide.yaml`, on the table suite, with its power committed before it ran):
# {glue:text}`design_state`. While the design is interim, its reading stands in a column of its own and the grid
# decides; once every task is bundled and its recomputed sample is accepted on this machine, the design decides and
# the grid's reading moves beside it. Each row's details say which decided, and the claim's registered power on the
# design: how often its rule agrees when the paper's value holds, as computed before the design ran.

# %% tags=["remove-input"]
papers, beyond = split_beyond(table)
HTML(compact_html(papers))

# %% [markdown]
# ## Beyond the papers
#
# Claims the papers do not make, computed by the book: DP-SGD, the mitigation IclMem's Sec. 6
# names (chapter 7).

# %% tags=["remove-input"]
HTML(compact_html(beyond))

# %% [markdown]
# ## The numbers beside the paper's
#
# For the claims that are shares or AUCs: the paper's value (×) and this build's (dot) with its 95%
# interval, coloured by the claim's verdict. Each share is over the rows its claim reads, and its *why*
# names them: for most tabular claims the run × probing-epoch configurations at one $Q$, label conditions
# N and All pooled (C4's collapse share reads every label condition); for most LLM claims the instances
# the model is known to have seen (its fine-tuning members, or every instance when it was not
# fine-tuned).

# %% tags=["remove-input"]
fig = plot_points(table)

# %% [markdown]
# ## How the verdicts are decided
#
# Nothing on this page is typed: each chapter records its claims as it computes them
# (`iclmem.report.glue.glue_claim`), and this page reads those records back from the executed
# chapters; `iclmem book` executes it after every other notebook. The verdict is the chapter's.
# Every claim states its *null*: what its evidence assumes exchangeable when nothing is there (for
# the tabular claims, members and non-members of each run's probed queries; for the LLM claims,
# what the claim contrasts within an instance), and the chapter reruns the claim's own rule on data
# permuted that way.
#
# - **reproduced**: this build agrees with the claim, in direction or in value as the claim states
#   it, *and* its rule says so in at most 5% of the null draws (or the chapter states why no null
#   applies, e.g. a loss ratio that no relabelling changes). Most claims are checked in direction
#   only, since the book runs a small reference tabular model and small language models rather
#   than the papers' ConTextTab and GPT-4.
# - **differs**: the chapter computed the claim and its result contradicts the paper's.
# - **inconclusive**: the build agrees, but chance alone would agree as often (the null rate is
#   above 5%); or it disagrees within the noise. At this sample size the build cannot separate
#   the paper's value from its contradiction.
# - **holds by construction**: the procedure makes the claim true whatever the data: the splits
#   are redrawn until they pass the very checks of C14, and a model without positional encoding
#   cannot tell a shuffled context from the original (C12b).
# - **not comparable here**: the claim is a value on the paper's model's own scale (ConTextTab's peak
#   AUC, its outcome shares) and states no direction or shape a different model could show; ours is
#   computed and shown beside it, and the row's details say how each claim is compared (by value,
#   direction or shape) and why.
# - **not testable here**: the build cannot compute the claim, e.g. because the paper's models, data
#   or human review are not available; the reason says which.
# - **missing**: the chapter that should record the claim did not (it has not been executed, or it
#   records no such claim). This page shows the gap instead of dropping the row.
#
# Verdicts over the {glue:text}`n_claims` claims: reproduced {glue:text}`n_reproduced`, differs
# {glue:text}`n_differs`, inconclusive {glue:text}`n_inconclusive`, holds by construction
# {glue:text}`n_holds_by_construction`, not comparable here {glue:text}`n_not_comparable_here`, not testable
# here {glue:text}`n_not_testable_here`, missing
# {glue:text}`n_missing`. Neither *inconclusive* nor *holds by construction* counts as reproduced.
# A verdict reached with the book's default parameters can change with others: each chapter lists
# its parameters, and `iclmem book -p <notebook> <name> <value>` rebuilds the book with them.
