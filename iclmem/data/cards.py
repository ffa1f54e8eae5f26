"""Dataset cards: the columns of Tab. 5 and Tab. 9 of the paper (App. A.2) for any table.

``k`` is the target cardinality (number of distinct target values), ``alpha`` the frequency of the most
frequent value and ``n / k`` the label density; like Tab. 9 these are reported for regression tables too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from iclmem.data.columns import is_numeric_column
from iclmem.data.dataset import Dataset

#: a string column counts as free text when more than this share of its non-missing values are distinct
TEXT_DISTINCT_SHARE = 0.5


def feature_kind(column: pd.Series) -> str:
    """``numeric`` (see :mod:`iclmem.data.columns`), ``text`` (mostly distinct strings: names, titles) or
    ``categorical``."""
    if is_numeric_column(column):
        return "numeric"
    if pd.api.types.is_bool_dtype(column):
        return "categorical"
    values = column.dropna()
    if len(values) and values.nunique() / len(values) > TEXT_DISTINCT_SHARE:
        return "text"
    return "categorical"


@dataclass(frozen=True)
class DatasetCard:
    """Size, feature composition and target statistics of one table (Tab. 5, Tab. 9)."""

    name: str
    task: str
    target: str
    n: int
    n_features: int
    n_numeric: int
    n_categorical: int
    n_text: int
    k: int
    alpha: float
    label_density: float

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def dataset_card(dataset: Dataset) -> DatasetCard:
    """The card of ``dataset`` as given (pass the deduplicated table to describe what the splits use)."""
    kinds = [feature_kind(dataset.features[c]) for c in dataset.features.columns]
    freq = dataset.target.value_counts(normalize=True, dropna=False)
    k = int(dataset.target.nunique())
    return DatasetCard(
        name=dataset.name,
        task=dataset.task,
        target=dataset.target_name,
        n=dataset.n,
        n_features=len(kinds),
        n_numeric=kinds.count("numeric"),
        n_categorical=kinds.count("categorical"),
        n_text=kinds.count("text"),
        k=k,
        alpha=float(freq.iloc[0]) if len(freq) else float("nan"),
        label_density=dataset.n / k if k else float("nan"),
    )


def cards_frame(cards: list[DatasetCard]) -> pd.DataFrame:
    """Several cards as one table indexed by dataset name."""
    return pd.DataFrame([c.to_dict() for c in cards]).set_index("name")
