"""Paper 1, App. A.2 (Tab. 6): our Tab. 6 beside the paper's values (notebook 01)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from iclmem.chapters.ch01_split.paper import paper_reference
from iclmem.data.manifest import SplitManifest
from iclmem.data.validation import split_statistics_frame


def validation_table(manifests: Sequence[SplitManifest]) -> pd.DataFrame:
    """Our Tab. 6: per (dataset, Q) the KS statistic and p-value, Wasserstein and TVD, seeds, and the paper's values."""
    table = split_statistics_frame(manifests)
    table["paper (Tab. 6)"] = [paper_reference(m.dataset, m.task, m.query_size) for m in manifests]
    return table


__all__ = [
    "validation_table",
]
