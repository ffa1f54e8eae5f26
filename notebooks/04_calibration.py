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
# 3. **detectable memorization**: $\mathrm{AUC}(\Delta S) > 0.5$ on loss or entropy (the paper's point-estimate rule);
# 4. **context overfitting**: $|\mu_{gap}| < 0.05$ and $\sigma_{gap} < 0.2$, the per-manipulation
#    member-minus-non-member loss gaps $g_k$ being near zero on every manipulation;
# 5. **no signal**.
#
# The probe scores come from section 3 (same parameters, read from the results store).

# %% tags=["parameters"]
datasets: list = ["spotify", "wine_pl"]
learning_rates: list = [0.1, 0.01, 0.001, 0.0001]
query_sizes: list = [50, 512]
label_conditions: list = ["none"]
epochs: int = 100
context_size: int = 256
seed: int = 0
probe_epochs: list = [0, 1, 10, 100]
n_candidates: int = 10
max_queries: int = 50
n_boot: int = 200
control_dataset: str = "iris"  # positive control: a small table, member labels randomized
control_query_size: int = 20
control_context_size: int = 64
control_epochs: int = 250  # one of the probing epochs of Tab. 2 (1, 2, 5, 10, 50, 100, 250, 500)
control_learning_rate: float = 0.01

# %%
import pandas as pd
from myst_nb import glue

from iclmem.grid import RunSpec, expand_grid, run_grid
from iclmem.ltm import load_reference
from iclmem.plots import plot_data_characteristics, plot_outcome_shares, plot_temporal_evolution
from iclmem.probe.grid import probe_grid
from iclmem.report import (PAPER_CALIBRATION, PAPER_OUTCOME_SHARES, PAPER_TABLE1, calibration_effect, data_characteristics,
                           detectable_table, outcome_shares, peak_table, temporal_evolution)

pd.set_option("display.precision", 3)
reference = load_reference()
specs = expand_grid(datasets, learning_rates, query_sizes, label_conditions, epochs, seed, context_size)
runs = run_grid(specs, reference)
summary, scores = probe_grid(specs, runs, reference, probe_epochs, n_candidates, max_queries, seed, n_boot)

# %% [markdown]
# ## Raw signals that calibration removes (App. A.4)
#
# Among the non-collapsed configurations (run $\times$ probing epoch $> 0$): how many show an
# uncalibrated TPR@10% $\geq 0.10$ on $S_\theta$ alone, and how many of those keep it once the
# score is calibrated against $M_{ref}$. The paper: 241 of 530 raw signals, 230 (95%) of them
# vanish, 11 remain.

# %%
effect = calibration_effect(summary)
glue("raw_signals", effect["raw_tpr10_signals"], display=False)
glue("vanished", effect["vanished"], display=False)
pd.DataFrame({"iclmem": effect, "paper": PAPER_CALIBRATION})

# %% [markdown]
# ## The exhaustive table (cf. Tab. 10 and 11)
#
# Per dataset, $Q$, label condition and learning rate, the probing epoch with the highest
# $\mathrm{AUC}(\Delta S)$; $\Delta L_v$ is the vanilla-loss change $L_v(M_\theta) - L_v(M_{ref})$ for
# members (IN) and non-members (OUT); TPRs are on the loss.

# %%
peak_table(summary)

# %% [markdown]
# ## Detectable memorization (cf. Tab. 1)
#
# The strongest configuration per dataset and $Q$ among those classified as detectable
# memorization, next to the paper's Tab. 1 (its datasets are the paper's CARTE tables, so the
# rows compare in kind, not one to one).

# %%
table1 = detectable_table(summary)
glue("n_detectable_datasets", table1.dataset.nunique(), display=False)
table1

# %%
PAPER_TABLE1

# %% [markdown]
# ## Outcome shares (cf. Fig. 5) and their evolution over epochs (cf. Fig. 2)

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
# **Negative control.** At epoch 0 the "fine-tuned" model is $M_{ref}$ itself, so $\Delta S \equiv 0$ and
# $\mathrm{AUC}(\Delta S)$ must be exactly 0.5 (ties count one half) with an interval of width 0.
#
# **Positive control.** A small table whose member labels are randomized (so only memorization can
# lower the members' loss) is fine-tuned for many epochs; the calibrated AUC must rise well
# above 0.5. The default is iris with 20 randomized members, a 64-row context and 250 epochs at
# $10^{-2}$. A control must be unambiguous, so it uses a setting where memorization is certain,
# not the grid's: with 50 members of iris or breast_cancer and a 256-row context, 100 epochs at
# $10^{-3}$ gave the stage-1 reference only AUC 0.59-0.61 with intervals reaching 0.49; the
# stage-2 reference gave 0.60 at $10^{-3}$ even with 20 members (0.80 at $10^{-2}$), and the
# shipped stage-3 reference 0.62 [0.45, ...] at $10^{-2}$ after 100 epochs and 0.75 [0.61, ...] after
# 250 (7 of the 48 manipulations; the test suite checks this setting).

# %%
negative = summary[summary.epoch == 0][["dataset", "learning_rate", "query_size", "auc_loss", "auc_loss_lo", "auc_loss_hi"]]
glue("negative_max_dev", f"{(negative.auc_loss - 0.5).abs().max():.3g}", display=False)
negative.head()

# %%
control_spec = RunSpec(control_dataset, control_learning_rate, control_query_size, "members", control_epochs, seed, control_context_size)
control_run = run_grid([control_spec], reference, progress=False)
control, _ = probe_grid([control_spec], control_run, reference, [0, control_epochs], n_candidates, max_queries, seed, n_boot,
                        progress=False)
glue("positive_auc", f"{control.auc_loss.iloc[-1]:.3f}", display=False)
control[["dataset", "epoch", "auc_loss", "auc_loss_lo", "auc_loss_hi", "tpr10_loss", "tpr1_loss", "outcome"]]

# %% [markdown]
# ## Compared with the paper
#
# The outcome shares side by side (percent of run $\times$ probing-epoch configurations), and the
# calibration counts of App. A.4.

# %%
versus = shares.join(PAPER_OUTCOME_SHARES.add_prefix("paper "), how="outer").round(1)
collapse_q50 = versus.loc["representational_collapse"].get("Q=50", float("nan"))
glue("collapse_q50", f"{collapse_q50:.0f}", display=False)
glue("memorization_q50", f"{versus.loc['detectable_memorization'].get('Q=50', float('nan')):.0f}", display=False)
versus

# %% [markdown]
# * *Calibration.* In the paper 230 of 241 raw TPR@10% signals (95%) vanish once $M_{ref}$'s
#   score is subtracted: most raw signals are sample difficulty. Here {glue:text}`vanished` of
#   {glue:text}`raw_signals` vanish. Fewer vanish when fine-tuning moves members' scores far more
#   than sample difficulty spreads them, which our small model's strong memorization at larger
#   learning rates does.
# * *Outcomes.* The paper finds collapse the most common outcome (55% at $Q=50$) and detectable
#   memorization in 12% of $Q=50$ configurations; here collapse takes {glue:text}`collapse_q50`% and
#   detectable memorization {glue:text}`memorization_q50`% at $Q=50$. Collapse in our runs appears
#   at the larger learning rates only (section 2 shows the loss ratios); the paper's grid has the same four
#   learning rates, but ConTextTab is larger and pre-trained far longer, and its loss explodes
#   by orders of magnitude at $10^{-1}$ and $10^{-2}$ (Tab. 10).
# * *Scale.* The paper's shares are over 1,128 runs on ten CARTE tables; the book's default grid
#   is a few dozen configurations on two shipped tables, so a single run moves a share by several
#   points. Run `grids/paper.yaml` with `iclmem sweep` (see "Running the sweep on a cluster") for the
#   comparable grid.

# %% [markdown]
# **Summary.** Calibration removed {glue:text}`vanished` of {glue:text}`raw_signals` raw TPR@10%
# signals. {glue:text}`n_detectable_datasets` dataset(s) show detectable memorization in some
# configuration. The negative control deviates from 0.5 by at most {glue:text}`negative_max_dev`;
# the positive control reaches $\mathrm{AUC}(\Delta S)$ = {glue:text}`positive_auc`.
#
# **Choices.** Outcome rules follow Tab. 3 as written (the printed labels of Tab. 10/11 do not
# always follow its order, see `iclmem/outcomes.py`); detectable memorization uses the paper's
# point estimate $\mathrm{AUC} > 0.5$, which at our query counts is within the bootstrap noise for
# values close to 0.5: the intervals are in the tables. `max_queries` members and non-members are
# probed per run (all of them at $Q = 50$), because each probe is 48 forward passes on this CPU.
