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
# # A2. Speed benchmarks
#
# Speed is measured by the scripts in `benchmarks/`, never asserted in tests. Each script writes a
# JSON file to `benchmarks/results/`, committed with the code that produced it; this page renders
# them. Ratios (batched vs naive, cached vs recomputed) are measured within one run, so they hold
# on other machines better than absolute numbers, which are for a 2-core CPU without a GPU.
# Re-run a benchmark with `python benchmarks/<name>.py` and rebuild the book.

# %% tags=["parameters"]
results_dir: str = "benchmarks/results"

# %% tags=["hide-input"]
import pandas as pd

from iclmem.chapters.benchmarks import finetune_speed_table, other_results, probe_speed_tables, read_results, settings

results = read_results(results_dir)
sorted(results)

# %% [markdown]
# ## Fine-tuning steps per second (`benchmarks/finetune_speed.py`)
#
# One AdamW step of the reference LTM on a 512-row context and $Q$ query rows (Tab. 2), with the
# feature counts of the book's two fine-tuning datasets; `book_grid` is the wall time of notebook
# 02's default grid when it was timed.

# %%
speed = results["finetune_speed"]
finetune_speed_table(speed)

# %%
settings(speed)

# %% [markdown]
# ## The reference LTM's forward and backward speed (`benchmarks/ltm_quality.py`)

# %%
pd.Series(results["ltm_quality"]["speed"]).to_frame("value")

# %% [markdown]
# ## Probing: batched vs one context at a time (`benchmarks/probe_speed.py`)
#
# The 48 manipulated multiple-choice contexts of a set of queries, scored in padded batches or one
# context per forward pass, in the same run; the ratio is the speed-up of batching.

# %%
if "probe_speed" in results:
    for frame in probe_speed_tables(results["probe_speed"]):
        display(frame)

# %% [markdown]
# ## Bootstrap intervals: vectorized vs a loop over resamples (`benchmarks/bootstrap_speed.py`)
#
# CPU seconds for 1,000 stratified resamples of AUC, TPR@1% and TPR@10%, computed per resample
# (a sort and an ROC curve each) or all at once from per-value counts, on the same resamples; the
# statistics agree to rounding (`max_abs_difference`). The bootstrap was never the bottleneck of
# sections 3-4 (about 0.4 s per run summary against minutes of probing), so this is a small win.

# %%
if "bootstrap_speed" in results:
    display(pd.DataFrame(results["bootstrap_speed"]["rows"]))

# %% [markdown]
# ## Other benchmarks
#
# Every further result file, flattened (the sweep's scaling with Dask workers, the LLM's shared
# prompt-prefix cache), as the benchmark wrote it.

# %%
for name, frame in other_results(results).items():
    print(name)
    display(frame)
