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
#
# We show, for every quantitative claim of the two papers, what this build of the book finds: the
# sixteen claims C1-C16 of *Probing Memorization of Tabular In-Context Learning* (IclMem; ConTextTab
# on 10 CARTE tasks, 1,128 probing runs) and the nine claims D1-D9 of *Memorization In In-Context
# Learning* (Golchin et al. 2024; GPT-4 on WNLI, RTE, TREC and DBpedia). Each row gives the paper's
# value, this build's value with its interval where one exists, a verdict with its reason, the rate
# at which the claim's rule says "reproduced" by chance alone (its *null rate*), and a link to the
# chapter that computes it. C12 is judged as its three sub-claims (C12a-c).
#
# Nothing in the table is typed on this page. Each chapter records its claims as it computes them
# (`iclmem.chapters.claims.glue_claim`), and this page reads those records back from the executed chapter
# notebooks in `executed_dir`. `iclmem book` executes this page after every other notebook and again
# whenever one of them changed, so the scorecard always describes the chapters it links to.

# %% tags=["parameters"]
executed_dir: str = "_build/executed"  # where `iclmem book` writes the executed chapters (relative to the repository root)

# %% tags=["hide-input"]
from IPython.display import HTML
from myst_nb import glue

from iclmem.chapters.claims import scorecard_html, scorecard_table, verdict_counts
from iclmem.chapters.display import use_book_tables
use_book_tables()  # every table below: no index, 3 significant digits, lr as 1e-2

# %% [markdown]
# ## The scorecard
#
# One row per claim, C1-C16 then D1-D9. *paper* is the paper's value as the chapter quotes it;
# *this build* is the chapter's own result, followed by its interval where the chapter gives one
# (the chapter says which kind); *null rate* is how often the claim's rule says "reproduced" under
# its null, and *null* says what that null permutes, the statistic the rule read and the central
# 95% of that statistic under the null.

# %%
table = scorecard_table(executed_dir)
HTML('<div style="overflow-x: auto">' + scorecard_html(table) + "</div>")  # a wide table scrolls inside the page

# %% [markdown]
# ## Verdicts
#
# How many claims got each verdict in this build.

# %% tags=["hide-input"]
counts = verdict_counts(table)
for verdict, n in counts.items():
    glue(f"n_{verdict.replace(' ', '_')}", int(n), display=False)
glue("n_claims", len(table), display=False)
counts.to_frame()

# %% [markdown]
# Verdicts over the {glue:text}`n_claims` claims: reproduced {glue:text}`n_reproduced`, differs
# {glue:text}`n_differs`, inconclusive {glue:text}`n_inconclusive`, holds by construction
# {glue:text}`n_holds_by_construction`, not testable here {glue:text}`n_not_testable_here`, missing
# {glue:text}`n_missing`. Only the first counts as evidence for a claim.
#
# ## How the verdicts are decided
#
# The verdict is the chapter's, not this page's: the chapter that computes a claim compares its
# result with the paper's claim and states its reason next to it. Every claim also states its
# *null*: what its evidence assumes exchangeable when nothing is there (for the tabular claims,
# members and non-members of each run's probed queries; for the LLM claims, what the claim
# contrasts within an instance), and the chapter reruns the claim's own rule on data permuted that
# way. The *null rate* column is how often the rule says "reproduced" under that null.
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
# - **not testable here**: the build cannot compute the claim, e.g. because the paper's models, data
#   or human review are not available; the reason says which.
# - **missing**: the chapter that should record the claim did not (it has not been executed, or it
#   records no such claim). This page shows the gap instead of dropping the row.
#
# Neither *inconclusive* nor *holds by construction* counts as reproduced. A verdict reached with
# the book's default parameters can change with others: each chapter's parameters cell lists them,
# and `iclmem book -p <notebook> <name> <value>` rebuilds the book with them, this page included.
