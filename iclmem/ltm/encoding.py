"""Table encoding shared by pretraining, real tables and probing contexts.

* numeric columns: robust standardization, ``(x - median) / scale`` with
  ``scale = IQR / 1.349`` (falling back to the standard deviation, then to 1), clipped to
  ``[-CLIP, CLIP]``;
* text columns whose non-missing values are nearly all numbers (the rule of
  :mod:`iclmem.data.columns`, e.g. a vintage year stored as text) are read as numbers, since
  ordinal codes would throw away their order;
* categorical and text columns: ordinal codes by descending frequency (the most frequent
  value gets code 0, ties broken by value), then robust-standardized like numbers;
  unseen values at transform time are treated as missing;
* missing cells stay NaN; the model turns NaN into a zero value plus a missing indicator.

The encoder is fitted once per dataset (on the rows it is given: every row of the deduplicated
table, see :func:`iclmem.training.finetune.prepare_run_data`)
and then applied to every context and query of that dataset. Fitting it per context would
erase the features of a multiple-choice context, whose rows are copies of one query
(Sec. 4.2), so the statistics must come from the dataset, not from the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..data.columns import NUMERIC_TEXT_SHARE, as_numbers, is_numeric_column
from .interface import LTMInputError

CLIP = 5.0


def robust_center_scale(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column-wise median and robust scale of a 2-D float array (NaN ignored)."""
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(values, axis=0)
            q75, q25 = np.nanpercentile(values, [75, 25], axis=0)
            std = np.nanstd(values, axis=0)
    scale = (q75 - q25) / 1.349
    scale = np.where(np.isfinite(scale) & (scale > 1e-8), scale, std)
    scale = np.where(np.isfinite(scale) & (scale > 1e-8), scale, 1.0)
    med = np.where(np.isfinite(med), med, 0.0)
    return med.astype(np.float32), scale.astype(np.float32)


def robust_standardize(values: np.ndarray, center: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Apply ``(x - center) / scale`` and clip to ``[-CLIP, CLIP]``; NaN stays NaN."""
    out = (values - center) / scale
    return np.clip(out, -CLIP, CLIP).astype(np.float32)


@dataclass
class TableEncoder:
    """Fit-once encoder for a pandas feature table (see module docstring).

    ``numeric_text_share``: a text column is read as numbers when at least this share of its
    non-missing values parse as numbers; ``None`` keeps every text column categorical.
    """

    numeric: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)
    categories: dict[str, dict] = field(default_factory=dict)
    center: np.ndarray | None = None
    scale: np.ndarray | None = None
    numeric_text_share: float | None = NUMERIC_TEXT_SHARE

    @property
    def columns(self) -> list[str]:
        return self.numeric + self.categorical

    def fit(self, frame: pd.DataFrame) -> TableEncoder:
        if frame.shape[1] == 0:
            raise ValueError("TableEncoder.fit: the table has no feature columns; keep at least one feature.")
        self.numeric = [c for c in frame.columns if is_numeric_column(frame[c], self.numeric_text_share)]
        self.categorical = [c for c in frame.columns if c not in self.numeric]
        self.categories = {}
        for col in self.categorical:
            counts = frame[col].dropna().astype(str).value_counts()
            order = sorted(counts.index, key=lambda v: (-counts[v], v))
            self.categories[col] = {v: i for i, v in enumerate(order)}
        raw = self._raw(frame)
        self.center, self.scale = robust_center_scale(raw)
        return self

    def _raw(self, frame: pd.DataFrame) -> np.ndarray:
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise ValueError(
                f"TableEncoder: columns {missing} are missing from the table; pass the same columns the encoder was "
                "fitted on."
            )
        parts = []
        for col in self.numeric:
            v = as_numbers(frame[col]).to_numpy(dtype=np.float64, na_value=np.nan)
            if np.isinf(v).any():
                raise LTMInputError(
                    f"TableEncoder: column {col!r} holds inf values; replace them with NaN (missing) or finite numbers."
                )
            parts.append(v)
        for col in self.categorical:
            mapping = self.categories[col]
            v = frame[col].map(lambda s, m=mapping: m.get(str(s), np.nan) if pd.notna(s) else np.nan)
            parts.append(v.to_numpy(dtype=np.float64))
        return np.stack(parts, axis=1) if parts else np.zeros((len(frame), 0))

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        if self.center is None:
            raise RuntimeError("TableEncoder.transform called before fit(); call fit(frame) first.")
        return robust_standardize(self._raw(frame), self.center, self.scale)


def subsample_features(n_features: int, max_features: int, seed: int = 0) -> np.ndarray:
    """Column indices to keep when a table has more features than the model takes.

    Tables wider than ``max_features`` (32 for the reference LTM) keep a random subset of
    ``max_features`` columns, drawn once per dataset from ``seed`` and kept in the original
    column order, so every context and query of that dataset sees the same columns.
    """
    if n_features <= max_features:
        return np.arange(n_features)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_features, size=max_features, replace=False))
