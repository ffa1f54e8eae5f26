"""Notebook 06's report: the offline judge's held-out quality, the controlled gaps with intervals, and the summary
sentences, every number computed (Golchin et al. 2024, Sec. 3.1, Sec. 4 "Human Evaluation", Sec. 5).

A companion of :mod:`iclmem.chapters.ch06_llm_kshot.kshot` (the chapter's summaries; its parts hold the claims and
figures), kept
apart so that
each module holds one job: this one turns the chapter's frames and results into the tables and the text of its
"Judges" and "Summary" sections. No sentence here states a result that is not formatted from an argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.kshot import ContextSummary
from iclmem.chapters.ch06_llm_kshot.performance import kappa_reading, verdict_counts
from iclmem.chapters.ch06_llm_kshot.rules import (
    CONFIDENCE,
    MEMORIZED,
    N_BOOT,
    SHORT_SETTINGS,
    Focus,
    bootstrap,
    correct_matrix,
    memorization_matrix,
    pearson,
)
from iclmem.intervals import paired_bootstrap, unpaired_difference
from iclmem.llm.judge_accuracy import CVResult, cross_validate
from iclmem.llm.judges import SHIPPED_THRESHOLDS, Thresholds, fit_on_features, load_labelled_pairs, pair_features
from iclmem.report.records import VERDICTS, ClaimResult


# -- the offline judge, measured on pairs it was not fitted on --------------------------------------------------
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


# -- the controlled gaps: members vs non-members, fine-tuned vs base ----------------------------------------------
def _per_instance(mem: pd.DataFrame, model: str, member: bool | None, shots: bool) -> pd.Series:
    df = mem[(mem["model"] == model) & mem["match"].notna()]
    if member is not None:
        df = df[df["member"].astype(bool) == member]
    df = df[df["k"] > 0] if shots else df[df["k"] == 0]
    return df.assign(hit=df["match"].isin(MEMORIZED).astype(float)).groupby("instance_id")["hit"].mean()


def ground_truth_gaps(
    mem: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0, tuned: str = "fine-tuned", base: str = "base"
) -> pd.DataFrame:
    """Memorization gaps of the controlled experiment (percentage points, exact + near-exact, mean over settings and k),
    with 95% percentile bootstrap intervals: members minus non-members of the fine-tuned model (k > 0 and k = 0;
    instances resampled within each group) and fine-tuned minus base on the members (k > 0; paired over instances).
    Empty without a fine-tuned model in ``mem``."""
    if tuned not in set(mem["model"]):
        return pd.DataFrame(columns=["comparison", "regime", "estimate", "interval", "instances"])
    rows = []
    for shots, regime in ((True, "k > 0"), (False, "k = 0")):
        a, b = _per_instance(mem, tuned, True, shots).to_numpy(), _per_instance(mem, tuned, False, shots).to_numpy()
        if len(a) and len(b):
            lo, hi = (100 * x for x in unpaired_difference(a, b, n_boot, seed, CONFIDENCE))
            rows.append(
                {
                    "comparison": "fine-tuned: members minus non-members",
                    "regime": regime,
                    "estimate": (a.mean() - b.mean()) * 100,
                    "interval": f"[{lo:+.0f}, {hi:+.0f}]",
                    "instances": f"{len(a)} + {len(b)}",
                }
            )
    if base in set(mem["model"]):
        t, u = _per_instance(mem, tuned, True, True), _per_instance(mem, base, True, True)
        both = t.index.intersection(u.index)
        if len(both):
            d = (t[both] - u[both]).to_numpy()
            lo, hi, _ = paired_bootstrap(len(d), lambda i, d=d: float(np.mean(d[i])) * 100, n_boot, seed, CONFIDENCE)
            rows.append(
                {
                    "comparison": "members: fine-tuned minus base",
                    "regime": "k > 0",
                    "estimate": d.mean() * 100,
                    "interval": f"[{lo:+.0f}, {hi:+.0f}]",
                    "instances": str(len(both)),
                }
            )
    return pd.DataFrame(rows)


# -- Pearson's r across k, with an interval ------------------------------------------------------------------------
def correlation_intervals(
    mem: pd.DataFrame, perf: pd.DataFrame, measure: str = "memorized", n_boot: int = N_BOOT, seed: int = 0
) -> pd.DataFrame:
    """Pearson's r across the ks run of accuracy and memorization (``memorized``: exact + near-exact, Tab. 2;
    ``exact``: Tab. 3), per model and setting, with a 95% percentile bootstrap interval over instances (r recomputed
    on each resample, instances keeping all their ks; all instances of the model). ``r`` is NaN when either series is
    constant; the interval is missing when r is undefined in most resamples or fewer than three ks were run."""
    rows = []
    for model in dict.fromkeys(mem["model"]):
        focus = Focus(model)
        c = correct_matrix(perf, focus)
        for setting in [s for s in SHORT_SETTINGS if s in set(focus.rows(mem)["setting"])]:
            m = memorization_matrix(mem, focus, [setting], measure)
            ks = [k for k in c.columns if k in set(m.columns)]
            index = c.index.intersection(m.index)
            acc, mx = c.loc[index, ks].to_numpy(), m.loc[index, ks].to_numpy()

            def stat(idx: np.ndarray, acc: np.ndarray = acc, mx: np.ndarray = mx) -> float:
                return pearson(np.nanmean(acc[idx], axis=0), np.nanmean(mx[idx], axis=0))

            r = stat(np.arange(len(index))) if len(index) else float("nan")
            ci = bootstrap(len(index), stat, n_boot, seed) if len(ks) >= 3 else None
            rows.append(
                {
                    "model": model,
                    "setting": SHORT_SETTINGS[setting],
                    "ks": len(ks),
                    "r": r,
                    "interval": ci.bounds("{:.2f}", "") if ci else "undefined",
                    "instances": len(index),
                }
            )
    return pd.DataFrame(rows)


# -- the summary --------------------------------------------------------------------------------------------------
def _claims_sentence(results: Sequence[ClaimResult]) -> str:
    by = {v: [r.claim_id for r in results if r.verdict == v] for v in VERDICTS}
    parts = [f"{v} ({', '.join(ids)})" for v, ids in by.items() if ids]
    return (
        f"Of the paper's claims D1-D9, this build's verdicts are {verdict_counts(results)}: " + "; ".join(parts) + "."
    )


def summary_markdown(
    run: Mapping[str, object],
    window: ContextSummary,
    judge_source: str,
    quality: JudgeQuality | None,
    agree: Mapping[str, Any] | None,
    gaps: pd.DataFrame,
    results: Sequence[ClaimResult],
    review_text: str | None = None,
    plan_text: str | None = None,
) -> str:
    """The chapter's summary paragraph, each sentence formatted from the arguments (nothing typed)."""
    s = [
        f"This build made {run['n_completions']} completions ({run['n_cached']} from the disk cache) in "
        f"{run['wall_minutes']} minutes of wall time, with {run['run_models']} on {run['run_instances']} instances."
    ]
    if run.get("n_failed"):
        s.append(f"{run['n_failed']} requests failed; their rows are left out of every rate and count below.")
    left = f"; k = {', '.join(map(str, window.left_out))} did not fit and were left out" if window.left_out else ""
    s.append(
        f"The context window of {window.model_id} ({window.context_window or 'unknown'} tokens) holds up to "
        f"k = {window.largest_k} demonstrations; the run used k = {', '.join(map(str, window.ks_run))}{left}."
    )
    if plan_text:
        s.append(f"Before any request the plan found that {plan_text}.")
    s.append(f"Memorization rates come from {judge_source}.")
    if quality is not None:
        s.append(quality.text())
    if agree is not None and agree.get("n"):
        s.append(
            f"The offline and LLM judges agree on {agree['agreement']:.0%} of the {agree['n']} completions both judged "
            f"(Cohen's kappa {agree['kappa']:.2f}, {kappa_reading(agree['kappa'])})."
        )
    if review_text:
        s.append(f"In the imported human review, {review_text}.")
    for g in gaps.itertuples():
        s.append(
            f"{g.comparison.capitalize()} ({g.regime}): {g.estimate:+.0f} percentage points of memorization, "
            f"95% interval {g.interval} ({g.instances} instances)."
        )
    s.append(_claims_sentence(results))
    return " ".join(s)


__all__ = ["JudgeQuality", "correlation_intervals", "ground_truth_gaps", "offline_judge_quality", "summary_markdown"]
