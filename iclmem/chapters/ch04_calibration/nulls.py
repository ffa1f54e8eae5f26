"""Paper 1, Sec. 5, Sec. 6, App. A.4 (claims C1-C3, C5-C7, C9, C11, C15 of notebook 04): the membership null of the
chapter's summary, and each claim's rule on every draw of it at once.

:func:`outcomes_with_null` reclassifies the summary under one reading of Tab. 3 and draws its membership null
(:func:`iclmem.probe.null.null_summaries`). :func:`~iclmem.chapters.ch04_calibration.evidence.judge` runs a claim's rule
on each permuted summary, one pandas pass per draw; at the book's 1,000 draws that took about 90 s of notebook 04. The
permuted summaries of :func:`iclmem.probe.null.null_summaries` share their rows (the same runs, tables, Q, learning
rates, label conditions and epochs, in the same order): only the probe's numbers and the outcomes differ.
:class:`NullStack` holds them as (draws x rows) arrays, and :func:`draws_of` answers a rule for all draws with numpy,
giving what the rule gives on each frame (statistic, agrees, contradicted, directions, testable) to the last bit: the
bootstrap over runs draws the same resamples (seed 0, as :func:`~iclmem.report.verdicts.cluster_share_interval`), its
sums are sums of whole numbers (exact in any order) and every other step is the same arithmetic.
``tests/chapters/ch04_calibration/test_chapter_calibration.py``
compares both on a small case. Draws that do not share their rows are left to the loop (``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from iclmem.chapters.ch03_probing.probing import PAPER_PEAKS
from iclmem.chapters.ch04_calibration.evidence import Evidence
from iclmem.chapters.ch04_calibration.paper import (
    DETECT_MIN_TPR10,
    LOCALIZED_MAX_AUC,
    LOCALIZED_MIN_TPR10,
    PAPER_CALIBRATION,
    PAPER_DETECTABLE_TASKS,
    PAPER_OUTCOME_SHARES,
    PAPER_TPR1_TASKS,
)
from iclmem.outcomes import DEFAULT_MARGIN_RULE, Outcome, calibrated_margin, get_reading, reclassify
from iclmem.probe.null import null_summaries
from iclmem.report.verdicts import share_agreement

MEMORIZATION = Outcome.MEMORIZATION.value
#: What every draw must share, row by row, for the arrays to stand for the frames.
STRUCTURE = ("dataset", "query_size", "learning_rate", "epoch", "label_condition", "run_key", "task", "k")
#: The probe's numbers the rules read (per draw).
NUMBERS = (
    "auc_loss",
    "auc_entropy",
    "auc_loss_lo",
    "auc_loss_hi",
    "auc_entropy_lo",
    "auc_entropy_hi",
    "tpr10_loss",
    "tpr10_entropy",
    "tpr1_loss",
    "tpr1_entropy",
    "raw_tpr10_loss",
    "ref_tpr10_loss",
)


@dataclass
class NullStack:
    """The fine-tuned rows shared by every draw (``rows``: their structure columns), and per draw (axis 0) their
    ``outcome``, ``collapsed`` flags and :data:`NUMBERS`."""

    rows: pd.DataFrame
    outcome: np.ndarray
    collapsed: np.ndarray
    numbers: dict[str, np.ndarray]

    @classmethod
    def of(
        cls, frames: Sequence[pd.DataFrame], select: Callable[[pd.DataFrame], pd.DataFrame] = lambda f: f
    ) -> NullStack | None:
        """The stack of the rows ``select`` keeps of ``frames`` (permuted summaries), or None when the frames do not
        share their rows (:data:`STRUCTURE`, row by row), lack a column a rule reads, or keep an epoch-0 row."""
        if not frames:
            return None
        first, draws = frames[0], len(frames)
        cols = [c for c in STRUCTURE if c in first.columns]
        needed = {"outcome", "collapsed", "epoch", "query_size", "dataset", *NUMBERS}
        if not first.index.is_unique or any(len(f) != len(first) or not needed <= set(f.columns) for f in frames):
            return None
        take = first.index.get_indexer(select(first).index)
        if any(list(f.columns) != list(first.columns) for f in frames):
            return None
        big = pd.concat(frames, ignore_index=True)  # one frame, then each column's (draws x rows) view

        def grid(column: str, dtype: type | None = None) -> np.ndarray:
            return big[column].to_numpy(dtype=dtype).reshape(draws, len(first))

        if not all((lambda a: bool((a == a[:1]).all()))(grid(c)) for c in cols):
            return None
        rows = first[cols].iloc[take].reset_index(drop=True)
        if (rows.epoch <= 0).any():
            return None
        return cls(
            rows,
            grid("outcome")[:, take],
            big.collapsed.astype(bool).to_numpy().reshape(draws, len(first))[:, take],
            {c: grid(c, float)[:, take] for c in NUMBERS},
        )

    def primary(self, column: str) -> np.ndarray:
        """``column`` (``auc``, ``auc_lo``, ``auc_hi``, ``tpr10``, ``tpr1``) of each row's primary metric, as
        :func:`iclmem.outcomes.with_primary_metric` chooses it (the higher AUC, ties to loss)."""
        base, _, bound = column.partition("_")
        suffix = f"_{bound}" if bound else ""
        entropy = self.numbers["auc_entropy"] > self.numbers["auc_loss"]
        return np.where(entropy, self.numbers[f"{base}_entropy{suffix}"], self.numbers[f"{base}_loss{suffix}"])

    @property
    def draws(self) -> int:
        return self.outcome.shape[0]


class Selected(Sequence):
    """``frames`` as the rules read them (``select`` of each), each made when first read: where every rule reads
    the draws at once (:class:`NullStack`), no frame is made."""

    def __init__(self, frames: Sequence[pd.DataFrame], select: Callable[[pd.DataFrame], pd.DataFrame]) -> None:
        self.frames, self.select, self._made = list(frames), select, {}

    def __len__(self) -> int:
        return len(self.frames)

    def __getitem__(self, i: int | slice) -> pd.DataFrame | list[pd.DataFrame]:
        if isinstance(i, slice):
            return [self[j] for j in range(len(self))[i]]
        i = range(len(self))[i]
        if i not in self._made:
            self._made[i] = self.select(self.frames[i])
        return self._made[i]


def outcomes_with_null(
    summary: pd.DataFrame,
    scores: Mapping[str, pd.DataFrame],
    outcome_rule: str,
    n_permutations: int,
    seed: int = 0,
    n_boot: int = 200,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(the summary with its outcomes under ``outcome_rule``, the membership null of
    :func:`iclmem.probe.null.null_summaries`).

    The reading is checked before any permutation; the null is computed from the cached scores with
    no outcome column fixed (each reading reclassifies it); ``n_permutations = 0`` gives no null.
    """
    get_reading(outcome_rule)
    null = null_summaries(summary, scores, n_permutations, seed, n_boot) if n_permutations else None
    return reclassify(summary, outcome_rule), null


def _light(statistic: float, **fields) -> Evidence:
    """A draw's evidence without its texts (the null reads only the numbers)."""
    return Evidence(float(statistic), "", "", **fields)


def _untestable(stack: NullStack) -> list[Evidence]:
    """Every draw of ``stack`` untestable (the rows lack what the claim needs)."""
    return [Evidence(np.nan, "", "", testable=False)] * stack.draws


def _cluster_intervals(
    flags: np.ndarray, clusters: Sequence, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~iclmem.report.verdicts.cluster_share_interval` of every draw's ``flags`` (draws x rows)."""
    codes, uniq = pd.factorize(pd.Series(list(clusters)))
    onehot = np.zeros((len(codes), len(uniq)))
    onehot[np.arange(len(codes)), codes] = 1.0
    hits = flags.astype(float) @ onehot  # (draws, clusters): whole numbers
    sizes = np.bincount(codes, minlength=len(uniq)).astype(float)
    pick = np.random.default_rng(seed).integers(0, len(uniq), (n_boot, len(uniq)))
    counts = np.zeros((n_boot, len(uniq)))
    np.add.at(counts, (np.arange(n_boot)[:, None], pick), 1.0)
    shares = (hits @ counts.T) / sizes[pick].sum(axis=1)  # the resampled clusters' hits, summed exactly
    lo, hi = np.quantile(shares, [(1 - level) / 2, (1 + level) / 2], axis=1)
    return lo, hi


def _clusters(rows: pd.DataFrame) -> list:
    """The independent unit of each row: its fine-tuning run (each row its own unit without ``run_key``)."""
    return list(rows.run_key) if "run_key" in rows.columns else list(range(len(rows)))


def share_draws(stack: NullStack, outcomes: Sequence[str]) -> list[Evidence]:
    """:func:`~iclmem.chapters.ch04_calibration.claims._share_rule` (C5, C7; C6's shares) on every draw."""
    slots, first = [], None
    for outcome in outcomes:
        for q in (50, 512):
            at = (stack.rows.query_size == q).to_numpy()
            if not at.any():
                continue
            flags = stack.outcome[:, at] == outcome
            lo, hi = _cluster_intervals(flags, _clusters(stack.rows[at]))
            paper = PAPER_OUTCOME_SHARES.loc[outcome, f"Q={q}"] / 100
            slots.append((lo <= paper) & (paper <= hi))
            if first is None:
                first = flags.sum(axis=1) / int(at.sum())
    if not slots:
        return _untestable(stack)
    agrees = np.logical_and.reduce(slots)
    return [_light(f, agrees=bool(a), contradicted=not a) for f, a in zip(first, agrees, strict=True)]


def by_q_draws(stack: NullStack) -> list[Evidence]:
    """C6 (:func:`~iclmem.chapters.ch04_calibration.claims._detectable_by_q`) on every draw."""
    shares = share_draws(stack, [MEMORIZATION])
    at50, at512 = ((stack.rows.query_size == q).to_numpy() for q in (50, 512))
    if not shares[0].testable or not (at50.any() and at512.any()):
        return _untestable(stack)
    k50 = (stack.outcome[:, at50] == MEMORIZATION).sum(axis=1)
    k512 = (stack.outcome[:, at512] == MEMORIZATION).sum(axis=1)
    diff = k50 / int(at50.sum()) - k512 / int(at512.sum())
    return [
        Evidence(e.statistic, "", "", agrees=e.agrees, contradicted=e.contradicted, directions=(float(d),))
        for e, d in zip(shares, diff, strict=True)
    ]


def _tables_hit(stack: NullStack, keep: np.ndarray, hit: np.ndarray, paper: float) -> list[Evidence]:
    """Tables (of the rows ``keep``) with a hit in each draw, against the paper's share (C1, C3)."""
    codes, uniq = pd.factorize(stack.rows.dataset[keep])
    n = len(uniq)
    if not n:
        return _untestable(stack)
    k = sum(hit[:, keep][:, codes == u].any(axis=1).astype(int) for u in range(n))
    answers = {int(i): share_agreement(int(i), n, paper)[0] for i in np.unique(k)}
    return [_light(int(i) / n, agrees=answers[int(i)], contradicted=not answers[int(i)]) for i in k]


def detectable_tables_draws(stack: NullStack) -> list[Evidence]:
    """C1 (:func:`~iclmem.chapters.ch04_calibration.claims.detectable_tables`) on every draw."""

    rows = stack.rows
    keep = (rows.label_condition == "none").to_numpy() if "label_condition" in rows else np.ones(len(rows), bool)
    hit = (stack.outcome == MEMORIZATION) & (stack.primary("tpr10") > DETECT_MIN_TPR10)
    return _tables_hit(stack, keep, hit, PAPER_DETECTABLE_TASKS[0] / PAPER_DETECTABLE_TASKS[1])


def tpr1_tables_draws(stack: NullStack) -> list[Evidence]:
    """C3 (:func:`~iclmem.chapters.ch04_calibration.claims.tpr1_tables`) on every draw."""

    hit = (stack.outcome == MEMORIZATION) & (stack.primary("tpr1") > 0.1)
    return _tables_hit(stack, np.ones(len(stack.rows), bool), hit, PAPER_TPR1_TASKS[0] / PAPER_TPR1_TASKS[1])


def peak_draws(stack: NullStack) -> list[Evidence] | None:
    """C2 (:func:`~iclmem.chapters.ch04_calibration.claims._peak`) on every draw; None where a draw's detectable rows
    have no AUC (left to the loop)."""
    auc, lo, hi = (stack.primary(c) for c in ("auc", "auc_lo", "auc_hi"))
    det = stack.outcome == MEMORIZATION
    valid = det & ~np.isnan(auc)
    if (det.any(axis=1) & ~valid.any(axis=1)).any():
        return None
    top = np.argmax(np.where(valid, auc, -np.inf), axis=1)  # the first largest, as idxmax
    out = []
    for p, i in enumerate(top):
        if not det[p].any():
            out.append(_light(0.5, directions=(0.5,)))
            continue
        inside = bool(lo[p, i] <= PAPER_PEAKS["auc"] <= hi[p, i])
        out.append(_light(auc[p, i], agrees=inside, contradicted=not inside, directions=(float(auc[p, i]),)))
    return out


def temporal_draws(stack: NullStack) -> list[Evidence]:
    """C9 (:func:`~iclmem.chapters.ch04_calibration.claims._temporal`) on every draw."""
    rows = stack.rows
    groups = sorted(set(zip(rows.query_size.tolist(), rows.epoch.tolist(), strict=True)))
    epochs = {q: [e for g, e in groups if g == q] for q in (50, 512)}
    if len(epochs[512]) < 3 or len(epochs[50]) < 2:
        return _untestable(stack)
    det = stack.outcome == MEMORIZATION

    def share(q: int, e: int) -> np.ndarray:
        at = ((rows.query_size == q) & (rows.epoch == e)).to_numpy()
        return det[:, at].sum(axis=1) / int(at.sum())

    q50 = [share(50, e) for e in epochs[50]]
    q512 = [share(512, e) for e in epochs[512]]
    rise = q50[-1] - q50[0]
    middle = np.max(q512[1:-1], axis=0)
    peak, decay = middle - q512[0], middle - q512[-1]
    return [_light(r, directions=(float(r), float(p), float(d))) for r, p, d in zip(rise, peak, decay, strict=True)]


def calibration_draws(stack: NullStack, threshold: float = 0.10) -> list[Evidence]:
    """C11's statistic (:func:`~iclmem.chapters.ch04_calibration.claims._calibration`) on every draw."""
    num = stack.numbers
    kept = ~stack.collapsed
    raw = (num["raw_tpr10_loss"] >= threshold) & kept
    margin = calibrated_margin(num["raw_tpr10_loss"], num["ref_tpr10_loss"], num["tpr10_loss"], DEFAULT_MARGIN_RULE)
    vanished = (raw & ~(raw & margin)).sum(axis=1)
    signals = raw.sum(axis=1)
    paper = PAPER_CALIBRATION["vanished"] / PAPER_CALIBRATION["raw_tpr10_signals"]
    out = []
    for v, n in zip(vanished.tolist(), signals.tolist(), strict=True):
        agrees = share_agreement(v, n, paper)[0]
        out.append(
            Evidence(np.nan, "", "", testable=False)
            if agrees is None
            else _light(v / n, agrees=agrees, contradicted=not agrees)
        )
    return out


def localized_draws(stack: NullStack) -> list[Evidence]:
    """C15 (:func:`~iclmem.chapters.ch04_calibration.claims._localized`) on every draw."""

    tpr10 = stack.primary("tpr10")
    modest = (stack.outcome == MEMORIZATION) & (stack.primary("auc") <= LOCALIZED_MAX_AUC)
    valid = modest & ~np.isnan(tpr10)
    best = np.where(valid, tpr10, -np.inf).max(axis=1)
    best = np.where(modest.any(axis=1), np.where(valid.any(axis=1), best, np.nan), 0.0)  # pandas' max skips NaN
    return [_light(b, agrees=bool(b >= LOCALIZED_MIN_TPR10), contradicted=False) for b in best]


#: The claims whose rule :func:`draws_of` answers for all draws at once.
DRAWS: dict[str, Callable[[NullStack], list[Evidence] | None]] = {
    "C1": detectable_tables_draws,
    "C2": peak_draws,
    "C3": tpr1_tables_draws,
    "C5": lambda s: share_draws(s, [Outcome.INVERSION.value]),
    "C6": by_q_draws,
    "C7": lambda s: share_draws(s, [Outcome.CONTEXT_OVERFITTING.value, Outcome.NO_SIGNAL.value]),
    "C9": temporal_draws,
    "C11": calibration_draws,
    "C15": localized_draws,
}


def draws_of(claim_id: str, stack: NullStack | None) -> list[Evidence] | None:
    """Claim ``claim_id``'s rule on every draw of ``stack``, or None (no stack, or left to the loop)."""
    return None if stack is None else DRAWS[claim_id](stack)


__all__ = ["DRAWS", "NUMBERS", "STRUCTURE", "NullStack", "Selected", "draws_of", "outcomes_with_null", "share_draws"]
