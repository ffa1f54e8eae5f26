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
# on other machines better than absolute numbers, which hold for the CPU machine each file names
# (its `machine` entry; no GPU).
# Re-run a benchmark with `python benchmarks/<name>.py` and rebuild the book.

# %% tags=["parameters"]
results_dir: str = "benchmarks/results"

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["hide-input"]
import json

import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from iclmem.chapters.ch_a2_benchmarks import (decoding_summary, decoding_table, finetune_speed_table, kernel_ceiling_tables,
                                        kill_random_table, openai_concurrency_table, other_results, plot_decoding_curve,
                                        plot_roofline, probe_speed_tables, prose_texts, read_results, roofline_speedups,
                                        roofline_table, settings, softmax_keys_table)
from iclmem.ltm.reference import REFERENCE_CARD
from iclmem.report.display import use_book_tables

use_book_tables()  # every table below: no index, 3 significant digits, lr as 1e-2
results = read_results(results_dir)
for key, text in prose_texts(results, json.loads(REFERENCE_CARD.read_text())["architecture"]).items():
    glue(key, text, display=False)  # every number the prose states, from the files and the code
sorted(results)

# %% [markdown]
# ## Against the machine's own peak (`benchmarks/roofline.py`)
#
# We measure, in one run, this machine's float32 matmul peak (a large square matmul, best of several)
# and what the two stages that dominate the book reach against it. FLOPs are counted on the real
# passes (`torch.utils.flop_counter`: matmuls and attention, torch's CPU flash attention through
# `benchmarks/flops.py`; elementwise work counts zero). Three kinds of rows:
#
# - **probing, a $Q=512$ run**: the book's own probing workload. The distinct contexts of every
#   member and non-member of a $Q = 512$ run of each shipped table ($2Q$ queries x
#   {glue:text}`n_manipulations` manipulations, {glue:text}`book_contexts` distinct contexts), planned into batches
#   once and scored by
#   M_ref: what every probed model after the first costs notebook 03, since a run's batches are
#   planned once for M_ref and all its epochs.
# - **probing, synthetic queries**: {glue:text}`synthetic_probes` probes with the planning and deduplication
#   inside the timed call, a few hundred contexts in half-filled batches. They understate the book's probing
#   rate.
# - **fine-tuning**: one AdamW step at each context and query size the table names.
#
# The book runs its workers on one thread each, so the one-thread panel is the one that describes
# it. The peak differs between machines more than the model's kernels do: the same code reached about the
# same GFLOP/s on the developers' earlier machine, whose peak was far higher, so a far smaller fraction of it
# (CHANGELOG.md), and {glue:text}`ft_gflops_1` GFLOP/s per fine-tuning step against {glue:text}`peak_1` here
# ({glue:text}`ft_fraction_1`). Compare fractions only with the peak of the same run.

# %%
roofline = roofline_table(results["roofline"])
roofline.round(3)

# %%
fig = plot_roofline(roofline)

# %%
speedups = roofline_speedups(roofline)  # rows only when the file holds a `before` run (`--label before`, `--merge`)
speedups.round(2) if len(speedups) else Markdown("This `roofline.json` holds one run: no before/after speed-ups.")

# %% [markdown]
# ```{note}
# The probing path does less work than scoring every context row by row: contexts the reference
# LTM cannot tell apart (row order, uniform duplication; see notebook 03) are scored once, and
# identical context rows enter the network once, weighted by their count, so a multiple-choice
# context is one row per candidate plus the query. On the book's own workload those small
# contexts still run at {glue:text}`book_fraction_1` of the one-thread peak here, because a $Q = 512$ run
# has enough of them to fill every batch. What caps the fraction is the architecture's shape:
# {glue:text}`n_heads` heads of {glue:text}`head_dim` make every attention matmul {glue:text}`head_dim` deep
# over a few to a few dozen tokens, so attention runs far below peak while the projections run near it,
# and LayerNorm, GELU and the copies between the column and row layouts (a large share of a probing
# pass's time, `torch.profiler`) count no FLOPs.
# ```

# %% [markdown]
# ```{note}
# **Where a fine-tuning step's time goes** (`torch.profiler`, self time). torch's CPU flash-attention
# kernel used to take most of a step, much of it on the *feature* attention, many small attentions where
# its fixed cost per (batch, head) dominates. Small attentions now go through batched matmuls with a
# hand-written backward (`iclmem/ltm/attention.py`; equal to the fused kernel to float32 rounding,
# `tests/ltm/test_attention.py`), and the row attention, still the flash kernel, which is faster there,
# leads the profile ahead of the linear layers, the copies between the column and row layouts, the small
# attentions and the elementwise layer norms, GELU and softmax (counted as zero FLOPs). The row
# attention's matmuls are {glue:text}`head_dim` deep, so it runs at a fraction of peak by itself and caps
# the step.
#
# Then the work itself shrank: only target cells are decoded, so the last layer computes its feature
# attention's query at the target cell alone and its row attention and feed-forward on the target
# column alone (`_Block.target_cells`, equal to the full layer to float32 rounding). The profile kept
# its shape, so the fraction of peak stays where it was while the work fell: the plot above shows
# fractions, the steps and probes per second in `roofline.json` show the gain. CHANGELOG.md keeps the
# profiles and timings measured at each change (issue 18).
# ```

# %% [markdown]
# ## A softmax below one vector register (`benchmarks/softmax_keys.py`)
#
# torch's CPU softmax vectorizes the last dimension in blocks of {glue:text}`vector_keys` floats; below
# {glue:text}`vector_keys` keys it takes a scalar path, several times slower per element (the first table
# times both paths at each key count). Two of the book's hot attentions fall there: the row attention of a
# multiple-choice context (one row per candidate: `n_candidates` for a regression table, two for a binary
# one) and the feature attention of a narrow table ({glue:text}`narrow_tables`). Below
# {glue:text}`vector_keys` keys the softmax and its backward are now written out
# (max, exp, sum; `iclmem/ltm/attention.py`). The rule is a fixed key count, not a timing taken at
# run time, so one input always takes one path. We time both paths in the same process,
# interleaved pair by pair: the small attention alone, one probing epoch of a real $Q = 512$ run of
# each shipped table ($M_{ref}$ and the first fine-tuned epoch, all {glue:text}`n_manipulations` manipulations),
# and fine-tuning steps with each
# table's feature count. `speedup` is before over after; the probing rows give the largest score
# difference between the two paths (float32 rounding).

# %%
if "softmax_keys" in results:
    display(settings({k: v for k, v in results["softmax_keys"].items() if k in ("machine", "vector_keys")}))
    display(softmax_keys_table(results["softmax_keys"]).round(4))

# %% [markdown]
# ## The ceiling of the model's shapes, and what batching runs buys (`benchmarks/kernel_ceiling.py`)
#
# We time each kernel kind of a fine-tuning step alone at the step's own shapes (the q/k/v
# projection, the row attention by torch's flash kernel, the feature attention by batched
# matmuls), count the step's FLOPs by kind, and derive the step's *ceiling*: its FLOPs over the
# time its kernels would take at their own rates, with every elementwise operation free. A step
# cannot beat that ceiling without other kernels. We then put $G$ tasks of the step's shape in one
# forward of one model: a batch of $G$ runs with stacked weights multiplies the same matrices $G$
# times over, so if one model gains nothing from $G$ tasks per forward, $G$ stacked runs gain
# nothing either. The runs of a grid are therefore trained one per process (groups of one run), and the
# two worker processes of `make book` keep both cores busy.

# %%
if "kernel_ceiling" in results:
    ceiling, batched = kernel_ceiling_tables(results["kernel_ceiling"])
    display(settings(results["kernel_ceiling"]["machine"]))
    display(ceiling.round(3))
    display(batched.round(3))

# %% [markdown]
# ## Fine-tuning steps per second (`benchmarks/finetune_speed.py`)
#
# One AdamW step of the reference LTM on a {glue:text}`finetune_context`-row context and $Q$ query rows (Tab. 2),
# with the
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
# The {glue:text}`n_manipulations` manipulated multiple-choice contexts of a set of queries, scored in padded batches or one
# context per forward pass, in the same run; the ratio is the speed-up of batching.

# %%
if "probe_speed" in results:
    for frame in probe_speed_tables(results["probe_speed"]):
        display(frame)

# %% [markdown]
# ## Bootstrap intervals: vectorized vs a loop over resamples (`benchmarks/bootstrap_speed.py`)
#
# CPU seconds for {glue:text}`bootstrap_resamples` stratified resamples of AUC, TPR@1% and TPR@10%, computed per
# resample (a sort and an ROC curve each) or all at once from per-value counts, on the same resamples; the
# statistics agree to rounding (`max_abs_difference`). The bootstrap was never the bottleneck of
# sections 3-4 (a fraction of a second per run summary against minutes of probing), so this is a small win.

# %%
if "bootstrap_speed" in results:
    display(pd.DataFrame(results["bootstrap_speed"]["rows"]))

# %% [markdown]
# ## The membership null: win matrices vs sorted scores (`benchmarks/null_speed.py`)
#
# Every claim's null recomputes each probed (run, epoch) under {glue:text}`null_permutations` membership
# permutations, and the `bound` reading of Tab. 3 needs a {glue:text}`null_resamples`-resample bootstrap lower
# bound of the AUC in each (`iclmem.probe.null.auc_lower_bounds`). With one win matrix per permutation that is
# a $(B \times n) (n \times n)$ product for $B$ resamples, about {glue:text}`null_mflop` MFLOP per permutation
# at {glue:text}`null_queries` queries; counted from sorted scores (cumulative resample weights and
# `searchsorted`) it is a few passes over $B \times n$ numbers. Every term is an integer, so both give the same bounds bit for bit (asserted here and in
# `tests/probe/test_probe_null.py`); the null takes the sorted path above {glue:text}`rank_path_pairs` pairs
# (`RANK_PATH_PAIRS`), where the first table shows the crossover. The second line is the whole null
# of a grid of $Q = 512$ runs (`null_summaries`) in one thread and in two (`$ICLMEM_WORKERS`).

# %%
if "null_speed" in results:
    display(pd.DataFrame(results["null_speed"]["bounds"]))
    display(pd.Series(results["null_speed"]["null_summaries"]).to_frame("value"))

# %% [markdown]
# ## LLM requests: one at a time vs a window in flight (`benchmarks/openai_concurrency.py`)
#
# The paper's grid is about {glue:text}`paper_requests` GPT-4 requests ({paper}`200` instances x {paper}`4`
# datasets x {paper}`5` ks x {paper}`3` settings, classification {paper}`3` times, one judge request per
# memorization completion; Sec. 4). The OpenAI-compatible backend keeps up to `ICLMEM_OPENAI_CONCURRENCY`
# requests in flight (default {glue:text}`default_window`), writes each completion to the disk cache as it
# arrives and returns them in request order. Here the same requests go through the real backend and cache to
# a loopback server that answers each after a fixed delay, one at a time and {glue:text}`window_measured` at a
# time, in one run; `paper_scale_hours` is the paper's grid at that rate. A real API's
# latency is longer (seconds for a long k-shot prompt) and its rate limits bound the window; the
# speed-up is what carries over.

# %%
if "openai_concurrency" in results:
    concurrency = results["openai_concurrency"]
    print(f"server delay {concurrency['server_delay_s']} s per request; measured ratio {concurrency['ratio']:.2f}")
    display(openai_concurrency_table(concurrency))

# %% [markdown]
# ## In-process decoding against llama.cpp: continuous batching over the shared prefix (`benchmarks/llm_decoding.py`)
#
# Chapter 6's k-shot prompts share thousands of tokens of demonstrations. The in-process backend
# keeps that prefix's key/value cache once, and its decoder (`iclmem/llm/decoding.py`) reads it once
# per step for all rows; a row that ends (stop token, newline or token budget) costs nothing more
# and its slot takes the next prompt at once (continuous batching), where static batches wait for
# the whole batch to end. We decode the same prompts (one call of notebook 06) every way, and
# llama.cpp on the GGUF file the book's float32 model is converted from, one prompt at a time with
# its own prefix reuse and the same stopping rules. The machine is shared, so every run of ours
# follows a run of llama.cpp and each speed ratio is the median of those back-to-back pairs. Every
# batched completion must equal the one-at-a-time completion token for token (`differs` counts
# those that do not); llama.cpp computes with the file's quantized weights, so its texts may differ.

# %%
if "llm_decoding" in results:
    decoding = results["llm_decoding"]
    display(Markdown(decoding_summary(decoding)))
    display(decoding_table(decoding))

# %%
if "llm_decoding" in results and "chosen_batch" in results["llm_decoding"]:
    fig = plot_decoding_curve(results["llm_decoding"])

# %% [markdown]
# ## Random kills of a tiny book (`benchmarks/kill_random.py`)
#
# Not a speed: a tiny book ({glue:text}`kill_setting`) is built once, then afresh for each of
# {glue:text}`kill_instants` seeded instants drawn over that build's time; `iclmem book` and its
# kernel are SIGKILLed there and the same command runs again. Its glued values, executed notebooks
# (timings and cell ids aside), build folder, results store (byte for byte) and cache must equal the
# uninterrupted build's, with no temporary file left. `tests/book/test_kill_random.py` runs a few instants.

# %%
if "kill_random" in results:
    kills = results["kill_random"]
    print(f"uninterrupted build {kills['baseline_s']} s; all equal: {kills['all_equal']}; "
          f"temporary files left: {kills['temporary_files_left']}")
    display(kill_random_table(kills))

# %% [markdown]
# ## Other benchmarks
#
# Every further result file, flattened (the sweep's scaling with Dask workers, the LLM's shared
# prompt-prefix cache), as the benchmark wrote it.

# %%
for name, frame in other_results(results).items():
    print(name)
    display(frame)
