"""Split validation over several tables: load, draw (or read cached) manifests, tabulate (App. A.2, Tab. 6).

What a user auditing their own tables needs: load and deduplicate each table through
:func:`iclmem.data.tables.prepared_table`, draw the manifest of every (table, Q), and tabulate the
statistics of every split and the labels that randomization changed. The paper's Tab. 6 and the
notebook's summary belong to the chapter module of notebook 01 (the paper layer).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from iclmem.data.dataset import Dataset
from iclmem.data.manifest import SplitManifest
from iclmem.data.split import split_manifest
from iclmem.data.tables import prepared_table
from iclmem.runtime.progress import Bar


def load_tables(
    names: Iterable[str],
    *,
    target: str | None = None,
    task: str | None = None,
    carte_dir: str | Path | None = None,
    missing_target: str = "error",
) -> list[Dataset]:
    """Load and deduplicate each table (``target``/``task`` apply to every one; empty means the recipe's;
    ``missing_target``: ``error`` or ``drop`` rows without a target value)."""
    return [
        prepared_table(n, carte_dir or None, target or None, task or None, missing_target=missing_target)
        for n in Bar(list(names), desc="load + dedup", disable=None)
    ]


def make_splits(
    tables: Sequence[Dataset],
    query_sizes: Sequence[int],
    seed: int = 0,
    label_condition: str = "none",
    *,
    max_redraws: int = 100,
    results_dir: str | Path | None = None,
) -> list[SplitManifest]:
    """The (cached) manifest of every (table, Q); splits that do not fit a table raise :class:`PoolSizeError`."""
    jobs = [(t, q) for t in tables for q in query_sizes]
    return [
        split_manifest(t, q, seed, label_condition, max_redraws=max_redraws, results_dir=results_dir)
        for t, q in Bar(jobs, desc="splits", disable=None)
    ]


def split_statistics_frame(manifests: Sequence[SplitManifest]) -> pd.DataFrame:
    """Per (dataset, Q): the KS statistic and p-value, Wasserstein distance and TVD, and the seeds and draws used."""
    rows = []
    for m in manifests:
        s = m.statistics
        rows.append(
            {
                "dataset": m.dataset,
                "task": m.task,
                "Q": m.query_size,
                "KS stat": s["ks_stat"],
                "KS p": s["ks_pvalue"],
                "W": s["wasserstein"],
                "TVD": s["tvd"],
                "seed": m.seed_requested,
                "seed used": m.seed_used,
                "draws": m.draws,
            }
        )
    return pd.DataFrame(rows)


def randomization_table(manifests: Sequence[SplitManifest], tables: Sequence[Dataset]) -> pd.DataFrame:
    """Per randomized pool: its size and the share of rows whose label changed (Sec. 4.1 label randomization)."""
    by_name = {t.name: t for t in tables}
    rows = []
    for m in manifests:
        target = by_name[m.dataset].target.to_numpy()
        for pool, labels in m.randomized_labels.items():
            original = target[m.ids(pool)]
            rows.append(
                {
                    "dataset": m.dataset,
                    "Q": m.query_size,
                    "pool": pool,
                    "rows": len(labels),
                    "labels changed": float((pd.Series(labels).to_numpy() != original).mean()),
                }
            )
    return pd.DataFrame(rows, columns=["dataset", "Q", "pool", "rows", "labels changed"])


__all__ = ["load_tables", "make_splits", "split_statistics_frame", "randomization_table"]
