"""Golchin et al. 2024, Sec. 3.4 and 5.2: k-shot classification accuracy beside chance, and whether in-context learning
improves on it at all (notebook 06; the condition of claims D6 and D7).

The paper's Observation 3 (claim D7) speaks of the regimes "when providing demonstrations in ICL leads to performance
improvement compared to zero-shot learning". A small model can "improve" on a zero-shot prompt it does not answer in
the label format by copying one demonstration label to every instance: its accuracy then rises from 0 to the share of
that label, which is chance. So the condition is read against **chance**, the accuracy of answering the most frequent
true label to every instance (1 / the number of labels for the balanced samples of Sec. 4 "Data"), as well as
against zero-shot, and the table shows what the model answered (its most frequent answer and that answer's share).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.matrices import Focus, correct_matrix
from iclmem.chapters.ch06_llm_kshot.rules import (
    Interval,
    instance_interval,
    ks_text,
)
from iclmem.llm.protocol import regime
from iclmem.report.verdicts import (
    wilson_interval,
)


def chance_level(perf: pd.DataFrame) -> float:
    """Accuracy of the best constant answer: the share of the most frequent true label among the instances (one row
    per instance; 1 / the number of labels for a balanced sample). NaN without a ``label`` column or rows."""
    if "label" not in perf.columns or perf.empty:
        return float("nan")
    labels = perf.drop_duplicates("instance_id")["label"]
    return float(labels.value_counts(normalize=True).max())


def accuracy_by_k(perf: pd.DataFrame, chance: float | None = None) -> pd.DataFrame:
    """One row per (model, k): accuracy in percent with its 95% Wilson interval over the answers, chance beside it,
    whether the interval lies above chance, and the model's most frequent answer with its share (a model that answers
    one label to everything sits at chance, whatever zero-shot did). Failed requests are left out."""
    chance = chance_level(perf) if chance is None else chance
    ok = perf[perf["error"].isna()] if "error" in perf.columns else perf
    rows = []
    for (model, k), g in ok.groupby(["model", "k"], sort=True):
        hits, n = int(g["correct"].sum()), len(g)
        lo, hi = wilson_interval(hits, n)
        answers = g["predicted"].fillna("(no label)") if "predicted" in g.columns else pd.Series(dtype=object)
        top = answers.value_counts(normalize=True)
        rows.append(
            {
                "model": model,
                "k": int(k),
                "regime": regime(int(k)),
                "answers": n,
                "accuracy %": 100 * hits / n if n else np.nan,
                "lo %": 100 * lo,
                "hi %": 100 * hi,
                "chance %": 100 * chance,
                "above chance": bool(lo > chance),
                "most frequent answer": top.index[0] if len(top) else "",
                "its share %": 100 * float(top.iloc[0]) if len(top) else np.nan,
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class IclCondition:
    """Does in-context learning improve classification, on one focus (D7's condition, Sec. 5.2 Obs. 3)?

    ``above``: the ks > 0 whose accuracy interval (bootstrap over instances) lies above ``chance``; ``gain``: mean
    k > 0 accuracy minus zero-shot accuracy of the same instances, in points, with its interval ``gain_ci``.
    """

    ks: list[int]
    accuracy: dict[int, float]  # k -> accuracy in percent
    intervals: dict[int, Interval | None]
    chance: float  # percent
    gain: float
    gain_ci: Interval | None
    above: list[int]

    @property
    def met(self) -> bool:
        """ICL beats zero-shot (gain interval above 0) and reaches above chance at some k > 0."""
        return bool(self.above) and self.gain_ci is not None and self.gain_ci.lo > 0

    def text(self) -> str:
        acc = ", ".join(f"{self.accuracy[k]:.0f}%" for k in self.ks)
        gain = "no interval" if self.gain_ci is None else self.gain_ci.bounds()
        where = ks_text(self.above) if self.above else "no k > 0"
        return (
            f"accuracy {acc} at {ks_text(self.ks)} (chance {self.chance:.0f}%); above chance at {where}; "
            f"k > 0 minus zero-shot {self.gain:+.0f} points {gain}"
        )

    def why_not(self) -> str:
        """The reason the condition fails ("" when it is met)."""
        if self.met:
            return ""
        if not self.above:
            return (
                f"no k > 0 lifts accuracy above chance ({self.chance:.0f}%, the share of the most frequent label): the "
                "model does not learn the task in context, so any rise from zero-shot is a change of answer format, "
                "not the ICL improvement the claim is conditioned on"
            )
        return "the k > 0 accuracy does not exceed zero-shot (its interval is not above 0): the claim's condition fails"


def icl_condition(
    perf: pd.DataFrame, focus: Focus, chance: float, n_boot: int = 2000, seed: int = 0, members_only: bool | None = None
) -> IclCondition:
    """:class:`IclCondition` of the focus's classification answers (``chance`` as a share, 0-1)."""
    c = correct_matrix(perf, focus, members_only)
    ks = [int(k) for k in c.columns]
    x = c.to_numpy()
    acc = {k: float(np.nanmean(x[:, j]) * 100) for j, k in enumerate(ks)}
    intervals: dict[int, Interval | None] = {}
    for j, k in enumerate(ks):
        col = x[:, j]
        intervals[k] = instance_interval(len(col), lambda i, col=col: float(np.nanmean(col[i]) * 100), n_boot, seed)
    shots = [k for k in ks if k > 0]
    above = [k for k in shots if intervals[k] is not None and intervals[k].lo > chance * 100]
    gain, gain_ci = float("nan"), None
    if 0 in ks and shots:
        cols = [ks.index(k) for k in shots]
        per = np.nanmean(x[:, cols], axis=1) - x[:, ks.index(0)]
        gain = float(np.nanmean(per) * 100)
        gain_ci = instance_interval(len(per), lambda i: float(np.nanmean(per[i]) * 100), n_boot, seed)
    return IclCondition(ks, acc, intervals, chance * 100, gain, gain_ci, above)


__all__ = ["chance_level", "accuracy_by_k", "IclCondition", "icl_condition"]
