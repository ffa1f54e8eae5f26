"""Distances between the member and non-member target distributions (Sec. 4.1, App. A.2, Tab. 6).

Sec. 4.1 requires TVD < 0.05 for classification and a KS statistic < 0.05 for regression; App. A.2 /
Tab. 6 also report the KS p-value (all > 0.05 in the paper) and, for completeness, the Wasserstein
distance, which is scale-dependent and computed here on label codes for classification.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as _st

#: thresholds of Sec. 4.1 (TVD, KS statistic) and the significance level of App. A.2 (KS p-value)
TVD_THRESHOLD = 0.05
KS_THRESHOLD = 0.05
KS_ALPHA = 0.05


def total_variation_distance(a: Sequence, b: Sequence) -> float:
    """TVD of the label distributions of ``a`` and ``b``: half the L1 distance of their frequencies (Sec. 4.1).

    >>> total_variation_distance([0, 0, 1, 1], [0, 1, 1, 1])
    0.25
    """
    a, b = np.asarray(a), np.asarray(b)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("TVD needs two non-empty samples")
    labels = np.unique(np.concatenate([a, b]))
    pa = np.array([(a == v).mean() for v in labels])
    pb = np.array([(b == v).mean() for v in labels])
    return float(0.5 * np.abs(pa - pb).sum())


def ks_test(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sample Kolmogorov-Smirnov statistic (largest ECDF gap) and p-value via scipy (Sec. 4.1, Tab. 6).

    scipy uses the exact distribution for small samples; where that computation fails numerically
    (p close to 1) it falls back to the asymptotic p-value, silently here.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="ks_2samp: Exact calculation unsuccessful")
        result = _st.ks_2samp(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return float(result.statistic), float(result.pvalue)


def wasserstein(a: Sequence[float], b: Sequence[float]) -> float:
    """1-Wasserstein distance of the two empirical distributions via scipy (App. A.2, Tab. 6 column "W")."""
    return float(_st.wasserstein_distance(np.asarray(a, dtype=float), np.asarray(b, dtype=float)))


def label_codes(values: Sequence, classes: Sequence) -> np.ndarray:
    """Position of each value in the sorted ``classes`` (used for Wasserstein on classification labels)."""
    classes = np.asarray(classes)
    codes = np.searchsorted(classes, np.asarray(values))
    return codes.astype(float)


@dataclass(frozen=True)
class SplitStatistics:
    """Member vs non-member distances of one split: the row of Tab. 6 (``None`` where not applicable)."""

    task: str
    tvd: float | None
    ks_stat: float | None
    ks_pvalue: float | None
    wasserstein: float

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def failures(
        self, tvd_threshold: float = TVD_THRESHOLD, ks_threshold: float = KS_THRESHOLD, ks_alpha: float = KS_ALPHA
    ) -> list[str]:
        """What violates Sec. 4.1's criteria, with the margin; empty when the split passes.

        Classification: TVD < ``tvd_threshold``. Regression: KS statistic < ``ks_threshold`` and KS
        p-value > ``ks_alpha`` (App. A.2 reports both).
        """
        out = []
        if self.task == "classification":
            if not self.tvd < tvd_threshold:
                out.append(f"TVD {self.tvd:.4f} >= {tvd_threshold} (over by {self.tvd - tvd_threshold:.4f})")
        else:
            if not self.ks_stat < ks_threshold:
                out.append(
                    f"KS statistic {self.ks_stat:.4f} >= {ks_threshold} (over by {self.ks_stat - ks_threshold:.4f})"
                )
            if not self.ks_pvalue > ks_alpha:
                out.append(f"KS p-value {self.ks_pvalue:.4f} <= {ks_alpha} (short by {ks_alpha - self.ks_pvalue:.4f})")
        return out

    def badness(self) -> tuple[float, float]:
        """Sort key of failed draws, smallest = best: TVD (classification) or (KS statistic, -p-value)."""
        if self.task == "classification":
            return (float(self.tvd), 0.0)
        return (float(self.ks_stat), -float(self.ks_pvalue))


def split_statistics(
    members: Sequence, non_members: Sequence, task: str, classes: Sequence | None = None
) -> SplitStatistics:
    """Tab. 6 row for one split: TVD (+ Wasserstein on label codes) for classification, KS + p + Wasserstein for
    regression."""
    members, non_members = np.asarray(members), np.asarray(non_members)
    if task == "classification":
        classes = np.unique(np.concatenate([members, non_members])) if classes is None else np.asarray(classes)
        w = wasserstein(label_codes(members, classes), label_codes(non_members, classes))
        return SplitStatistics(task, total_variation_distance(members, non_members), None, None, w)
    ks, p = ks_test(members, non_members)
    return SplitStatistics(task, None, ks, p, wasserstein(members, non_members))
