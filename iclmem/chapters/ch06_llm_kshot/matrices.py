"""Golchin et al. 2024, Sec. 3.2 and 5.1: the rows a claim reads (:class:`Focus`) and the notebook's frames as
instances x k matrices (memorization, exact + near-exact; classification correct), for the claims D1-D9 (notebook 06).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from iclmem.chapters.ch06_llm_kshot.paper import (
    ICL_SETTING,
)

MEMORIZED = ("exact", "near-exact")


@dataclass(frozen=True)
class Focus:
    """The rows a claim is computed on: one model, its fine-tuning members only or all instances."""

    model: str
    members_only: bool = False

    def rows(self, frame: pd.DataFrame, members_only: bool | None = None) -> pd.DataFrame:
        out = frame[frame["model"] == self.model]
        if self.members_only if members_only is None else members_only:
            out = out[out["member"].astype(bool)]
        return out

    def everyone(self) -> Focus:
        """The same model with all its instances, members and non-members: the rows a reading net of non-members
        reads (:mod:`~iclmem.chapters.ch06_llm_kshot.contrast`)."""
        return Focus(self.model, members_only=False)

    def describe(self, members_only: bool | None = None) -> str:
        only = self.members_only if members_only is None else members_only
        return f"{self.model} model, {'its fine-tuning members' if only else 'all instances'}"


def memorization_matrix(
    mem: pd.DataFrame,
    focus: Focus,
    settings: Sequence[str] | None = None,
    measure: str = "memorized",
    members_only: bool | None = None,
    column: str = "match",
) -> pd.DataFrame:
    """Instances x k: the share (0-1) of the ``settings`` (all when ``None``) in which the instance was memorized
    (``measure="memorized"``: exact or near-exact, Sec. 3.2) or matched exactly (``"exact"``)."""
    df = focus.rows(mem, members_only)
    df = df[df[column].notna()]
    if settings is not None:
        df = df[df["setting"].isin(list(settings))]
    hit = df[column].isin(MEMORIZED) if measure == "memorized" else df[column] == "exact"
    out = df.assign(hit=hit.astype(float)).pivot_table(index="instance_id", columns="k", values="hit", aggfunc="mean")
    return out.reindex(columns=sorted(out.columns))


def correct_matrix(perf: pd.DataFrame, focus: Focus, members_only: bool | None = None) -> pd.DataFrame:
    """Instances x k: 1.0 when the k-shot classification answer was correct (failed requests left out)."""
    df = focus.rows(perf, members_only)
    df = df[df["error"].isna()]
    out = df.assign(hit=df["correct"].astype(float)).pivot_table(
        index="instance_id", columns="k", values="hit", aggfunc="mean"
    )
    return out.reindex(columns=sorted(out.columns))


def icl_settings(mem: pd.DataFrame) -> tuple[list[str] | None, str]:
    """The paper's standard-ICL setting (segment pairs and labels, Sec. 5.1) when run, else the mean of all settings."""
    if ICL_SETTING in set(mem["setting"]):
        return [ICL_SETTING], "segment pairs and labels setting"
    return None, "mean of the settings run, without the segment pairs and labels setting"


__all__ = ["MEMORIZED", "Focus", "memorization_matrix", "correct_matrix", "icl_settings"]
