"""Chapter 3 (notebook 03): multiple-choice probing, the manipulation suite and the perturbation claim.

Paper sections: Sec. 4.2 ("Multiple-Choice Protocol", "Context Manipulations"), App. A.3 (Tab. 7,
"Perturbation Effectiveness", Fig. 4), App. B.3 (Tab. 8).
"""

from __future__ import annotations

import math

import pandas as pd

from ..claims import claim_record
from ..report import PAPER_PERTURBATION, manipulation_effects

#: A perturbation effect this small counts as "about 0" (Fig. 4: positional shuffling, Delta AUC ~ 0).
NEUTRAL_DELTA = 0.005


def perturbation_claim(per_config: list[pd.DataFrame], basis: str) -> dict:
    """C12: true-label skewing raises AUC(Delta S) (+0.013 by category, Fig. 4); positional shuffling is ~0.

    ``per_config``: :func:`iclmem.report.manipulation_aucs` frames of the configurations averaged over
    (the paper: its detectable-memorization configurations); ``basis`` names them for the reason.
    """
    paper = (f"skew true +{PAPER_PERTURBATION['skew_true_delta']:.3f}, positional shuffling ~0, best single "
             f"{PAPER_PERTURBATION['best_single']} +{PAPER_PERTURBATION['best_single_delta']:.3f} "
             f"(baseline AUC {PAPER_PERTURBATION['baseline_auc']:.3f})")
    effects = manipulation_effects(per_config)
    if effects.empty:
        return claim_record("C12", paper, "no configuration to average over", "not testable here",
                            "no fine-tuned configuration was available for the per-manipulation AUCs")
    by_cat = effects[effects.manipulation != "baseline"].groupby("category").mean_delta_auc.mean()
    shuffle, skew = float(by_cat.get("positional_shuffling", math.nan)), float(by_cat.get("skew_true", math.nan))
    best = effects[effects.manipulation != "baseline"].iloc[0]
    neutral = abs(shuffle) < NEUTRAL_DELTA
    helps = skew > 0
    return claim_record(
        "C12", paper, f"skew true {skew:+.3f}, positional shuffling {shuffle:+.3f}, best single {best.manipulation} "
        f"{best.mean_delta_auc:+.3f} ({len(per_config)} {basis} configurations)",
        "reproduced" if neutral and helps else "differs",
        f"positional shuffling within +-{NEUTRAL_DELTA:g}: {'yes' if neutral else 'no'}; true-label skewing raises the AUC: "
        f"{'yes' if helps else 'no'}")


__all__ = ["perturbation_claim", "NEUTRAL_DELTA"]
