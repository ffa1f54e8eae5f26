"""Deduplication before any split (Sec. 4.1 "Data Pre-Processing"; Tab. 4 "Feature contamination").

Rule: rows are grouped by their full feature vector (missing values compare equal).

* a group whose rows all share one target value is a set of *exact duplicates*: the first row is kept,
  the others are dropped;
* a group whose rows carry two or more target values is *conflicting*: all its rows are dropped, since
  no label is the record's label and either copy would leak the features into the other pool.

The result is re-indexed ``0..n-1``; these positions are the row ids used by split manifests. The rule
is deterministic, so the ids are stable for a given input table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclmem.data.dataset import Dataset, DedupCounts


def feature_groups(features: pd.DataFrame) -> np.ndarray:
    """Group number per row such that rows with identical feature vectors share a number (vectorized)."""
    if features.shape[1] == 0:
        return np.zeros(len(features), dtype=np.int64)
    codes = [pd.factorize(features[c], use_na_sentinel=False)[0] for c in features.columns]
    return pd.MultiIndex.from_arrays(codes).factorize()[0] if len(codes) > 1 else codes[0]


def dedup_keep(dataset: Dataset) -> tuple[np.ndarray, DedupCounts]:
    """The rows :func:`deduplicate` keeps (a boolean mask over ``dataset``'s rows) and its counts.

    What a caller needs to follow rows through the rule, e.g. back to the line of the file they came from
    (``iclmem audit``'s rows at risk).
    """
    group = pd.Series(feature_groups(dataset.features), index=dataset.features.index)
    size = group.map(group.value_counts())
    n_labels = dataset.target.groupby(group.to_numpy()).transform("nunique").to_numpy()
    conflicting = (size.to_numpy() > 1) & (n_labels > 1)
    repeated = group.duplicated(keep="first").to_numpy()
    exact_drop = repeated & ~conflicting
    keep = ~conflicting & ~exact_drop
    counts = DedupCounts(
        n_input=dataset.n,
        n_exact_duplicates_dropped=int(exact_drop.sum()),
        n_conflicting_dropped=int(conflicting.sum()),
        n_output=int(keep.sum()),
    )
    return keep, counts


def deduplicate(dataset: Dataset) -> Dataset:
    """Drop duplicate feature rows by the rule above; the counts go to ``Dataset.dedup``.

    Idempotent: a dataset that already went through it is returned unchanged.
    """
    if dataset.dedup is not None:
        return dataset
    keep, counts = dedup_keep(dataset)
    return dataset.with_(
        features=dataset.features[keep].reset_index(drop=True),
        target=dataset.target[keep].reset_index(drop=True),
        dedup=counts,
    )


def dedup_frame(datasets: list[Dataset]) -> pd.DataFrame:
    """One row of deduplication counts per (deduplicated) dataset, for the notebook."""
    rows = [{"dataset": d.name, **(d.dedup.to_dict() if d.dedup else {})} for d in datasets]
    return pd.DataFrame(rows).set_index("dataset")
