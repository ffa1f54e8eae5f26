"""Paper 1, App. B.1 (Outcome I): the loss-ratio values the paper reports for controlled fine-tuning (notebook 02)."""

from __future__ import annotations

# : App. B.1: stable configurations (lr <= 1e-4) cluster at 1-2x the reference loss; aggressive ones have median ratios
# above 8x.
PAPER_STABLE_RATIO = (1.0, 2.0)
PAPER_AGGRESSIVE_MEDIAN = 8.0


__all__ = [
    "PAPER_AGGRESSIVE_MEDIAN",
    "PAPER_STABLE_RATIO",
]
