"""Golchin et al. 2024, "Memorization In In-Context Learning", Sec. 3-5, Tab. 1-3, Fig. 2-4; claims D1-D9.

The chapter module of notebook 06 (``notebooks/06_llm_kshot_replication.py``): the notebook's summaries (the tables and
glued numbers of its sections: sample, context window, judges, members vs non-members, correlations, claims, run), and
the one place the notebook imports the chapter from. Its parts, one job each:

* :mod:`~iclmem.chapters.ch06_llm_kshot.paper`: the paper's reference values (Tab. 2-3, Sec. 5.1 levels, claim
constants);
* :mod:`~iclmem.chapters.ch06_llm_kshot.rules`: the rows a claim reads, its record, interval and rules;
* :mod:`~iclmem.chapters.ch06_llm_kshot.nulls`: the claims' permutation nulls;
* :mod:`~iclmem.chapters.ch06_llm_kshot.claims` (D1-D5), :mod:`~iclmem.chapters.ch06_llm_kshot.performance` (D6, D9, all
  nine) and :mod:`~iclmem.chapters.ch06_llm_kshot.correlation` (D7, D8);
* :mod:`~iclmem.chapters.ch06_llm_kshot.figures`: the companions of Fig. 2-4;
* :mod:`~iclmem.chapters.ch06_llm_kshot.report`: the offline judge's quality, the controlled gaps, the summary.

Intervals come from :mod:`iclmem.intervals`, verdict words from :mod:`iclmem.report.verdicts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from iclmem.chapters.ch06_llm_kshot.paper import (
    TABLE2,
    TABLE3,
)
from iclmem.chapters.ch06_llm_kshot.performance import (
    kappa_reading,
    verdict_counts,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    CONFIDENCE,
    EQUIVALENCE_MARGIN,
    N_BOOT,
    NULL_BOOT,
)
from iclmem.llm.chat import ChatBackend
from iclmem.llm.judges import SHIPPED_THRESHOLDS, Thresholds
from iclmem.llm.prompts import SETTINGS
from iclmem.llm.replication import (
    Experiment,
    context_fit,
    correlation_table,
    memorized_vs_not,
    runnable_ks,
    window_capacity,
)
from iclmem.report.records import ClaimResult
from iclmem.stats import N_PERMUTATIONS, NULL_LEVEL


# -- the notebook's summaries ------------------------------------------------------------------------------------
def glue_values(values: Mapping[str, object]) -> None:
    """Glue every value under its name with myst-nb, not displayed, as the object itself (a string keeps its
    quoted ``repr``, a number its digits), for ``{glue:text}`` in the chapter's prose."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, value, display=False)


def sample_table(exp: Experiment) -> pd.DataFrame:
    """One row (the dataset and split): rows read, usable, dropped (and why), instances, members, demonstrations."""
    data = exp.data
    return pd.DataFrame(
        {
            "rows read": [data.n_rows],
            "usable": [len(data.instances)],
            "dropped (empty or one word)": [data.n_dropped_empty],
            "dropped (duplicate text)": [data.n_dropped_duplicate],
            "dropped (other label)": [data.n_dropped_label],
            "instances": [len(exp.instances)],
            "members": [len(exp.sample.members)],
            "demonstrations": [len(exp.sample.demonstrations)],
        },
        index=[f"{data.spec.title} ({data.split})"],
    )


@dataclass(frozen=True)
class ContextSummary:
    """Which of the configured ks the model's context window holds (section "Backends and context window")."""

    fit: pd.DataFrame  # :func:`~iclmem.llm.replication.context_fit`: the longest prompt per k and whether it fits
    ks: tuple[int, ...]  # the configured ks
    ks_run: list[int]  # the ks run (:func:`~iclmem.llm.replication.runnable_ks`)
    k_max: int  # the largest k the window holds (:func:`~iclmem.llm.replication.window_capacity`)
    probe_pool: int  # the demonstrations k_max was probed with: k_max == probe_pool means "at least k_max"
    model_id: str
    context_window: int | None

    @property
    def left_out(self) -> list[int]:
        """The configured ks not run (their prompts do not fit)."""
        return [k for k in self.ks if k not in self.ks_run]

    @property
    def largest_k(self) -> int | str:
        """``k_max``, or ``"at least <k_max>"`` when even the whole probe pool fits."""
        return self.k_max if self.k_max < self.probe_pool else f"at least {self.k_max}"

    def glued(self) -> dict[str, object]:
        """``largest_k`` and ``ks_run`` (``"0, 25, 50"``), the names the chapter's prose reads."""
        return {"largest_k": self.largest_k, "ks_run": ", ".join(map(str, self.ks_run))}

    def text(self) -> str:
        """One line: model, window, the largest k that fits, the ks run and those left out."""
        largest = self.k_max if self.k_max < self.probe_pool else f"at least {self.k_max} (the probe pool)"
        return (
            f"model {self.model_id}, context window {self.context_window}; largest k that fits: {largest}; "
            f"runs k = {self.ks_run}" + (f"; left out (too long): {self.left_out}" if self.left_out else "")
        )


def context_summary(backend: ChatBackend, exp: Experiment) -> ContextSummary:
    """Fit of every configured k to ``backend``'s context window and the largest k it holds (token counts only)."""
    fit = context_fit(backend, exp)
    ks_run = runnable_ks(fit)
    k_max, probe_pool = window_capacity(backend, exp)
    return ContextSummary(
        fit, tuple(exp.config.ks), ks_run, k_max, probe_pool, backend.model_id, backend.context_window
    )


def judges_text(agree: Mapping[str, Any], n_unparsed: int, thresholds: Thresholds = SHIPPED_THRESHOLDS) -> str:
    """One line: the offline judge's thresholds and its agreement with the LLM judge
    (:func:`~iclmem.llm.judges.agreement`)."""
    return (
        f"thresholds: ROUGE-L >= {thresholds.rouge_l}, similarity >= {thresholds.semantic}; "
        f"{agree['n']} pairs judged by both: agreement {agree['agreement']:.0%}, Cohen's kappa {agree['kappa']:.2f}, "
        f"{n_unparsed} unparseable LLM answers (missing, left out of both judges' counts)"
    )


def judge_glue(agree: Mapping[str, Any] | None) -> dict[str, str]:
    """``judge_agreement`` (percent) and ``judge_kappa`` of the two judges; ``"n/a"`` when no LLM judge ran
    (``None``)."""
    if agree is None:
        return {"judge_agreement": "n/a", "judge_kappa": "n/a"}
    return {"judge_agreement": f"{agree['agreement']:.0%}", "judge_kappa": f"{agree['kappa']:.2f}"}


def ground_truth_table(rates: pd.DataFrame) -> pd.DataFrame:
    """Memorization (%) per model, setting and k (rows), members vs non-members (columns, exact + near-exact and exact).

    ``rates``: :func:`~iclmem.llm.replication.memorization_rates` by ``(model, member, setting, k)``.
    """
    gt = rates.pivot_table(index=["model", "setting", "k"], columns="member", values=["memorized", "exact"])
    gt.columns = [
        f"{'exact' if a == 'exact' else 'exact+near'} ({'members' if b else 'non-members'})" for a, b in gt.columns
    ]
    return gt.reindex(columns=sorted(gt.columns))


GROUND_TRUTH_NAMES = ("ft_members_kshot", "ft_nonmembers_kshot", "ft_members_zeroshot", "base_kshot", "ft_members_by_k")


def ground_truth_glue(rates: pd.DataFrame | None) -> dict[str, str]:
    """The summary's numbers of the controlled experiment, from ``rates`` by ``(model, member, setting, k)``.

    Each is a mean over the rows of ``rates`` (one per setting and k, as the tables show them), in percent:
    ``ft_members_kshot`` and ``ft_nonmembers_kshot`` (fine-tuned model, members / non-members, k > 0),
    ``ft_members_zeroshot`` (members, k = 0), ``base_kshot`` (the base model, all instances, k > 0) and
    ``ft_members_by_k`` (``"12% at k = 0, 40% at k = 25"``). All ``"n/a"`` without fine-tuning (``rates`` None).
    """
    if rates is None:
        return dict.fromkeys(GROUND_TRUTH_NAMES, "n/a")
    tuned = rates[rates.model == "fine-tuned"]
    base = rates[rates.model == "base"]
    by_k = tuned[tuned.member].groupby("k").memorized.mean()
    return {
        "ft_members_kshot": f"{tuned[tuned.member & (tuned.k > 0)].memorized.mean():.0f}%",
        "ft_nonmembers_kshot": f"{tuned[~tuned.member & (tuned.k > 0)].memorized.mean():.0f}%",
        "ft_members_zeroshot": f"{tuned[tuned.member & (tuned.k == 0)].memorized.mean():.0f}%",
        "base_kshot": f"{base[base.k > 0].memorized.mean():.0f}%",
        "ft_members_by_k": ", ".join(f"{v:.0f}% at k = {k}" for k, v in by_k.items()),
    }


def correlation_tables(rates: pd.DataFrame, acc: pd.DataFrame) -> pd.DataFrame:
    """This build's companions of Tab. 2 (exact + near-exact) and Tab. 3 (exact only), side by side.

    ``rates``: memorization rates by ``(model, setting, k)``; ``acc``: :func:`~iclmem.llm.replication.accuracy`.
    """
    return pd.concat(
        {
            "exact + near-exact (Tab. 2)": correlation_table(rates, acc, "memorized"),
            "exact only (Tab. 3)": correlation_table(rates, acc, "exact"),
        },
        axis=1,
    )


def paper_correlation_tables() -> pd.DataFrame:
    """The paper's Tab. 2 and Tab. 3 side by side (settings x datasets, GPT-4)."""
    return pd.concat({"Tab. 2 (exact + near-exact)": TABLE2, "Tab. 3 (exact only)": TABLE3}, axis=1)


def memorized_vs_not_table(mem: pd.DataFrame, perf: pd.DataFrame) -> pd.DataFrame:
    """Accuracy and instance count on memorized vs not memorized instances per model, setting and k, one column
    each (:func:`~iclmem.llm.replication.memorized_vs_not`)."""
    table = memorized_vs_not(mem, perf).pivot_table(
        index=["model", "setting", "k"], columns="memorized", values=["accuracy", "n"]
    )
    table.columns = [f"{a} ({'memorized' if b else 'not memorized'})" for a, b in table.columns]
    return table


def claims_glue(results: Sequence[ClaimResult], agree: Mapping[str, Any] | None) -> dict[str, object]:
    """The claims section's glued values: ``verdict-<ID>`` per claim, ``claims_verdicts`` (:func:`verdict_counts`),
    ``claims_n_boot``, ``claims_confidence``, ``equivalence_margin``, the null's ``claims_n_perm`` (draws per claim),
    ``claims_null_boot`` (bootstrap resamples per draw) and ``null_level`` (the largest null rate of a reproduced
    claim, percent), and ``judge_reading`` (:func:`kappa_reading` of the two judges' kappa, ``"not measured"`` when no
    LLM judge ran: ``agree`` None)."""
    values: dict[str, object] = {f"verdict-{r.claim_id}": r.verdict for r in results}
    values.update(
        {
            "claims_verdicts": verdict_counts(results),
            "claims_n_boot": N_BOOT,
            "claims_confidence": f"{CONFIDENCE:.0%}",
            "equivalence_margin": f"{EQUIVALENCE_MARGIN:g}",
            "claims_n_perm": N_PERMUTATIONS,
            "claims_null_boot": NULL_BOOT,
            "null_level": f"{NULL_LEVEL:.0%}",
            "judge_reading": kappa_reading(agree["kappa"]) if agree is not None else "not measured",
        }
    )
    return values


def run_glue(
    exp: Experiment, mem: pd.DataFrame, perf: pd.DataFrame, models: str, wall_minutes: float
) -> dict[str, object]:
    """The run's size for the chapter's introduction and summary: instances, members, settings (lower case),
    ``models`` (a phrase), max new tokens, wall minutes (one decimal), completions, how many came from the cache and
    how many failed (left out of every rate, and named in the summary)."""
    return {
        "run_instances": len(exp.instances),
        "run_members": len(exp.sample.members),
        "run_settings": ", ".join(SETTINGS[s].lower() for s in exp.config.settings),
        "run_models": models,
        "run_tokens": exp.config.max_new_tokens,
        "wall_minutes": f"{wall_minutes:.1f}",
        "n_completions": len(mem) + len(perf),
        "n_cached": int(mem.cached.sum() + perf.cached.sum()),
        "n_failed": int(mem["error"].notna().sum() + perf["error"].notna().sum()),
    }


__all__ = [
    "ContextSummary",
    "GROUND_TRUTH_NAMES",
    "claims_glue",
    "context_summary",
    "correlation_tables",
    "glue_values",
    "ground_truth_glue",
    "ground_truth_table",
    "judge_glue",
    "judges_text",
    "memorized_vs_not_table",
    "paper_correlation_tables",
    "run_glue",
    "sample_table",
]
