"""The membership null of a probing grid: every summary recomputed with membership permuted (Sec. 4.2, Tab. 3).

Under the null hypothesis that fine-tuning left no trace of membership, members and non-members
are exchangeable: any relabelling of a run's probed queries that keeps the member count is as
likely as the real one. :func:`null_summaries` recomputes, for ``n_perm`` such relabellings and
from the cached scores alone (no model is run), the columns of a probing summary that depend on
membership: the calibrated AUC and TPRs per metric, their bootstrap lower bounds (for the
``bound`` reading), the raw and reference TPR@10% (App. A.4) and the loss gaps ``mu_gap``,
``sigma_gap`` (App. B.2). Collapse and the loss ratio come from fine-tuning, not from the labels,
and are kept. A claim's rule applied to each permuted summary gives its null "reproduce" rate.

Runs that probe the same queries (the runs of one table, Q and label condition, which differ in
learning rate) are permuted alike, as their membership is the same in the real data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from ..runtime.progress import Bar
from ..runtime.workers import worker_count
from ..stats.metrics import membership_score
from ..stats.outcomes import DETECT_METRICS, reclassify
from ..stats.permutation import (
    DEFAULT_NULL,
    N_PERMUTATIONS,
    NullDraws,
    permuted_attack_statistics,
    permuted_gaps,
    permuted_labels,
    query_set_seed,
)
from .contexts import ProbeError

#: Summary columns a permuted summary recomputes (the rest are copied from the real summary).
PERMUTED_COLUMNS: tuple[str, ...] = (
    *(f"{s}_{m}" for m in DETECT_METRICS for s in ("auc", "tpr10", "tpr1")),
    "auc_loss_lo",
    "auc_entropy_lo",
    "raw_tpr10_loss",
    "ref_tpr10_loss",
    "mu_gap",
    "sigma_gap",
)

#: The summary columns besides :data:`PERMUTED_COLUMNS` that an outcome under a reading of Tab. 3 reads
#: (:func:`iclmem.stats.outcomes.reclassify`: the collapse test).
OUTCOME_INPUTS: tuple[str, ...] = ("collapsed", "loss_ratio")


#: Above this many (member, non-member) pairs :func:`auc_lower_bounds` counts wins from sorted scores
#: (:func:`_resampled_aucs_by_ranks`) instead of win matrices (:func:`_resampled_aucs_by_matrix`): the crossover
#: measured by ``benchmarks/null_speed.py`` (1,000 permutations x 200 resamples, CPU seconds of the matrices over the
#: ranks': 0.53x at 50 + 50 queries, 0.72x at 100 + 100, 0.98x at 128 + 128, 2.6x at 256 + 256, 5.2x at 512 + 512).
#: The rule is a size, not a timing, and both paths give the same AUCs bit for bit.
RANK_PATH_PAIRS = 128 * 128


def _bootstrap_multiplicities(n_m: int, n_n: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(w, v): how often each member / non-member position is drawn in each of ``n_boot`` stratified resamples,
    ``(n_boot, n_m)`` and ``(n_boot, n_n)``; one seeded draw shared by every permutation."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xB0075]))
    im, inn = rng.integers(0, n_m, (n_boot, n_m)), rng.integers(0, n_n, (n_boot, n_n))
    w = np.zeros((n_boot, n_m))
    np.add.at(w, (np.repeat(np.arange(n_boot), n_m), im.ravel()), 1.0)
    v = np.zeros((n_boot, n_n))
    np.add.at(v, (np.repeat(np.arange(n_boot), n_n), inn.ravel()), 1.0)
    return w, v


def _resampled_aucs_by_matrix(sm: np.ndarray, sn: np.ndarray, w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n_perm, n_boot) resampled AUCs: ``w^T H v / (n_m n_n)`` with ``H`` each permutation's member-by-non-member
    win matrix (1 won, 0.5 tied), in blocks of permutations."""
    n_m, n_n = sm.shape[1], sn.shape[1]
    out = np.empty((len(sm), len(w)))
    per_chunk = max(1, 2_000_000 // (n_m * max(n_n, len(w))))
    for start in range(0, len(sm), per_chunk):
        block = slice(start, min(start + per_chunk, len(sm)))
        a, b = sm[block][:, :, None], sn[block][:, None, :]
        wins = (a > b).astype(np.float64) + 0.5 * (a == b)  # (n_p, n_m, n_n)
        out[block] = np.einsum("pbn,bn->pb", w @ wins, v) / (n_m * n_n)
    return out


def _resampled_aucs_by_ranks(sm: np.ndarray, sn: np.ndarray, w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The same AUCs as :func:`_resampled_aucs_by_matrix`, from sorted scores: O(n_boot (n_m + n_n)) per permutation.

    With a permutation's non-members sorted, the resampled weight of those below a score is a cumulative
    sum of ``v``: a member's wins plus half its ties are ``(V[left] + V[right]) / 2``, where ``left`` and
    ``right`` count the non-members below it and at most it (``searchsorted``). Summing ``w`` times that
    over members gives twice ``w^T H v``; every term is an integer, exact in float64, so the division
    gives the matrix path's AUC bit for bit (``tests/probe/test_probe_null.py``).
    """
    n_m, n_n = sm.shape[1], sn.shape[1]
    out = np.empty((len(sm), len(w)))
    wt, vt = np.ascontiguousarray(w.T), np.ascontiguousarray(v.T)  # positions x resamples: gathers copy whole rows
    below = np.zeros((n_n + 1, len(v)))
    for p in range(len(sm)):
        by = np.argsort(sn[p], kind="stable")
        ranked = sn[p][by]
        np.cumsum(vt[by], axis=0, out=below[1:])
        twice = below[np.searchsorted(ranked, sm[p], "left")] + below[np.searchsorted(ranked, sm[p], "right")]
        out[p] = np.einsum("mb,mb->b", wt, twice) / (2 * n_m * n_n)
    return out


def auc_lower_bounds(
    score: np.ndarray, labels: np.ndarray, n_boot: int = 200, seed: int = 0, level: float = 0.95
) -> np.ndarray:
    """:func:`iclmem.stats.permutation.permuted_auc_lower_bounds` by batched products or sorted scores: the same
    bounds, bit for bit.

    The stratified bootstrap draws the same member and non-member *positions* in every permutation (one seeded
    draw), so each resample is a pair of multiplicity vectors ``w`` (members) and ``v`` (non-members), shared by all
    permutations. A permutation's resampled AUC is ``w^T H v / (n_m n_n)`` with ``H`` its member-by-non-member win
    matrix (1 won, 0.5 tied): one ``(n_boot, n_m) @ (n_m, n_n)`` product per permutation instead of a histogram per
    resample (:func:`_resampled_aucs_by_matrix`), or, above :data:`RANK_PATH_PAIRS` pairs, cumulative sums over
    sorted scores (:func:`_resampled_aucs_by_ranks`). Every sum is of integers and halves, exact in float64, so the
    AUCs, and their quantiles, equal the reference's (``tests/probe/test_probe_null.py``).
    """
    s = np.asarray(score, dtype=np.float64).ravel()
    lab = np.asarray(labels, dtype=bool)
    n_m = int(lab[0].sum())
    n_n = len(s) - n_m
    order = np.argsort(~lab, axis=1, kind="stable")  # members first, then non-members, per permutation
    sm, sn = s[order[:, :n_m]], s[order[:, n_m:]]  # (n_perm, n_m), (n_perm, n_n)
    w, v = _bootstrap_multiplicities(n_m, n_n, n_boot, seed)
    resampled = _resampled_aucs_by_ranks if n_m * n_n > RANK_PATH_PAIRS else _resampled_aucs_by_matrix
    return np.quantile(resampled(sm, sn, w, v), (1 - level) / 2, axis=1)


def _matrix(frame: pd.DataFrame, metric: str, queries: np.ndarray) -> np.ndarray:
    """(queries, manipulations) of ``metric``, rows in the order of ``queries``."""
    wide = frame.pivot(index="query_id", columns="manipulation", values=metric)
    if wide.isna().any().any():
        raise ProbeError("every query needs a score under every manipulation to form a permutation null.")
    return wide.reindex(queries).to_numpy(dtype=np.float64)


def run_null(
    scores: pd.DataFrame,
    epochs: Sequence[int],
    n_perm: int = N_PERMUTATIONS,
    seed: int = 0,
    n_boot: int = 200,
    bounds: bool = True,
    labels: np.ndarray | None = None,
) -> pd.DataFrame:
    """One run's permuted summary columns: one row per (perm, epoch), columns ``perm``, ``epoch`` and
    :data:`PERMUTED_COLUMNS`.

    ``scores``: the run's probe scores (:func:`iclmem.probe.probe_run`). ``bounds=False`` skips the
    bootstrap lower bounds (NaN), which only the ``bound`` reading needs. ``labels``: ``(n_perm, n_queries)``
    membership rows to use instead of random permutations (queries in ascending id order; a test passes
    the real labels and gets the real summary back).
    """
    ref = scores[scores.model == "ref"]
    members = ref.drop_duplicates("query_id").set_index("query_id").is_member.astype(bool).sort_index()
    queries = members.index.to_numpy()
    if labels is None:
        labels = permuted_labels(members.to_numpy(), n_perm, query_set_seed(queries, seed))
    n_perm = len(labels)
    ref_s = {m: _matrix(ref, m, queries).mean(axis=1) for m in DETECT_METRICS}
    out = []
    for epoch in epochs:
        theta = scores[(scores.model == "theta") & (scores.epoch == epoch)]
        if theta.empty:
            raise ProbeError(f"the run's scores hold no epoch {epoch}; probe it first.")
        rows = {"perm": np.arange(n_perm), "epoch": np.full(n_perm, int(epoch))}
        loss = _matrix(theta, "loss", queries)
        for metric in DETECT_METRICS:
            s_theta = loss.mean(axis=1) if metric == "loss" else _matrix(theta, metric, queries).mean(axis=1)
            score = membership_score(metric, s_theta - ref_s[metric])
            for key, values in permuted_attack_statistics(score, labels).items():
                rows[f"{key}_{metric}"] = values
            rows[f"auc_{metric}_lo"] = (
                auc_lower_bounds(score, labels, n_boot, seed) if bounds else np.full(n_perm, np.nan)
            )
            if metric == "loss":
                rows["raw_tpr10_loss"] = permuted_attack_statistics(membership_score("loss", s_theta), labels, (0.1,))[
                    "tpr10"
                ]
                rows["ref_tpr10_loss"] = permuted_attack_statistics(
                    membership_score("loss", ref_s["loss"]), labels, (0.1,)
                )["tpr10"]
        gaps = permuted_gaps(loss, labels)
        rows["mu_gap"], rows["sigma_gap"] = gaps.mean(axis=1), gaps.std(axis=1, ddof=0)
        out.append(pd.DataFrame(rows))
    return pd.concat(out, ignore_index=True)


def null_summaries(
    summary: pd.DataFrame,
    scores: Mapping[str, pd.DataFrame],
    draws: NullDraws = DEFAULT_NULL,
    reading: str | None = None,
    bounds: bool = True,
    progress: bool = True,
    workers: int | None = None,
) -> pd.DataFrame:
    """The fine-tuned rows (epoch > 0) of ``summary`` recomputed under ``draws.n_perm`` membership permutations
    (seeded by ``draws.seed``, each interval from ``draws.n_boot`` resamples).

    Returns one frame with a ``perm`` column: per permutation, every fine-tuned row of ``summary``
    with :data:`PERMUTED_COLUMNS` replaced by their permuted values (the other columns kept), and,
    with ``reading``, the ``outcome`` recomputed under that reading of Tab. 3
    (:func:`iclmem.stats.outcomes.reclassify`). ``scores``: the probe scores per run key, as
    :func:`iclmem.training.grid.probe_grid` returns them. ``workers`` (default ``$ICLMEM_WORKERS``, else 1)
    threads compute the runs side by side (numpy releases the GIL in its array work); each run's
    permutations depend on its own queries and ``draws.seed`` only, so the frame is the same for any count.
    """
    fine = summary[summary.epoch > 0]
    missing = sorted(set(fine.run_key) - set(scores))
    if missing:
        raise ProbeError(
            f"no probe scores for runs {missing[:3]}; pass the scores probe_grid returned with this summary."
        )
    groups = list(fine.groupby("run_key", sort=False))

    def permuted(group: tuple[str, pd.DataFrame]) -> pd.DataFrame:
        key, rows = group
        return run_null(scores[key], sorted(rows.epoch.unique()), draws.n_perm, draws.seed, draws.n_boot, bounds)

    threads = min(worker_count(workers), len(groups))
    with ThreadPoolExecutor(max(threads, 1)) as pool:
        done = pool.map(permuted, groups) if threads > 1 else map(permuted, groups)
        bar = Bar(done, total=len(groups), desc="permutation null", disable=not progress, leave=False)
        per_run = {key: part for (key, _), part in zip(groups, bar, strict=True)}
    return assemble_null(fine, per_run, reading)


def assemble_null(
    summary: pd.DataFrame,
    per_run: Mapping[str, pd.DataFrame],
    reading: str | None = None,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """:func:`null_summaries`' frame from each run's :func:`run_null` rows (``per_run``, by run key; computed here,
    or kept in a results bundle, :mod:`iclmem.bundle.null_codec`): every fine-tuned row of ``summary`` per
    permutation, with :data:`PERMUTED_COLUMNS` replaced by their permuted values and, with ``reading``, the outcome
    recomputed.

    ``columns``: the summary's columns to keep besides ``run_key``, ``epoch``, the permuted ones and, with
    ``reading``, :data:`OUTCOME_INPUTS` (default: all). The frame has a row per permutation and fine-tuned row, so a
    reader of a large design keeps only what its rule reads: the same values in a fraction of the memory."""
    fine = summary[summary.epoch > 0]
    if columns is not None:
        keep = ["run_key", "epoch", *columns, *(OUTCOME_INPUTS if reading is not None else ())]
        fine = fine[[c for c in dict.fromkeys(keep) if c in fine.columns]]
    missing = sorted(set(fine.run_key) - set(per_run))
    if missing:
        raise ProbeError(f"no membership null for runs {missing[:3]}; compute it from their scores first.")
    parts = [
        rows.drop(columns=[c for c in PERMUTED_COLUMNS if c in rows.columns]).merge(
            per_run[key], on="epoch", how="inner", validate="one_to_many"
        )
        for key, rows in fine.groupby("run_key", sort=False)
    ]
    out = pd.concat(parts, ignore_index=True)
    if reading is not None:
        out = reclassify(out, reading)
    return out.sort_values(["perm", "run_key", "epoch"], kind="stable").reset_index(drop=True)


def permutations(null: pd.DataFrame) -> list[pd.DataFrame]:
    """The permuted summaries of :func:`null_summaries`, one frame per permutation (its ``perm`` column dropped)."""
    return [part.drop(columns="perm").reset_index(drop=True) for _, part in null.groupby("perm", sort=True)]


__all__ = [
    "OUTCOME_INPUTS",
    "PERMUTED_COLUMNS",
    "RANK_PATH_PAIRS",
    "assemble_null",
    "auc_lower_bounds",
    "null_summaries",
    "permutations",
    "run_null",
]
