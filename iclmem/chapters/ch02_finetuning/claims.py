"""Paper 1, Sec. 4.1, App. B.1: claim C10 (the loss ratio by learning rate) and the median it rests on (notebook 02)."""

from __future__ import annotations

import pandas as pd

from iclmem.chapters.ch02_finetuning.paper import PAPER_AGGRESSIVE_MEDIAN, PAPER_STABLE_RATIO
from iclmem.outcomes import COLLAPSE_RATIO
from iclmem.report.records import claim_record
from iclmem.report.verdicts import evidence_verdict


def median_loss_ratios(metrics: pd.DataFrame) -> pd.Series:
    """Median vanilla loss ratio L_v(M_theta) / L_v(M_ref) per learning rate, over fine-tuned epochs (epoch > 0)."""
    return metrics[metrics.epoch > 0].groupby("learning_rate").loss_ratio.median()


def loss_ratio_claim(metrics: pd.DataFrame) -> dict:
    """C10: the loss ratio is bimodal, lr <= 1e-4 at 1-2x, every aggressive rate (>= 1e-2) with a median > 8x; threshold
    5x.

    The ratio comes from fine-tuning (vanilla loss of M_theta over M_ref), not from membership labels,
    so no membership null applies; the record says so. Agrees when every stable rate's median is at
    most 2x and every aggressive rate's median exceeds 8x (the claim is about where the aggressive
    medians are, not whether one of them is).
    """
    ratio = median_loss_ratios(metrics)
    stable, aggressive = ratio[ratio.index <= 1e-4], ratio[ratio.index >= 1e-2]
    paper = (
        f"lr <= 1e-4: {PAPER_STABLE_RATIO[0]:g}-{PAPER_STABLE_RATIO[1]:g}x; lr >= 1e-2: median > "
        f"{PAPER_AGGRESSIVE_MEDIAN:g}x; "
        f"collapse threshold {COLLAPSE_RATIO:g}x"
    )
    ours = "; ".join(f"lr {lr:g}: {v:.3g}x" for lr, v in ratio.items())
    if stable.empty or aggressive.empty:
        return claim_record(
            "C10",
            paper,
            ours or "no fine-tuned epochs",
            "not testable here",
            "the grid needs a learning rate <= 1e-4 and one >= 1e-2",
        )
    low_ok = bool((stable <= PAPER_STABLE_RATIO[1]).all())
    high_ok = bool((aggressive > PAPER_AGGRESSIVE_MEDIAN).all())
    below = ", ".join(f"{lr:g}" for lr, v in aggressive.items() if v <= PAPER_AGGRESSIVE_MEDIAN) or "none"
    verdict = evidence_verdict(low_ok and high_ok, None, no_null=True)
    return claim_record(
        "C10",
        paper,
        f"median loss ratio {ours}",
        verdict,
        f"stable rates at most {PAPER_STABLE_RATIO[1]:g}x: {'yes' if low_ok else 'no'}; every aggressive rate with a "
        f"median above {PAPER_AGGRESSIVE_MEDIAN:g}x: {'yes' if high_ok else 'no'} (aggressive rates at or below it: "
        f"{below})",
        null="no null applies: the loss ratio is measured on fine-tuning's own vanilla loss, which no "
        "relabelling of members and non-members changes",
        observed=f"smallest aggressive median "
        f"{float(aggressive.min()):.3g}x, largest stable median {float(stable.max()):.3g}x",
    )


# --- figures ----------------------------------------------------------------------------------


__all__ = [
    "loss_ratio_claim",
    "median_loss_ratios",
]
