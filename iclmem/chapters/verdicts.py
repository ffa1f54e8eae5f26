"""Shared rules for turning a computed number into a scorecard verdict (every chapter).

Five words (:data:`iclmem.chapters.claims.VERDICTS`), chosen by :func:`evidence_verdict` from what a
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

import numpy as np

from ..intervals import wilson
from ..stats import NULL_LEVEL, beyond_null, null_range


def wilson_interval(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``k / n`` (``(nan, nan)`` for ``n == 0``; :func:`iclmem.intervals.wilson`)."""
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
    return inside, f"the paper's {percent(paper_share)} lies {where} this build's 95% Wilson interval [{percent(lo)}, {percent(hi)}] ({width})"


def share_verdict(k: int, n: int, paper_share: float) -> tuple[str, str]:
    """(verdict, reason) of a share claim *without* a null: ``reproduced`` is not available, only differs / inconclusive.

    Use :func:`evidence_verdict` with the claim's null rate to allow ``reproduced``.
    """
    agrees, reason = share_agreement(k, n, paper_share)
    if agrees is None:
        return "not testable here", reason
    return ("inconclusive" if agrees else "differs"), reason


def direction_agreement(observed: float, null_values: Sequence[float], side: str = "greater") -> tuple[bool, bool]:
    """(agrees, contradicted) of a direction claim: ``observed`` beyond the null's 95% quantile on ``side``, or on the other."""
    other = "less" if side == "greater" else "greater"
    return beyond_null(observed, null_values, 0.95, side), beyond_null(observed, null_values, 0.95, other)


def evidence_verdict(agrees: bool | None, null_rate: float | None, *, contradicted: bool | None = None,
                     no_null: bool = False, by_construction: bool = False) -> str:
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


__all__ = ["NullSummary", "direction_agreement", "evidence_verdict", "percent", "share_agreement", "share_text",
           "share_verdict", "summarize_null", "wilson_interval"]
