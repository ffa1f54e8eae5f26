"""Paper 1, Sec. 4.2 and Tab. 2 (the probe's settings): the probe settings appendix A6's own runs share.

The sensitivity curve (:func:`~iclmem.chapters.ch_a6_instrument.instrument.run_sensitivity`), the curve on every
table (:func:`~iclmem.chapters.ch_a6_instrument.table_curves.run_table_curves`) and the member-only control
(:func:`~iclmem.chapters.ch_a6_instrument.member_control.member_only_control`) probe with the same seed, candidate
count, query cap and bootstrap size; notebook A6 builds one :class:`~iclmem.probe.settings.ProbeSettings` from its
parameters.
"""

from __future__ import annotations

from iclmem.probe.settings import ProbeSettings

#: The settings a call gets when it is given none: the chapter's own runs probe 50 queries per pool, with 200
#: bootstrap draws (the engine's :class:`~iclmem.probe.settings.ProbeSettings` with the chapter's defaults).
DEFAULT_PROBE = ProbeSettings(max_queries=50, n_boot=200)


__all__ = ["DEFAULT_PROBE"]
