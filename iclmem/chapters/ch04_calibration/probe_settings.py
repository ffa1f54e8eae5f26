"""Paper 1, Sec. 4.2 and Tab. 2 (the probe's settings): the probe settings notebook 04's own runs share.

The sensitivity curve (:func:`~iclmem.chapters.ch04_calibration.instrument.run_sensitivity`), the curve on every
table (:func:`~iclmem.chapters.ch04_calibration.table_curves.run_table_curves`) and the member-only control
(:func:`~iclmem.chapters.ch04_calibration.member_control.member_only_control`) probe with the same seed, candidate
count, query cap and bootstrap size; notebook 04 builds one :class:`ProbeSettings` from its parameters.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProbeSettings:
    """How a run is probed (Sec. 4.2): ``seed``, ``n_candidates`` labels per query, at most ``max_queries`` probed
    queries per pool (None: every query), and ``n_boot`` bootstrap draws of each AUC's interval."""

    seed: int = 0
    n_candidates: int = 10
    max_queries: int | None = 50
    n_boot: int = 200


#: The settings a call gets when it is given none.
DEFAULT_PROBE = ProbeSettings()


__all__ = ["DEFAULT_PROBE", "ProbeSettings"]
