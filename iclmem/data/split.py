"""Disjoint member / non-member / context pools with statistical split validation (Sec. 4.1, App. A.2, Tab. 6).

Procedure of :func:`make_split`:

1. deduplicate the table (:mod:`iclmem.data.dedup`); row ids are positions in the result;
2. draw ``Q`` members and ``Q`` non-members, disjoint, with ``numpy.random.default_rng(seed)``:
   classification draws both with identical per-class counts (Q allocated to classes in proportion to
   the table, Tab. 2 "Query label distribution: source distribution"; a class can give at most half its
   rows), so TVD is 0; regression sorts the target, cuts it into Q equal-count quantile bins and takes one
   member and one non-member from each bin, so the KS statistic is at most 1/Q (passes the
   0.05 criterion for every Q > 20). ``stratify=False`` draws
   uniformly instead;
3. compute the Tab. 6 statistics (:mod:`iclmem.data.stats`) and check Sec. 4.1's criteria; a failing draw
   is redrawn with the next seed, at most ``max_redraws`` times; the seed used is recorded, and when no
   draw passes a :class:`SplitValidationError` names the failing statistic of the best draw and its margin;
4. the context pool is the rest of the table (or a random ``context_pool_size`` subset of it);
5. label randomization (:mod:`iclmem.data.randomize`) for the chosen pools, seeded by the seed used.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iclmem.data.cards import dataset_card
from iclmem.data.dataset import Dataset
from iclmem.data.dedup import deduplicate
from iclmem.data.errors import DataError, ManifestError, PoolSizeError, SplitValidationError, TargetError
from iclmem.data.manifest import SplitManifest, manifest_path, table_fingerprint
from iclmem.data.randomize import normalize_label_condition, randomize_pools
from iclmem.data.stats import KS_ALPHA, KS_THRESHOLD, TVD_THRESHOLD, SplitStatistics, split_statistics
from iclmem.data.tables import prepared_table
from iclmem.store.integrity import seal, served, writer_lock

log = logging.getLogger(__name__)


def allocate_classes(class_counts: np.ndarray, query_size: int) -> np.ndarray:
    """Members per class: ``query_size`` split in proportion to ``class_counts`` (largest remainder),
    each class capped at half its rows so the non-members can get the same count."""
    class_counts = np.asarray(class_counts, dtype=np.int64)
    cap = class_counts // 2
    if cap.sum() < query_size:
        raise PoolSizeError(
            f"query_size={query_size} needs {query_size} rows of matching classes in each of members and non-members, "
            f"but the classes allow only {int(cap.sum())} (half of each class's rows); use a smaller query size "
            "(the notebook parameter query_sizes, query_size= in Python)"
        )
    quota = query_size * class_counts / class_counts.sum()
    take = np.minimum(np.floor(quota).astype(np.int64), cap)
    while take.sum() < query_size:
        room = take < cap
        remainder = np.where(room, quota - take, -np.inf)
        order = np.argsort(-remainder, kind="stable")[: int(room.sum())]
        for idx in order[: query_size - int(take.sum())]:
            take[idx] += 1
    return take


def _draw_classification(
    target: np.ndarray, query_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    classes, codes = np.unique(target, return_inverse=True)
    take = allocate_classes(np.bincount(codes, minlength=len(classes)), query_size)
    members, non_members = [], []
    for c, t in enumerate(take):
        if t:
            rows = rng.choice(np.flatnonzero(codes == c), size=2 * int(t), replace=False)
            members.append(rows[:t])
            non_members.append(rows[t:])
    return np.concatenate(members), np.concatenate(non_members)


def _draw_regression(target: np.ndarray, query_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((rng.random(len(target)), target))  # sort by target, ties in random order
    bins = np.array_split(order, query_size)
    sizes = np.array([len(b) for b in bins])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    first = np.floor(rng.random(query_size) * sizes).astype(np.int64)
    second = np.floor(rng.random(query_size) * (sizes - 1)).astype(np.int64)
    second += second >= first
    return order[starts + first], order[starts + second]


def draw_pools(
    target: np.ndarray,
    task: str,
    query_size: int,
    rng: np.random.Generator,
    *,
    stratify: bool = True,
    context_pool_size: int | None = None,
) -> dict[str, np.ndarray]:
    """One draw of the three disjoint pools (sorted row ids); see the module docstring, step 2 and 4."""
    n = len(target)
    if stratify and task == "classification":
        members, non_members = _draw_classification(target, query_size, rng)
    elif stratify:
        members, non_members = _draw_regression(target, query_size, rng)
    else:
        perm = rng.permutation(n)
        members, non_members = perm[:query_size], perm[query_size : 2 * query_size]
    taken = np.zeros(n, dtype=bool)
    taken[members] = taken[non_members] = True
    rest = np.flatnonzero(~taken)
    if context_pool_size is not None and context_pool_size < len(rest):
        rest = rng.choice(rest, size=context_pool_size, replace=False)
    return {"members": np.sort(members), "non_members": np.sort(non_members), "context": np.sort(rest)}


def _check_sizes(table: Dataset, query_size: int, context_pool_size: int | None, max_redraws: int) -> None:
    if int(query_size) != query_size or query_size < 1:
        raise DataError(f"query_size must be a positive integer (the paper uses 50 and 512), not {query_size!r}")
    if max_redraws < 0:
        raise DataError(f"max_redraws must be >= 0, not {max_redraws}")
    context = 1 if context_pool_size is None else context_pool_size
    if context_pool_size is not None and context_pool_size < 1:
        raise DataError(f"context_pool_size must be positive or None (the rest of the table), not {context_pool_size}")
    need = 2 * query_size + context
    if need > table.n:
        d = table.dedup
        removed = (
            f" ({d.n_input} rows before dropping {d.n_exact_duplicates_dropped} exact duplicates and "
            f"{d.n_conflicting_dropped} conflicting rows)"
            if d
            else ""
        )
        raise PoolSizeError(
            f"{table.name}: members + non-members + context pool need {2 * query_size} + {context} = {need} rows, "
            f"but the deduplicated table has {table.n}{removed}; use query_size <= {(table.n - context) // 2}"
        )
    if table.target.nunique() < 2:  # the loader saw two values; deduplication can drop every row of all but one
        what = "class" if table.task == "classification" else "value"
        raise TargetError(
            f"{table.name}: after deduplication ({_dedup_words(table)}) the target {table.target_name!r} has a single "
            f"{what} ({table.target.iloc[0]!r} in all {table.n} rows); membership inference needs at least two: "
            "choose another target column, or a table whose rows with other target values differ in their features"
        )


def _dedup_words(table: Dataset) -> str:
    d = table.dedup
    if d is None:
        return "not run"
    return (
        f"{d.n_input} rows, {d.n_exact_duplicates_dropped} exact duplicates and {d.n_conflicting_dropped} conflicting "
        "rows dropped"
    )


def _as_table(dataset: Dataset | str, carte_dir: str | Path | None) -> Dataset:
    if isinstance(dataset, Dataset):
        return deduplicate(dataset)
    return prepared_table(dataset, carte_dir)


def make_split(
    dataset: Dataset | str,
    query_size: int,
    seed: int = 0,
    label_condition: str = "none",
    *,
    max_redraws: int = 100,
    context_pool_size: int | None = None,
    stratify: bool = True,
    tvd_threshold: float = TVD_THRESHOLD,
    ks_threshold: float = KS_THRESHOLD,
    ks_alpha: float = KS_ALPHA,
    carte_dir: str | Path | None = None,
) -> SplitManifest:
    """Draw and validate a member/non-member/context split; see the module docstring for the procedure.

    ``dataset`` is a :class:`Dataset` (deduplicated here if it is not yet) or a name/path for
    :func:`load_dataset`. Draw ``i`` (0-based) uses seed ``seed + i``; up to ``1 + max_redraws`` draws.
    """
    label_condition = normalize_label_condition(label_condition)
    table = _as_table(dataset, carte_dir)
    _check_sizes(table, query_size, context_pool_size, max_redraws)
    query_size = int(query_size)
    target = table.target.to_numpy()
    classes = table.classes if table.task == "classification" else None
    best: tuple[tuple[float, float], int, SplitStatistics] | None = None
    for attempt in range(max_redraws + 1):
        seed_used = seed + attempt
        rng = np.random.default_rng(seed_used)
        pools = draw_pools(target, table.task, query_size, rng, stratify=stratify, context_pool_size=context_pool_size)
        stats = split_statistics(target[pools["members"]], target[pools["non_members"]], table.task, classes)
        failures = stats.failures(tvd_threshold, ks_threshold, ks_alpha)
        if not failures:
            break
        log.info("%s Q=%d seed %d failed split validation: %s; redrawing", table.name, query_size, seed_used, failures)
        score = stats.badness()
        if best is None or score < best[0]:
            best = (score, seed_used, stats)
    else:
        assert best is not None
        _, best_seed, best_stats = best
        raise SplitValidationError(
            f"{table.name}: no member/non-member draw at Q={query_size} passed split validation in {max_redraws + 1} "
            "draws "
            f"(seeds {seed}..{seed + max_redraws}); best draw (seed {best_seed}): "
            f"{'; '.join(best_stats.failures(tvd_threshold, ks_threshold, ks_alpha))}. "
            "Use a larger query size (the notebook parameter query_sizes) or another seed (seed), or raise "
            "max_redraws (notebook 01's parameter; max_redraws= in Python, with stratify=True)"
        )
    randomized = randomize_pools(
        {p: target[pools[p]] for p in ("members", "non_members")},
        label_condition,
        seed_used,
        None if classes is None else np.asarray(classes),
    )
    return SplitManifest(
        dataset=table.name,
        task=table.task,
        target=table.target_name,
        query_size=int(query_size),
        label_condition=label_condition,
        seed_requested=int(seed),
        seed_used=int(seed_used),
        draws=attempt + 1,
        label_seed=int(seed_used) if randomized else None,
        pools={k: v.tolist() for k, v in pools.items()},
        statistics=stats.to_dict(),
        criteria={
            "tvd_threshold": tvd_threshold,
            "ks_threshold": ks_threshold,
            "ks_alpha": ks_alpha,
            "stratify": bool(stratify),
            "max_redraws": int(max_redraws),
            "context_pool_size": context_pool_size,
        },
        dedup=table.dedup.to_dict() if table.dedup else {},
        card=dataset_card(table).to_dict(),
        table_fingerprint=table_fingerprint(table),
        dataset_spec=dict(table.spec),
        source=table.source,
        randomized_labels={k: v.tolist() for k, v in randomized.items()},
    )


_CACHE_KEYS = ("tvd_threshold", "ks_threshold", "ks_alpha", "stratify", "context_pool_size")


def split_manifest(
    dataset: Dataset | str,
    query_size: int,
    seed: int = 0,
    label_condition: str = "none",
    *,
    results_dir: str | Path | None = None,
    refresh: bool = False,
    carte_dir: str | Path | None = None,
    **options: Any,
) -> SplitManifest:
    """The manifest from ``<results>/manifests/<dataset>-Q<q>-s<seed>-<label>.json``, made and saved if missing.

    A stored manifest is reused only if it was drawn from the same deduplicated table (fingerprint) with
    the same criteria; otherwise (or with ``refresh=True``) it is redrawn and replaced atomically.
    ``options`` are :func:`make_split`'s keyword arguments.
    """
    label_condition = normalize_label_condition(label_condition)
    table = _as_table(dataset, carte_dir)
    path = manifest_path(table.name, query_size, seed, label_condition, results_dir)
    if not refresh and served(path):  # checked against its completion record; a damaged one is set aside, redrawn
        try:
            stored = SplitManifest.load(path)
            stored.check_table(table)
            wanted = {
                "tvd_threshold": TVD_THRESHOLD,
                "ks_threshold": KS_THRESHOLD,
                "ks_alpha": KS_ALPHA,
                "stratify": True,
                "context_pool_size": None,
            }
            wanted.update({k: v for k, v in options.items() if k in _CACHE_KEYS})
            if all(stored.criteria.get(k) == v for k, v in wanted.items()):
                return stored
            log.warning("%s: stored criteria differ from the requested ones; redrawing", path)
        except ManifestError as err:
            log.warning("%s: %s; redrawing", path, err)
    manifest = make_split(table, query_size, seed, label_condition, **options)
    with writer_lock(path, what=f"the manifest manifests/{path.name}"):
        manifest.save(path)
        seal(path, __name__)
    return manifest


def pool_frame(manifest: SplitManifest, table: Dataset, pool: str) -> tuple[pd.DataFrame, pd.Series]:
    """Features and (possibly randomized) labels of one pool, checked against the manifest's table."""
    manifest.check_table(table)
    ids = manifest.ids(pool)
    labels = pd.Series(manifest.labels(table, pool), index=ids, name=table.target_name)
    return table.features.iloc[ids].set_index(pd.Index(ids, name="row_id")), labels
