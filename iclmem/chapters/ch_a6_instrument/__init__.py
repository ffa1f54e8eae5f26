"""Appendix A6, the instrument (Sec. 4.2 and Tab. 3 set what the probe must see; the paper reports no control): the
controls that say whether a non-detection means anything, and the instrument rows P1-P3 of the scorecard.

What notebook A6 uses, from the package's one-job modules: the negative control P2 (:mod:`.controls`), the positive
control and its sensitivity curve (:mod:`.instrument`), the curve on every table (:mod:`.table_curves`), P1's cell
(:mod:`.instrument_cells`), the recall control (:mod:`.instrument_recall`), the factor table
(:mod:`.instrument_factors`), the strong signal (:mod:`.instrument_strong`), the context ladder
(:mod:`.instrument_checks`), what a table cannot carry (:mod:`.instrument_fit`), the member-only control P3
(:mod:`.member_control`), the probe settings of its own runs (:mod:`.probe_settings`), the records
(:mod:`.claims`) and P2 on the registered design (:mod:`.on_design`).
"""

from iclmem.chapters.ch_a6_instrument.claims import instrument_claims, p3_record
from iclmem.chapters.ch_a6_instrument.controls import negative_control, negative_control_texts
from iclmem.chapters.ch_a6_instrument.instrument import (
    SensitivitySpec,
    category_aucs,
    plot_sensitivity,
    run_sensitivity,
    weakest_detection,
)
from iclmem.chapters.ch_a6_instrument.instrument_cells import p1_cells, rule_p1
from iclmem.chapters.ch_a6_instrument.instrument_checks import (
    LADDER_KS,
    context_ladder,
    ladder_drop,
    pretraining_min_context,
)
from iclmem.chapters.ch_a6_instrument.instrument_factors import (
    binned_table,
    factor_cases,
    factor_table,
    strongest_factor,
)
from iclmem.chapters.ch_a6_instrument.instrument_fit import factors_unfit, not_run_note
from iclmem.chapters.ch_a6_instrument.instrument_recall import (
    HEALTHY_MAX_RATIO,
    HEALTHY_MIN_HELD_OUT_GAIN,
    recall_cells,
    recall_sensitivity,
)
from iclmem.chapters.ch_a6_instrument.instrument_strong import strong_signal
from iclmem.chapters.ch_a6_instrument.member_control import member_only_control
from iclmem.chapters.ch_a6_instrument.on_design import design_instrument_claims
from iclmem.chapters.ch_a6_instrument.table_curves import (
    CurveSetting,
    curve_settings,
    plot_table_curves,
    run_table_curves,
    weakest_per_table,
    weakest_text,
)

__all__ = [
    "HEALTHY_MAX_RATIO",
    "HEALTHY_MIN_HELD_OUT_GAIN",
    "CurveSetting",
    "LADDER_KS",
    "SensitivitySpec",
    "binned_table",
    "category_aucs",
    "context_ladder",
    "curve_settings",
    "design_instrument_claims",
    "factor_cases",
    "factor_table",
    "factors_unfit",
    "instrument_claims",
    "ladder_drop",
    "member_only_control",
    "negative_control",
    "negative_control_texts",
    "not_run_note",
    "p1_cells",
    "p3_record",
    "plot_sensitivity",
    "plot_table_curves",
    "pretraining_min_context",
    "recall_cells",
    "recall_sensitivity",
    "rule_p1",
    "run_sensitivity",
    "run_table_curves",
    "strong_signal",
    "strongest_factor",
    "weakest_detection",
    "weakest_per_table",
    "weakest_text",
]
