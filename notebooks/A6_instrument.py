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
# # A6. The instrument: does the probe see what is there?
#
# A non-detection means something only if the probe could have found memorization that is known to be there, and a
# detection only if the probe does not find what is not there. The paper reports no control of its own instrument;
# this appendix runs the book's, on the runs of chapters 02-04 (read from the results store with the same
# parameters) and on runs of its own: a negative control on halves of the non-members (P2, also read on the
# registered design's non-member sets), a positive control with
# permuted labels and its sensitivity curve, the same curve on every shipped table, P1 at a cell chosen by a stated
# rule, a recall control on healthy models, the factors that separate seen from unseen, the strong signal read
# again, the context ladder, and the member-only shuffling control (P3). P1-P3 feed the scorecard as the
# instrument's rows. Chapter 4 tells the paper's Sec. 4 (calibration and the five outcomes).

# %% tags=["parameters"]
datasets: list = ["spotify", "wine_pl"]
data_path: str = ""  # your own table: a CSV/parquet file (replaces datasets) ...
target: str = ""  # ... its target column ...
task: str = ""  # ... and its task (classification | regression; inferred if empty)
missing_target: str = "error"  # rows of your table without a target value: error | drop
carte_dir: str = ""  # folder with the paper's CARTE tables (else $ICLMEM_CARTE_DIR)
drop_unfit_sizes: bool = False  # True: skip the query sizes a table is too small for (else an error lists the sizes that fit)
learning_rates: list = [0.1, 0.01, 0.001, 0.0001]
query_sizes: list = [50, 512]
label_conditions: list = ["none", "members"]  # N and M of Tab. 2 / 10 (M: P3's rows)
epochs: int = 100
context_size: int = 256
seed: int = 0
model: str = "reference"  # the LTM: reference (shipped) | tabicl:PATH | tabpfn:PATH (a local checkpoint; see "Audit your own model")
probe_epochs: list = [0, 1, 10, 50, 100]
n_candidates: int = 10
max_queries = None  # members and non-members probed per run: None probes all (Q + Q); a number caps each pool
n_boot: int = 200
outcome_rule: str = "bound"  # the reading of Tab. 3 P3 reads its rows under: text | printed | bound
n_permutations: int = 1000  # membership permutations of P1's and P3's nulls
control_dataset: str = "breast_cancer"  # positive control: labels of members and non-members randomized (your own table: it)
control_query_size: int = 50  # 50 + 50 probed queries: enough for an interval that can exclude chance
control_context_size: int = 64
control_epochs: list = [10, 50, 250]  # probing epochs of the sensitivity curve (Tab. 2's: 1, 2, 5, 10, 50, 100, 250, 500)
control_learning_rates: list = [0.0003, 0.001, 0.003]  # memorization strengths of the sensitivity curve, with the epochs
control_label_condition: str = "all"  # all: permuted labels in both pools | flip: every label moved to another class
curve_datasets: list = ["spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices"]  # the curve on every table (and control_dataset; your own table: it)
curve_learning_rates: list = [0.01, 0.001]  # memorization strengths of the curve on those tables, at Q of control_query_size ...
curve_epochs: list = [10, 100]  # ... and probing epochs (at context_size: their N runs are runs of the grid)
curve_conditions: list = ["none", "all"]  # N and All (both pools permuted)
p1_vanilla_bound: float = 0.7  # the rule of P1: the weakest cell under All whose vanilla-attack lower bound exceeds this
member_control: bool = True  # P3: score the non-members of M rows on a shuffled label too (one probe pass per M row)
factor_seen: str = "wine_pl"  # the table where the probe sees: one factor at a time from it and from the control ("": skip; your own table: it)
strong_seeds: list = [0, 1]  # seeds of the strong signal (the seen cell of factor_seen) read again ([]: skip)
design: str = "decide"  # the registered design whose results bundle P2 is also read on ("": skip)

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["hide-input"]
from dataclasses import replace

import pandas as pd
from IPython.display import Markdown

from iclmem.adapters import load_model
from iclmem.book.table_parameters import fitting_query_sizes, notebook_tables, run_banner
from iclmem.chapters.ch_a6_instrument import (HEALTHY_MAX_RATIO, LADDER_KS, CurveSetting, SensitivitySpec, binned_table,
    category_aucs, context_ladder, curve_settings, design_instrument_claims, factor_cases, factor_table,
    factors_unfit, instrument_claims, ladder_drop, member_only_control, negative_control, negative_control_texts, not_run_note, p1_cells, p3_record,
    plot_sensitivity, plot_table_curves, pretraining_min_context, recall_cells, recall_sensitivity, rule_p1,
    run_sensitivity, run_table_curves, strong_signal, strongest_factor, weakest_detection, weakest_per_table,
    weakest_text)

# %% tags=["hide-input"]
from iclmem.probe.settings import ProbeSettings
from iclmem.report.design_glue import read_on_design
from iclmem.report.display import and_list, use_book_tables
from iclmem.report.glue import claims_table, glue_claims, glue_text
from iclmem.stats.outcomes import reclassify
from iclmem.stats.permutation import NullDraws
from iclmem.training.grid import GridAxes, RunSpec, expand_grid, probe_grid, run_grid, table_of

use_book_tables()  # every table below: no index, 3 significant digits, lr as 1e-2

# %% tags=["hide-input"]
reference = load_model(model)  # M_ref: the pretrained checkpoint every run starts from
tables = notebook_tables(datasets, data_path, target, task, carte_dir, missing_target)
sizes = fitting_query_sizes(tables, query_sizes, drop_unfit_sizes, reference.max_classes)  # before any compute
specs = expand_grid(GridAxes(list(tables), learning_rates, sizes, label_conditions), epochs, seed, context_size)
runs = run_grid(specs, reference, tables=tables)  # chapter 02's runs, from the results store
probe_settings = ProbeSettings(n_candidates=n_candidates, max_queries=max_queries, seed=seed, n_boot=n_boot)
grid_probe = replace(probe_settings, epochs=probe_epochs)  # chapter 03's scores, from the store
summary, scores = probe_grid(specs, runs, reference, grid_probe, tables=tables)
summary = reclassify(summary, outcome_rule)
Markdown(run_banner(tables, data_path, target, task))

# %% [markdown]
# ## Controls
#
# A control is only worth something if it could fail; each verdict below is computed.
#
# **Negative control.** At epoch $0$ $M_\theta$ is $M_{ref}$, so $\Delta S \equiv 0$ and the AUC is 0.5 by
# construction: that cannot fail and tests nothing. Instead, every fine-tuned configuration also
# attacks two random halves of its *non-members*, one half posing as members
# (`iclmem.stats.metrics.null_halves`). No row of either half was trained on, so the interval should
# cover 0.5; at the 95% level about 5% of the intervals exclude it by chance. The halves are drawn once per
# non-member set (a dataset at a query size), so all configurations of one set attack the *same*
# two halves and exclude together: the unit of the test is the set, not the configuration. The
# control fails when the sets' mean share of excluding intervals (over each set's fine-tuned configurations,
# label conditions {glue:text}`share_conditions`) is far above the 5% expected (one-sided
# t-test, $p < 0.01$), which would point at a bias in the scores themselves rather than at
# memorization. (A binomial count over configurations would treat them as independent.)

# %%
null = negative_control(summary)
for key, text in negative_control_texts(null, summary).items():
    glue_text(key, text)
pd.Series(null).to_frame("negative control")

# %% [markdown]
# The negative control **{glue:text}`null_verdict`**: {glue:text}`null_excluded` null intervals
# exclude 0.5; over the non-member sets, $p$ = {glue:text}`null_p` against the 5% expected by chance.
#
# **The same control on the registered design.** A pass needs more non-member sets than the book's grid has. The
# registered decision design (`grids/decide.yaml`; chapter 4 reads its other claims) keeps every
# single-task run's null-halves intervals in its results bundle, so P2 also reads the suite's non-member sets (a
# table at a query size and a seed), with the same test: {glue:text}`design_progress`. Once the design is complete
# and its recomputed sample is accepted here, the scorecard takes P2 from it.

# %%
the_design, design_claims = read_on_design(design, design_instrument_claims)
design_claims

# %% [markdown]
# ## The instrument itself: a positive control and the probe's sensitivity
#
# A non-detection means something only if the probe can find memorization that is known to be
# there. We fine-tune the model on {glue:text}`control_setting` and measure, at each learning rate
# and probing epoch, three attacks with the same calibration against $M_{ref}$ and the same
# queries: the **vanilla attack** on the training context $C'$ itself,
# $L(M_\theta, q \mid C') - L(M_{ref}, q \mid C')$, which shows whether the model memorized its
# members at all; the same attack with **half of $C'$** as the context; and the paper's **probe**,
# $\mathrm{AUC}(\Delta S)$ with its zero-information contexts and {paper}`48` manipulations. Under label
# condition `all` members *and* non-members carry permuted labels that no feature predicts, so
# whatever fine-tuning teaches beyond the members' rows helps both pools alike and only memorization
# separates them (with `members` alone, members would be asked for shuffled labels and non-members
# for true ones, and the generalization of fine-tuning would count against the members).
#
# ```{note}
# Under `all` about half of the labels equal the true ones by coincidence, in both pools alike
# (tested: the kept share is $\sum_c p_c^2$ in each pool), so a kept label gives neither pool an
# advantage. The alternative `flip` moves *every* label to another class, so no member keeps its true
# label; but on a binary table a flip is an inversion, a rule the model can learn from the members
# and apply to every non-member, which lowers the pressure to memorize rather than raising it. The
# book therefore keeps `all`; `control_label_condition: flip` runs the other control.
# ```

# %%
control_spec = SensitivitySpec(control_dataset, control_learning_rates, control_epochs, control_query_size,
                              control_context_size, control_label_condition, n_permutations)
sens = run_sensitivity(control_spec, reference, probe_settings, tables)  # on control_dataset, or skipped (sens.skipped)
weakest = weakest_detection(sens.curve)
glue_text("weakest", f"the control was not run ({sens.skipped})" if sens.skipped else weakest["text"])
glue_text("control_setting", f"{control_query_size} members of {control_dataset} (label condition {control_label_condition}), "
          f"a {control_context_size}-row context")
fig = None if sens.skipped else plot_sensitivity(sens.curve)
note = not_run_note({f"the positive control on `{control_dataset}`": sens.skipped})
Markdown(note) if note else None

# %%
sens.curve.drop(columns="run_key", errors="ignore")

# %% [markdown]
# Across the curve, {glue:text}`weakest`. Points on the diagonal would mean the probe reads all
# the memorization the vanilla attack sees; points on the 0.5 line, none of it. The half-context
# attack sits between the two contexts: where it stays near the diagonal while the probe falls to
# 0.5, the model memorized in a form that a context resembling $C'$ reads and the zero-information
# contexts do not. These variants are diagnostics: the paper's probe stays the book's probe.
#
# Which manipulation categories carry whatever signal the probe has, at the strongest setting of
# the curve (mean AUC of the calibrated per-manipulation loss delta):

# %%
top = sens.strongest()  # None when the control was not run
category_aucs(sens.scores[top.run_key], int(top.epoch)) if top is not None else pd.DataFrame()

# %% [markdown]
# ## Where the probe sees: the curve on every table
#
# One table cannot say whether the probe is blind or the control was set where it is blind. We run
# the same curve on every table the book ships, classification and regression, under N (true labels)
# and All (both pools permuted, so only memorization separates them): the CARTE tables at
# `curve_learning_rates` $\times$ `curve_epochs` with the grid's context of `context_size` rows (their N
# runs are the grid's own runs, read from the store), the control's table at the control's settings
# (its All runs are the control's). Each point is one (run, probing epoch) at $Q$ =
# `control_query_size`, the vanilla attack's AUC against the probe's, both with 95% intervals.
# A book of your own table (`iclmem book --chapters`, `iclmem run` with `data_path`) names it as
# `control_dataset`, `curve_datasets` and `factor_seen`: its controls run on your table alone, and a
# control your table cannot carry is skipped with one line that says why.

# %%
control = None if sens.skipped else CurveSetting(control_dataset, control_learning_rates, control_epochs,
                                                 control_context_size)
settings = curve_settings(list(tables) if data_path else curve_datasets, curve_learning_rates, curve_epochs, context_size,
                          control)
curves = run_table_curves(settings, curve_conditions, control_query_size, reference, probe_settings, tables=tables)
weakest_tables = weakest_per_table(curves.curve)
glue_text("weakest_tables", weakest_text(weakest_tables))
fig = plot_table_curves(curves.curve)
note = not_run_note({f"the curve on `{table}`": why for table, why in curves.skipped.items()})
Markdown(note) if note else None

# %%
weakest_tables

# %% [markdown]
# Per table, the weakest memorization (vanilla AUC) at which the probe's interval clears 0.5:
# {glue:text}`weakest_tables`. The full curve:

# %%
curves.curve.drop(columns="run_key", errors="ignore")

# %% [markdown]
# ## P1 at a cell chosen by a stated rule
#
# P1 used to read the curve's strongest memorization. The rule below is fixed before any probe AUC
# is read and uses the vanilla attack alone: **among the cells under All on every table whose
# vanilla-attack lower bound exceeds `p1_vanilla_bound` = {glue:text}`p1_bound`, the one with the
# weakest memorization** (memorization clearly there, with the least fine-tuning pressure, nearest the
# paper's settings and farthest from collapse). Its null replays the rule in every draw on the
# permuted vanilla attack, so the choice is paid for. Both cells, on the probe's three metrics (Tab. 3
# reads "loss or entropy"; P1's verdict reads loss):

# %%
p1_rule = f"the rule 'weakest cell under All whose vanilla lower bound exceeds {p1_vanilla_bound:g}'"
p1_cell, p1_null, p1_bounds = rule_p1(curves.curve, curves.vanilla_scores, curves.summary, curves.scores,
                                      p1_vanilla_bound, NullDraws(n_permutations, seed, n_boot))
glue_text("p1_bound", f"{p1_vanilla_bound:g}")
p1_cells({**({"strongest memorization (the control)": top} if top is not None else {}), "P1's rule": p1_cell})

# %% [markdown]
# ## The probe where the model is healthy: a recall control
#
# The control above permutes every label and fine-tunes hard, and the strongest signal of the grid comes
# from a model that is confidently wrong on rows it never saw. An auditor's case is a healthy model that
# recalls its members: among the per-table curves' cells under true labels (N), those whose vanilla loss
# ratio stays below {glue:text}`healthy_max_ratio`x, that predict the non-members (rows never trained on) no
# worse than $M_{ref}$ does (held-out accuracy, or $R^2$ for regression, at least $M_{ref}$'s), and whose
# vanilla-attack lower bound exceeds P1's {glue:text}`p1_bound`. The rule reads the fine-tuning log, the held-out
# predictions and the vanilla attack, never the probe.
# The share of those cells the probe sees is the instrument's sensitivity to recall:
# {glue:text}`recall_sensitivity`.

# %%
recall = recall_cells(curves.curve, p1_vanilla_bound)
glue_text("recall_sensitivity", recall_sensitivity(recall)["text"])
glue_text("healthy_max_ratio", f"{HEALTHY_MAX_RATIO:g}")
recall

# %% [markdown]
# ## What separates seen from unseen
#
# The probe sees on `factor_seen` (a regression table with `n_candidates` candidates, a
# `context_size`-row context, the curve's largest learning rate, N) and not on the control (binary,
# a `control_context_size`-row context, its strongest cell, All). We change one factor at a time
# from each cell to the other cell's value: the number of candidates, the context size, the learning
# rate, the label condition, and the task (the same target cut into {glue:text}`n_bins` quantile classes). The probe's
# AUC($\Delta S$) on the loss, its change from the starting cell, and the vanilla attack beside it:

# %%
curve_tables = [s.dataset for s in settings if s.dataset not in curves.skipped]
seen_task = table_of(factor_seen, tables).task if factor_seen in curve_tables else None
factors_skip = factors_unfit(factor_seen, curve_tables, seen_task, top is not None)  # "" when the factors run
run_factors = not factors_skip
seen_spec = RunSpec(factor_seen, max(curve_learning_rates), control_query_size, "none", max(curve_epochs), seed, context_size)
blind_spec = (RunSpec(control_dataset, float(top.learning_rate), control_query_size, control_label_condition,
                      max(control_epochs), seed, control_context_size) if top is not None else None)
binned = {f"{factor_seen}_binned": binned_table(table_of(factor_seen, tables))} if run_factors else {}
factors = (factor_table(factor_cases(seen_spec, max(curve_epochs), blind_spec, int(top.epoch), f"{factor_seen}_binned",
                                     n_candidates), reference, {**tables, **binned}, max_queries, n_boot, seed)
           if run_factors else pd.DataFrame())
glue_text("strongest_factor", strongest_factor(factors) if run_factors else f"not run ({factors_skip})")
glue_text("n_bins", next(iter(binned.values())).target.nunique() if binned else "-")
factors

# %% [markdown]
# The factor that moves the probe most: **{glue:text}`strongest_factor`**.
#
# ## The strong signal explained
#
# The seen cell again, with `strong_seeds` (another split and training context per seed): its
# vanilla attack, the probe on loss and on entropy, the loss ratio and the members' training loss
# at that epoch; then the categories of App. A.3 and, per pool, the mean calibrated $\Delta S$ on loss
# and on entropy. The loss reads the probability of the query's own label, the entropy how spread
# the prediction is whatever the label: a model that moved probability onto the members' labels
# without changing how certain it is shows in the loss only.

# %%
strong = (strong_signal(seen_spec, max(curve_epochs), reference, strong_seeds, probe_settings, tables)
          if run_factors and strong_seeds else (pd.DataFrame(), pd.DataFrame(), pd.DataFrame()))
strong[0]

# %%
strong[1]

# %%
strong[2]

# %% [markdown]
# ## Where in the construction the signal is lost: a context ladder
#
# At the control's strongest cell we keep the queries and the calibration against $M_{ref}$ and
# change only the context, from $C'$ down to the probe's: $C'$ with its labels permuted; $C'$ plus the
# query's multiple-choice rows; the MC rows plus $k$ random $C'$ rows ($k$ = {glue:text}`ladder_ks`); the MC rows
# alone (the probe's baseline manipulation). Each rung for all queries and for those whose trained
# label differs from the true one. A binary MC context has one row per class, two; this model's pretraining showed it
# contexts down to {glue:text}`pretrain_min_context` rows (the weights before stage 4, `model: reference-v1`,
# never saw fewer than {glue:text}`v1_min_context`; `benchmarks/probe_reach.py` runs this ladder on both).
# (A sanity test in `tests/chapters/ch04_calibration/test_chapter_instrument_reach.py` fine-tunes
# members on their own MC contexts and checks that the probe then finds them.)

# %%
glue_text("ladder_ks", and_list(LADDER_KS))
glue_text("pretrain_min_context", pretraining_min_context(model))
glue_text("v1_min_context", pretraining_min_context("reference-v1"))
ladder = (context_ladder(sens.runs[top.run_key], table_of(control_dataset, tables), int(top.epoch), reference,
                         probe_settings) if top is not None else pd.DataFrame())
glue_text("ladder_drop", ladder_drop(ladder) if top is not None else "not run (no positive control)")
glue_text("ladder_drop_changed", ladder_drop(ladder, "label changed") if top is not None else "not run")
ladder

# %% [markdown]
# The first rung whose interval reaches 0.5: **{glue:text}`ladder_drop`** for all queries,
# **{glue:text}`ladder_drop_changed`** for the queries whose label was changed.
#
# ## P3: a control for member-only shuffling
#
# Under M the members carry shuffled labels and the non-members true ones. A model fine-tuned on
# shuffled labels can raise the score of *any* improbable label without remembering a row, so an M
# row can separate "shuffled label" from "true label". For every M row (probing epoch $> 0$, not
# collapsed) we score the non-members also on a shuffled label the model never saw (a second
# permutation of their pool, `iclmem.probe.label_control`); members keep their scores. Both pools
# then carry shuffled labels, so the ordinary membership null applies. If AUC($\Delta S$) stays high,
# the signal is membership; if it falls to 0.5, it was the label type.

# %%
p3_table, p3_control, p3_scores = (member_only_control(summary, scores, runs, tables, reference, outcome_rule,
                                                       probe_settings)
                                   if member_control else (pd.DataFrame(), pd.DataFrame(), {}))
p3 = p3_record(p3_table, p3_control, p3_scores, outcome_rule, n_permutations, seed, n_boot)
glue_text("p3_ours", p3["ours"])
p3_table.drop(columns="run_key", errors="ignore")

# %% [markdown]
# P3: {glue:text}`p3_ours`.

# %% [markdown]
# ## The instrument's rows
#
# P1 (the positive control at the cell its rule chose), P2 (the negative control) and P3 (the member-only
# shuffling control), with the rule that decided each verdict and its null; the scorecard collects them as the
# instrument's rows.

# %%
claims = instrument_claims(curves.curve, p1_bounds, null, p1_null, setting=p1_cell, rule=p1_rule) + [p3]
glue_claims(claims)
claims_table(claims)

# %% [markdown]
# **Summary.** The negative control {glue:text}`null_verdict`; the positive control: {glue:text}`weakest`. Per
# table, the weakest memorization at which the probe's interval clears 0.5: {glue:text}`weakest_tables`. The factor
# that moves the probe most: {glue:text}`strongest_factor`. On the control's strongest cell the context ladder loses
# the signal first at **{glue:text}`ladder_drop`**. P3, the member-only shuffling control: {glue:text}`p3_ours`.
