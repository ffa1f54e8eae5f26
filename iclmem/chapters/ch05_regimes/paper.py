"""Paper 1, App. D (Tab. 12): the paper's values for the realistic training regimes (notebook 05).

Tab. 12's column titles, the table itself (peak detectable memorization per dataset and regime, Q = 512) and the
number of datasets the paper evaluates (Tab. 5).
"""

from __future__ import annotations

import pandas as pd

from iclmem.training.regimes import MULTI_TASK_FIXED, MULTI_TASK_RANDOM, SINGLE_TASK_FIXED

#: Column titles of Tab. 12.
REGIME_TITLES: dict[str, str] = {
    SINGLE_TASK_FIXED: "Single-Task Fixed Pairs",
    MULTI_TASK_FIXED: "Multi-Task Fixed Pairs",
    MULTI_TASK_RANDOM: "Multi-Task Random Pairs",
}


#: Tab. 12 of the paper (Q = 512): peak detectable memorization per regime, for the five datasets
#: with signal in at least one regime; a missing (dataset, regime) is "--" (no detectable signal).
#: Single-task peaks are across all learning rates (lr 1e-3 at babies_r_us and bikewale, else 1e-4);
#: the joint regimes use lr 1e-4 on all 10 CARTE tasks.
PAPER_TABLE12 = pd.DataFrame(
    [
        ("babies_r_us", SINGLE_TASK_FIXED, 1, 0.668, 0.205, 0.008, 1e-3),
        ("babies_r_us", MULTI_TASK_FIXED, 100, 0.618, 0.008, 0.000, 1e-4),
        ("beer_ratings", SINGLE_TASK_FIXED, 50, 0.586, 0.494, 0.166, 1e-4),
        ("bikedekho", SINGLE_TASK_FIXED, 10, 0.579, 0.148, 0.016, 1e-4),
        ("bikedekho", MULTI_TASK_FIXED, 1, 0.558, 0.190, 0.027, 1e-4),
        ("bikewale", SINGLE_TASK_FIXED, 1, 0.582, 0.266, 0.123, 1e-3),
        ("bikewale", MULTI_TASK_RANDOM, 10, 0.575, 0.100, 0.018, 1e-4),
        ("cardekho", SINGLE_TASK_FIXED, 50, 0.560, 0.029, 0.002, 1e-4),
    ],
    columns=["dataset", "regime", "epoch", "auc", "tpr10", "tpr1", "learning_rate"],
)


#: Datasets of the paper's evaluation (Tab. 5); Tab. 12 lists only those with a detectable signal.
PAPER_DATASETS = 10
