"""The replication flow: instances -> segment pairs -> k-shot prompts (3 settings) -> completions -> judge
-> rates, accuracy, correlation.

Paper Sec. 3.2 (memorization in k-shot ICL), Sec. 3.4 (performance and its Pearson correlation with
memorization, Tab. 2-3; performance on memorized vs non-memorized instances), Sec. 3.5 (regimes). The
controlled ground truth (members vs non-members of a fine-tuning set) is an addition of the companion.

``repeats`` runs every classification prompt that many times (the paper reports performance as the mean of 3
runs); each repeat is a request of its own (:attr:`ChatRequest.repeat`, part of the cache key), and accuracy
averages the repeats of an instance before averaging over instances. :func:`request_plan` counts, before
anything is sent, the requests of each generator model and those of the LLM judge, separately.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from iclmem.llm.cache import CachedBackend, cache_root
from iclmem.llm.chat import ChatBackend, ChatRequest, Decoding
from iclmem.llm.datasets import (
    Instance,
    LoadedDataset,
    Sample,
    SamplingError,
    assign_members,
    demonstrations_for_k,
    load_dataset,
    sample_instances,
)
from iclmem.llm.finetune import LLMFinetuneConfig, finetune
from iclmem.llm.prompts import (
    SETTINGS,
    check_settings,
    clean_completion,
    memorization_messages,
    parse_label,
    performance_messages,
)
from iclmem.llm.protocol import regime
from iclmem.llm.segments import SegmentPair, split_instance
from iclmem.store.atomic import atomic_write_text


@dataclass(frozen=True)
class ReplicationConfig:
    """Every knob of one replication run (the notebook's parameters use the same names)."""

    dataset: str = "wine_vivino"
    split: str = "train"
    data_files: str | None = None
    ks: tuple[int, ...] = (0, 10, 25, 50)
    settings: tuple[str, ...] = tuple(SETTINGS)
    n_instances: int = 16
    n_demonstrations: int = 50
    seed: int = 0
    segment_min: float = 0.6
    segment_max: float = 0.8
    max_new_tokens: int = 24
    performance_max_new_tokens: int = 6
    prompt_layout: str = "turns"
    member_fraction: float = 0.5
    repeats: int = 1  # runs of each classification prompt (the paper: 3, averaged)
    #: Stop strings of the memorization and classification completions: none unless asked, as in the paper (its
    #: completions end at 100 / 10 tokens, Sec. 4 "Model"); ("\n",) cuts them at the first newline.
    stop: tuple[str, ...] = ()
    #: Fine-tuning texts carry each member's label (``"<text> Label: <label>."``): contamination as the paper's
    #: datasets have it (their rows hold the label), which claim D8 (Sec. 5.2 Obs. 2) and Obs. 4 (contamination
    #: inflates performance) need: without it, membership cannot raise classification accuracy.
    finetune_labels: bool = False

    def __post_init__(self) -> None:
        if self.repeats < 1:
            raise ValueError(
                f"repeats must be >= 1, got {self.repeats}; the paper runs each classification prompt 3 times"
            )
        object.__setattr__(self, "ks", tuple(sorted({int(k) for k in self.ks})))
        object.__setattr__(self, "settings", tuple(check_settings(self.settings)))
        object.__setattr__(self, "stop", tuple(self.stop))
        if not self.ks:
            raise ValueError("ks is empty")
        if max(self.ks) > self.n_demonstrations:
            raise SamplingError(
                f"k={max(self.ks)} is larger than the demonstration pool (n_demonstrations={self.n_demonstrations}); "
                f"raise n_demonstrations to at least {max(self.ks)} or drop that k"
            )
        if min(self.ks) < 0:
            raise SamplingError(f"k must be >= 0, got {min(self.ks)}")

    def memorization_decoding(self) -> Decoding:
        return Decoding(max_new_tokens=self.max_new_tokens, stop=self.stop)

    def performance_decoding(self) -> Decoding:
        return Decoding(max_new_tokens=self.performance_max_new_tokens, stop=self.stop)


@dataclass
class Experiment:
    """Instances (with membership), demonstration pool and segment pairs of one configuration."""

    config: ReplicationConfig
    data: LoadedDataset
    sample: Sample
    pairs: dict[str, SegmentPair] = field(default_factory=dict)

    @property
    def spec(self) -> Any:
        return self.data.spec

    @property
    def instances(self) -> tuple[Instance, ...]:
        return self.sample.instances

    def demonstrations(self, k: int) -> list[Instance]:
        return demonstrations_for_k(self.sample, k)

    def memorization_requests(self, setting: str, k: int) -> list[ChatRequest]:
        demos = [self.pairs[d.id] for d in self.demonstrations(k)]
        dec = self.config.memorization_decoding()
        return [
            ChatRequest(
                memorization_messages(
                    self.spec, self.config.split, setting, demos, self.pairs[i.id], self.config.prompt_layout
                ),
                dec,
            )
            for i in self.instances
        ]

    def performance_requests(self, k: int, repeats: int | None = None) -> list[ChatRequest]:
        """Classification requests, repeat by repeat (``repeats`` defaults to the config's): the instances of
        repeat 0, then those of repeat 1, ... (:meth:`performance_instances` gives the instance of each)."""
        demos = self.demonstrations(k)
        dec = self.config.performance_decoding()
        msgs = [performance_messages(self.spec, demos, i, self.config.prompt_layout) for i in self.instances]
        return [
            ChatRequest(m, dec, r) for r in range(self.config.repeats if repeats is None else repeats) for m in msgs
        ]

    def performance_instances(self, repeats: int | None = None) -> list[Instance]:
        """The instance of each request of :meth:`performance_requests`, in the same order."""
        return list(self.instances) * (self.config.repeats if repeats is None else repeats)

    def member_texts(self) -> list[str]:
        """The fine-tuning texts: each member's text, with its label when ``config.finetune_labels``."""
        return [finetune_text(i, self.config.finetune_labels) for i in self.instances if self.sample.is_member(i)]

    def instance_table(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "instance_id": i.id,
                    "label": i.label,
                    "member": self.sample.is_member(i),
                    "first": self.pairs[i.id].first,
                    "second": self.pairs[i.id].second,
                }
                for i in self.instances
            ]
        )


def finetune_text(instance: Instance, with_label: bool = False) -> str:
    """One member's fine-tuning text: its text (the segments are cut from it), then ``" Label: <label>."`` when
    ``with_label``."""
    return f"{instance.text} Label: {instance.label}." if with_label else instance.text


def build_experiment(config: ReplicationConfig, data: LoadedDataset | None = None) -> Experiment:
    """Load the dataset, draw instances and demonstrations, assign members, split into segment pairs."""
    data = data or load_dataset(config.dataset, config.split, config.data_files)
    sample = sample_instances(data, config.n_instances, config.n_demonstrations, config.seed)
    sample = assign_members(sample, config.member_fraction)
    pairs = {
        i.id: split_instance(i, data.spec.kind, config.seed, config.segment_min, config.segment_max)
        for i in (*sample.instances, *sample.demonstrations)
    }
    return Experiment(config, data, sample, pairs)


# -- context window ------------------------------------------------------------------------------------------
def context_fit(backend: ChatBackend, exp: Experiment, ks: Iterable[int] | None = None) -> pd.DataFrame:
    """Longest prompt per k (over settings, instances and the performance prompt) and whether it fits.

    Never truncate: a k whose longest prompt plus completion budget exceeds the context window is reported
    and left out (:func:`runnable_ks`).
    """
    rows = []
    budget = _completion_budget(exp)
    for k in ks if ks is not None else exp.config.ks:
        longest = max(backend.count_tokens(r) for r in _requests_at(exp, k))
        window = backend.context_window
        rows.append(
            {
                "k": k,
                "longest_prompt_tokens": longest,
                "context_window": window,
                "fits": window is None or longest + budget <= window,
            }
        )
    return pd.DataFrame(rows)


def runnable_ks(fit: pd.DataFrame) -> list[int]:
    """The ks up to the largest one that fits (all of them when the window is unknown)."""
    ok = fit[fit["fits"]]["k"].tolist()
    return [k for k in fit["k"] if k <= max(ok)] if ok else []


def _completion_budget(exp: Experiment) -> int:
    return max(exp.config.max_new_tokens, exp.config.performance_max_new_tokens)


def _requests_at(exp: Experiment, k: int) -> list:
    """Every prompt a run sends at ``k``: each setting's memorization requests, then the performance requests."""
    return [r for s in exp.config.settings for r in exp.memorization_requests(s, k)] + exp.performance_requests(
        k, repeats=1
    )


def largest_fitting_k(backend: ChatBackend, exp: Experiment, pool: int | None = None) -> int:
    """Largest k <= the pool size whose prompts fit the context window (binary search on k).

    A k fails at its first prompt that does not fit, and the prompt that failed last is counted
    first (the longest prompts are the same few at every k), so a failing k costs one token count
    instead of one per prompt; the answer is that of :func:`context_fit`'s ``fits``.
    """
    window, budget = backend.context_window, _completion_budget(exp)
    if window is None:
        return pool if pool is not None else len(exp.sample.demonstrations)
    longest_first: list[int] = []  # indices of the prompts that failed, most recent first

    def fits(k: int) -> bool:
        reqs = _requests_at(exp, k)
        for i in [
            *(j for j in longest_first if j < len(reqs)),
            *(j for j in range(len(reqs)) if j not in longest_first),
        ]:
            if backend.count_tokens(reqs[i]) + budget > window:
                longest_first[:] = [i, *(j for j in longest_first if j != i)]
                return False
        return True

    lo, hi = 0, pool if pool is not None else len(exp.sample.demonstrations)
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def window_capacity(backend: ChatBackend, exp: Experiment, pool: int = 400) -> tuple[int, int]:
    """Largest k the context window holds for this configuration, and the demonstration pool it was probed with.

    Token counting only (no generation): a probe experiment drawn like ``exp`` (same dataset, instance count,
    seed) with a pool of up to ``pool`` demonstrations (halved while the dataset cannot supply it). The result
    equals the probe pool when even the whole pool fits (or the window is unknown).
    """
    size = max(pool, len(exp.sample.demonstrations))
    while size > len(exp.sample.demonstrations):
        try:
            probe = build_experiment(replace(exp.config, n_demonstrations=size, ks=(0,)), exp.data)
            break
        except SamplingError:
            size //= 2
    else:
        probe, size = exp, len(exp.sample.demonstrations)
    if backend.context_window is None:
        return size, size
    return largest_fitting_k(backend, probe, size), size


# -- planning -------------------------------------------------------------------------------------------------
def memorization_requests(exp: Experiment, ks: Sequence[int]) -> list[ChatRequest]:
    return [r for k in ks for s in exp.config.settings for r in exp.memorization_requests(s, k)]


def all_requests(exp: Experiment, ks: Sequence[int]) -> list[ChatRequest]:
    """Every request a generator model gets: memorization (all settings), then classification (all repeats)."""
    return memorization_requests(exp, ks) + [r for k in ks for r in exp.performance_requests(k)]


def request_summary(backend: CachedBackend, requests: Sequence[ChatRequest]) -> dict[str, int]:
    """Requests and tokens a run will send (print it before a paid run)."""
    todo = backend.missing(requests)
    return {
        "requests": len(requests),
        "cached": len(requests) - len(todo),
        "to_send": len(todo),
        "prompt_tokens_to_send": sum(backend.count_tokens(r) for r in todo),
        "max_completion_tokens_to_send": sum(r.decoding.max_new_tokens for r in todo),
    }


def judge_requests_estimate(judge: Any, exp: Experiment, n: int) -> list[ChatRequest]:
    """``n`` requests shaped like the LLM judge's, for counting before any completion exists: the reference
    segments of the instances, in turn, each standing in for its own candidate."""
    refs = [exp.pairs[i.id].second for i in exp.instances]
    picked = [refs[j % len(refs)] for j in range(n)] if refs else []
    return judge.requests(picked, picked)


def request_plan(
    generators: Mapping[str, CachedBackend],
    exp: Experiment,
    ks: Sequence[int],
    judge: Any = None,
    judge_requests: int | None = None,
) -> pd.DataFrame:
    """What a run will send, generator and judge requests apart: one row per generator model (exact: its
    memorization and classification requests, less those in the disk cache), and one for the LLM judge
    (``judge``, an :class:`~iclmem.llm.judges.LLMJudge` over a :class:`CachedBackend`; left out when ``None``).

    The judge's requests depend on the completions, so its row is an upper bound counted before any exists:
    ``judge_requests`` pairs (``None``: every memorization completion of every model), none of them counted as
    cached, each prompt estimated with the reference segment as the candidate (:func:`judge_requests_estimate`).
    """
    rows = {}
    n_memorization = 0
    for label, backend in generators.items():
        mem_reqs = memorization_requests(exp, ks)
        n_memorization += len(mem_reqs)
        perf_reqs = [r for k in ks for r in exp.performance_requests(k)]
        rows[label] = {
            "role": "generator",
            "backend": backend.name,
            "model": backend.model_id,
            "memorization": len(mem_reqs),
            "performance": len(perf_reqs),
            **request_summary(backend, mem_reqs + perf_reqs),
            "count": "exact",
        }
    if judge is not None:
        n = n_memorization if judge_requests is None else max(0, min(judge_requests, n_memorization))
        reqs = judge_requests_estimate(judge, exp, n)
        backend = judge.backend
        rows["LLM judge"] = {
            "role": "judge",
            "backend": backend.name,
            "model": backend.model_id,
            "memorization": 0,
            "performance": 0,
            "requests": n,
            "cached": 0,
            "to_send": n,
            "prompt_tokens_to_send": sum(backend.count_tokens(r) for r in reqs),
            "max_completion_tokens_to_send": sum(r.decoding.max_new_tokens for r in reqs),
            "count": "at most",
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def does_not_fit(generators: Mapping[str, ChatBackend], exp: Experiment, ks: Sequence[int]) -> pd.DataFrame:
    """Every prompt of ``ks`` whose tokens plus completion budget exceed a generator's context window, counted before
    any request: one row per (model, task, setting, k, instance), ``requests`` = how many requests carry that prompt
    (the repeats of a classification prompt). Empty when everything fits or no window is known. The chapter runs
    only the ks whose prompts all fit (:func:`runnable_ks`) and names the others, so no prompt is dropped silently.
    """
    rows = []
    for label, backend in generators.items():
        window = backend.context_window
        if window is None:
            continue
        for k in ks:
            groups = [("memorization", s, exp.memorization_requests(s, k), 1) for s in exp.config.settings]
            groups.append(("performance", "", exp.performance_requests(k, repeats=1), exp.config.repeats))
            for task, setting, reqs, n in groups:
                for inst, req in zip(exp.instances, reqs, strict=True):
                    tokens = backend.count_tokens(req)
                    if tokens + req.decoding.max_new_tokens > window:
                        rows.append(
                            {
                                "model": label,
                                "task": task,
                                "setting": setting,
                                "k": k,
                                "instance_id": inst.id,
                                "prompt_tokens": tokens,
                                "max_new_tokens": req.decoding.max_new_tokens,
                                "context_window": window,
                                "requests": n,
                            }
                        )
    columns = [
        "model",
        "task",
        "setting",
        "k",
        "instance_id",
        "prompt_tokens",
        "max_new_tokens",
        "context_window",
        "requests",
    ]
    return pd.DataFrame(rows, columns=columns)


@dataclass
class RequestPlan:
    """What a run will send (:func:`request_plan`) and the prompts that do not fit (:func:`does_not_fit`)."""

    table: pd.DataFrame
    does_not_fit: pd.DataFrame
    ks_left_out: list[int]

    def text(self) -> str:
        if self.does_not_fit.empty:
            return "every prompt fits the context window"
        n = int(self.does_not_fit["requests"].sum())
        return (
            f"{n} requests do not fit the context window (k = {', '.join(map(str, self.ks_left_out)) or 'none'} left "
            "out "
            f"of the run; longest prompt {int(self.does_not_fit['prompt_tokens'].max())} tokens for a window of "
            f"{int(self.does_not_fit['context_window'].min())}): use a longer-context model or smaller ks"
        )


def plan_run(
    generators: Mapping[str, CachedBackend],
    exp: Experiment,
    ks_run: Sequence[int],
    judge: Any = None,
    judge_requests: int | None = None,
    ks: Sequence[int] | None = None,
) -> RequestPlan:
    """:func:`request_plan` for the ks that will run, and :func:`does_not_fit` over the configured ``ks`` (the
    config's when ``None``), so the prompts over the window are listed before any request is sent."""
    ks = list(exp.config.ks if ks is None else ks)
    over = does_not_fit(generators, exp, ks)
    table = request_plan(generators, exp, ks_run, judge, judge_requests)
    counts = over.groupby("model")["requests"].sum() if len(over) else pd.Series(dtype=int)
    table["does_not_fit"] = [
        int(counts.get(label, 0)) if role == "generator" else 0
        for label, role in zip(table.index, table["role"], strict=True)
    ]
    return RequestPlan(table, over, [k for k in ks if k not in set(ks_run)])


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from ..runtime.progress import Bar

    return Bar(total=total, desc=desc, disable=not enabled, leave=False)  # on the terminal, never in the notebook


# -- runs ------------------------------------------------------------------------------------------------------
def run_memorization(
    backend: ChatBackend, exp: Experiment, ks: Sequence[int], model_label: str | None = None, progress: bool = True
) -> pd.DataFrame:
    """One row per (setting, k, instance): the reference second piece and the completion."""
    rows = []
    label = model_label or backend.model_id
    groups = [(s, k) for k in ks for s in exp.config.settings]
    bar = _progress(len(groups) * len(exp.instances), f"memorization {label}", progress)
    for setting, k in groups:
        reqs = exp.memorization_requests(setting, k)
        for inst, comp in zip(exp.instances, backend.complete_batch(reqs), strict=True):
            pair = exp.pairs[inst.id]
            rows.append(
                {
                    "model": label,
                    "setting": setting,
                    "k": k,
                    "regime": regime(k),
                    "instance_id": inst.id,
                    "label": inst.label,
                    "member": exp.sample.is_member(inst),
                    "reference": pair.second,
                    "raw": comp.text,
                    "completion": clean_completion(comp.text),
                    "error": comp.error,
                    "prompt_tokens": comp.prompt_tokens,
                    "cached": comp.cached,
                }
            )
        bar.update(len(reqs))
    bar.close()
    return pd.DataFrame(rows)


def run_performance(
    backend: ChatBackend, exp: Experiment, ks: Sequence[int], model_label: str | None = None, progress: bool = True
) -> pd.DataFrame:
    """Standard k-shot classification with the same demonstrations (paper Sec. 3.4): one row per (k, instance,
    repeat), ``config.repeats`` repeats (the paper: 3)."""
    rows = []
    label = model_label or backend.model_id
    labels = exp.spec.labels
    instances = exp.performance_instances()
    bar = _progress(len(ks) * len(instances), f"performance {label}", progress)
    for k in ks:
        reqs = exp.performance_requests(k)
        for inst, req, comp in zip(instances, reqs, backend.complete_batch(reqs), strict=True):
            predicted = parse_label(comp.text, labels) if comp.ok else None
            rows.append(
                {
                    "model": label,
                    "k": k,
                    "regime": regime(k),
                    "instance_id": inst.id,
                    "repeat": req.repeat,
                    "label": inst.label,
                    "member": exp.sample.is_member(inst),
                    "completion": comp.text,
                    "predicted": predicted,
                    "correct": predicted == inst.label,
                    "error": comp.error,
                    "cached": comp.cached,
                }
            )
        bar.update(len(reqs))
    bar.close()
    return pd.DataFrame(rows)


def add_judgement(frame: pd.DataFrame, judge: Any, column: str = "match") -> pd.DataFrame:
    """Judge every row with a completion; rows with an API error, and answers the judge could not give or parse, get
    ``None`` (missing: left out of every rate, never counted as "no")."""
    out = frame.copy()
    ok = out["error"].isna()
    out[column] = None
    if ok.any():
        labels = judge.judge_many(list(out.loc[ok, "reference"]), list(out.loc[ok, "completion"]))
        out.loc[ok, column] = pd.Series(labels, index=out.index[ok], dtype=object)
    return out


# -- fine-tuned model -----------------------------------------------------------------------------------------
def finetuned_backend(base: Any, exp: Experiment, config: LLMFinetuneConfig) -> Any:
    """An in-process backend over the base model fine-tuned on the members; built on the first cache miss.

    Its ``model_id`` (base id + hash of fine-tuning config and member texts) keys the completion cache, so a
    re-run with the same members and settings fine-tunes nothing. Epoch losses are kept next to the cache.
    """
    from iclmem.llm.backends import InProcessBackend

    texts = exp.member_texts()
    model_id = f"{base.model_id}+{config.tag(texts)}"
    log = cache_root() / "llm_finetune" / f"{model_id.replace('+', '_')}.json"

    def build() -> Any:
        result = finetune(base.model, base.tokenizer, texts, config, base.model_id)
        atomic_write_text(
            log,
            json.dumps(
                {
                    "model_id": model_id,
                    "config": asdict(config),
                    "epoch_losses": result.epoch_losses,
                    "n_texts": result.n_texts,
                    "n_tokens": result.n_tokens,
                }
            ),
        )
        return result.model

    backend = InProcessBackend(
        tokenizer=base.tokenizer,
        model_id=model_id,
        model_factory=build,
        context_window=base.context_window,
        prefix_cache=base.prefix_cache,
        batch_size=base.batch_size,
    )
    backend.finetune_log = log  # type: ignore[attr-defined]
    return backend


def finetune_log(backend: Any) -> dict[str, Any] | None:
    path = getattr(getattr(backend, "backend", backend), "finetune_log", None)
    return json.loads(path.read_text()) if path is not None and path.exists() else None


# -- tables ---------------------------------------------------------------------------------------------------
def memorization_rates(
    judged: pd.DataFrame, by: Sequence[str] = ("model", "setting", "k"), column: str = "match"
) -> pd.DataFrame:
    """Percent of instances with an exact match and with an exact or near-exact match (Sec. 3.2)."""
    df = judged[judged[column].notna()].copy()
    df["exact"] = df[column] == "exact"
    df["memorized"] = df[column].isin(["exact", "near-exact"])
    out = df.groupby(list(by), observed=True).agg(
        n=("exact", "size"), exact=("exact", "mean"), memorized=("memorized", "mean")
    )
    out[["exact", "memorized"]] *= 100
    return out.reset_index()


def per_instance(perf: pd.DataFrame, by: Sequence[str] = ("model", "k")) -> pd.DataFrame:
    """Answered classification rows with ``correct`` as the share of an instance's repeats answered correctly
    (one row per ``by`` and instance; the rows themselves when there are no repeats)."""
    df = perf[perf["error"].isna()]
    if "repeat" not in df.columns or df["repeat"].nunique() <= 1:
        return df
    return (
        df.assign(correct=df["correct"].astype(float))
        .groupby([*by, "instance_id"], observed=True, as_index=False)["correct"]
        .mean()
    )


def accuracy(perf: pd.DataFrame, by: Sequence[str] = ("model", "k")) -> pd.DataFrame:
    """Percent correct per ``by``; with repeats, the mean over instances of each instance's mean over repeats
    (``n`` counts instances)."""
    df = per_instance(perf, by)
    out = df.groupby(list(by), observed=True).agg(n=("correct", "size"), accuracy=("correct", "mean"))
    out["accuracy"] *= 100
    return out.reset_index()


def _pearson(x: Sequence[float], y: Sequence[float]) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def correlation_table(rates: pd.DataFrame, acc: pd.DataFrame, measure: str = "memorized") -> pd.DataFrame:
    """Pearson r of accuracy and memorization across the k regimes, per setting and model (Tab. 2: ``memorized``,
    Tab. 3: ``exact``). NaN when either series is constant (correlation undefined)."""
    merged = rates.merge(acc[["model", "k", "accuracy"]], on=["model", "k"])
    table = merged.groupby(["setting", "model"], observed=True).apply(
        lambda g: _pearson(g.sort_values("k")["accuracy"], g.sort_values("k")[measure]), include_groups=False
    )
    return table.unstack("model").reindex([s for s in SETTINGS if s in set(merged["setting"])])


def memorized_vs_not(judged: pd.DataFrame, perf: pd.DataFrame, column: str = "match") -> pd.DataFrame:
    """Accuracy on instances judged memorized (exact or near-exact) vs the others, per model, setting, k (Sec. 3.4)."""
    df = judged[judged[column].notna()][["model", "setting", "k", "instance_id", column]].merge(
        per_instance(perf)[["model", "k", "instance_id", "correct"]], on=["model", "k", "instance_id"]
    )
    df["memorized"] = df[column].isin(["exact", "near-exact"])
    out = df.groupby(["model", "setting", "k", "memorized"], observed=True).agg(
        n=("correct", "size"), accuracy=("correct", "mean")
    )
    out["accuracy"] *= 100
    return out.reset_index()


def judge_subsample(judged: pd.DataFrame, n: int, seed: int = 0, column: str = "match") -> pd.DataFrame:
    """Up to ``n`` judged rows, spread evenly over the offline judge's classes (a random draw would be
    almost all "no"), for the LLM judge and the agreement of the two judges."""
    df = judged[judged[column].notna()]
    if n <= 0 or df.empty:
        return df.iloc[:0]
    classes = [c for c in ("exact", "near-exact", "no") if (df[column] == c).any()]
    rng = np.random.default_rng(seed)
    picked: list[int] = []
    remaining = n
    for i, c in enumerate(classes):
        idx = df.index[df[column] == c].to_numpy()
        take = min(len(idx), remaining // (len(classes) - i))
        picked += rng.choice(idx, size=take, replace=False).tolist()
        remaining -= take
    return df.loc[sorted(picked)]
