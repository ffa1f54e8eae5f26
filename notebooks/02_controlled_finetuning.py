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
# # 2. Controlled fine-tuning with a logged ground truth
#
# Membership inference is only meaningful with a verified ground truth (Sec. 4.1 "Controlled
# Fine-Tuning", Tab. 2, App. A.1 "Unverified ground truth"). A copy of the reference LTM
# ($M_{ref}$, the model shipped with `iclmem`, see the appendix "The reference LTM") is fine-tuned
# on **fixed context-query pairs**: a static training context $C'$ with a uniform label
# distribution, drawn from the context pool of the split manifest of section 1, and the fixed
# batch of the $Q$ member rows. One AdamW step per epoch, so the members are exactly the $Q$
# queries, and every step logs the row ids it processed; the member set is re-derived from that
# log and checked against the manifest.
#
# The same runs produce the artifacts that later sections must tell apart from memorization:
# **representational collapse** ($L_v(M_\theta) > 5\,L_v(M_{ref})$ or near-constant predictions,
# App. B.1) and loss inversion (section 4).

# %% tags=["parameters"]
datasets: list = ["spotify", "wine_pl"]  # one binary, one regression table (shipped)
data_path: str = ""  # your own table: a CSV/parquet file (replaces datasets) ...
target: str = ""  # ... its target column ...
task: str = ""  # ... and its task (classification | regression; inferred if empty)
missing_target: str = "error"  # rows of your table without a target value: error | drop
carte_dir: str = ""  # folder with the paper's CARTE tables (else $ICLMEM_CARTE_DIR)
drop_unfit_sizes: bool = False  # True: skip the query sizes a table is too small for (else an error lists the sizes that fit)
learning_rates: list = [0.1, 0.01, 0.001, 0.0001]
query_sizes: list = [50, 512]
label_conditions: list = ["none", "members"]  # N and M of Tab. 2 / 10 (add "all" for S)
epochs: int = 100
context_size: int = 256  # the paper uses up to 512; 256 keeps the book build within its time budget
seed: int = 0
model: str = "reference"  # the LTM: reference (shipped) | tabicl:PATH | tabpfn:PATH (a local checkpoint; see "Audit your own model")
design: str = "decide"  # the registered design whose results bundle C10 is also read on ("": skip)

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["hide-input"]
import time

import pandas as pd
from IPython.display import Markdown
from myst_nb import glue

from iclmem.report.glue import glue_claims
from iclmem.report.design_glue import read_on_design
from iclmem.report.display import use_book_tables
from iclmem.book.table_parameters import fitting_query_sizes, notebook_tables, run_banner
from iclmem.chapters.ch02_finetuning import (loss_ratio_claim, median_loss_ratios, plot_collapse_map, plot_loss_ratio_distribution,
                                        plot_training_curves, design_finetuning_claims, design_metrics)
from iclmem.training.finetune import COLLAPSE_SPREAD
from iclmem.training.grid import GridAxes, expand_grid, grid_curves, grid_metrics, grid_overview, run_grid
from iclmem.adapters import load_model

use_book_tables()  # every table below: no index, 3 significant digits, lr as 1e-2

# %% tags=["hide-input"]
reference = load_model(model)  # M_ref: the pretrained checkpoint every run starts from
tables = notebook_tables(datasets, data_path, target, task, carte_dir, missing_target)
sizes = fitting_query_sizes(tables, query_sizes, drop_unfit_sizes, reference.max_classes)  # before any compute
specs = expand_grid(GridAxes(list(tables), learning_rates, sizes, label_conditions), epochs, seed, context_size)
started = time.perf_counter()
runs = run_grid(specs, reference, tables=tables)
wall_s = time.perf_counter() - started
metrics, curves = grid_metrics(specs, runs), grid_curves(specs, runs)
Markdown(run_banner(tables, data_path, target, task))

# %% [markdown]
# ## The grid
#
# Each row is one run: its key in the results store (`results/finetune/<key>/`, a hash of the
# split manifest, the hyperparameters, the reference checkpoint's sha256 and the code version),
# the number of members proven by the step log, and whether the run collapsed at its last epoch.
# A run found in the store is loaded, not recomputed.

# %%
overview = grid_overview(specs, runs, metrics)
overview

# %% [markdown]
# ## Training loss per learning rate
#
# The loss of the fixed member batch at every step. At $\eta = 10^{-4}$ it falls slowly; at
# $10^{-3}$ the model fits the members; at $10^{-2}$ and above the loss typically jumps and
# oscillates, the signature of collapse.

# %%
g = plot_training_curves(curves)

# %% [markdown]
# ## Collapse map (Tab. 3, App. B.1)
#
# Share of runs flagged as collapsed at each probing epoch, by learning rate: loss ratio
# $L_v(M_\theta)/L_v(M_{ref}) > 5$ on the vanilla context (members and non-members), or
# near-constant predictions (one label for $\geq 95\%$ of the queries while $M_{ref}$ spread them;
# for regression, prediction spread below {glue:text}`collapse_spread` of $M_{ref}$'s).

# %%
fig = plot_collapse_map(metrics)

# %% [markdown]
# ## Distribution of the loss ratio
#
# The paper reports a bimodal distribution over its {paper}`1,128` runs: stable configurations
# ($\eta \le 10^{-4}$) between {paper}`1 and 2x`, aggressive ones above {paper}`8x` and often beyond $10^4$
# (App. B.1).

# %%
fig = plot_loss_ratio_distribution(metrics)

# %%
ratio = median_loss_ratios(metrics)
glue_claims([loss_ratio_claim(metrics)])  # C10, for the scorecard
ratio.rename("median loss ratio").to_frame().T

# %% [markdown]
# ## C10 on the registered design
#
# The same rule on the registered decision design (`grids/decide.yaml`, chapter 4 says why and shows the rest of
# its claims), whose runs span the table suite at every learning rate: {glue:text}`design_progress`. Interim while
# its sweep runs; the scorecard keeps the grid's verdict beside it. Below, the loss-ratio distribution of its runs.

# %%
the_design, design_claims = read_on_design(design, design_finetuning_claims)
design_claims

# %% tags=["hide-input"]
if the_design is not None:
    plot_loss_ratio_distribution(design_metrics(the_design))

# %% tags=["hide-input"]
glue("n_runs", len(runs), display=False)
glue("wall_minutes", f"{wall_s / 60:.1f}", display=False)
glue("collapsed_share", f"{overview.collapsed.mean():.0%}", display=False)
glue("median_ratio_low_lr", f"{ratio.loc[min(learning_rates)]:.2f}", display=False)
glue("median_ratio_high_lr", f"{ratio.loc[max(learning_rates)]:.3g}", display=False)
glue("collapse_spread", f"{COLLAPSE_SPREAD:.0%}", display=False)  # the regression collapse rule, iclmem.training.finetune

# %% [markdown]
# **Summary.** {glue:text}`n_runs` runs ({glue:text}`wall_minutes` minutes in this build, none when
# they came from the store). At the last epoch {glue:text}`collapsed_share` of the runs are
# flagged as collapsed. The median loss ratio is {glue:text}`median_ratio_low_lr` at the smallest
# learning rate and {glue:text}`median_ratio_high_lr` at the largest; the paper's stable runs lie
# at {paper}`1-2x` and its aggressive ones above {paper}`8x`.
#
# ```{note}
# **Runs at high learning rates are chaotic.** A change that only reorders float32 sums (the
# December 2026 speed-up of the row attention, appendix A2; a thread count; a GPU) left the median
# loss ratios at $\eta \le 10^{-3}$ as they were to the printed digit, but moved those at $10^{-2}$ and $10^{-1}$,
# and with them the largest AUC of section 4 and the share of raw signals that calibration removes;
# every claim kept its verdict (CHANGELOG.md, "Speed: one attention over the context block", lists what
# moved). Numbers of aggressive runs are reproducible for the same code, seeds and machine, and should be
# read with that spread.
# ```
#
# ## The paper's full grid
#
# The book default is a reduced grid. The paper's (Tab. 2) is a parameter set:
#
# ```bash
# iclmem run notebooks/02_controlled_finetuning.py -p epochs 500 -p context_size 512 \
#     -p label_conditions '["none", "members", "all"]' \
#     -p datasets '["anime_planet", "babies_r_us", "beer_ratings", "bikedekho", "bikewale", "buy_buy_baby", "cardekho", "chocolate_bar_ratings", "clear_corpus", "coffee_ratings"]'
# ```
#
# with the paper's CARTE tables in `$ICLMEM_CARTE_DIR`. Probing epochs are the paper's
# $\{0, 1, 2, 5, 10, 50, 100, 250, 500\}$ up to `epochs`.
