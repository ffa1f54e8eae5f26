"""The offline judge measured on pairs it was not fitted on: cross-validated thresholds, held-out accuracy and
Cohen's kappa with bootstrap intervals, per kind of text and across kinds.

Why: the paper's judge (GPT-4 few-shot, Sec. 3.1 and App. A; checked by hand, Sec. 4 "Human Evaluation") agrees
with human labels on 92-100% of completions (Golchin & Surdeanu 2023a). The offline judge's two thresholds
(:class:`~iclmem.llm.judges.OfflineJudge`) are fitted on the labelled pairs of ``judge_pairs.jsonl``; its accuracy
on those same pairs is an in-sample number and flatters it. Here:

* :func:`cv_folds` deals the pairs into ``n_folds`` folds, stratified by kind of text (``domain``) and label;
* :func:`cross_validate` fits the thresholds on all folds but one (:func:`~iclmem.llm.judges.fit_on_features`,
  or any ``fit`` given) and labels the held-out fold with them; every pair is labelled exactly once, by
  thresholds that never saw it. Accuracy and Cohen's kappa of those held-out labels against the human labels
  get percentile bootstrap intervals over pairs;
* ``group="domain"`` holds out one kind of text at a time instead (leave-one-domain-out): the judge on a kind
  of text it has never seen.

The scores (ROUGE-L, embedding similarity) of a pair do not depend on the thresholds, so they are computed once
(:func:`~iclmem.llm.judges.pair_features`) and the folds only refit the two cuts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from iclmem.llm.judges import MATCHES, Thresholds, decide, fit_on_features

#: Fits thresholds on labelled feature rows (:func:`~iclmem.llm.judges.pair_features`); returns them and the fit's accuracy.
Fit = Callable[[pd.DataFrame], tuple[Thresholds, float]]


def cv_folds(pairs: pd.DataFrame, n_folds: int = 5, seed: int = 0) -> np.ndarray:
    """A fold number (0 .. ``n_folds``-1) per pair, stratified by ``domain`` (when present) and ``label``: the pairs
    of each stratum are shuffled (seeded) and dealt round-robin, continuing where the previous stratum stopped."""
    if n_folds < 2:
        raise ValueError(f"n_folds must be >= 2, got {n_folds}")
    if len(pairs) < n_folds:
        raise ValueError(f"{len(pairs)} pairs cannot fill {n_folds} folds; use fewer folds")
    rng = np.random.default_rng(seed)
    strata = pairs["label"].astype(str)
    if "domain" in pairs.columns:
        strata = pairs["domain"].astype(str) + "|" + strata
    folds = np.empty(len(pairs), dtype=int)
    nxt = 0
    for key in sorted(set(strata)):
        idx = np.flatnonzero((strata == key).to_numpy())
        rng.shuffle(idx)
        folds[idx] = (np.arange(len(idx)) + nxt) % n_folds
        nxt = (nxt + len(idx)) % n_folds
    return folds


def kappa(y: np.ndarray, p: np.ndarray) -> float:
    """Cohen's kappa of two labelings over :data:`~iclmem.llm.judges.MATCHES`; NaN when chance agreement is 1."""
    y, p = np.asarray(y, object), np.asarray(p, object)
    if not len(y):
        return float("nan")
    observed = float(np.mean(y == p))
    chance = float(sum(np.mean(y == c) * np.mean(p == c) for c in MATCHES))
    return float("nan") if chance >= 1 else (observed - chance) / (1 - chance)


def _interval(n: int, stat: Callable[[np.ndarray], float], n_boot: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    values = np.array([stat(rng.integers(0, n, n)) for _ in range(n_boot)], dtype=float)
    values = values[np.isfinite(values)]
    if n < 2 or len(values) < n_boot / 2:
        return float("nan"), float("nan")
    lo, hi = np.quantile(values, [0.025, 0.975])
    return float(lo), float(hi)


@dataclass(frozen=True)
class CVResult:
    """Held-out labels of every pair and the thresholds of each fold."""

    predictions: pd.DataFrame  # the features with ``fold`` and ``predicted`` (by thresholds fitted without that fold)
    thresholds: dict[object, Thresholds]  # fold (or held-out domain) -> thresholds fitted on the other pairs
    train_accuracy: dict[object, float]  # fold -> in-sample accuracy of its fit (for contrast, not the headline)
    n_boot: int
    seed: int
    group: str

    def summary(self) -> pd.DataFrame:
        """One row for all pairs and one per kind of text: n, held-out accuracy and kappa with 95% intervals."""
        frame = self.predictions
        parts = [("all", frame)]
        if "domain" in frame.columns:
            parts += [(d, g) for d, g in frame.groupby("domain", sort=True)]
        rows = []
        for name, g in parts:
            y, p = g["label"].to_numpy(), g["predicted"].to_numpy()
            acc_ci = _interval(len(g), lambda i, y=y, p=p: float(np.mean(y[i] == p[i])), self.n_boot, self.seed)
            kap_ci = _interval(len(g), lambda i, y=y, p=p: kappa(y[i], p[i]), self.n_boot, self.seed)
            rows.append({"pairs": name, "n": len(g), "accuracy": float(np.mean(y == p)), "accuracy_lo": acc_ci[0],
                         "accuracy_hi": acc_ci[1], "kappa": kappa(y, p), "kappa_lo": kap_ci[0], "kappa_hi": kap_ci[1]})
        return pd.DataFrame(rows)

    def confusion(self) -> pd.DataFrame:
        """Human label (rows) x held-out judge label (columns)."""
        f = self.predictions
        return pd.crosstab(pd.Categorical(f["label"], MATCHES), pd.Categorical(f["predicted"], MATCHES), dropna=False)

    def text(self) -> str:
        """One line: held-out accuracy and kappa of all pairs with their intervals, and how the folds were made."""
        r = self.summary().iloc[0]
        how = ("leave-one-domain-out" if self.group == "domain" else f"{len(self.thresholds)}-fold cross-validation")
        return (f"held-out accuracy {r.accuracy:.0%} [{r.accuracy_lo:.0%}, {r.accuracy_hi:.0%}], Cohen's kappa "
                f"{r.kappa:.2f} [{r.kappa_lo:.2f}, {r.kappa_hi:.2f}] on {int(r.n)} labelled pairs ({how}; 95% percentile "
                f"bootstrap over pairs, {self.n_boot} resamples, seed {self.seed})")


def cross_validate(features: pd.DataFrame, n_folds: int = 5, seed: int = 0, fit: Fit = fit_on_features,
                   group: str = "fold", n_boot: int = 2000) -> CVResult:
    """Held-out labels for every pair of ``features`` (:func:`~iclmem.llm.judges.pair_features` of the labelled pairs).

    ``group="fold"``: :func:`cv_folds` (stratified, seeded); ``group="domain"``: one kind of text held out at a time.
    For each held-out group, ``fit`` gets only the other rows; the held-out rows are labelled with its thresholds.
    """
    frame = features.reset_index(drop=True).copy()
    if group == "fold":
        frame["fold"] = cv_folds(frame, n_folds, seed)
    elif group == "domain":
        if "domain" not in frame.columns or frame["domain"].nunique() < 2:
            raise ValueError("leave-one-domain-out needs a 'domain' column with at least two kinds of text")
        frame["fold"] = frame["domain"]
    else:
        raise ValueError(f"unknown group {group!r}; choose 'fold' or 'domain'")
    frame["predicted"] = None
    thresholds: dict[object, Thresholds] = {}
    train_acc: dict[object, float] = {}
    for fold in sorted(set(frame["fold"]), key=str):
        held = frame["fold"] == fold
        th, acc = fit(frame.loc[~held].drop(columns=["fold", "predicted"]).reset_index(drop=True))
        thresholds[fold], train_acc[fold] = th, acc
        frame.loc[held, "predicted"] = decide(frame.loc[held], th)
    return CVResult(frame, thresholds, train_acc, n_boot, seed, group)
