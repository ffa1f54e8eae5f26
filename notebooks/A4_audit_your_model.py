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
# # A4. Audit your own model
#
# You fine-tuned a tabular foundation model on sensitive rows and must know what it memorized.
# One command answers it from your checkpoint, the checkpoint it started from and two files, the
# rows it trained on (members) and rows of the same table it never saw (non-members), plus, with
# `--table`, the whole table both come from:
#
# ```bash
# iclmem audit --model tabpfn:ft.ckpt --base tabpfn:base.ckpt --members train.csv --non-members holdout.csv \
#     --table full.csv --target y
# ```
#
# It checks your split before it probes, runs the audit of IclMem (Sec. 4.1, 4.2, App. A.4: the
# zero-information multiple-choice probe with its {paper}`48` manipulations, calibrated against the
# pretrained model, $\Delta S = S_\theta - S_{ref}$), and states its verdict with the rate at which
# its rule errs, what it could have seen at this size and, with `--control`, whether the probe sees
# memorization on your table at all. This page fine-tunes the shipped reference LTM on a shipped
# table with a logged membership ground truth, hands the command the files an auditor would hold,
# and shows its report; the chain behind it follows, and the commands at the end run on a TabPFN v2
# or TabICL checkpoint.

# %% tags=["parameters"]
datasets: list = ["wine_pl"]  # a shipped table on which the probe sees memorization at this size (or data_path below)
data_path: str = ""  # your own table: a CSV/parquet file (replaces datasets) ...
target: str = ""  # ... its target column ...
task: str = ""  # ... and its task (classification | regression; inferred if empty)
missing_target: str = "error"  # rows of your table without a target value: error | drop
model: str = "reference"  # reference | tabicl:PATH | tabpfn:PATH (a local checkpoint file)
learning_rates: list = [0.01]
query_sizes: list = [50]
epochs: int = 50
context_size: int = 64
probe_epochs: list = [0, 50]
max_queries: int = 50  # members and non-members probed per run (and by the command)
n_boot: int = 100
control: bool = True  # the command's positive control (--control)
seed: int = 0

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["hide-input"]
from IPython.display import HTML, Markdown

from iclmem.adapters import load_model
from iclmem.chapters.ch_a4_audit import (audit_commands, audit_table, command_table, command_texts,
                                         external_audit_table, naive_probe_table, report_frame, run_audit_command)
from iclmem.probe.manipulations import MANIPULATIONS
from iclmem.report.display import use_book_tables
from iclmem.report.glue import glue_text
from iclmem.book.table_parameters import fitting_query_sizes, notebook_tables, run_banner
from iclmem.training.grid import GridAxes, expand_grid, probe_grid, run_grid
from iclmem.probe.settings import ProbeSettings

use_book_tables()

# %% tags=["hide-input"]
reference = load_model(model)  # M_ref: the pretrained checkpoint every run starts from, and calibrates against
tables = notebook_tables(datasets, data_path, target, task, missing_target=missing_target)
sizes = fitting_query_sizes(tables, query_sizes)
specs = expand_grid(GridAxes(list(tables), learning_rates, sizes, ["none"]), epochs, seed, context_size)
runs = run_grid(specs, reference, tables=tables)
settings = ProbeSettings(max_queries=max_queries, epochs=probe_epochs, seed=seed, n_boot=n_boot)
summary, scores = probe_grid(specs, runs, reference, settings, tables=tables)
glue_text("n_manipulations", len(MANIPULATIONS))  # the suite every query is probed under
Markdown(run_banner(tables, data_path, target, task) + f" Model: `{model}`.")

# %% [markdown]
# ## The command on a fine-tuned checkpoint
#
# The run above fine-tuned the reference LTM on its members. An auditor holds its last kept
# checkpoint (written with `ReferenceLTM.save`, the model `reference:PATH`), the base it started
# from, the members' rows, the non-members' rows and the whole table the run was fine-tuned from
# (`--table`), and runs:

# %%
command = run_audit_command(runs[0], reference, tables[specs[0].dataset], model, control=control,
                            max_queries=max_queries, n_boot=n_boot, seed=seed)
for key, text in command_texts(command, summary, runs[0]).items():
    glue_text(key, text)
Markdown(f"```bash\n{command.command}\n```\n\nIt printed:\n\n```text\n{command.summary}```")

# %% [markdown]
# Its verdict is **{glue:text}`audit_verdict`** (exit status {glue:text}`audit_status`): AUC($\Delta S$)
# {glue:text}`audit_auc`. Its rule ("detected" when the interval's lower end clears 0.5) says
# "detected" in {glue:text}`audit_null_rate` of {glue:text}`audit_permutations` membership
# permutations, and at this size it detects, with 80% power, an AUC of {glue:text}`audit_mda` or more.
# Before probing it checked the split: {glue:text}`audit_split_sentence`
# {glue:text}`audit_at_risk` of the members score above the non-members' {glue:text}`audit_percentile`
# percentile. {glue:text}`audit_control_sentence`
#
# {glue:text}`audit_chain_sentence` An auditor without the rest of the table leaves `--table` out:
# the command then fits its encoder on the two files and numbers the rows itself, and a checkpoint
# read through another encoding than its training one shows a weaker signal, so the report calls
# its AUC a lower bound next to the chain's.

# %%
command_table(command, summary, runs[0])

# %% [markdown]
# The report the command wrote (`audit.html`, one self-contained file; `audit.json` beside it holds
# every number):

# %%
HTML(report_frame(command.html))

# %% [markdown]
# ## The chain behind it
#
# Each run's step log proves which rows were trained on (the members); the probe scores every
# member and non-member under the {glue:text}`n_manipulations` manipulations, for $M_\theta$ at each probing epoch and for
# $M_{ref}$; the attack ranks queries by $\Delta S$. Epoch $0$ is $M_{ref}$ itself: AUC 0.5 by
# construction (the negative control).

# %%
audit_table(summary)

# %% [markdown]
# ## A model fine-tuned elsewhere
#
# If you fine-tuned the model yourself and know which rows it trained on, audit that checkpoint
# directly: `iclmem.probe.audit.audit_fine_tuned(theta, reference, AuditRows(table, member_ids, non_member_ids))`
# probes the members and non-members (row positions in the deduplicated table) under $M_\theta$ and
# $M_{ref}$ with the {glue:text}`n_manipulations` manipulations and returns the same summary, e.g. with
# `theta = load_model("tabpfn:my_finetuned.ckpt")` and `reference = load_model("tabpfn:tabpfn-v2-classifier.ckpt")`
# (`iclmem.adapters.load_model`; an adapter's `save(path)` writes a run's weights in its package's
# own format). Run on the last kept checkpoint of the run above, given only its weights and its
# member rows, it measures what the chain measured:

# %%
external_audit_table(runs[0], reference, tables[specs[0].dataset], summary, settings)

# %% [markdown]
# ## Your TabPFN v2 or TabICL checkpoint
#
# Describe your table in a parameters file (`data_path`, `target`, `task`, see "Adapt it to your
# table"), put the **pretrained** checkpoint of your model's architecture in a local file, and run
# the chain with `model` naming it. iclmem never downloads weights: TabPFN v2 weights come from
# Prior Labs (Hugging Face `Prior-Labs/TabPFN-v2-clf`, `tabpfn-v2-classifier.ckpt`; `-reg` for
# regression), TabICL weights from `jingang/TabICL` (`tabicl-classifier-v2-20260212.ckpt`); a missing,
# corrupt or wrong-architecture file is an error that says so. Calibration uses that same pretrained
# checkpoint as $M_{ref}$: a TabPFN audit is calibrated against pretrained TabPFN, never against
# the reference LTM.

# %%
Markdown(audit_commands("tabpfn", "~/weights/tabpfn-v2-classifier.ckpt") + "\n\n"
         + audit_commands("tabicl", "~/weights/tabicl-classifier-v2-20260212.ckpt"))

# %% [markdown]
# ## What each model's preprocessing does to the zero-information context
#
# A multiple-choice context is $|Y|$ copies of the query's features $x_q$, so every feature is
# constant over the context. TabPFN v2's forward removes features constant over all rows
# (`_remove_constant_features`), standard-scales on the context rows and zeroes constant features
# in its group normalization; TabICL's scikit-learn wrapper standard-scales on the context (plus
# outlier clipping and shuffling ensembles). Each of these maps $x_q$ to a constant, so a **naive
# probe** (`preprocessing="context"`, the packages' own steps) would give every query the same
# predicted distribution over the labels: its scores would depend on the query's true label only,
# never on its features, and the attack would measure the label balance of members against
# non-members (matched by the split), not memorization of rows. The tests show it on the real
# architectures: under "context" the predictions of different queries agree to float32 rounding (TabPFN:
# exactly), under "dataset" they differ. The adapters therefore default to
# `preprocessing="dataset"`: features standardized once on the whole table (as for the
# reference LTM), no context-fitted step, one deterministic forward (feature-permutation
# ensembles are an option, `n_permutations`). Which manipulations are exact duplicates is
# declared per model: the adapters declare no invariance, so only identical contexts are merged.
#
# The table measures it on the real architectures (tiny, random weights: the blindness is
# structural, not a property of the weights): for each of the {glue:text}`n_manipulations` manipulations, the largest
# spread of the probe loss among queries with the same true label. Under the naive preprocessing
# the spread is zero, to float32 rounding, for every manipulation whose context rows all carry
# $x_q$; only those that add random rows or distractor columns give the model non-constant columns.

# %%
naive_probe_table(seed)

# %% [markdown]
# ## Regression: each model's own predictive distribution
#
# The three probing scores (Sec. 4.2) are read off a discrete distribution over the target,
# standardized with the table's statistics (as for the reference LTM):
#
# - **TabPFN v2**: its bar distribution, with the borders stored in the checkpoint
#   (`criterion.borders`): bucket probabilities $p_j$ = softmax of its logits. Loss $= -\log p_j$ of the
#   bucket holding the true value (values beyond the borders fall into the outer buckets), entropy
#   over the buckets, target confidence $= p_j$.
# - **TabICL**: it predicts quantiles at levels $i/(K+1)$; its own quantile distribution (a spline
#   between them with parametric tails) gives a CDF $F$, and the predictive distribution is $F$'s
#   mass on `n_bins=64` equal-width bins on `[-bin_bound, bin_bound]` = $[-5, 5]$ (`load_tabicl`'s defaults), the
#   outer bins taking the tails:
#   $p_j = F(e_{j+1}) - F(e_j)$. Loss, entropy and confidence as above.
#
# Both agree with the packages' own regressors on the same weights, bucket probabilities and quantiles
# to float32 rounding (`tests/ltm/test_ltm_adapters.py`). A `model` names one checkpoint, and TabPFN and TabICL ship separate
# classifier and regressor checkpoints: audit classification and regression tables separately.
