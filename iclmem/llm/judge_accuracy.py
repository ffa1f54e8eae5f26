"""How accurate the offline judge is: on labelled pairs it was not fitted on (cross-validated thresholds) and on
labelled completions of the book's own runs (the shipped thresholds), with held-out accuracy, Cohen's kappa and
bootstrap intervals, and per-label precision and recall.

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
  of text it has never seen;
* :func:`completion_accuracy` measures the shipped thresholds on ``judge_pairs_completions.csv``
  (:func:`load_completion_pairs`): pairs of the book's own runs, which no threshold was fitted on;
* :func:`judge_accuracy_table` puts the two side by side (the table for notebook 06).

**No few-shot example is evaluated.** The LLM judge's prompt holds four labelled examples
(:data:`~iclmem.llm.judges.JUDGE_EXAMPLES`, as the paper's Fig. 5); a judge scored on a pair it was shown with its
answer is flattered, so :func:`drop_few_shot_examples` removes them (compared after
:func:`~iclmem.llm.judges.normalize`) from every evaluation set here.

**The labelled completions** (``judge_pairs_completions.csv``). The hand-written pairs are 90% invented; the book's
completions are not like them (on the 384 memorization completions of the book's wine_vivino run -- SmolLM2-135M base
and fine-tuned, k in {0, 10, 25, 50}, three settings, 16 instances -- the offline judge called 0 exact, 30 near-exact
and 354 inexact, against 15% / 38% / 47% in the hand-written file). The completions were read from the in-process
backend's cache and their references rebuilt from the run's configuration; the 246 distinct (reference, completion)
pairs were stratified by the offline judge's call at sampling time (column ``offline_call``): every pair it called
exact or near-exact (11) and 100 of the 235 it called inexact (seeded draw, seed 28), 111 pairs. Each row records
its source (``dataset``, ``instance_id``, ``model``, ``member``, ``k``, ``setting``, ``layout``: those of its first
occurrence; ``occurrences``: how many of the 384 completions it stands for), the offline judge's call and scores at
sampling time, and ``sampling_weight`` (pairs of its stratum / pairs sampled from it: weighted means estimate the
numbers over all 246 pairs). The ``label`` was given by reading each pair, after the paper's definitions (Sec. 3.1,
from Golchin & Surdeanu 2023a):

    "Exact Match: The generated completion exactly matches the original subsequent segment.
    Near-Exact Match: The completion, while not identical, shows considerable overlap and maintains significant
    semantic and structural similarity to the original subsequent segment.
    Inexact Match: The generated completion is completely different from the original subsequent segment."

Applied to table rows (``"... Rating is 3.9. Winery is Borgo Molino."``), whose content is a value or two and the
winery: the winery right with one value off, or with the cut field name restated, is near-exact (as the LLM judge's
fourth example, ``Rating is 4.0`` for ``4.1``); another winery, with or without the right rating, is inexact (the
shared template is no overlap of content); a completion that restates the first piece is inexact. Three pairs with
the winery right and two deviations (a word or a fragment added, and the rating off) are near-exact and marked
borderline in ``note``; the paper's human review changed only such near-exact/inexact borderline cases (Sec. 4).

The scores (ROUGE-L, embedding similarity) of a pair do not depend on the thresholds, so they are computed once
(:func:`~iclmem.llm.judges.pair_features`) and the folds only refit the two cuts.
"""

from __future__ import annotations

import importlib.resources
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from iclmem.llm.judges import (
    JUDGE_EXAMPLES,
    MATCHES,
    SHIPPED_THRESHOLDS,
    Thresholds,
    decide,
    fit_on_features,
    load_labelled_pairs,
    normalize,
    pair_features,
)
from iclmem.stats.intervals import paired_bootstrap, wilson

#: Fits thresholds on labelled feature rows (:func:`~iclmem.llm.judges.pair_features`); returns them and the fit's
#: accuracy.
Fit = Callable[[pd.DataFrame], tuple[Thresholds, float]]

#: The labelled completions of the book's own runs (module docstring), next to ``judge_pairs.jsonl``.
COMPLETION_PAIRS_FILE = "judge_pairs_completions.csv"


def is_few_shot_example(pairs: pd.DataFrame) -> np.ndarray:
    """Per row of ``pairs`` (``reference``, ``candidate``): is it one of the LLM judge's few-shot examples
    (:data:`~iclmem.llm.judges.JUDGE_EXAMPLES`), compared after :func:`~iclmem.llm.judges.normalize`?"""
    shown = {(normalize(r), normalize(c)) for r, c, _ in JUDGE_EXAMPLES}
    return np.array(
        [
            (normalize(str(r)), normalize(str(c))) in shown
            for r, c in zip(pairs["reference"], pairs["candidate"], strict=True)
        ],
        dtype=bool,
    )


def drop_few_shot_examples(pairs: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` without the LLM judge's few-shot examples: a judge is not scored on a pair it was shown with its
    answer (paper App. A: the examples are the fixed part of every judge prompt)."""
    return pairs.loc[~is_few_shot_example(pairs)].reset_index(drop=True)


def load_completion_pairs() -> pd.DataFrame:
    """The labelled completions of the book's own runs (``judge_pairs_completions.csv``; module docstring): source
    columns, the offline judge's call at sampling time, ``sampling_weight``, ``reference``, ``candidate``, ``label``."""
    text = importlib.resources.files("iclmem.llm").joinpath(COMPLETION_PAIRS_FILE).read_text(encoding="utf-8")
    frame = pd.read_csv(
        io.StringIO(text),
        keep_default_na=False,
        dtype={"instance_id": str, "reference": str, "candidate": str, "note": str},
    )
    frame["member"] = frame["member"].astype(str).str.lower().eq("true")
    return frame


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
    lo, hi, _ = paired_bootstrap(n, stat, n_boot, seed)  # iclmem.stats.intervals: the one percentile bootstrap
    return lo, hi


@dataclass(frozen=True)
class CVResult:
    """Held-out labels of every pair and the thresholds of each fold."""

    predictions: pd.DataFrame  # the features with ``fold`` and ``predicted`` (by thresholds fitted without that fold)
    thresholds: dict[object, Thresholds]  # fold (or held-out domain) -> thresholds fitted on the other pairs
    train_accuracy: dict[object, float]  # fold -> in-sample accuracy of its fit (for contrast, not the headline)
    n_boot: int
    seed: int
    group: str
    n_few_shot_dropped: int = 0  # pairs left out: few-shot examples of the LLM judge (drop_few_shot_examples)

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
            rows.append(
                {
                    "pairs": name,
                    "n": len(g),
                    "accuracy": float(np.mean(y == p)),
                    "accuracy_lo": acc_ci[0],
                    "accuracy_hi": acc_ci[1],
                    "kappa": kappa(y, p),
                    "kappa_lo": kap_ci[0],
                    "kappa_hi": kap_ci[1],
                }
            )
        return pd.DataFrame(rows)

    def confusion(self) -> pd.DataFrame:
        """Human label (rows) x held-out judge label (columns)."""
        f = self.predictions
        return pd.crosstab(pd.Categorical(f["label"], MATCHES), pd.Categorical(f["predicted"], MATCHES), dropna=False)

    def text(self) -> str:
        """One line: held-out accuracy and kappa of all pairs with their intervals, and how the folds were made."""
        r = self.summary().iloc[0]
        how = "leave-one-domain-out" if self.group == "domain" else f"{len(self.thresholds)}-fold cross-validation"
        return (
            f"held-out accuracy {r.accuracy:.0%} [{r.accuracy_lo:.0%}, {r.accuracy_hi:.0%}], Cohen's kappa "
            f"{r.kappa:.2f} [{r.kappa_lo:.2f}, {r.kappa_hi:.2f}] on {int(r.n)} labelled pairs ({how}; 95% "
            f"percentile bootstrap over pairs, {self.n_boot} resamples, seed {self.seed}"
            + (
                f"; {self.n_few_shot_dropped} few-shot examples of the LLM judge left out"
                if self.n_few_shot_dropped
                else ""
            )
            + ")"
        )


def cross_validate(
    features: pd.DataFrame,
    n_folds: int = 5,
    seed: int = 0,
    fit: Fit = fit_on_features,
    group: str = "fold",
    n_boot: int = 2000,
) -> CVResult:
    """Held-out labels for every pair of ``features`` (:func:`~iclmem.llm.judges.pair_features` of the labelled pairs).

    ``group="fold"``: :func:`cv_folds` (stratified, seeded); ``group="domain"``: one kind of text held out at a time.
    For each held-out group, ``fit`` gets only the other rows; the held-out rows are labelled with its thresholds.
    The LLM judge's few-shot examples are left out of the pairs (:func:`drop_few_shot_examples`).
    """
    frame = drop_few_shot_examples(features).copy()
    n_dropped = len(features) - len(frame)
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
    return CVResult(frame, thresholds, train_acc, n_boot, seed, group, n_dropped)


# -- the offline judge on the book's own completions ------------------------------------------------------------
def _wilson(successes: float, n: float) -> tuple[float, float]:
    """95% Wilson interval (:func:`iclmem.stats.intervals.wilson`): unlike a percentile bootstrap it stays informative
    at 0 or n successes (11 of 11 near-exact calls right is not "certainly 100%")."""
    lo, hi = wilson(successes, n)
    return float(lo), float(hi)


@dataclass(frozen=True)
class CompletionAccuracy:
    """The offline judge (fixed thresholds) on the labelled completions of the book: its labels and the human ones."""

    predictions: pd.DataFrame  # the pairs with their scores and ``predicted``
    thresholds: Thresholds
    n_boot: int
    seed: int
    n_few_shot_dropped: int = 0

    def per_label(self) -> pd.DataFrame:
        """Per label: pairs the judge called so and the human labelled so, precision and recall with 95% Wilson
        intervals (on the labelled pairs), and ``*_all``: the stratified estimates over all pairs the sample was
        drawn from (rows weighted by ``sampling_weight``)."""
        f = self.predictions
        w = f["sampling_weight"].to_numpy(float) if "sampling_weight" in f.columns else np.ones(len(f))
        y, p = f["label"].to_numpy(object), f["predicted"].to_numpy(object)
        rows = []
        for lab in MATCHES:
            called, true, hit = p == lab, y == lab, (p == lab) & (y == lab)
            prec, rec = _wilson(hit.sum(), called.sum()), _wilson(hit.sum(), true.sum())
            rows.append(
                {
                    "label": lab,
                    "called": int(called.sum()),
                    "labelled": int(true.sum()),
                    "correct": int(hit.sum()),
                    "precision": hit.sum() / called.sum() if called.any() else float("nan"),
                    "precision_lo": prec[0],
                    "precision_hi": prec[1],
                    "recall": hit.sum() / true.sum() if true.any() else float("nan"),
                    "recall_lo": rec[0],
                    "recall_hi": rec[1],
                    "precision_all": (w * hit).sum() / (w * called).sum() if called.any() else float("nan"),
                    "recall_all": (w * hit).sum() / (w * true).sum() if true.any() else float("nan"),
                }
            )
        return pd.DataFrame(rows).set_index("label")

    def summary(self) -> dict[str, float]:
        """Accuracy and Cohen's kappa on the labelled pairs with 95% percentile bootstrap intervals, and the
        stratified accuracy estimate over all pairs (``accuracy_all``)."""
        f = self.predictions
        y, p = f["label"].to_numpy(object), f["predicted"].to_numpy(object)
        w = f["sampling_weight"].to_numpy(float) if "sampling_weight" in f.columns else np.ones(len(f))
        acc_ci = _interval(len(f), lambda i: float(np.mean(y[i] == p[i])), self.n_boot, self.seed)
        kap_ci = _interval(len(f), lambda i: kappa(y[i], p[i]), self.n_boot, self.seed)
        return {
            "n": len(f),
            "accuracy": float(np.mean(y == p)) if len(f) else float("nan"),
            "accuracy_lo": acc_ci[0],
            "accuracy_hi": acc_ci[1],
            "kappa": kappa(y, p),
            "kappa_lo": kap_ci[0],
            "kappa_hi": kap_ci[1],
            "accuracy_all": float((w * (y == p)).sum() / w.sum()) if len(f) else float("nan"),
        }

    def confusion(self) -> pd.DataFrame:
        """Human label (rows) x judge label (columns)."""
        f = self.predictions
        return pd.crosstab(pd.Categorical(f["label"], MATCHES), pd.Categorical(f["predicted"], MATCHES), dropna=False)

    def text(self) -> str:
        """One sentence: the near-exact precision and recall, and the accuracy, with their intervals."""
        s, r = self.summary(), self.per_label().loc["near-exact"]
        return (
            f"On {s['n']} labelled completions of the book's own runs (all the offline judge called exact or "
            f"near-exact, and a seeded sample of the rest), {int(r.correct)} of its {int(r.called)} near-exact "
            f"calls "
            f"are near-exact to a reader (precision {r.precision:.0%} [{r.precision_lo:.0%}, "
            f"{r.precision_hi:.0%}]) and it finds {int(r.correct)} of the {int(r.labelled)} near-exact completions "
            f"(recall {r.recall:.0%} [{r.recall_lo:.0%}, {r.recall_hi:.0%}]; over all the run's distinct pairs, "
            f"about {r.recall_all:.0%}); accuracy {s['accuracy']:.0%} [{s['accuracy_lo']:.0%}, "
            f"{s['accuracy_hi']:.0%}] (95% Wilson intervals for precision and recall, percentile bootstrap over "
            f"pairs for accuracy; thresholds ROUGE-L >= {self.thresholds.rouge_l:g}, embedding similarity >= "
            f"{self.thresholds.semantic:g}, fitted on the hand-written pairs only)."
        )


def completion_accuracy(
    encoder: Any = None,
    thresholds: Thresholds = SHIPPED_THRESHOLDS,
    n_boot: int = 2000,
    seed: int = 0,
    pairs: pd.DataFrame | None = None,
) -> CompletionAccuracy:
    """The offline judge with ``thresholds`` (the shipped ones: fitted on the hand-written pairs, never on these) on
    the labelled completions (:func:`load_completion_pairs`, or ``pairs`` with the same columns), few-shot
    examples of the LLM judge left out. The scores are recomputed (the ``rouge_l``/``semantic`` columns of the file
    record the sampling time)."""
    pairs = load_completion_pairs() if pairs is None else pairs
    kept = drop_few_shot_examples(pairs)
    features = pair_features(kept.drop(columns=["rouge_l", "semantic"], errors="ignore"), encoder)
    features["predicted"] = decide(features, thresholds)
    return CompletionAccuracy(features, thresholds, n_boot, seed, len(pairs) - len(kept))


def _ci(value: float, lo: float, hi: float) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:.0%} [{lo:.0%}, {hi:.0%}]"


def judge_accuracy_table(
    encoder: Any = None,
    n_folds: int = 5,
    seed: int = 0,
    n_boot: int = 2000,
    hand_written: pd.DataFrame | None = None,
    completions: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The offline judge on both evaluation sets, side by side (one row each): the hand-written pairs
    (``judge_pairs.jsonl``; held-out labels of ``n_folds``-fold cross-validation) and the labelled completions of the
    book (``judge_pairs_completions.csv``; the shipped thresholds). Columns: pairs, accuracy and Cohen's kappa with
    95% intervals, precision and recall of the near-exact calls (95% Wilson intervals). The LLM judge's few-shot
    examples are left out of both."""
    hand = load_labelled_pairs() if hand_written is None else hand_written
    cv = cross_validate(pair_features(hand, encoder), n_folds, seed, n_boot=n_boot)
    comp = completion_accuracy(encoder, n_boot=n_boot, seed=seed, pairs=completions)
    rows = []
    for name, how, pred, s in (
        ("hand-written pairs", f"{n_folds}-fold cross-validation (held out)", cv.predictions, cv.summary().iloc[0]),
        (
            "completions of the book's runs",
            "shipped thresholds (never fitted on them)",
            comp.predictions,
            comp.summary(),
        ),
    ):
        near = CompletionAccuracy(pred, SHIPPED_THRESHOLDS, n_boot, seed).per_label().loc["near-exact"]
        rows.append(
            {
                "evaluation set": name,
                "thresholds": how,
                "pairs": int(s["n"]),
                "accuracy": _ci(s["accuracy"], s["accuracy_lo"], s["accuracy_hi"]),
                "Cohen's kappa": "n/a"
                if not np.isfinite(s["kappa"])
                else f"{s['kappa']:.2f} [{s['kappa_lo']:.2f}, {s['kappa_hi']:.2f}]",
                "near-exact calls": int(near.called),
                "near-exact precision": _ci(near.precision, near.precision_lo, near.precision_hi),
                "near-exact recall": _ci(near.recall, near.recall_lo, near.recall_hi),
            }
        )
    return pd.DataFrame(rows)
