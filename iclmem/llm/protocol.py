"""The experimental protocol of "Memorization In In-Context Learning" (Golchin et al. 2024), as the engine uses it.

Protocol, not results: the k-shot regimes of Sec. 3.5 (zero-, few- and many-shot), by which the
engine groups its rates. The paper's reference values (Tab. 1-3, the memorization levels of
Sec. 5) are in :mod:`iclmem.chapters.llm_kshot`.
"""

from __future__ import annotations


def regime(k: int) -> str:
    """The paper's regimes (Sec. 3.5): zero-shot k=0, few-shot k in {25, 50}, many-shot k >= 100."""
    if k == 0:
        return "zero-shot"
    return "few-shot" if k < 100 else "many-shot"


__all__ = ["regime"]
