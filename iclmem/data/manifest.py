"""Split manifests: the single record of membership that later sections read (Sec. 4.1; Tab. 4 "Unverified ground
truth").

A manifest fixes, for one (dataset, Q, seed, label condition): the row ids of the member, non-member and
context pools (ids = positions in the deduplicated table), the split statistics (Tab. 6), the seeds
(requested and used after redraws), the dedup counts, the dataset card, and the randomized labels if any.
It is written atomically as JSON to ``<results>/manifests/<dataset>-Q<q>-s<seed>-<label>.json``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iclmem.data.dataset import Dataset
from iclmem.data.errors import ManifestError
from iclmem.store.atomic import atomic_write_text

RESULTS_ENV = "ICLMEM_RESULTS"
FORMAT_VERSION = 1
POOLS: tuple[str, ...] = ("members", "non_members", "context")


def results_root(results_dir: str | Path | None = None) -> Path:
    """The results folder: ``results_dir`` if given, else ``$ICLMEM_RESULTS``, else ``results``."""
    return Path(results_dir or os.environ.get(RESULTS_ENV) or "results")


def manifest_path(
    dataset: str, query_size: int, seed: int, label_condition: str, results_dir: str | Path | None = None
) -> Path:
    """``<results>/manifests/<dataset>-Q<q>-s<seed>-<label>.json``."""
    return results_root(results_dir) / "manifests" / f"{dataset}-Q{query_size}-s{seed}-{label_condition}.json"


def table_fingerprint(dataset: Dataset) -> str:
    """Short content hash of a (deduplicated) table: column names, feature values and target."""
    h = hashlib.sha256()
    h.update(json.dumps([str(c) for c in dataset.features.columns] + [dataset.target_name]).encode())
    h.update(pd.util.hash_pandas_object(dataset.features, index=False).to_numpy().tobytes())
    h.update(pd.util.hash_pandas_object(dataset.target, index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


def _plain(values: Any) -> list:
    """JSON-ready Python values (numpy scalars -> int/float/str/bool)."""
    return np.asarray(values).tolist()


#: Manifest fields left out of store keys (:meth:`SplitManifest.identity`): where the table came from.
LOCATION_FIELDS = ("source", "dataset_spec")


@dataclass
class SplitManifest:
    """Membership and its evidence for one (dataset, Q, seed, label condition); see the module docstring."""

    dataset: str
    task: str
    target: str
    query_size: int
    label_condition: str
    seed_requested: int
    seed_used: int
    draws: int
    label_seed: int | None
    pools: dict[str, list[int]]
    statistics: dict[str, Any]
    criteria: dict[str, Any]
    dedup: dict[str, int]
    card: dict[str, Any]
    table_fingerprint: str
    dataset_spec: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    randomized_labels: dict[str, list] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    # -- access -------------------------------------------------------------------------------------
    def ids(self, pool: str) -> np.ndarray:
        """Row ids (positions in the deduplicated table) of ``members``, ``non_members`` or ``context``."""
        if pool not in POOLS:
            raise ManifestError(f"unknown pool {pool!r}; use one of {', '.join(POOLS)}")
        return np.asarray(self.pools[pool], dtype=np.int64)

    @property
    def members(self) -> np.ndarray:
        return self.ids("members")

    @property
    def non_members(self) -> np.ndarray:
        return self.ids("non_members")

    @property
    def context(self) -> np.ndarray:
        return self.ids("context")

    def check_table(self, table: Dataset) -> None:
        """Raise :class:`ManifestError` unless ``table`` is the deduplicated table this manifest was drawn from."""
        if table.dedup is None:
            raise ManifestError("apply a manifest to the deduplicated table: call iclmem.data.deduplicate first")
        found = table_fingerprint(table)
        if found != self.table_fingerprint:
            raise ManifestError(
                f"table {table.name!r} (fingerprint {found}) is not the one manifest {self.dataset!r} was drawn from "
                f"({self.table_fingerprint}); rebuild the manifest with split_manifest(..., refresh=True)"
            )

    def labels(self, table: Dataset, pool: str) -> np.ndarray:
        """Labels of ``pool`` as used for fine-tuning: randomized ones where the label condition says so."""
        if pool in self.randomized_labels:
            return np.asarray(self.randomized_labels[pool])
        return table.target.to_numpy()[self.ids(pool)]

    # -- persistence --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The manifest as JSON-ready data (what ``dataclasses.asdict`` gives, with plain lists for the id pools).

        The pools (tens of thousands of ids) are converted by numpy, not copied element by element
        as ``asdict`` would: every store key hashes this dict (:meth:`identity`).
        """
        plain = {"pools": self.pools, "randomized_labels": self.randomized_labels}
        return {
            f.name: {k: _plain(v) for k, v in plain[f.name].items()}
            if f.name in plain
            else copy.deepcopy(getattr(self, f.name))
            for f in fields(self)
        }

    def identity(self) -> dict[str, Any]:
        """The manifest as store keys hash it: :meth:`to_dict` without :data:`LOCATION_FIELDS`.

        Those say where the table was read from (a venv's site-packages, a CSV's path), not what
        it holds, which ``table_fingerprint`` pins; so a results store keeps its keys when it is
        copied to another checkout or machine.
        """
        return {k: v for k, v in self.to_dict().items() if k not in LOCATION_FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SplitManifest:
        if data.get("format_version") != FORMAT_VERSION:
            raise ManifestError(f"manifest format {data.get('format_version')!r} is not {FORMAT_VERSION}; rebuild it")
        try:
            return cls(**data)
        except TypeError as err:
            raise ManifestError(f"malformed manifest: {err}; delete it and rebuild with split_manifest") from err

    def save(self, path: str | Path) -> Path:
        """Write atomically as JSON (a crash never leaves a partial manifest)."""
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=1, allow_nan=True) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> SplitManifest:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise
        except (OSError, ValueError) as err:
            raise ManifestError(f"could not read manifest {str(path)!r}: {err}; delete it and rebuild") from err
        return cls.from_dict(data)
