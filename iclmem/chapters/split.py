"""Chapter 1 (notebook 01): member / non-member split validation and the claim it carries.

Paper sections: Sec. 4.1 ("Data Pre-Processing"), App. A.2 (Tab. 5, Tab. 6).
"""

from __future__ import annotations

import pandas as pd

from ..claims import claim_record
from ..data.validation import PAPER_TAB6

#: Sec. 4.1's thresholds: KS < 0.05 (regression), TVD < 0.05 (classification); KS p-value > 0.05 (App. A.2).
KS_MAX, TVD_MAX, P_MIN = 0.05, 0.05, 0.05


def paper_split_extremes() -> dict[str, float]:
    """The largest KS statistic, the smallest KS p-value and the largest TVD of the paper's Tab. 6."""
    values = list(PAPER_TAB6.values())
    return {"max_ks": max(v[0] for v in values if v[0] is not None), "min_p": min(v[1] for v in values if v[1] is not None),
            "max_tvd": max(v[3] for v in values if v[3] is not None)}


def split_claim(table6: pd.DataFrame) -> dict:
    """C14: every split passes KS < 0.05 with p > 0.05 (regression) and TVD < 0.05 (classification)."""
    paper = paper_split_extremes()
    reg, cls = table6[table6.task == "regression"], table6[table6.task == "classification"]
    parts, ok = [], True
    if len(reg):
        ks, p = float(reg["KS stat"].max()), float(reg["KS p"].min())
        parts.append(f"max KS {ks:.3f}, min p {p:.3f}")
        ok &= ks < KS_MAX and p > P_MIN
    if len(cls):
        tvd = float(cls["TVD"].max())
        parts.append(f"max TVD {tvd:.3f}")
        ok &= tvd < TVD_MAX
    return claim_record(
        "C14", f"max KS {paper['max_ks']:.3f}, min p {paper['min_p']:.3f}, max TVD {paper['max_tvd']:.3f}",
        f"{'; '.join(parts)} over {len(table6)} splits", "reproduced" if ok else "differs",
        f"every split {'passes' if ok else 'does not pass'} KS < {KS_MAX:g} with p > {P_MIN:g} and TVD < {TVD_MAX:g} (Sec. 4.1); "
        "the paper's own largest TVD (0.056, coffee_ratings at Q=512) is above its threshold")


__all__ = ["split_claim", "paper_split_extremes", "KS_MAX", "TVD_MAX", "P_MIN"]
