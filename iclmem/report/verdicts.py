"""Shared rules for turning a computed number into a scorecard verdict (every chapter).

Five words (:data:`iclmem.report.glue.VERDICTS`), chosen by :func:`evidence_verdict` from what a
claim's rule says on the build and under the claim's null:

* a **share claim** ("x% of configurations ...") agrees when the paper's share lies inside the 95%
  Wilson interval of this build's share (:func:`share_agreement`), and is contradicted when it
  lies outside;
* a **direction claim** ("A is larger than B") agrees when the build's statistic lies beyond the
  95% quantile of its null distribution (:func:`direction_agreement`), and is contradicted when it
  lies beyond the other end;
* a rule that agrees is *reproduced* only when it says so in at most 5% of the null draws (or no
  null applies, and the record says why); otherwise it is *inconclusive*. A rule that neither
  agrees nor is contradicted is *inconclusive* too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from iclmem.stats.intervals import wilson
from iclmem.stats.permutation import NULL_LEVEL, beyond_null, null_range

#: The z of :func:`wilson_interval` (95%).
WILSON_Z = 1.959964


def wilson_interval(k: int, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``k / n`` (``(nan, nan)`` for ``n == 0``;
    :func:`iclmem.stats.intervals.wilson`)."""
    lo, hi = wilson(k, n, z)
    return float(lo), float(hi)


def percent(x: float) -> str:
    """A share as percent text with one decimal ("-" for NaN)."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def share_text(k: int, n: int) -> tuple[str, str]:
    """``("k/n = x%", "[lo%, hi%]")`` for a share and its Wilson interval."""
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {percent(k / n if n else math.nan)}", f"[{percent(lo)}, {percent(hi)}]"


def share_agreement(k: int, n: int, paper_share: float) -> tuple[bool | None, str]:
    """(agrees, reason) of a share claim: is the paper's share inside this build's Wilson interval? ``None``: n == 0."""
    if n == 0:
        return None, "no configuration of this kind in the build's grid"
    lo, hi = wilson_interval(k, n)
    inside = lo <= paper_share <= hi
    width = "a weak test: few configurations" if n < 30 else f"{n} configurations"
    where = "inside" if inside else ("below" if paper_share < lo else "above")
    return (
        inside,
        f"the paper's {percent(paper_share)} lies {where} this build's 95% Wilson interval [{percent(lo)}, "
        f"{percent(hi)}] ({width})",
    )


def _cluster_shares(
    flags: Sequence[bool], clusters: Sequence[Any], n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """``n_boot`` shares of ``flags`` over clusters resampled with replacement (``(n_boot,)``)."""
    f = np.asarray(flags, dtype=float)
    codes, uniq = pd.factorize(pd.Series(list(clusters)))
    hits = np.bincount(codes, weights=f, minlength=len(uniq))
    sizes = np.bincount(codes, minlength=len(uniq)).astype(float)
    pick = rng.integers(0, len(uniq), (n_boot, len(uniq)))
    return hits[pick].sum(axis=1) / sizes[pick].sum(axis=1)


def cluster_share_interval(
    flags: Sequence[bool],
    clusters: Sequence[Any],
    n_boot: int = 2000,
    seed: int | np.random.Generator = 0,
    level: float = 0.95,
    minus: tuple[Sequence[bool], Sequence[Any]] | None = None,
) -> tuple[float, float]:
    """Percentile interval of the share of ``flags`` with whole clusters resampled (a run and its probed epochs are
    one unit); with ``minus=(flags, clusters)`` of a second group, the interval of the difference of the two shares,
    each group's clusters resampled apart (in one draw each).

    The rows of one cluster (the epochs of one fine-tuning run) are not independent, so a Wilson interval over rows
    is too narrow; resampling clusters with replacement keeps their dependence. ``(nan, nan)`` without rows; with a
    single cluster the interval is its share (nothing to resample: the width says so). ``seed``: a seed, or a
    generator that several intervals draw from in turn.
    """
    if not len(flags) or (minus is not None and not len(minus[0])):
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    shares = _cluster_shares(flags, clusters, n_boot, rng)
    if minus is not None:
        shares = shares - _cluster_shares(minus[0], minus[1], n_boot, rng)
    lo, hi = np.quantile(shares, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def cluster_share_agreement(
    flags: Sequence[bool], clusters: Sequence[Any], paper_share: float, seed: int = 0
) -> tuple[bool | None, str, tuple[float, float]]:
    """(agrees, reason, interval) of a share claim over clustered rows: the paper's share inside
    :func:`cluster_share_interval`."""
    f = np.asarray(flags, dtype=bool)
    n_units = len(set(clusters))
    if not len(f):
        return None, "no configuration of this kind in the build's grid", (math.nan, math.nan)
    lo, hi = cluster_share_interval(f, clusters, seed=seed)
    return bool(lo <= paper_share <= hi), cluster_share_reason(paper_share, lo, hi, n_units, len(f)), (lo, hi)


def cluster_share_reason(paper_share: float, lo: float, hi: float, n_units: int, n_rows: int) -> str:
    """Why a share claim over clustered rows agrees or not: where the paper's share lies against this build's
    interval ``[lo, hi]``, bootstrapped over ``n_units`` runs of ``n_rows`` rows (:func:`cluster_share_agreement`)."""
    inside = lo <= paper_share <= hi
    where = "inside" if inside else ("below" if paper_share < lo else "above")
    return (
        f"the paper's {percent(paper_share)} lies {where} this build's 95% interval [{percent(lo)}, {percent(hi)}] "
        f"(bootstrap over {n_units} runs, their {n_rows} probed epochs kept together)"
    )


def monte_carlo_error(rate: float | None, n: int | None) -> float:
    """Standard error of a null rate estimated from ``n`` draws (binomial: sqrt(p(1-p)/n); NaN without draws)."""
    if rate is None or not n or not np.isfinite(rate):
        return math.nan
    return math.sqrt(rate * (1 - rate) / n)


def share_verdict(k: int, n: int, paper_share: float) -> tuple[str, str]:
    """(verdict, reason) of a share claim *without* a null: ``reproduced`` is not available, only differs /
    inconclusive.

    Use :func:`evidence_verdict` with the claim's null rate to allow ``reproduced``.
    """
    agrees, reason = share_agreement(k, n, paper_share)
    if agrees is None:
        return "not testable here", reason
    return ("inconclusive" if agrees else "differs"), reason


def direction_agreement(observed: float, null_values: Sequence[float], side: str = "greater") -> tuple[bool, bool]:
    """(agrees, contradicted) of a direction claim: ``observed`` beyond the null's 95% quantile on ``side``, or on
    the other."""
    other = "less" if side == "greater" else "greater"
    return beyond_null(observed, null_values, 0.95, side), beyond_null(observed, null_values, 0.95, other)


def evidence_verdict(
    agrees: bool | None,
    null_rate: float | None,
    *,
    contradicted: bool | None = None,
    no_null: bool = False,
    by_construction: bool = False,
) -> str:
    """The verdict word of a claim.

    ``agrees``: the rule's answer on the build (``None``: the claim could not be computed).
    ``null_rate``: the share of null draws in which the rule also agrees (``None`` with ``no_null``,
    when the chapter states why no null applies). ``contradicted``: whether a disagreement is
    clear (default: every disagreement is). ``by_construction``: the procedure makes it true.
    """
    if by_construction:
        return "holds by construction"
    if agrees is None:
        return "not testable here"
    if not agrees:
        return "differs" if contradicted is None or contradicted else "inconclusive"
    if null_rate is None:
        if not no_null:
            raise ValueError("an agreeing rule needs its null rate, or no_null=True with the reason no null applies.")
        return "reproduced"
    return "reproduced" if null_rate <= NULL_LEVEL + 1e-12 else "inconclusive"


def verdict_without_null(agrees: bool) -> str:
    """The verdict of a rule whose null rate was not measured: ``inconclusive`` when it agrees (agreement alone never
    reproduces), ``differs`` when it does not."""
    return "inconclusive" if agrees else "differs"


def directional_answers(estimate: Any, lo: Any, hi: Any, sign: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise (agrees, contradicted) of a directional rule (an effect with sign ``sign``).

    Agrees when the estimate has the claimed sign and the interval ``[lo, hi]`` lies strictly on that side of 0;
    contradicted when the interval lies strictly on the other side (it excludes the claimed direction and 0); neither
    (inside the noise: a wrong-signed estimate whose interval still reaches 0 is inconclusive, not a contradiction)
    otherwise or where anything is undefined. The two answers are mirror images, so the rule needs as much evidence to
    say "differs" as to say "agrees".
    """
    est, lo, hi = (np.asarray(a, float) for a in (estimate, lo, hi))
    defined = np.isfinite(est) & np.isfinite(lo) & np.isfinite(hi)
    right = sign * est > 0
    toward, away = (lo, hi) if sign > 0 else (-hi, -lo)  # the interval's ends in the claimed direction
    return defined & right & (toward > 0), defined & ~right & (away < 0)


def equivalence_answers(lo: Any, hi: Any, margin: float, one_sided: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise (agrees, contradicted) of an equality rule: agrees when ``[lo, hi]`` lies within +-``margin``
    (``one_sided``: above -``margin``); contradicted when it lies wholly beyond the margin; neither when it
    straddles."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    defined = np.isfinite(lo) & np.isfinite(hi)
    inside = (lo > -margin) & (one_sided | (hi < margin))
    outside = (hi <= -margin) | (~np.asarray(one_sided) & (lo >= margin))
    return defined & inside, defined & outside


def directional_verdict(estimate: float, lo: float, hi: float, sign: int = 1, null_rate: float | None = None) -> str:
    """The verdict of a directional claim: :func:`directional_answers` read by :func:`evidence_verdict` (``None``
    bounds: not testable)."""
    if lo is None or hi is None or not np.isfinite(estimate):
        return evidence_verdict(None, null_rate)
    agrees, contradicted = directional_answers(estimate, lo, hi, sign)
    return evidence_verdict(bool(agrees), null_rate, contradicted=bool(contradicted))


def equivalence_verdict(
    lo: float | None, hi: float | None, margin: float, one_sided: bool = False, null_rate: float | None = None
) -> str:
    """The verdict of an equality claim: :func:`equivalence_answers` read by :func:`evidence_verdict`."""
    if lo is None or hi is None:
        return evidence_verdict(None, null_rate)
    agrees, contradicted = equivalence_answers(lo, hi, margin, one_sided)
    return evidence_verdict(bool(agrees), null_rate, contradicted=bool(contradicted))


@dataclass(frozen=True)
class NullSummary:
    """A claim's statistic on the build and under its null: the 95% range and the null "reproduce" rate."""

    observed: float
    lo: float
    hi: float
    rate: float
    n: int

    def range_text(self, fmt: str = "{:.3g}") -> str:
        return f"[{fmt.format(self.lo)}, {fmt.format(self.hi)}] over {self.n} permutations"


def summarize_null(observed: float, null_values: Sequence[float], null_agrees: Sequence[bool]) -> NullSummary:
    """:class:`NullSummary` of one claim from its statistic's null values and its rule's answers under the null."""
    lo, hi = null_range(null_values)
    agrees = np.asarray(null_agrees, dtype=bool)
    return NullSummary(float(observed), lo, hi, float(agrees.mean()) if len(agrees) else math.nan, int(len(agrees)))


__all__ = [
    "NullSummary",
    "cluster_share_agreement",
    "cluster_share_interval",
    "cluster_share_reason",
    "monte_carlo_error",
    "direction_agreement",
    "directional_answers",
    "directional_verdict",
    "equivalence_answers",
    "equivalence_verdict",
    "evidence_verdict",
    "verdict_without_null",
    "percent",
    "share_agreement",
    "share_text",
    "share_verdict",
    "summarize_null",
    "wilson_interval",
]
