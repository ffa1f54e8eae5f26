"""The replication run of notebook 06 as one engine object: backend, models, judge, plan and completions (Golchin et al.
2024, Sec. 3-4; the controlled ground truth of this companion).

The notebook's parameters decide everything that differs between a run on the in-process model and one on an
OpenAI-compatible server, here and nowhere else, so that the notebook has no branch on its backend:

* :func:`prepare_environment`: the in-process model reads the local Hugging Face cache (``HF_HUB_OFFLINE=1`` unless
  set), and ``num_threads`` torch threads;
* :func:`make_generator`: the run's base model (in-process, or OpenAI-compatible with the window its server
  reports when ``ICLMEM_OPENAI_CONTEXT`` is unset);
* :func:`ground_truth_possible` / :func:`member_share`: only the in-process model can be fine-tuned on a known
  member subset; a hosted model has no membership ground truth (``member_fraction = 0``);
* :class:`Replication` (:func:`prepare_replication`): the models (base, and fine-tuned when possible), their labels,
  the LLM judge (its own server with ``ICLMEM_JUDGE_MODEL``, else the base model) and the request plan, built before
  any completion; :meth:`Replication.complete` then runs the memorization and classification prompts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from iclmem.llm.cache import CachedBackend
from iclmem.llm.chat import ChatBackend
from iclmem.llm.finetune import LLMFinetuneConfig
from iclmem.llm.judge_runs import judge_backend
from iclmem.llm.judges import LLMJudge
from iclmem.llm.replication import (
    Experiment,
    RequestPlan,
    finetune_log,
    finetuned_backend,
    plan_run,
    run_memorization,
    run_performance,
)

BASE, FINE_TUNED = "base", "fine-tuned"


def ground_truth_possible(backend: str, finetune_epochs: int) -> bool:
    """Whether the run fine-tunes a model on a known member subset (the in-process model with epochs > 0)."""
    return backend == "inprocess" and finetune_epochs > 0


def member_share(backend: str, finetune_epochs: int, fraction: float) -> float:
    """The config's member fraction: ``fraction`` with a fine-tuned model, else 0 (no membership ground truth)."""
    return fraction if ground_truth_possible(backend, finetune_epochs) else 0.0


def finetune_config(backend: str, epochs: int, lr: float, seed: int) -> LLMFinetuneConfig | None:
    """The fine-tuning of the controlled experiment, or ``None`` when this backend cannot be fine-tuned here."""
    return LLMFinetuneConfig(epochs=epochs, lr=lr, seed=seed) if ground_truth_possible(backend, epochs) else None


def prepare_environment(backend: str, num_threads: int = 0) -> None:
    """The in-process model is read from the local cache (``HF_HUB_OFFLINE=1`` unless set; an online run may still
    download datasets); ``num_threads`` > 0 sets torch's CPU threads."""
    if backend == "inprocess":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if num_threads:
        import torch

        torch.set_num_threads(num_threads)


def make_generator(backend: str, batch_size: int = 48) -> ChatBackend:
    """The run's base model, uncached: in-process (``batch_size`` instances decoded together) or OpenAI-compatible
    (its window from ``ICLMEM_OPENAI_CONTEXT``, else as its server reports it, else unknown)."""
    from iclmem.llm.backends import InProcessBackend, make_backend

    if backend == "inprocess":
        return InProcessBackend(batch_size=batch_size)
    raw = make_backend(backend)
    raw.adopt_reported_window()
    return raw


@dataclass
class Replication:
    """A prepared run: its models by label (base first), the LLM judge and the request plan (nothing sent yet)."""

    exp: Experiment
    raw: ChatBackend
    models: dict[str, CachedBackend]
    llm_judge: LLMJudge
    plan: RequestPlan
    ks_run: list[int]
    log: dict[str, Any] | None = field(default=None)

    @property
    def base(self) -> CachedBackend:
        return self.models[BASE]

    @property
    def has_ground_truth(self) -> bool:
        """A fine-tuned model with members and non-members: the controlled experiment."""
        return FINE_TUNED in self.models

    @property
    def focus_model(self) -> str:
        """The label of the model the claims read: the fine-tuned one when there is one, else the base model."""
        return FINE_TUNED if self.has_ground_truth else BASE

    @property
    def rates_by(self) -> tuple[str, ...]:
        """The grouping of the memorization rates: members apart only where membership means something."""
        return ("model", "member", "setting", "k") if self.has_ground_truth else ("model", "setting", "k")

    def models_text(self) -> str:
        """The models in words, for the chapter's prose."""
        if self.has_ground_truth:
            return "two models (before and after fine-tuning)"
        return f"one model ({self.base.model_id})"

    def complete(self, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Memorization and classification completions of every model at the ks that fit (disk-cached)."""
        mem = [run_memorization(m, self.exp, self.ks_run, label, progress) for label, m in self.models.items()]
        perf = [run_performance(m, self.exp, self.ks_run, label, progress) for label, m in self.models.items()]
        self.log = finetune_log(self.models[FINE_TUNED]) if self.has_ground_truth else None
        return pd.concat(mem, ignore_index=True), pd.concat(perf, ignore_index=True)

    def finetune_text(self) -> str:
        """One line on the fine-tuning: its size and loss per epoch, that it came from the cache, or that none ran."""
        if not self.has_ground_truth:
            return "no fine-tuning: this backend has no membership ground truth (every claim reads the raw rates)"
        if self.log is None:
            return "fine-tuning not re-run: every completion of the fine-tuned model came from the cache"
        return (
            f"fine-tuned on {self.log['n_texts']} member texts ({self.log['n_tokens']} tokens), "
            f"{len(self.log['epoch_losses'])} epochs; loss per epoch: "
            + ", ".join(f"{x:.2f}" for x in self.log["epoch_losses"])
        )


def prepare_replication(
    exp: Experiment,
    raw: ChatBackend,
    ks_run: list[int],
    finetune: LLMFinetuneConfig | None,
    judge: str = "offline",
    llm_judge_pairs: int = 0,
) -> Replication:
    """The models (``raw`` cached; fine-tuned on the members when ``finetune`` is given), the LLM judge and the plan.

    The LLM judge runs on ``ICLMEM_JUDGE_MODEL``'s server when set (:func:`~iclmem.llm.judge_runs.judge_backend`),
    else on the base model; with ``judge="offline"`` it is planned for ``llm_judge_pairs`` requests only.
    """
    base = CachedBackend(raw)
    models = {BASE: base}
    if finetune is not None:
        models[FINE_TUNED] = CachedBackend(finetuned_backend(raw, exp, finetune))
    judge_raw = judge_backend(raw)
    llm_judge = LLMJudge(base if judge_raw is raw else CachedBackend(judge_raw), layout=exp.config.prompt_layout)
    plan = plan_run(models, exp, ks_run, llm_judge, None if judge != "offline" else llm_judge_pairs)
    return Replication(exp, raw, models, llm_judge, plan, list(ks_run))


__all__ = [
    "BASE",
    "FINE_TUNED",
    "Replication",
    "finetune_config",
    "ground_truth_possible",
    "make_generator",
    "member_share",
    "prepare_environment",
    "prepare_replication",
]
