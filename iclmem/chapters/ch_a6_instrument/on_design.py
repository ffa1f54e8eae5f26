"""Appendix A6's negative control P2 read on the registered decision design (``grids/decide.yaml``; issue 57 item 4).

The same control as on the book's grid (:func:`.controls.negative_control`, Sec. 4.2): two random halves of each
non-member set, one posing as members, must look like chance. The design's bundle keeps every single-task run's
null-halves intervals in its summaries, so the control reads the suite's non-member sets (table, Q, seed), the unit
its t-test counts, without a probe score. P1 and P3 need control runs outside the design and stay with the grid.
"""

from __future__ import annotations

from iclmem.bundle.design import Design
from iclmem.chapters.ch04_calibration.on_design import design_summary
from iclmem.chapters.ch_a6_instrument.claims import p2_record
from iclmem.chapters.ch_a6_instrument.controls import negative_control


def design_instrument_claims(design: Design) -> list[dict]:
    """P2's record on the design's single-task runs (:func:`.claims.p2_record` of :func:`.controls.negative_control`;
    the null halves read no outcome, so no reading of Tab. 3 enters)."""
    return [p2_record(negative_control(design_summary(design)))]


__all__ = ["design_instrument_claims"]
