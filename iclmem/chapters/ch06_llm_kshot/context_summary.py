"""Golchin et al. 2024, Sec. 3.4 (k up to 200 demonstrations): which configured ks the model's context window holds
(notebook 06, section "Backends and context window").
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from iclmem.llm.chat import ChatBackend
from iclmem.llm.replication import (
    Experiment,
    context_fit,
    runnable_ks,
    window_capacity,
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


__all__ = ["ContextSummary", "context_summary"]
