"""Golchin et al. 2024, Sec. 5: the evidence rules every claim D1-D9 is read with (notebook 06).

The constants of the rules (:data:`N_BOOT`, :data:`NULL_BOOT`, :data:`EQUIVALENCE_MARGIN`), the random draws a claim
is judged with (:class:`ClaimDraws`, :data:`DEFAULT_DRAWS`), the interval over instances (:class:`Interval`,
:func:`instance_interval`, from :mod:`iclmem.stats.intervals`), Pearson's r, and the directional and equality rules on
an :class:`Interval` (:mod:`iclmem.report.verdicts` turns their answers into verdict words), with the reason's
sentences they give. How a verdict is decided: :mod:`iclmem.chapters.ch06_llm_kshot.claims`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from iclmem.report.records import ClaimResult
from iclmem.report.verdicts import (
    directional_answers,
    equivalence_answers,
)
from iclmem.report.verdicts import directional_verdict as _directional_verdict
from iclmem.report.verdicts import equivalence_verdict as _equivalence_verdict
from iclmem.stats.intervals import paired_bootstrap
from iclmem.stats.permutation import NullDraws

N_BOOT = 2000


CONFIDENCE = 0.95


#: Bootstrap resamples of the rule inside each null draw (the build's own interval uses :attr:`ClaimDraws.n_boot`,
#: :data:`N_BOOT` by default).
NULL_BOOT = 200


#: Equality claims (D4, D5): the largest difference, in percentage points of memorization, still counted as equal.
#: The paper states no number ("reaches its maximum", "equivalent"); this margin is the companion's choice.
EQUIVALENCE_MARGIN = 10.0


@dataclass(frozen=True)
class ClaimDraws(NullDraws):
    """The random draws a claim D1-D8 is judged with (Sec. 5), the tabular null's :class:`NullDraws` with this
    chapter's bootstrap: ``n_boot`` resamples of the instances for the build's own interval (default :data:`N_BOOT`),
    the ``seed`` of that bootstrap and of the claim's null, and ``n_perm`` null draws (each judged with a
    :data:`NULL_BOOT`-resample bootstrap)."""

    n_boot: int = N_BOOT

    @property
    def text(self) -> str:
        """The null's sentence on its draws, as each claim's ``null`` field ends."""
        return (
            f"{self.n_perm} draws (seed {self.seed}), each judged by the claim's rule with a {NULL_BOOT}-resample "
            f"bootstrap (the build's own interval: {self.n_boot} resamples)"
        )


#: The claims' default draws: :data:`N_BOOT` resamples, seed 0, :data:`~iclmem.stats.permutation.N_PERMUTATIONS`
#: null draws.
DEFAULT_DRAWS = ClaimDraws()


@dataclass(frozen=True)
class Interval:
    """A seeded percentile bootstrap interval over instances."""

    lo: float
    hi: float
    n_units: int
    n_boot: int
    n_valid: int
    seed: int
    level: float = CONFIDENCE

    def bounds(self, fmt: str = "{:+.0f}", unit: str = " points") -> str:
        return f"[{fmt.format(self.lo)}, {fmt.format(self.hi)}]{unit}"

    def method(self) -> str:
        return (
            f"{self.level:.0%} percentile bootstrap over {self.n_units} instances, {self.n_boot} resamples, "
            f"seed {self.seed}"
        )

    def text(self, fmt: str = "{:+.0f}", unit: str = " points") -> str:
        return f"{self.bounds(fmt, unit)}, {self.method()}"


def instance_interval(
    n_units: int, stat: Callable[[np.ndarray], float], n_boot: int = N_BOOT, seed: int = 0, level: float = CONFIDENCE
) -> Interval | None:
    """Percentile interval of ``stat(indices)`` over ``n_boot`` resamples of ``n_units`` units with replacement.

    ``None`` with fewer than 2 units or when ``stat`` is undefined (not finite) in more than half the resamples.
    """
    lo, hi, valid = paired_bootstrap(n_units, stat, n_boot, seed, level)
    if not np.isfinite(lo):
        return None
    return Interval(lo, hi, n_units, n_boot, valid, seed, level)


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r along the last axis of ``x`` and ``y`` (broadcast), over the positions where both are finite; NaN for
    fewer than 2 such points or a constant series."""
    x, y = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float))
    ok = np.isfinite(x) & np.isfinite(y)
    n = ok.sum(axis=-1)
    with quiet():
        mx = np.where(ok, x, 0.0).sum(axis=-1) / n
        my = np.where(ok, y, 0.0).sum(axis=-1) / n
        dx = np.where(ok, x - mx[..., None], 0.0)
        dy = np.where(ok, y - my[..., None], 0.0)
        flat_x = np.where(ok, x, -np.inf).max(axis=-1) == np.where(ok, x, np.inf).min(axis=-1)
        flat_y = np.where(ok, y, -np.inf).max(axis=-1) == np.where(ok, y, np.inf).min(axis=-1)
        r = (dx * dy).sum(axis=-1) / np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))
    return np.where((n >= 2) & ~flat_x & ~flat_y, np.clip(r, -1.0, 1.0), np.nan)


def pearson(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Pearson's r; NaN for fewer than 2 points or a constant series (non-finite pairs left out)."""
    return float(pearson_rows(np.asarray(x, float).ravel(), np.asarray(y, float).ravel()))


@contextmanager
def quiet() -> Iterator[None]:
    """Silence numpy's warnings on empty slices (nanmean of all-NaN): those statistics are NaN, and NaN is handled."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def directional_agreement(estimate: float, interval: Interval | None, sign: int = 1) -> tuple[bool | None, bool]:
    """(agrees, contradicted) of a directional claim (an effect with sign ``sign``) on the build.

    Agrees when the estimate has the claimed sign and the bootstrap interval lies strictly on that side of 0;
    contradicted (a clear disagreement) when the interval lies strictly on the other side of 0; neither when the
    interval reaches 0, whatever the estimate's sign (inside the noise). ``(None, False)`` without an interval or
    estimate.
    """
    if interval is None or not np.isfinite(estimate):
        return None, False
    agrees, contradicted = directional_answers(estimate, interval.lo, interval.hi, sign)
    return bool(agrees), bool(contradicted)


def margin_agreement(
    interval: Interval | None, margin: float = EQUIVALENCE_MARGIN, one_sided: bool = False
) -> tuple[bool | None, bool]:
    """(agrees, contradicted) of an equality claim: the interval within +-``margin`` (``one_sided``: above -``margin``),
    or wholly beyond it; neither when it straddles the margin. ``(None, False)`` without an interval."""
    if interval is None:
        return None, False
    agrees, contradicted = equivalence_answers(interval.lo, interval.hi, margin, one_sided)
    return bool(agrees), bool(contradicted)


def interval_directional_verdict(
    estimate: float, interval: Interval | None, sign: int = 1, null_rate: float | None = None
) -> str:
    """:func:`iclmem.report.verdicts.directional_verdict` on a bootstrap :class:`Interval` (``None``: not
    testable)."""
    lo, hi = (None, None) if interval is None else (interval.lo, interval.hi)
    return _directional_verdict(estimate, lo, hi, sign, null_rate)


def interval_equivalence_verdict(
    interval: Interval | None,
    margin: float = EQUIVALENCE_MARGIN,
    one_sided: bool = False,
    null_rate: float | None = None,
) -> str:
    """:func:`iclmem.report.verdicts.equivalence_verdict` on a bootstrap :class:`Interval` (``None``: not
    testable)."""
    lo, hi = (None, None) if interval is None else (interval.lo, interval.hi)
    return _equivalence_verdict(lo, hi, margin, one_sided, null_rate)


def directional_why(estimate: float, interval: Interval | None, sign: int = 1, what: str = "the difference") -> str:
    if interval is None:
        return f"{what} has no bootstrap interval (fewer than 2 instances or undefined in most resamples)"
    side = "above" if sign > 0 else "below"
    agrees, _ = directional_agreement(estimate, interval, sign)
    if agrees:
        return f"{what} is {'positive' if sign > 0 else 'negative'} and its interval lies {side} 0"
    if sign * estimate > 0:
        return (
            f"{what} has the claimed sign but its interval includes 0: not distinguishable from no effect with "
            f"{interval.n_units} instances"
        )
    _, contradicted = directional_agreement(estimate, interval, sign)
    if contradicted:
        return f"{what} is {estimate:+.2g}, not in the claimed direction, and its interval excludes 0"
    return (
        f"{what} is {estimate:+.2g}, not in the claimed direction, but its interval reaches 0: inside the noise with "
        f"{interval.n_units} instances"
    )


def equivalence_why(estimate: float, interval: Interval | None, margin: float, one_sided: bool, what: str) -> str:
    if interval is None:
        return f"{what} has no bootstrap interval (fewer than 2 instances)"
    bound = f"above -{margin:g} points" if one_sided else f"within +-{margin:g} points"
    agrees, outside = margin_agreement(interval, margin, one_sided)
    if agrees:
        return f"the interval of {what} lies {bound} (the companion's equality margin)"
    if outside:
        return f"the interval of {what} lies outside the margin ({bound} counts as equal): clearly different"
    return (
        f"{what} is {estimate:+.0f} points but its interval is not {bound} (the companion's equality margin): "
        f"equality not established with {interval.n_units} instances"
    )


def ks_text(ks: Sequence[int]) -> str:
    return "k = " + ", ".join(str(int(k)) for k in ks)


def mean_pct(m: pd.DataFrame, ks: Sequence[int]) -> float:
    return float(np.nanmean(m[list(ks)].to_numpy()) * 100) if len(ks) and len(m) else float("nan")


def not_testable(claim_id: str, paper_text: str, ours: str, reason: str) -> ClaimResult:
    return ClaimResult(claim_id, paper_text, ours, "not testable here", reason)


__all__ = [
    "N_BOOT",
    "CONFIDENCE",
    "NULL_BOOT",
    "EQUIVALENCE_MARGIN",
    "ClaimDraws",
    "DEFAULT_DRAWS",
    "Interval",
    "instance_interval",
    "pearson_rows",
    "pearson",
    "quiet",
    "directional_agreement",
    "margin_agreement",
    "interval_directional_verdict",
    "interval_equivalence_verdict",
    "directional_why",
    "equivalence_why",
    "ks_text",
    "mean_pct",
    "not_testable",
]
