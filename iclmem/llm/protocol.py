"""The experimental protocol of "Memorization In In-Context Learning" (Golchin et al. 2024), as the engine uses it.

Protocol, not results: the k-shot regimes of Sec. 3.5 (zero-, few- and many-shot), by which the
engine groups its rates. The paper's reference values (Tab. 1-3, the memorization levels of
Sec. 5) are in :mod:`iclmem.chapters.ch06_llm_kshot`.
"""

from __future__ import annotations

#: The smallest k of the paper's few-shot regime ("few-shot for k = {25, 50}", Sec. 3.5) and of its many-shot one.
FEW_SHOT_FROM, MANY_SHOT_FROM = 25, 100
#: The name of a k between 0 and the paper's few-shot regime (this companion's k = 10): not a regime of the paper.
BELOW_FEW_SHOT = "below few-shot"


def regime(k: int) -> str:
    """The paper's regimes (Sec. 3.5): zero-shot k = 0, few-shot k in {25, 50} (25 <= k < 100 here), many-shot
    k >= 100 ({100, 200}); a k in 1-24 is in none of them and is named :data:`BELOW_FEW_SHOT`."""
    if k == 0:
        return "zero-shot"
    if k < FEW_SHOT_FROM:
        return BELOW_FEW_SHOT
    return "few-shot" if k < MANY_SHOT_FROM else "many-shot"


__all__ = ["BELOW_FEW_SHOT", "FEW_SHOT_FROM", "MANY_SHOT_FROM", "regime"]
