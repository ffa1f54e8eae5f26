"""Golchin et al. 2024, Sec. 3.1 and Sec. 4 "Human Evaluation": the offline judge's held-out quality on the labelled
pairs, its agreement with the LLM judge in words (Cohen's kappa) and in one line (notebook 06).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.rules import (
    N_BOOT,
)
from iclmem.llm.judge_accuracy import CVResult, cross_validate
from iclmem.llm.judges import SHIPPED_THRESHOLDS, Thresholds, fit_on_features, load_labelled_pairs, pair_features


@dataclass(frozen=True)
class JudgeQuality:
    """The offline judge on the labelled pairs: k-fold and leave-one-domain-out held-out labels, in-sample fit."""

    cv: CVResult
    lodo: CVResult
    shipped: Thresholds
    fitted: Thresholds  # refit on all pairs (equals ``shipped`` while the pairs are unchanged)
    in_sample_accuracy: float
    n_pairs: int
    domains: tuple[str, ...]

    def table(self) -> pd.DataFrame:
        """One row per (validation, kind of text): pairs, held-out accuracy and kappa with their 95% intervals."""
        parts = []
        for name, res in (
            ("5-fold" if len(self.cv.thresholds) == 5 else f"{len(self.cv.thresholds)}-fold", self.cv),
            ("leave one kind of text out", self.lodo),
        ):
            s = res.summary()
            parts.append(
                pd.DataFrame(
                    {
                        "validation": name,
                        "pairs": s["pairs"],
                        "n": s["n"],
                        "accuracy": [
                            f"{a:.0%} [{lo:.0%}, {hi:.0%}]"
                            for a, lo, hi in zip(s.accuracy, s.accuracy_lo, s.accuracy_hi, strict=True)
                        ],
                        "Cohen's kappa": [
                            f"{k:.2f} [{lo:.2f}, {hi:.2f}]"
                            for k, lo, hi in zip(s.kappa, s.kappa_lo, s.kappa_hi, strict=True)
                        ],
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)

    def headline(self) -> dict[str, float]:
        row = self.cv.summary().iloc[0]
        return {k: float(row[k]) for k in ("accuracy", "accuracy_lo", "accuracy_hi", "kappa", "kappa_lo", "kappa_hi")}

    def text(self) -> str:
        """One sentence: thresholds, pairs, held-out accuracy and kappa with intervals, and the in-sample contrast."""
        h = self.headline()
        lodo = self.lodo.summary().iloc[0]
        return (
            f"The offline judge's thresholds (ROUGE-L >= {self.shipped.rouge_l:g}, embedding similarity >= "
            f"{self.shipped.semantic:g}) were fitted on {self.n_pairs} labelled pairs of {len(self.domains)} kinds of "
            "text "
            f"({', '.join(self.domains)}). On pairs held out of the fit they label {h['accuracy']:.0%} "
            f"[{h['accuracy_lo']:.0%}, {h['accuracy_hi']:.0%}] as the human labels do (Cohen's kappa {h['kappa']:.2f} "
            f"[{h['kappa_lo']:.2f}, {h['kappa_hi']:.2f}], {len(self.cv.thresholds)}-fold cross-validation), and "
            f"{lodo['accuracy']:.0%} [{lodo['accuracy_lo']:.0%}, {lodo['accuracy_hi']:.0%}] when the held-out pairs "
            f"are a kind of text the fit never saw; on the pairs it was fitted on, {self.in_sample_accuracy:.0%}."
        )


def offline_judge_quality(
    encoder: Any = None, n_folds: int = 5, seed: int = 0, n_boot: int = N_BOOT, pairs: pd.DataFrame | None = None
) -> JudgeQuality:
    """Cross-validate the offline judge's thresholds on the labelled pairs (:mod:`iclmem.llm.judge_accuracy`)."""
    pairs = load_labelled_pairs() if pairs is None else pairs
    features = pair_features(pairs, encoder)
    fitted, acc = fit_on_features(features)
    cv = cross_validate(features, n_folds, seed, n_boot=n_boot)
    lodo = cross_validate(features, group="domain", seed=seed, n_boot=n_boot)
    return JudgeQuality(cv, lodo, SHIPPED_THRESHOLDS, fitted, acc, len(pairs), tuple(sorted(set(pairs["domain"]))))


def judges_text(agree: Mapping[str, Any], n_unparsed: int, thresholds: Thresholds = SHIPPED_THRESHOLDS) -> str:
    """One line: the offline judge's thresholds and its agreement with the LLM judge
    (:func:`~iclmem.llm.judges.agreement`)."""
    return (
        f"thresholds: ROUGE-L >= {thresholds.rouge_l}, similarity >= {thresholds.semantic}; "
        f"{agree['n']} pairs judged by both: agreement {agree['agreement']:.0%}, Cohen's kappa {agree['kappa']:.2f}, "
        f"{n_unparsed} unparseable LLM answers (missing, left out of both judges' counts)"
    )


def kappa_reading(kappa: float) -> str:
    """Landis & Koch's (1977) words for Cohen's kappa: "near chance" up to 0.20, then "fair", "moderate",
    "substantial" (above 0.60) and "almost perfect" (above 0.80); "not measured" for NaN."""
    if not np.isfinite(kappa):
        return "not measured"
    for bound, word in ((0.2, "near chance"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"


__all__ = ["JudgeQuality", "offline_judge_quality", "judges_text", "kappa_reading"]
