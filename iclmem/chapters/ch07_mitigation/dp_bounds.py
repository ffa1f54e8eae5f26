"""Chapter 7 (IclMem Sec. 6's DP-SGD): what (epsilon, delta)-DP guarantees about a membership attack.

(epsilon, delta)-DP bounds every membership attack's TPR at a given FPR by
``min(1, e^eps FPR + delta, 1 - e^-eps (1 - delta - FPR))`` (the hypothesis-testing reading of DP, Kairouz et al.
2015; :func:`dp_tpr_bound`); the AUC bound is the area under that curve (:func:`dp_auc_bound`). At epsilon = 4
(e^4 = 55) it allows an AUC near 0.97: epsilon = 4 alone does not imply that the signal is removed; only a
measurement can say so. :func:`dp_bound_table` tabulates both per epsilon.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd


def dp_tpr_bound(eps: float, delta: float, fpr: float) -> float:
    """The largest TPR at ``fpr`` that any membership attack can reach against an (eps, delta)-DP mechanism."""
    if math.isinf(eps):
        return 1.0
    e = math.exp(eps)
    return float(min(1.0, e * fpr + delta, 1.0 - (1.0 - delta - fpr) / e))


def dp_auc_bound(eps: float, delta: float, grid: int = 20001) -> float:
    """The largest AUC an attack can reach against an (eps, delta)-DP mechanism: the area under
    :func:`dp_tpr_bound` (trapezoids on ``grid`` FPRs)."""
    if math.isinf(eps):
        return 1.0
    x = np.linspace(0.0, 1.0, grid)
    e = math.exp(eps)
    y = np.minimum.reduce([np.ones_like(x), e * x + delta, 1.0 - (1.0 - delta - x) / e])
    return float(np.trapezoid(y, x))


def dp_bound_table(epsilons: Sequence[float], delta: float, fprs: Sequence[float] = (0.01, 0.1)) -> pd.DataFrame:
    """Per epsilon: e^eps, the TPR bound at each of ``fprs`` and the AUC bound (1 at epsilon = inf)."""
    rows = []
    for eps in epsilons:
        row = {"epsilon": float(eps), "e^epsilon": math.exp(eps) if math.isfinite(eps) else math.inf}
        row.update({f"TPR bound at FPR {f:g}": dp_tpr_bound(eps, delta, f) for f in fprs})
        row["AUC bound"] = dp_auc_bound(eps, delta)
        rows.append(row)
    return pd.DataFrame(rows)
