"""Notebook 04, calibration and outcomes: IclMem Sec. 4.2, Sec. 5, App. A.4, App. B, and the probe itself.

What notebook 04 uses, from the package's one-job modules: the paper's values (:mod:`.paper`), the claims' rules and
records C1-C9, C11, C15, C16 (:mod:`.claims`), the tables and figures of the outcomes (:mod:`.tables`,
:mod:`.figures`), the membership null (:mod:`.nulls`), the readings of Tab. 3 (:mod:`.outcome_readings`), the power
and grid plans (:mod:`.power_plan`, :mod:`.grid_plan`) and the claims on the registered design (:mod:`.on_design`).
The instrument (its controls, P1-P3) is appendix A6's, :mod:`iclmem.chapters.ch_a6_instrument`.
"""

from iclmem.chapters.ch04_calibration.claims import calibration_claims
from iclmem.chapters.ch04_calibration.figures import (
    plot_data_characteristics,
    plot_design_tables,
    plot_outcome_shares,
    plot_table_claim_grid,
    plot_temporal_evolution,
)
from iclmem.chapters.ch04_calibration.grid_plan import grid_options
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
    "PAPER_CALIBRATION",
    "PAPER_OUTCOME_SHARES",
    "PAPER_TABLE1",
    "calibration_claims",
    "calibration_effect",
    "data_characteristics",
    "detect_share_texts",
    "detectable_table",
    "exhaustive_table",
    "fit_printed_reading",
    "grid_options",
    "outcome_null_shares",
    "outcome_shares",
    "outcomes_with_null",
    "design_calibration_claims",
    "design_summary",
    "detectable_by_table",
    "table_claim_grid",
    "plot_data_characteristics",
    "plot_design_tables",
    "plot_table_claim_grid",
    "plot_outcome_shares",
    "plot_temporal_evolution",
    "power_plan",
    "pooled_conditions",
    "power_table",
    "reading_agreement",
    "share_basis_texts",
    "shuffled_contrast",
    "shuffled_label_check",
    "temporal_evolution",
]
