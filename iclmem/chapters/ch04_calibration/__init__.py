"""Notebook 04, calibration and outcomes: IclMem Sec. 4.2, Sec. 5, App. A.4, App. B, and the probe itself.

What notebook 04 uses, from the package's one-job modules: the paper's values (:mod:`.paper`), the claims' rules and
records C1-C9, C11, C15, C16, P1, P2, P3 (:mod:`.claims`), the tables and figures of the outcomes (:mod:`.tables`,
:mod:`.figures`), the controls (:mod:`.controls`, :mod:`.label_control`), the membership null (:mod:`.nulls`), the
readings of Tab. 3 (:mod:`.outcome_readings`), the power and grid plans (:mod:`.power_plan`, :mod:`.grid_plan`) and
the instrument (:mod:`.instrument` and the ``instrument_*`` modules, :mod:`.table_curves`, :mod:`.probe_settings`).
"""

from iclmem.chapters.ch04_calibration.claims import calibration_claims, instrument_claims, p3_record
from iclmem.chapters.ch04_calibration.controls import NEGATIVE_CONTROL_PHRASES, negative_control
from iclmem.chapters.ch04_calibration.figures import (
    plot_data_characteristics,
    plot_design_tables,
    plot_outcome_shares,
    plot_table_claim_grid,
    plot_temporal_evolution,
)
from iclmem.chapters.ch04_calibration.grid_plan import grid_options
from iclmem.chapters.ch04_calibration.instrument import (
    SensitivitySpec,
    category_aucs,
    plot_sensitivity,
    run_sensitivity,
    weakest_detection,
)
from iclmem.chapters.ch04_calibration.instrument_cells import p1_cells, rule_p1
from iclmem.chapters.ch04_calibration.instrument_checks import (
    LADDER_KS,
    context_ladder,
    ladder_drop,
    pretraining_min_context,
)
from iclmem.chapters.ch04_calibration.instrument_factors import (
    binned_table,
    factor_cases,
    factor_table,
    strongest_factor,
)
from iclmem.chapters.ch04_calibration.instrument_fit import factors_unfit, not_run_note
from iclmem.chapters.ch04_calibration.instrument_recall import (
    HEALTHY_MAX_RATIO,
    HEALTHY_MIN_HELD_OUT_GAIN,
    recall_cells,
    recall_sensitivity,
)
from iclmem.chapters.ch04_calibration.instrument_strong import strong_signal
from iclmem.chapters.ch04_calibration.member_control import member_only_control
from iclmem.chapters.ch04_calibration.nulls import outcomes_with_null
from iclmem.chapters.ch04_calibration.on_design import (
    design_calibration_claims,
    design_summary,
    detectable_by_table,
    table_claim_grid,
)
from iclmem.chapters.ch04_calibration.outcome_readings import CUT_GRID, fit_printed_reading, reading_agreement
from iclmem.chapters.ch04_calibration.paper import PAPER_CALIBRATION, PAPER_OUTCOME_SHARES, PAPER_TABLE1
from iclmem.chapters.ch04_calibration.power_plan import ABSENCE_MARGIN, power_plan
from iclmem.chapters.ch04_calibration.table_curves import (
    curve_settings,
    plot_table_curves,
    run_table_curves,
    weakest_per_table,
    weakest_text,
)
from iclmem.chapters.ch04_calibration.tables import (
    calibration_effect,
    data_characteristics,
    detect_share_texts,
    detectable_table,
    exhaustive_table,
    outcome_null_shares,
    outcome_shares,
    pooled_conditions,
    power_table,
    share_basis_texts,
    shuffled_contrast,
    shuffled_label_check,
    temporal_evolution,
)

__all__ = [
    "ABSENCE_MARGIN",
    "CUT_GRID",
    "HEALTHY_MIN_HELD_OUT_GAIN",
    "HEALTHY_MAX_RATIO",
    "LADDER_KS",
    "NEGATIVE_CONTROL_PHRASES",
    "PAPER_CALIBRATION",
    "PAPER_OUTCOME_SHARES",
    "PAPER_TABLE1",
    "SensitivitySpec",
    "binned_table",
    "calibration_claims",
    "calibration_effect",
    "category_aucs",
    "context_ladder",
    "curve_settings",
    "data_characteristics",
    "detect_share_texts",
    "detectable_table",
    "exhaustive_table",
    "factor_cases",
    "factor_table",
    "factors_unfit",
    "fit_printed_reading",
    "grid_options",
    "instrument_claims",
    "ladder_drop",
    "member_only_control",
    "negative_control",
    "not_run_note",
    "outcome_null_shares",
    "outcome_shares",
    "outcomes_with_null",
    "design_calibration_claims",
    "design_summary",
    "detectable_by_table",
    "table_claim_grid",
    "p1_cells",
    "p3_record",
    "plot_data_characteristics",
    "plot_design_tables",
    "plot_table_claim_grid",
    "plot_outcome_shares",
    "plot_sensitivity",
    "plot_table_curves",
    "plot_temporal_evolution",
    "power_plan",
    "pooled_conditions",
    "power_table",
    "pretraining_min_context",
    "reading_agreement",
    "recall_cells",
    "recall_sensitivity",
    "rule_p1",
    "run_sensitivity",
    "run_table_curves",
    "share_basis_texts",
    "shuffled_contrast",
    "shuffled_label_check",
    "strong_signal",
    "strongest_factor",
    "temporal_evolution",
    "weakest_detection",
    "weakest_per_table",
    "weakest_text",
]
