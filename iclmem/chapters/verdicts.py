"""Shared rules for turning a computed number into a scorecard verdict (all tabular chapters).

A share claim ("x% of configurations ...") is *reproduced* when the paper's share lies inside the
95% Wilson interval of this build's share; a direction claim ("A is larger than B") when the
direction holds. The interval makes the strength of the test visible: with few configurations it
is wide and agreement says little, which the reason text states.
"""

from __future__ import annotations

import math


def wilson_interval(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``k / n`` (``(nan, nan)`` for ``n == 0``)."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def percent(x: float) -> str:
    """A share as percent text with one decimal ("-" for NaN)."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def share_text(k: int, n: int) -> tuple[str, str]:
    """``("k/n = x%", "[lo%, hi%]")`` for a share and its Wilson interval."""
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {percent(k / n if n else math.nan)}", f"[{percent(lo)}, {percent(hi)}]"


def share_verdict(k: int, n: int, paper_share: float) -> tuple[str, str]:
    """(verdict, reason) of a share claim: is the paper's share inside this build's Wilson interval?"""
    if n == 0:
        return "not testable here", "no configuration of this kind in the build's grid"
    lo, hi = wilson_interval(k, n)
    inside = lo <= paper_share <= hi
    width = "a weak test: few configurations" if n < 30 else f"{n} configurations"
    where = "inside" if inside else ("below" if paper_share < lo else "above")
    return ("reproduced" if inside else "differs"), (f"the paper's {percent(paper_share)} lies {where} this build's 95% "
                                                      f"Wilson interval [{percent(lo)}, {percent(hi)}] ({width})")


__all__ = ["wilson_interval", "percent", "share_text", "share_verdict"]
