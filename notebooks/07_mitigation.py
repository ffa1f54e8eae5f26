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
# # 7. Mitigation: differentially private fine-tuning
#
# IclMem's Sec. 6 names differentially private training, DP-SGD (Abadi et al. 2016), as the
# mitigation for the memorization it measures; neither paper measures it. We will show what DP-SGD
# does to the book's strongest memorization, the positive control of chapter 4 (label condition
# `all`: members and non-members carry permuted labels, so only memorization separates them), at
# a few privacy levels $\varepsilon$: the vanilla attack's and the probe's AUC per $\varepsilon$ and the
# outcome of Tab. 3. And we will show what it costs where fine-tuning helps: a second series of runs
# whose members carry their true labels (label condition `none`), read on held-out rows against their
# true targets. Each series also has a run clipped like the private ones but without noise
# ($\sigma = 0$), so that clipping's effect and the noise's are told apart.
#
# **The privacy unit is one member row**, a query row of the fine-tuning pairs. The context-pool
# rows (the training context $C'$) are public: DP-SGD protects nothing about them. So the
# guarantee speaks about membership of the rows the book's attacks target, not about the table.
# Each DP step clips every member's gradient to norm $C$ and adds Gaussian noise of standard
# deviation $\sigma C$ to their sum (`iclmem/training/privacy.py`); every member is in every step (the
# single-task schedule), and Opacus' RDP accountant gives $\varepsilon$ at $\delta = 10^{-5}$ after the
# run's steps. $\varepsilon = \infty$ is the plain run: same learning rate, same epochs.
#
# **What $\varepsilon$ guarantees.** $(\varepsilon, \delta)$-DP bounds every membership attack: at any
# false-positive rate, TPR $\le \min(1, e^{\varepsilon}\,\mathrm{FPR} + \delta,
# 1 - e^{-\varepsilon}(1 - \delta - \mathrm{FPR}))$. At the $\varepsilon$ that M1 reads,
# {glue:text}`m1_eps`, the bound allows an attack AUC near {glue:text}`m1_auc_bound`, so that level alone does
# not imply that the signal is gone; only a measurement can say so, and M1 below tests it as an equivalence.

# %% tags=["parameters"]
dataset: str = "breast_cancer"  # chapter 4's positive control
query_size: int = 50
context_size: int = 64
label_condition: str = "all"  # the attack series (M1): chapter 4's positive control
utility_condition: str = "none"  # the utility series (M2): members with their true labels, where fine-tuning helps
clipped_run: bool = True  # also a run clipped at C without noise (sigma 0) in each series
learning_rate: float = 0.003  # the strongest learning rate of chapter 4's sensitivity grid
epochs: int = 20  # a DP step costs tens of plain ones (per-member gradients): see "Choices"
epsilons: list = [1.0, 4.0, "inf"]  # "inf": the non-private run; add 16.0 for one more level
outcome_rule: str = "bound"  # the reading of Tab. 3 of the outcome column: text | printed | bound
delta: float = 1e-5
seed: int = 0
n_candidates: int = 10
max_queries: int = 50
n_boot: int = 200

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["hide-input"]
import time

import pandas as pd

from iclmem.report.glue import glue_claims, glue_text
from iclmem.report.display import use_book_tables
from iclmem.chapters.ch07_mitigation import (M1_EPSILON, M1_LEVEL, M1_MARGIN, PLAIN, UTILITY_BUDGET, MitigationSpec,
                                            dp_auc_bound, dp_bound_table, mitigation_claims, plot_attack, plot_utility,
                                            removal_threshold, run_mitigation)
from iclmem.ltm import load_reference

use_book_tables()
started = time.time()
reference = load_reference()  # M_ref: every run starts from it, and calibrates the attacks
grid = sorted(float(e) for e in epsilons)
spec = MitigationSpec(dataset, learning_rate, epochs, query_size, context_size, grid, seed, n_candidates, max_queries,
                      n_boot, delta, outcome_rule, clipped_run)  # both series; they differ in label condition only

# %% [markdown]
# ## The bound, per $\varepsilon$
#
# What DP alone guarantees against any attack on one member, at the grid's $\varepsilon$ and $\delta$ (the
# TPR bound at two false-positive rates and the largest AUC the bound allows):

# %%
glue_text("m1_auc_bound", f"{dp_auc_bound(M1_EPSILON, delta):.2f}")  # the largest AUC (eps, delta)-DP allows at M1's eps
dp_bound_table(grid, delta)

# %% [markdown]
# ## The runs
#
# One run per $\varepsilon$, plus the clipped run without noise (`∞ clipped`), all cached in the results
# store like every run. The clipping norm $C$ is chosen on **public** rows, so that the choice costs no
# privacy: the median gradient norm of $M_{ref}$ over the context-pool rows outside $C'$, with their true
# targets. (The DP literature often tunes $C$ on the private rows and leaves that outside $\varepsilon$.)
# With AdamW, $C$ matters little: once most gradients are clipped, scaling $C$ scales signal and noise
# alike, and Adam's update is invariant to the scale.

# %%
m = run_mitigation(spec, reference, label_condition)
glue_text("clip", f"{m.max_grad_norm:g}")
glue_text("outcome_rule", outcome_rule)
glue_text("epochs_run", epochs)
glue_text("setting", f"{query_size} members of {dataset} (label condition {label_condition}), a {context_size}-row context, "
          f"learning rate {learning_rate:g}, {epochs} epochs")
m.table.drop(columns="run_key")

# %% [markdown]
# We ran {glue:text}`setting`, with $C$ = {glue:text}`clip`. `sigma` is the noise multiplier Opacus
# finds for each target $\varepsilon$; `epsilon (accountant)` is its RDP accountant's value for that
# $\sigma$ after the run's steps, at most the target.
#
# The `∞ clipped` row is clipped at $C$ like the private runs, without noise: what the plain run
# loses to clipping alone.
#
# ## The attacks against $\varepsilon$

# %%
fig = plot_attack(m.table)
below = removal_threshold(m.table)
glue_text("threshold", "no ε of the grid" if below is None else f"ε = {below:g} and below")
glue_text("top_vanilla", "{:.3f} [{:.3f}, {:.3f}]".format(*m.row(PLAIN)[["vanilla AUC", "vanilla lo", "vanilla hi"]]))

# %% [markdown]
# Without DP the vanilla attack gives {glue:text}`top_vanilla`. Its 95% interval covers 0.5 at
# {glue:text}`threshold`. The probe (the paper's zero-information contexts) already misses this
# control's memorization without DP (chapter 4), so its column can only confirm a non-detection.
# The outcome column reads Tab. 3 under `outcome_rule` = **{glue:text}`outcome_rule`** (chapter 4),
# in its priority order: loss inversion (the members' mean probe loss above the non-members', a
# point estimate with no interval) fires before detection, so on its own it is no evidence.
#
# ## Utility against $\varepsilon$
#
# Utility is measured on **held-out rows against their true targets**: the rows of the context
# pool outside $C'$ (never a member, never a non-member, never in the training context;
# {glue:text}`n_held_out` rows), with $C'$ as the context. Not the non-members: under label
# condition `all` their labels are permuted too, and accuracy against permuted labels sits at
# chance whatever the model.
#
# **In the attack series** fine-tuning on permuted member labels is bound to hurt the true task, so
# a private run that learns nothing "costs" nothing: no place to measure what DP costs.

# %%
cols = ["run", "theta accuracy", "theta accuracy lo", "theta accuracy hi", "ref accuracy", "cost vs ref",
        "cost vs ref lo", "cost vs ref hi", "cost vs inf", "cost vs inf lo", "cost vs inf hi", "theta loss", "ref loss"]
glue_text("n_held_out", f"{int(m.table['held-out rows'].iloc[0])}")
plain = m.row(PLAIN)
glue_text("plain_cost", "{:+.3f} [{:+.3f}, {:+.3f}]".format(*plain[["cost vs ref", "cost vs ref lo", "cost vs ref hi"]]))
m.table[cols]

# %% [markdown]
# Fine-tuning without DP on the permuted member labels costs {glue:text}`plain_cost` of
# $M_{ref}$'s held-out accuracy (the `cost vs ref` of $\varepsilon = \infty$); a negative `cost vs inf`
# at small $\varepsilon$ is that harm avoided, not a gain of DP.
#
# **The utility series** fine-tunes the same way on members that carry their true labels (label
# condition {glue:text}`utility_condition`), where fine-tuning can help the task, so that a cost of DP is
# a real loss. Its clipping norm is chosen on the public rows the same way.

# %%
u = run_mitigation(spec, reference, utility_condition)
glue_text("utility_condition", f"`{utility_condition}`")
uplain = u.row(PLAIN)
glue_text("gain", "{:+.3f} [{:+.3f}, {:+.3f}]".format(
    -uplain["cost vs ref"], -uplain["cost vs ref hi"], -uplain["cost vs ref lo"]))
fig = plot_utility(u.table)
u.table[cols]

# %% [markdown]
# Here fine-tuning without DP changes held-out accuracy by {glue:text}`gain` against $M_{ref}$ (the
# plain run's accuracy minus $M_{ref}$'s, paired interval). The `cost vs inf` of the private runs is
# what DP-SGD takes of that; the `∞ clipped` row is the part clipping alone takes.
#
# ## The claims of this chapter
#
# **M1**: DP-SGD at $\varepsilon \le 4$ removes the vanilla-attack signal, read as an **equivalence**: a
# non-detection (an interval that covers 0.5) is not a removal. Reproduced when the plain run's 95%
# interval lies above 0.5, every private run's {glue:text}`m1_level` interval lies within
# $0.5 \pm$ {glue:text}`m1_margin` (two one-sided tests; the margin is this companion's choice), and
# the paired difference $\varepsilon = \infty$ minus each private run has its interval above zero; differs
# when a private run's interval lies above 0.5. The record gives the rule's power at this number of
# queries. **M2**: on the utility series, at an accuracy cost of at most {glue:text}`budget` on the
# held-out rows, read at the largest $\varepsilon \le 4$ against both $M_{ref}$ and the non-private run
# (paired bootstrap intervals over the same rows): reproduced when both intervals lie at or below it,
# differs when either lies above it, inconclusive otherwise; where fine-tuning does not beat $M_{ref}$, an
# agreement **holds by construction** (a run that learns nothing passes). Both go to the scorecard under
# "Beyond the papers".

# %%
glue_text("budget", f"{UTILITY_BUDGET:.2f}")
glue_text("m1_eps", f"{M1_EPSILON:g}")
glue_text("m1_margin", f"{M1_MARGIN:g}")
glue_text("m1_level", f"{M1_LEVEL:.0%}")
claims = mitigation_claims(m, n_boot, seed, utility=u)
glue_claims(claims)
glue_text("wall", f"{(time.time() - started) / 60:.1f} minutes")
pd.DataFrame(claims).set_index("id")[["ours", "verdict", "null_rate", "null", "reason"]]

# %% [markdown]
# **Choices.** The strongest memorization of chapter 4's grid is reached at its longest fine-tuning (the
# largest of chapter 4's `control_epochs`); a DP step computes every member's gradient (tens of plain steps
# each, measured by `benchmarks/dp_step.py`, shown in the appendix), so as many DP epochs would take most of
# an hour on this CPU. The chapter keeps chapter 4's strongest learning rate and {glue:text}`epochs_run`
# epochs, where the plain run's vanilla interval
# already lies above 0.5, and three levels, $\varepsilon \in \{1, 4, \infty\}$: the two that M1 reads
# and the plain run, with the clipped run without noise beside it, in each of the two series. It ran
# in {glue:text}`wall` (this build, results store cold for its runs). `-p epsilons "[1, 4, 16, 'inf']"`
# adds a level and `-p epochs 250` reproduces the long setting.
#
# **What the accounting covers.** $\varepsilon$ is accounted for the members only; $C$ is chosen on public
# rows, so it adds nothing. One thing fitted on members lies **outside** the accounting: the feature
# encoder (standardization and category codes) is fitted on every row's features, members included
# (never their targets), as in every chapter of the book; fitted on the public pool alone, categories
# that only members hold would become missing values that track membership (`iclmem/training/finetune.py`).
# Utility is read on the context pool outside $C'$ rather than on the non-members: more rows
# (tighter intervals), and rows whose true targets no label condition touches; $C$ is chosen on the
# same public rows, a choice of scale, not of what is scored.
