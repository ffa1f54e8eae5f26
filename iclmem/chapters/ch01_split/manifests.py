"""Paper 1, Sec. 4.1: the split manifests notebook 01 validates, drawn by the engine (:mod:`iclmem.data.validation`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from iclmem.data.dataset import Dataset
from iclmem.data.manifest import SplitManifest
from iclmem.data.validation import make_splits


def split_manifests(
    tables: Sequence[Dataset],
    query_sizes: Sequence[int],
    seed: int = 0,
    label_conditions: Sequence[str] = ("none",),
    *,
    max_redraws: int = 100,
    results_dir: str | Path | None = None,
) -> tuple[list[SplitManifest], list[SplitManifest]]:
    """The manifests of every (table, Q) under the first label condition (those Tab. 6 validates, Sec. 4.1), and
    those under every label condition (whose randomized labels the label-randomization table shows)."""
    if not label_conditions:
        raise ValueError("label_conditions is empty: give at least one (e.g. ['none']).")
    by_condition = [
        make_splits(tables, [int(q) for q in query_sizes], seed, c, max_redraws=max_redraws, results_dir=results_dir)
        for c in label_conditions
    ]
    return by_condition[0], [m for manifests in by_condition for m in manifests]


__all__ = [
    "split_manifests",
]
