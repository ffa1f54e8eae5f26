"""Notebook 05, realistic training regimes: IclMem Sec. 6 ("Limitations"), App. D (Tab. 12), claim C13.

``paper`` (Tab. 12), ``runs`` (the notebook's sweep grid), ``balance`` (the encoding-balance check), ``tables``
(Tab. 12 from the sweep, C13's counts), ``claims`` (C13 and its rule), ``nulls`` (C13's membership null),
``figures`` (the regime-decay figure). The regimes themselves are the engine's :mod:`iclmem.training.regimes`.
"""

from iclmem.chapters.ch05_regimes.balance import balance_summary, encoding_balance, missing_balance
from iclmem.chapters.ch05_regimes.claims import (
    RegimeEvidence,
    decay_text,
    decays,
    detectable_by_regime,
    detectable_counts,
    regime_claim,
    regime_evidence,
)
from iclmem.chapters.ch05_regimes.figures import plot_regime_decay
from iclmem.chapters.ch05_regimes.nulls import regime_null, regime_scores
from iclmem.chapters.ch05_regimes.on_design import design_regime_claims, design_regime_rows
from iclmem.chapters.ch05_regimes.paper import PAPER_DATASETS, PAPER_TABLE12, REGIME_TITLES
from iclmem.chapters.ch05_regimes.runs import RegimeGridSpec, configuration_texts, notebook_grid
from iclmem.chapters.ch05_regimes.tables import regime_count_table, regime_peak_table, wide_table

__all__ = [
    "design_regime_claims",
    "design_regime_rows",
    "PAPER_DATASETS",
    "PAPER_TABLE12",
    "REGIME_TITLES",
    "RegimeEvidence",
    "RegimeGridSpec",
    "balance_summary",
    "configuration_texts",
    "decay_text",
    "decays",
    "detectable_by_regime",
    "detectable_counts",
    "encoding_balance",
    "missing_balance",
    "notebook_grid",
    "plot_regime_decay",
    "regime_claim",
    "regime_count_table",
    "regime_evidence",
    "regime_null",
    "regime_peak_table",
    "regime_scores",
    "wide_table",
]
