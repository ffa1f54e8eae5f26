"""Paper 1, Sec. 5, Sec. 6, App. A.4 (claims C1-C3, C5-C7, C9, C11, C15 of notebook 04): the membership null of the
chapter's summary, and the stack of summaries every claim's rule reads.

:func:`outcomes_with_null` reclassifies the summary under one reading of Tab. 3 and draws its membership null
(:func:`iclmem.probe.null.null_summaries`). Each claim's rule (:mod:`.claims`) is written once, over a
:class:`SummaryStack`: the rows that several summaries share (the same runs, tables, Q, learning rates, label
conditions and epochs, in the same order) and, per draw (array axis 0), their outcomes and the probe's numbers. The
rule returns one :class:`~iclmem.chapters.ch04_calibration.evidence.Evidence` per draw. :func:`on_draws` stacks
``[observed, *null]``, so draw 0 is the build's summary and draws 1..n are the permuted summaries of the null; the
verdict reads draw 0 and the null rate draws 1..n of the same computation. Draws whose rows differ (the build's
summary in another row order, a permuted summary that lacks a row) get stacks of their own
(:func:`stacks_of`); every rule reads each draw on its own, so how the draws are stacked never changes an answer
(``tests/chapters/ch04_calibration/test_chapter_calibration.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from iclmem.chapters.ch04_calibration.evidence import Evidence
from iclmem.probe.null import null_summaries, permutations
from iclmem.stats.outcomes import get_reading, reclassify
from iclmem.stats.permutation import NullDraws

#: What every draw of a stack shares, row by row (the columns a summary has of these).
STRUCTURE = ("dataset", "query_size", "learning_rate", "epoch", "label_condition", "run_key", "task", "k")
#: The probe's numbers the rules read (per draw; NaN where a summary lacks the column).
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
#: The columns every summary of a stack must have (a rule reads the others it needs, e.g. ``dataset``, ``collapsed``).
REQUIRED = ("epoch", "outcome")

#: Every column a stack reads of a summary (:class:`SummaryStack`, :func:`iclmem.probe.summary.membership_rows`): a
#: null read for the rules needs no other (:meth:`iclmem.bundle.design.Design.null`'s ``columns``).
STACK_COLUMNS = (*STRUCTURE, *NUMBERS, *REQUIRED, "collapsed", "label_condition")

#: Which rows of a summary a rule reads (the stack keeps their fine-tuned ones), e.g. ``membership_rows``.
Select = Callable[[pd.DataFrame], pd.DataFrame]


def _every_row(frame: pd.DataFrame) -> pd.DataFrame:
    """Every row of ``frame`` (the default :data:`Select`)."""
    return frame


@dataclass
class SummaryStack:
    """Summaries that share their fine-tuned rows (epoch > 0: M_ref's rows are never a rule's draw), one draw each.

    ``rows``: the shared rows' :data:`STRUCTURE` columns; per draw (axis 0) x row (axis 1): ``outcome``, the
    ``collapsed`` flags (None where the summaries have none) and ``numbers`` (:data:`NUMBERS`).
    """

    rows: pd.DataFrame
    outcome: np.ndarray
    collapsed: np.ndarray | None
    numbers: dict[str, np.ndarray]

    @classmethod
    def of(cls, frames: Sequence[pd.DataFrame], select: Select = _every_row) -> SummaryStack:
        """The stack of the fine-tuned rows ``select`` keeps of ``frames``; ValueError when the frames do not share
        those rows (:data:`STRUCTURE`, row by row) or lack a column of :data:`REQUIRED`."""
        stacks = stacks_of(frames, select)
        if len(stacks) != 1:
            raise ValueError("a stack needs one summary or more, all sharing their rows")
        return stacks[0]

    @classmethod
    def leading(cls, frames: Sequence[pd.DataFrame], select: Select = _every_row) -> tuple[SummaryStack, int]:
        """(the stack of the leading ``frames`` that share the first one's rows: its length, columns and
        :data:`STRUCTURE`, row by row; how many they are)."""
        first, n = frames[0], len(frames[0])
        same = 1
        while same < len(frames) and len(frames[same]) == n and list(frames[same].columns) == list(first.columns):
            same += 1
        return cls._blocks(pd.concat(frames[:same], ignore_index=True), n, same, select)

    @classmethod
    def of_blocks(cls, big: pd.DataFrame, select: Select = _every_row) -> SummaryStack | None:
        """The stack of ``big``'s draws without one frame per draw: ``big`` holds them one after the other in equal
        blocks of rows, numbered by its ``perm`` column (:func:`iclmem.probe.null.null_summaries`' frame, which is
        sorted so). None when the blocks do not share their rows (then stack its
        :func:`~iclmem.probe.null.permutations`)."""
        perms = big.perm.to_numpy()
        n_draws = len(np.unique(perms))
        if not n_draws or len(big) % n_draws or (perms[:: len(big) // n_draws] != np.unique(perms)).any():
            return None
        stack, same = cls._blocks(big.drop(columns="perm"), len(big) // n_draws, n_draws, select)
        return stack if same == n_draws else None

    @classmethod
    def _blocks(cls, big: pd.DataFrame, n: int, same: int, select: Select) -> tuple[SummaryStack, int]:
        """(the stack of the leading blocks of ``n`` rows of ``big`` (``same`` blocks) that share the first block's
        :data:`STRUCTURE`, row by row; how many they are)."""
        missing = [c for c in REQUIRED if c not in big.columns]
        if missing:
            raise ValueError(f"a rule's summary needs the columns {', '.join(missing)}")
        for c in (c for c in STRUCTURE if c in big.columns):
            values = big[c].to_numpy()[: same * n].reshape(same, n)
            equal = (values == values[:1]).all(axis=1)
            same = same if equal.all() else int(np.argmin(equal))
        first = big.iloc[:n]
        kept = select(first.reset_index(drop=True))
        take = kept.index[kept.epoch.to_numpy() > 0].to_numpy()

        def grid(column: str, dtype: type | None = None) -> np.ndarray:
            if column not in big.columns:
                return np.full((same, len(take)), np.nan)
            return big[column].to_numpy(dtype=dtype)[: same * n].reshape(same, n)[:, take]

        rows = first[[c for c in STRUCTURE if c in first.columns]].iloc[take].reset_index(drop=True)
        collapsed = (
            big.collapsed.astype(bool).to_numpy()[: same * n].reshape(same, n)[:, take] if "collapsed" in big else None
        )
        return cls(rows, grid("outcome"), collapsed, {c: grid(c, float) for c in NUMBERS}), same

    def joined(self, other: SummaryStack) -> SummaryStack:
        """This stack's draws, then ``other``'s (the same rows)."""
        return SummaryStack(
            self.rows,
            np.concatenate([self.outcome, other.outcome]),
            None
            if self.collapsed is None or other.collapsed is None
            else np.concatenate([self.collapsed, other.collapsed]),
            {c: np.concatenate([self.numbers[c], other.numbers[c]]) for c in NUMBERS},
        )

    def primary(self, column: str) -> np.ndarray:
        """``column`` (``auc``, ``auc_lo``, ``auc_hi``, ``tpr10``, ``tpr1``) of each row's primary metric, as
        :func:`iclmem.stats.outcomes.with_primary_metric` chooses it (the higher AUC, ties to loss)."""
        base, _, bound = column.partition("_")
        suffix = f"_{bound}" if bound else ""
        return np.where(self.entropy(), self.numbers[f"{base}_entropy{suffix}"], self.numbers[f"{base}_loss{suffix}"])

    def entropy(self) -> np.ndarray:
        """Whether each row's primary metric is the entropy (draws x rows)."""
        return self.numbers["auc_entropy"] > self.numbers["auc_loss"]

    @property
    def draws(self) -> int:
        return self.outcome.shape[0]


def stacks_of(frames: Sequence[pd.DataFrame], select: Select = _every_row) -> list[SummaryStack]:
    """``frames`` as stacks, in order: each run of frames that share their rows is one stack, and neighbouring stacks
    whose selected rows agree are joined (the build's summary and the null's draws, when their rows line up)."""
    frames, out = list(frames), []
    start = 0
    while start < len(frames):
        stack, count = SummaryStack.leading(frames[start:], select)
        if out and out[-1].rows.equals(stack.rows):
            out[-1] = out[-1].joined(stack)
        else:
            out.append(stack)
        start += count
    return out


def stacks_with_null(summary: pd.DataFrame, null: pd.DataFrame, select: Select = _every_row) -> list[SummaryStack]:
    """:func:`stacks_of` ``[summary, *permutations(null)]`` for ``null`` in :func:`iclmem.probe.null.null_summaries`'
    form (a ``perm`` column, outcomes already under the summary's reading), without a frame per permutation: the
    null's draws are read in place (:meth:`SummaryStack.of_blocks`), a large design's null in a fraction of the
    memory."""
    stacks = stacks_of([summary], select)
    block = SummaryStack.of_blocks(null, select)
    if block is None:
        return stacks_of([summary, *permutations(null)], select)
    if stacks[-1].rows.equals(block.rows):
        return [*stacks[:-1], stacks[-1].joined(block)]
    return [*stacks, block]


def on_stacks(rule: Callable[[SummaryStack], list[Evidence]], stacks: Sequence[SummaryStack]) -> list[Evidence]:
    """``rule`` on every draw of ``stacks``, in order."""
    return [evidence for stack in stacks for evidence in rule(stack)]


def on_draws(
    rule: Callable[[SummaryStack], list[Evidence]], frames: Sequence[pd.DataFrame], select: Select = _every_row
) -> list[Evidence]:
    """``rule`` on each of ``frames`` (its fine-tuned rows that ``select`` keeps): one evidence per frame, in order.
    With ``[observed, *null]``, element 0 is the build's evidence and 1..n the null's."""
    return on_stacks(rule, stacks_of(frames, select))


def on_summary(rule: Callable[[SummaryStack], list[Evidence]], summary: pd.DataFrame) -> Evidence:
    """``rule`` on one summary (a stack of one draw)."""
    return on_draws(rule, [summary])[0]


def cluster_intervals(
    flags: np.ndarray, clusters: Sequence, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~iclmem.report.verdicts.cluster_share_interval` of every draw's ``flags`` (draws x rows): the same
    resamples of whole clusters (seed 0), whose hit counts are sums of whole numbers (exact in any order)."""
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


def row_clusters(rows: pd.DataFrame) -> list:
    """The independent unit of each row: its fine-tuning run (each row its own unit without ``run_key``)."""
    return list(rows.run_key) if "run_key" in rows.columns else list(range(len(rows)))


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
    null = null_summaries(summary, scores, NullDraws(n_permutations, seed, n_boot)) if n_permutations else None
    return reclassify(summary, outcome_rule), null


__all__ = [
    "NUMBERS",
    "STACK_COLUMNS",
    "REQUIRED",
    "STRUCTURE",
    "SummaryStack",
    "cluster_intervals",
    "on_draws",
    "on_stacks",
    "on_summary",
    "outcomes_with_null",
    "row_clusters",
    "stacks_of",
    "stacks_with_null",
]
