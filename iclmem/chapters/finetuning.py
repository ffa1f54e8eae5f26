"""Chapter 2 (notebook 02): controlled fine-tuning, collapse and the loss-ratio claim.

Paper sections: Sec. 4.1 ("Controlled Fine-Tuning"), Tab. 2, App. B.1 (Outcome I, the loss ratio).
"""

from __future__ import annotations

import pandas as pd

from ..claims import claim_record
from ..outcomes import COLLAPSE_RATIO

#: App. B.1: stable configurations (lr <= 1e-4) cluster at 1-2x the reference loss; aggressive ones have median ratios above 8x.
PAPER_STABLE_RATIO = (1.0, 2.0)
PAPER_AGGRESSIVE_MEDIAN = 8.0


def median_loss_ratios(metrics: pd.DataFrame) -> pd.Series:
    """Median vanilla loss ratio L_v(M_theta) / L_v(M_ref) per learning rate, over fine-tuned epochs (epoch > 0)."""
    return metrics[metrics.epoch > 0].groupby("learning_rate").loss_ratio.median()


def loss_ratio_claim(metrics: pd.DataFrame) -> dict:
    """C10: the loss ratio is bimodal, lr <= 1e-4 at 1-2x, aggressive rates (>= 1e-2) with median > 8x; threshold 5x."""
    ratio = median_loss_ratios(metrics)
    stable, aggressive = ratio[ratio.index <= 1e-4], ratio[ratio.index >= 1e-2]
    paper = (f"lr <= 1e-4: {PAPER_STABLE_RATIO[0]:g}-{PAPER_STABLE_RATIO[1]:g}x; lr >= 1e-2: median > {PAPER_AGGRESSIVE_MEDIAN:g}x; "
             f"collapse threshold {COLLAPSE_RATIO:g}x")
    ours = "; ".join(f"lr {lr:g}: {v:.3g}x" for lr, v in ratio.items())
    if stable.empty or aggressive.empty:
        return claim_record("C10", paper, ours or "no fine-tuned epochs", "not testable here",
                            "the grid needs a learning rate <= 1e-4 and one >= 1e-2")
    low_ok = bool((stable <= PAPER_STABLE_RATIO[1]).all())
    high_ok = bool((aggressive > PAPER_AGGRESSIVE_MEDIAN).any())
    return claim_record("C10", paper, f"median loss ratio {ours}", "reproduced" if low_ok and high_ok else "differs",
                        f"stable rates at most {PAPER_STABLE_RATIO[1]:g}x: {'yes' if low_ok else 'no'}; some aggressive rate with a "
                        f"median above {PAPER_AGGRESSIVE_MEDIAN:g}x: {'yes' if high_ok else 'no'}")


__all__ = ["loss_ratio_claim", "median_loss_ratios", "PAPER_STABLE_RATIO", "PAPER_AGGRESSIVE_MEDIAN"]
