"""Paper 1, Sec. 5, Sec. 6, App. A.4, App. B.3, Fig. 5, Tab. 1, Tab. 2: the values notebook 04 quotes from the paper.

Each constant is a number or a list printed in the paper, with the place it is printed, or a threshold a claim states
in words as the book reads it (C1's TPR condition, C15's "modest" AUC and "high" TPR@10%); the claims
(:mod:`.claims`), the tables (:mod:`.tables`), the null draws (:mod:`.nulls`), the power plan (:mod:`.power_plan`) and
the grid plan (:mod:`.grid_plan`) read them from here.
"""

from __future__ import annotations

import pandas as pd

from iclmem.stats.outcomes import OUTCOME_ORDER

#: Fig. 5 of the paper: % of configurations per outcome (over all 1,128 runs).
PAPER_OUTCOME_SHARES = pd.DataFrame(
    {"Q=50": [55.2, 19.3, 12.0, 5.5, 8.0], "Q=512": [50.9, 19.9, 1.8, 6.7, 20.8]}, index=list(OUTCOME_ORDER)
)


#: App. A.4: non-collapsed configurations, raw TPR@10% >= 0.10, and how many survive calibration.
PAPER_CALIBRATION = {"non_collapsed": 530, "raw_tpr10_signals": 241, "vanished": 230, "calibrated_signals": 11}


#: Tab. 1 of the paper (Q=50 except beer_ratings and bikedekho at Q=512).
PAPER_TABLE1 = pd.DataFrame(
    [
        ("buy_buy_baby", 1e-4, 10, 50, 0.61, 0.14, 0.12),
        ("chocolate_bar_ratings", 1e-3, 10, 50, 0.61, 0.18, 0.02),
        ("babies_r_us", 1e-4, 50, 50, 0.66, 0.02, 0.00),
        ("beer_ratings", 1e-4, 50, 512, 0.59, 0.49, 0.17),
        ("bikedekho", 1e-4, 10, 512, 0.58, 0.15, 0.02),
    ],
    columns=["dataset", "learning_rate", "epoch", "query_size", "auc", "tpr10", "tpr1"],
)


#: C1 and C3 (Sec. 5, Sec. 6): tasks with detectable memorization / with TPR@1% > 0.1, of the 10 evaluated.
PAPER_DETECTABLE_TASKS = (8, 10)
PAPER_TPR1_TASKS = (2, 10)
#: C9 (Sec. 5, Fig. 2): share of Q=50 configurations with detectable memorization at epoch 1 and by epoch 250;
#: Q=512 peaks at epoch 50 with 5.5% and vanishes after.
PAPER_TEMPORAL = {"q50_epoch1": 0.042, "q50_epoch250": 0.20, "q512_peak": 0.055, "q512_peak_epoch": 50}
#: C15 (Sec. 5, App. B.3): beer_ratings at Q=512, AUC 0.59 but TPR@10% 0.49.
PAPER_LOCALIZED = {"auc": 0.59, "tpr10": 0.49}
#: Tab. 2's label conditions (N, M, S) and probing epochs.
PAPER_CONDITIONS = ("none", "members", "all")
PAPER_PROBE_EPOCHS = (0, 1, 2, 5, 10, 50, 100, 250, 500)

#: C15's stated thresholds: a "modest" AUC(Delta S) and a "high" TPR@10% (3x the 0.10 of a random score).
LOCALIZED_MAX_AUC = 0.65
LOCALIZED_MIN_TPR10 = 0.30
#: C1's TPR condition ("AUC(Delta S) > 0.5, TPR@r% > 0.1"), read at r = 10% on the primary metric.
DETECT_MIN_TPR10 = 0.1

__all__ = [
    "DETECT_MIN_TPR10",
    "LOCALIZED_MAX_AUC",
    "LOCALIZED_MIN_TPR10",
    "PAPER_CALIBRATION",
    "PAPER_CONDITIONS",
    "PAPER_DETECTABLE_TASKS",
    "PAPER_LOCALIZED",
    "PAPER_OUTCOME_SHARES",
    "PAPER_PROBE_EPOCHS",
    "PAPER_TABLE1",
    "PAPER_TEMPORAL",
    "PAPER_TPR1_TASKS",
]
