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
# # 4. Difficulty calibration and the five outcomes
#
# An easy query has a low loss whether or not it was a member. IclMem therefore calibrates every
# probe score against the pre-trained reference model (Watson et al. 2022; Sec. 4.2, App. A.4):
# $\Delta S(q) = S_\theta(q) - S_{ref}(q)$, and scores the attack with $\mathrm{AUC}(\Delta S)$ and
# the true positive rate at 1% and 10% false positive rate (the largest TPR whose FPR is at most
# the target, over all thresholds), with bootstrap 95% intervals. Every run and probing epoch is
# then sorted into one of the five outcomes of Tab. 3, in priority order:
#
# 1. **representational collapse**: $L_v(M_\theta) > 5\,L_v(M_{ref})$ or near-constant predictions;
# 2. **loss inversion**: non-members have the lower mean probe loss under $M_\theta$ ($\mu_{gap} > 0$);
# 3. **detectable memorization**: $\mathrm{AUC}(\Delta S) > 0.5$ on loss or entropy (the paper's point-estimate rule;
#    the book's tables use a stricter reading, chosen below by what chance gives each);
# 4. **context overfitting**: $|\mu_{gap}| < 0.05$ and $\sigma_{gap} < 0.2$, the per-manipulation
#    member-minus-non-member loss gaps $g_k$ being near zero on every manipulation;
# 5. **no signal**.
#
# We show the calibration's effect (App. A.4), the exhaustive table with the normal (N) and the
# member-shuffled (M) label condition side by side (Tab. 10/11), the paper's Tab. 3 clause "the
# signal weakens materially under shuffled labels" as a computed check, the outcome shares
# (Fig. 5, Fig. 2), two controls whose verdicts are computed, and the claims of the paper this
# chapter tests, which feed the scorecard. The probe scores come from section 3 (same
# parameters, read from the results store). $M_{ref}$ is the pretrained checkpoint that `model`
# names (the shipped reference LTM by default): calibration always uses the pretrained checkpoint
# of the fine-tuned model's own architecture (appendix "Audit your own model").

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
label_conditions: list = ["none", "members"]  # N and M of Tab. 2 / 10 (add "all" for S)
epochs: int = 100
context_size: int = 256
seed: int = 0
model: str = "reference"  # the LTM: reference (shipped) | tabicl:PATH | tabpfn:PATH (a local checkpoint; see "Audit your own model")
probe_epochs: list = [0, 1, 10, 50, 100]  # the rise (1, 10), the paper's Q=512 peak (50) and the decay (100) that C9 reads
n_candidates: int = 10
max_queries = None  # members and non-members probed per run: None probes all (Q + Q); a number caps each pool
n_boot: int = 200
margin_rule: str = "delta_tpr"  # App. A.4's calibrated margin: delta_tpr | tpr_over_fpr | calibrated_tpr
outcome_rule: str = "bound"  # the reading of Tab. 3 the claims use: text | printed | bound (all three are shown)
n_permutations: int = 1000  # membership permutations of every claim's null (0: no null, no claim can read "reproduced")
shuffled_condition: str = "members"  # the label condition Tab. 3's shuffled-label check compares with N
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
design: str = "decide"  # the registered design whose results bundle the claims are also read on ("": skip)

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["hide-input"]
import pandas as pd
from IPython.display import Markdown

from iclmem.stats.outcomes import MARGIN_RULES, null_margin_rates
from iclmem.chapters.ch04_calibration import (NEGATIVE_CONTROL_PHRASES, PAPER_CALIBRATION, PAPER_OUTCOME_SHARES, PAPER_TABLE1,
    SensitivitySpec, calibration_claims, calibration_effect, category_aucs, data_characteristics,
    detect_share_texts, detectable_table, exhaustive_table, fit_printed_reading, instrument_claims, negative_control,
    share_basis_texts,
    outcome_null_shares, outcome_shares, outcomes_with_null, plot_data_characteristics, plot_outcome_shares,
    plot_sensitivity, plot_temporal_evolution, power_plan, power_table, reading_agreement, run_sensitivity,
    shuffled_contrast, shuffled_label_check, temporal_evolution, weakest_detection)
from iclmem.report.glue import claims_table, glue_claims, glue_text
from iclmem.stats.outcomes import reclassify
from iclmem.probe.null import permutations
from iclmem.report.display import and_list, use_book_tables
from iclmem.book.table_parameters import fitting_query_sizes, notebook_tables, run_banner

# %% tags=["hide-input"]
from dataclasses import replace

from iclmem.training.grid import RunSpec, expand_grid, probe_grid, run_grid, table_of
from iclmem.probe.settings import ProbeSettings
from iclmem.adapters import load_model
from iclmem.chapters.ch04_calibration import (binned_table, context_ladder, curve_settings, factor_cases, factor_table,
    ladder_drop, member_only_control, p1_cells, p3_record, plot_table_curves, pretraining_min_context, recall_cells,
    recall_sensitivity, rule_p1, run_table_curves, strong_signal, strongest_factor, weakest_per_table, weakest_text,
    factors_unfit, not_run_note)
from iclmem.chapters.ch04_calibration import HEALTHY_MAX_RATIO, LADDER_KS

use_book_tables()  # every table below: no index, 3 significant digits, lr as 1e-2

# %% tags=["hide-input"]
reference = load_model(model)  # M_ref: the pretrained checkpoint every run starts from
tables = notebook_tables(datasets, data_path, target, task, carte_dir, missing_target)
sizes = fitting_query_sizes(tables, query_sizes, drop_unfit_sizes, reference.max_classes)  # before any compute
specs = expand_grid(list(tables), learning_rates, sizes, label_conditions, epochs, seed, context_size)
runs = run_grid(specs, reference, tables=tables)
probe_settings = ProbeSettings(n_candidates=n_candidates, max_queries=max_queries, seed=seed, n_boot=n_boot)  # the grid's, and the chapter's own runs below
summary, scores = probe_grid(specs, runs, reference, replace(probe_settings, epochs=probe_epochs), tables=tables)
# every table and claim below: outcomes under the chosen reading; the membership null from the cached scores (no model runs)
summary, membership_null = outcomes_with_null(summary, scores, outcome_rule, n_permutations, seed, n_boot)
Markdown(run_banner(tables, data_path, target, task))

# %% [markdown]
# ## Three readings of the outcome rule, and what chance gives each
#
# Tab. 3's text orders the rules collapse, inversion, detectable memorization, context
# overfitting, no signal, and calls a configuration detectable when its point estimate
# $\mathrm{AUC}(\Delta S) > 0.5$. The labels the paper prints in Tab. 10 / 11 do not follow that
# text. We transcribed the {glue:text}`printed_rows` non-collapsed rows of the two tables
# (`iclmem/chapters/ch04_calibration/paper_data/`) and searched both orders of inversion and detection, two readings
# of which AUC a row's bold mark reads (N alone, or the larger of N and S) and every cut
# {glue:text}`cut_grid` for the labels that agree with the printed ones most often
# (`fit_printed_reading`). Beside it, a statistical reading, `bound`: the text's order, with
# detection only when the lower bound of the 95% bootstrap interval of the AUC exceeds 0.5.

# %%
from iclmem.chapters.ch04_calibration import CUT_GRID

fit = fit_printed_reading()
glue_text("printed_rows", fit["n"])
glue_text("cut_grid", f"from {CUT_GRID[0]:.3f} to {CUT_GRID[-1]:.3f} in steps of {CUT_GRID[1] - CUT_GRID[0]:.4g}")
glue_text("printed_fit", f"{fit['agreement']} of {fit['n']}")
glue_text("printed_cut", f"{fit['cut']:.4g} (best cuts {fit['cut_range'][0]:.4g}-{fit['cut_range'][1]:.4g})")
fit["search"]

# %%
agreement = reading_agreement()
glue_text("text_fit", f"{agreement.set_index('reading').loc['text', 'agrees with the printed label']} of {fit['n']}")
agreement

# %% [markdown]
# The printed labels follow detection *before* inversion with a cut of {glue:text}`printed_cut`
# on the larger of a row's two printed AUCs: that reading gives the paper's own label in
# {glue:text}`printed_fit` rows, the text's reading in {glue:text}`text_fit`. (The bound reading
# is scored with a normal-approximation interval at $Q$ members and $Q$ non-members, since the
# tables print no intervals.)
#
# Which reading a reader should believe depends on what each says when nothing was memorized. We
# permute membership across the probed queries of every run (`n_permutations` times; runs that
# probe the same queries alike), recompute every AUC, TPR, bound and loss gap from the cached
# scores, and classify each permuted configuration under each reading
# (`iclmem.probe.null.null_summaries`). A share the build shows that the null gives as often is no
# evidence.

# %%
no_null = pd.DataFrame(columns=["reading", "outcome"])
shares_null = outcome_null_shares(summary, membership_null) if membership_null is not None else no_null
for key, text in {**detect_share_texts(shares_null), **share_basis_texts(summary), "outcome_rule": outcome_rule}.items():
    glue_text(key, text)
shares_null[shares_null.outcome == "detectable_memorization"].drop(columns="outcome")

# %% [markdown]
# Detectable memorization under the chosen reading, `outcome_rule` = **{glue:text}`outcome_rule`**,
# and what the same reading gives under the membership null,
# averaged over permutations (each a share of the run $\times$ probing-epoch configurations at one $Q$,
# label conditions {glue:text}`share_conditions`): at the paper's small query size the build has
# {glue:text}`build_detect_bound_50` where chance alone gives {glue:text}`null_detect_bound_50`
# (the text's reading: {glue:text}`build_detect_text_50` where chance gives
# {glue:text}`null_detect_text_50`; the printed reading {glue:text}`build_detect_printed_50` where
# chance gives {glue:text}`null_detect_printed_50`). The point-estimate rules call about half of
# the chance configurations that survive inversion "detectable", because at any number of probed
# queries a chance AUC exceeds 0.5 half the time. The claims of this chapter (C1-C9, C15) use the
# chosen reading; each of them is also judged against its own null below. The full table (every
# outcome, every reading) follows.

# %%
shares_null

# %% [markdown]
# ## Power: the smallest signal the probe can see at these query counts
#
# With $n_M$ members and $n_N$ non-members probed, the AUC's standard error (Hanley & McNeil 1982)
# sets the smallest $\mathrm{AUC}(\Delta S)$ a test finds with 80% power. The paper's detectable
# peaks (Tab. 1, Tab. 8) lie between {paper}`0.58 and 0.67`.

# %%
counts = list(zip(summary.n_members.astype(int), summary.n_non_members.astype(int), strict=True))
power = power_table(counts)
glue_text("power_bound", f"{power.iloc[:, 3].max():.2f}")
glue_text("power_full", f"{power.iloc[:, 3].min():.2f}")  # at the largest pools (Q = 512: 512 + 512)
glue_text("power_50", f"{power_table([(50, 50)]).iloc[0, 3]:.2f}")  # what the book's 50 + 50 cap at Q = 512 allowed
glue_text("probed_epochs", and_list(e for e in probe_epochs if e > 0))
glue_text("last_epoch", max(probe_epochs))
power

# %% [markdown]
# The book probes every member and as many non-members (`max_queries` = None): each run on its
# $Q + Q$ queries. A configuration needs an AUC of about
# {glue:text}`power_bound` to be found reliably under the bound reading at the smallest pools
# ($Q=50$, where the paper's smaller peaks would mostly go unseen), and {glue:text}`power_full`
# at $Q=512$; capped at `-p max_queries 50` per pool there, it would need {glue:text}`power_50`.
# Probing all of them costs about ten times the $Q=512$ runs'
# probing (appendix A2 times one probing epoch of each table); a number, e.g.
# `-p max_queries 50`, caps each pool again, for a faster build with less power.
#
# The grid probes epochs {glue:text}`probed_epochs` of every run. Epoch {paper}`50` is where the
# paper's $Q=512$ detectable share peaks before it vanishes, so C9 reads its rise up to that epoch and
# its decay after it on probed epochs (the CHANGELOG lists what adding it to the grid moved). The grid
# ends at epoch {glue:text}`last_epoch`, where the paper goes on to {paper}`250 and 500`, and each
# $Q=512$ share of the claims rests on {glue:text}`claim_runs_512` runs per epoch (label conditions
# {glue:text}`claim_conditions`). `grids/book_powered.yaml` adds the paper's early epochs.
#
# ## What it would take: a power plan per claim
#
# The same question for every tabular claim: what the grid has today, what the claim's statistic
# is when membership is exchangeable (from this build's own permutation null), what the paper
# says, and the size at which the claim's rule tells the two apart with 80% power at the 5% level.
# The plan is analytic (binomial sums and normal approximations, `iclmem.chapters.ch04_calibration.power_plan`),
# not simulated; for shares over run $\times$ epoch configurations (label conditions
# {glue:text}`claim_conditions`, as the claims read them) it uses this build's design
# effect (the bootstrap-over-runs variance over the binomial one), so it counts runs, not epochs.
# Claims of absence (C13 here, M1 in chapter 7) need an equivalence test, "AUC below
# {glue:text}`absence_margin` with 95% confidence", not a non-detection: the last row gives its size.

# %%
from iclmem.chapters.ch04_calibration import ABSENCE_MARGIN

null_frames = permutations(reclassify(membership_null, outcome_rule)) if membership_null is not None else []
plan = power_plan(summary, null_frames) if null_frames else pd.DataFrame()
glue_text("absence_margin", f"{ABSENCE_MARGIN:.2f}")  # the AUC a claim of absence must stay below
plan

# %% [markdown]
# What the grid's dimensions cost on the way there. Each row below changes one dimension of
# this chapter's grid toward the paper's Tab. 2; the last changes them all, and is the sweep preset
# `grids/book_powered.yaml` (`iclmem sweep` on a cluster, then `iclmem book --grid`, see "Running
# the sweep on a cluster"). The cost is the projected compute of fine-tuning (notebook 02) and
# probing (notebook 03) from the unit costs `benchmarks/paper_shipped_cost.py` measured, as a
# multiple of today's grid (`iclmem.sweep.cost`). The default book keeps today's grid: on two cores
# the powered grid is hours, and the benchmarks in appendix A2 show why batching does not shorten
# them on this CPU (`benchmarks/kernel_ceiling.py`).

# %%
from iclmem.chapters.ch04_calibration import grid_options

grid_options(list(tables), learning_rates, query_sizes, label_conditions, epochs, probe_epochs, max_queries).round(2)

# %% [markdown]
# ## Raw signals that calibration removes (App. A.4)
#
# Among the non-collapsed configurations (run $\times$ probing epoch $> 0$, label conditions
# {glue:text}`share_conditions`): how many show an
# uncalibrated TPR@10% $\geq 0.10$ on $S_\theta$ alone, and how many of those keep the paper's
# *calibrated margin* "$\Delta\mathrm{TPR}_{@10\%} \geq 0.10$". The paper: {paper}`241 of 530` raw signals,
# {paper}`230 (95%)` of them vanish, {paper}`11` remain.
#
# The text does not define $\Delta\mathrm{TPR}$. We simulate each reading it allows under the null
# hypothesis (members and non-members exchangeable, both models' scores sharing a per-query
# difficulty, `iclmem.stats.outcomes.null_margin_rates`) at this chapter's smallest probed pools (where
# chance raw signals are most frequent). A rule that fires
# in most null runs cannot show most raw signals vanishing, as the paper's do.

# %%
null_rates = null_margin_rates(int(summary.n_members.min()), int(summary.n_non_members.min()), n_sim=1000, seed=seed)
glue_text("null_old_rule", f"{null_rates.set_index('rule').loc['calibrated_tpr', 'fires_given_raw']:.0%}")
glue_text("null_chosen_rule", f"{null_rates.set_index('rule').loc[margin_rule, 'fires_given_raw']:.0%}")
glue_text("margin_rule_text", MARGIN_RULES[margin_rule])
null_rates

# %% [markdown]
# Reading "TPR@10% of $\Delta S$ $\geq 0.10$" keeps {glue:text}`null_old_rule` of the raw signals
# that arise by chance, because a random score's TPR at 10% FPR is that very threshold. We use
# `margin_rule` = {glue:text}`margin_rule_text`: it is what "$\Delta$" means everywhere else in the
# paper (fine-tuned minus reference), it asks what App. A.4 says the calibration removes ("the
# pre-trained model naturally extracted these records prior to fine-tuning"), and it keeps
# {glue:text}`null_chosen_rule` of chance raw signals here.

# %%
effect = calibration_effect(summary, rule=margin_rule)
glue_text("raw_signals", effect["raw_tpr10_signals"])
glue_text("vanished", effect["vanished"])
pd.DataFrame({"iclmem": effect, "paper": PAPER_CALIBRATION})

# %% [markdown]
# ## The exhaustive table (cf. Tab. 10 and 11)
#
# Per dataset, $Q$ and learning rate, the probing epoch with the highest $\mathrm{AUC}(\Delta S)$
# under N, on the metric (loss or entropy) that signals most; beside it the AUC of the same
# metric and epoch under the shuffled condition (Tab. 10's "S" column), and the shuffled-label
# check. $\Delta L_v$ is the vanilla-loss change $L_v(M_\theta) - L_v(M_{ref})$ for members (IN) and
# non-members (OUT); the TPRs are of the reported metric.

# %%
exhaustive_table(summary, shuffled_condition)

# %% [markdown]
# ## Does the signal weaken under shuffled labels? (Tab. 3)
#
# Tab. 3 says of detectable memorization: "the signal weakens materially under shuffled labels,
# confirming it tracks actual label content". We compute it per configuration (dataset, $Q$,
# learning rate, epoch) that is detectable under N: the AUC of the same metric under the shuffled
# condition is lower ("weakens") or not. Under `members` the members' labels were shuffled before
# fine-tuning and the probe asks for those labels, so a model that memorizes rows memorizes the
# shuffled labels too: this check tells whether the signal depends on labels that follow from the
# features.

# %%
check = shuffled_label_check(summary, shuffled_condition)
detected_n = check[check.verdict != "n/a"]
glue_text("n_detected_n", len(detected_n))
glue_text("n_weakens", int((detected_n.verdict == "weakens").sum()))
check.verdict.value_counts().rename("configurations").to_frame()

# %% [markdown]
# Of the {glue:text}`n_detected_n` configurations detectable under N, the signal weakens under
# the shuffled condition in {glue:text}`n_weakens`.
#
# ```{note}
# A signal under M alone is not proof of row-level memorization. Shuffled member labels are
# improbable given the features; a model that merely spreads its predictions (less confident
# everywhere) lowers the loss of improbable labels and raises that of probable ones, so members
# with shuffled labels look "memorized" against non-members with true labels. The paper's third
# condition, S (all labels shuffled, members and non-members alike), controls for that: run this
# chapter with `label_conditions` `["none", "members", "all"]` (the paper's grid in
# `grids/paper.yaml` has all three) and read the M and S columns side by side.
# ```
#
# ## Condition M against All
#
# For the same reason no membership-null claim below reads the M rows: permuting membership
# assumes members and non-members are scored alike, and under M they are not (shuffled labels
# against true ones). The claims read N and All only. M is judged here by its contrast with All,
# where both pools carry shuffled labels: what M detects beyond All is what label type alone can
# give. The interval is a bootstrap over runs (a run and its probed epochs are one unit).

# %%
contrast = shuffled_contrast(summary, seed=seed)
contrast

# %% [markdown]
# ## Detectable memorization (cf. Tab. 1 and Tab. 8)
#
# The strongest configuration per dataset and $Q$ among those classified as detectable
# memorization: its AUC, interval and TPRs all belong to one metric, the one with the higher AUC
# (Tab. 8: "We report AUC and TPR for the metric (loss or entropy) yielding the maximum signal").
# Next to it the paper's Tab. 1 (its datasets are the paper's CARTE tables, so the rows compare
# in kind, not one to one).

# %%
table1 = detectable_table(summary)
glue_text("n_detectable_datasets", table1.dataset.nunique())
table1

# %%
PAPER_TABLE1

# %% [markdown]
# ## Outcome shares (cf. Fig. 5) and their evolution over epochs (cf. Fig. 2)
#
# Percent of the run $\times$ probing-epoch configurations at each $Q$ (in the second figure, at each
# probing epoch) per outcome, label conditions {glue:text}`share_conditions`.

# %%
shares = outcome_shares(summary)
fig = plot_outcome_shares(shares, PAPER_OUTCOME_SHARES[[c for c in PAPER_OUTCOME_SHARES if c in shares.columns]])

# %%
shares.round(1)

# %%
g = plot_temporal_evolution(temporal_evolution(summary))

# %% [markdown]
# ## Data characteristics (cf. Fig. 6, Tab. 9)
#
# Target cardinality $k$ (distinct target values, also for regression tables as in Tab. 9) against
# the majority-class frequency $\alpha$, by which $Q$ showed detectable memorization. The paper
# finds the strongest signals for low-cardinality and binary tasks.

# %%
chars = data_characteristics(summary)
fig = plot_data_characteristics(chars)
chars

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
glue_text("null_excluded", f"{null['excluded']} of {null['n']} ({null['share']:.0%})")
glue_text("null_verdict", NEGATIVE_CONTROL_PHRASES[null["verdict"]])
glue_text("null_p", f"{null['p_value']:.3g}")
pd.Series(null).to_frame("negative control")

# %% [markdown]
# The negative control **{glue:text}`null_verdict`**: {glue:text}`null_excluded` null intervals
# exclude 0.5; over the non-member sets, $p$ = {glue:text}`null_p` against the 5% expected by chance.
#
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
settings = curve_settings(list(tables) if data_path else curve_datasets, curve_learning_rates, curve_epochs, context_size,
                          None if sens.skipped else control_dataset, control_learning_rates, control_epochs,
                          control_context_size)
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
                                      p1_vanilla_bound, n_permutations, seed, n_boot)
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
strong = (strong_signal(seen_spec, max(curve_epochs), reference, strong_seeds, n_candidates, max_queries, n_boot, tables)
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
                         n_candidates, seed, n_boot) if top is not None else pd.DataFrame())
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

# ## Compared with the paper
#
# The outcome shares side by side (percent of run $\times$ probing-epoch configurations at each $Q$,
# label conditions {glue:text}`share_conditions`).

# %%
versus = shares.join(PAPER_OUTCOME_SHARES.add_prefix("paper "), how="outer").round(1)
glue_text("collapse_q50", f"{versus.loc['representational_collapse'].get('Q=50', float('nan')):.0f}")
glue_text("memorization_q50", f"{versus.loc['detectable_memorization'].get('Q=50', float('nan')):.0f}")
versus

# %% [markdown]
# * *Outcomes.* The paper finds collapse the most common outcome ({paper}`55%` at $Q=50$) and detectable
#   memorization in {paper}`12%` of $Q=50$ configurations; here collapse takes {glue:text}`collapse_q50`% and
#   detectable memorization {glue:text}`memorization_q50`% at $Q=50$ (label conditions
#   {glue:text}`share_conditions`). ConTextTab is larger and
#   pre-trained far longer than the reference LTM, and its loss explodes by orders of magnitude at
#   $10^{-1}$ and $10^{-2}$ (Tab. 10).
# * *Scale.* The paper's shares are over {paper}`1,128` runs on ten CARTE tables; the book's default grid
#   is a few dozen configurations on two shipped tables, so a single run moves a share by several
#   points: the intervals in the claims table below say how much. Run `grids/paper.yaml` with
#   `iclmem sweep` (see "Running the sweep on a cluster") for the comparable grid.
#
# ## The claims this chapter tests
#
# One row per claim of the paper computed here, with the rule that decided its verdict; the
# scorecard collects them. Each rule runs on the build and on every permuted grid of the
# membership null: `null_rate` is how often the rule says "reproduced" there, `null_range` the
# central 95% of its statistic, and the null rate carries its Monte Carlo error over the
# `n_permutations` draws. Membership-null claims read label conditions N and All only (above). A
# share claim agrees when the paper's share lies inside the 95% interval of ours, a bootstrap over
# runs (the epochs of one run are not independent configurations); a direction claim (C2's peak, C6's $Q=50$ above $Q=512$, C8, C9's rise, peak
# and decay) agrees when its statistic lies beyond the 95% quantile of its null. A claim that
# agrees reads *reproduced* only when its null rate is at most 5%, otherwise *inconclusive*; a
# rule whose null rate is above the 5% level cannot read reproduced on any data of this grid's size, and its
# reason says so ("structural") and, where a model gives it, at what size it could. C4 has no
# membership null (collapse is decided by the loss ratio): its learning-rate contrast is judged
# against learning rates permuted across runs. C8 compares kinds of table, so its unit is the table
# and its null permutes "binary" across tables. C11 is not testable against a membership null: that
# null makes every raw signal an artifact, which is what C11 says.

# %%
claims = (calibration_claims(summary, null_frames or None, outcome_rule)
          + instrument_claims(curves.curve, p1_bounds, null, p1_null, setting=p1_cell, rule=p1_rule) + [p3])
glue_claims(claims)
claims_table(claims)

# %% [markdown]
# ## The same claims on the registered design
#
# The grid above is two tables: most claims count tables or shares of runs, and it has too few of either to decide.
# The registered decision design (`grids/decide.yaml`) spends its compute on the table suite instead, with a power
# table committed before it ran (`grids/decide_power.csv`, the *registered power* below: how often each claim's
# rule agrees when the paper's value holds). Its results ship as a bundle (appendix "The results bundle"), read
# here with the same rules and the same membership null, kept per run: {glue:text}`design_progress`. While the
# design's sweep still runs, this reading is interim and its bundle unchecked: the scorecard shows it in a column of
# its own and keeps the grid's verdicts. The instrument's rows (P1-P3) need control runs outside the design and stay
# with the grid. Below the table: the table-by-claim grid (per suite table, whether it is one of the hits of each
# claim that counts tables, by the claim's own row rule), then where the probe sees, table by table: each table's
# best AUC(ΔS) with its 95% interval.

# %%
from iclmem.chapters.ch04_calibration import (design_calibration_claims, design_summary, detectable_by_table,
    plot_design_tables, plot_table_claim_grid, table_claim_grid)
from iclmem.report.design_glue import read_on_design

the_design, design_claims = read_on_design(design, lambda d: design_calibration_claims(d, outcome_rule))
design_claims

# %% tags=["hide-input"]
if the_design is not None:
    on_design = design_summary(the_design, outcome_rule)  # its single-task rows, read once for both figures
    plot_table_claim_grid(table_claim_grid(on_design))
    plot_design_tables(detectable_by_table(on_design))

# %% [markdown]
# **Summary.** With the calibrated margin {glue:text}`margin_rule_text`, {glue:text}`vanished`
# of {glue:text}`raw_signals` raw TPR@10% signals vanish. {glue:text}`n_detectable_datasets`
# dataset(s) show detectable memorization in some configuration. The negative control
# {glue:text}`null_verdict`; the positive control: {glue:text}`weakest`.
#
# **Where the probe sees.** Per table, the weakest memorization at which the probe's interval clears
# 0.5: {glue:text}`weakest_tables`. The factor that moves the probe most:
# {glue:text}`strongest_factor`. On the control's strongest cell the context ladder loses the
# signal first at **{glue:text}`ladder_drop`**. P3, the member-only shuffling control:
# {glue:text}`p3_ours`.
#
# **Choices.** The outcome tables and claims use `outcome_rule` = {glue:text}`outcome_rule`: of
# the three readings of Tab. 3 it is the one whose detectable share (label conditions
# {glue:text}`share_conditions`) stays near the few percent a
# 95% interval allows when membership is permuted, while the text's and the printed reading call
# a large share of chance configurations "detectable" (section "Three readings"). Rerun with
# `-p outcome_rule text` for the paper's own rule. Every member and as many non-members are
# probed per run (`max_queries` = None; a number caps each pool for a faster build).
