"""The :class:`Dataset` record every part of :mod:`iclmem.data` passes around."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

Task = Literal["classification", "regression"]
TASKS: tuple[str, ...] = ("classification", "regression")


@dataclass(frozen=True)
class DedupCounts:
    """Row counts of the deduplication step (Sec. 4.1, Tab. 4 "Feature contamination")."""

    n_input: int
    n_exact_duplicates_dropped: int
    n_conflicting_dropped: int
    n_output: int

    def to_dict(self) -> dict[str, int]:
        return {
            "n_input": self.n_input,
            "n_exact_duplicates_dropped": self.n_exact_duplicates_dropped,
            "n_conflicting_dropped": self.n_conflicting_dropped,
            "n_output": self.n_output,
        }


@dataclass(frozen=True)
class Dataset:
    """One table: ``features`` (one row per record), ``target`` aligned with it, and where it came from.

    ``spec`` holds the arguments of :func:`iclmem.data.load_dataset` that rebuild the table, so a
    split manifest can name its table. ``dedup`` is ``None`` until :func:`iclmem.data.deduplicate`
    ran; after it the index is ``0..n-1`` and these positions are the row ids used by manifests.
    """

    name: str
    features: pd.DataFrame
    target: pd.Series
    task: Task
    source: str
    spec: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    dedup: DedupCounts | None = None

    @property
    def target_name(self) -> str:
        return str(self.target.name)

    @property
    def n(self) -> int:
        return len(self.target)

    @property
    def classes(self) -> np.ndarray:
        """Sorted distinct target values (the label codes used for Wasserstein on classification)."""
        return np.sort(self.target.unique())

    def with_(self, **changes: Any) -> Dataset:
        return replace(self, **changes)

    def __repr__(self) -> str:  # the default would print whole frames
        dedup = f", dedup={self.dedup.to_dict()}" if self.dedup else ""
        return (
            f"Dataset(name={self.name!r}, n={self.n}, features={self.features.shape[1]}, "
            f"target={self.target_name!r}, task={self.task!r}{dedup})"
        )
