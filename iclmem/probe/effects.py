"""What C12 and Fig. 4 read of one configuration: its manipulation groups' rank sums (App. A.3, Sec. 5).

For a configuration (a run at one epoch), the calibrated per-manipulation score of a query is
``Delta L_k(q) = L_k,theta(q) - L_k,ref(q)``, oriented so that higher means member. Ranked among the configuration's
queries (ties averaged), manipulation ``k``'s AUC under membership labels ``l`` is Mann-Whitney's
``(l . r_k - n_m (n_m + 1) / 2) / (n_m n_n)``, so its gain over the baseline is ``l . (r_k - r_base) / (n_m n_n)``
and a group ``G`` of manipulations (a Tab. 7 category, or one named manipulation) gains on average

    ``l . s_G / (2 |G| n_m n_n)``, with ``s_G = sum_{k in G} 2 r_k - 2 |G| r_base``,

an integer vector per group. :class:`GroupRanks` keeps one per group (:data:`GROUPS`: those C12 reads): every
permutation of membership gives its statistic from them exactly (integer products, one division), and a results
bundle keeps them in a fraction of the scores' bytes (:mod:`iclmem.bundle.collect`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from ..stats.metrics import auc, membership_score
from .manipulations import CATEGORIES, MANIPULATIONS

#: The groups C12's rules read (Sec. 5 "Perturbation Effectiveness"): the Tab. 7 categories of C12a (true-label
#: skew), C12b (positional shuffling) and C12c (feature reduction, distractors), and Fig. 4's best single
#: manipulation in the paper, a group of its own that C12a reports.
GROUPS: tuple[str, ...] = (
    "skew_true",
    "positional_shuffling",
    "feature_reduction",
    "distractor_injection",
    "mixed_true_5_non_true_5",
)


@dataclass(frozen=True)
class GroupRanks:
    """One configuration's group rank sums: ``sums[:, g]`` is ``s_G`` of group ``groups[g]`` (``sizes[g]``
    manipulations), per query (``query_ids``, ascending; ``is_member``)."""

    query_ids: np.ndarray
    is_member: np.ndarray
    groups: tuple[str, ...]
    sizes: tuple[int, ...]
    sums: np.ndarray

    def deltas(self, labels: np.ndarray) -> np.ndarray:
        """``(n_rows, n_groups)``: each group's mean Delta AUC over the baseline under each row of ``labels``
        (``(n_rows, n_queries)``, queries in :attr:`query_ids` order)."""
        lab = np.asarray(labels, dtype=bool)
        if lab.ndim != 2 or lab.shape[1] != len(self.query_ids):
            raise ValueError(f"labels must have shape (n_rows, {len(self.query_ids)}), got {lab.shape}.")
        n_m = lab.sum(axis=1, keepdims=True).astype(np.int64)
        n_n = lab.shape[1] - n_m
        if (n_m == 0).any() or (n_n == 0).any():
            raise ValueError("every label row needs members and non-members.")
        wins = lab.astype(np.int64) @ self.sums  # exact: integers
        return wins / (2 * np.asarray(self.sizes, dtype=np.int64) * n_m * n_n)

    def frame(self) -> pd.DataFrame:
        """The rank sums as a frame: ``query_id``, ``is_member`` and one column per group."""
        columns = dict(zip(self.groups, self.sums.T, strict=True))
        return pd.DataFrame({"query_id": self.query_ids, "is_member": self.is_member, **columns})


def _groups(manipulations: Sequence[str], groups: Sequence[str]) -> list[tuple[str, list[int]]]:
    """(group, column positions) of each of ``groups`` the configuration probed: a Tab. 7 category (its
    manipulations but the baseline), or one manipulation by name."""
    out = []
    for group in groups:
        if group in CATEGORIES:
            idx = [i for i, m in enumerate(manipulations) if MANIPULATIONS[m].category == group and m != "baseline"]
        else:
            idx = [manipulations.index(group)] if group in manipulations else []
        if idx:
            out.append((group, idx))
    return out


def group_ranks(scores: pd.DataFrame, epoch: int, metric: str = "loss", groups: Sequence[str] = GROUPS) -> GroupRanks:
    """The :class:`GroupRanks` of ``groups`` (Tab. 7 categories or manipulation names) of one run's probe scores
    (:func:`iclmem.probe.probe_run`) at fine-tuned ``epoch``."""

    def wide(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.pivot(index="query_id", columns="manipulation", values=metric).sort_index()

    theta = scores[(scores.model == "theta") & (scores.epoch == epoch)]
    if theta.empty:
        raise ValueError(f"the scores hold no fine-tuned epoch {epoch}; probe it first.")
    t = wide(theta)
    delta = t - wide(scores[scores.model == "ref"]).reindex(index=t.index, columns=t.columns)
    if delta.isna().any().any():
        raise ValueError(
            "every query needs a score under every manipulation, for M_theta and M_ref, to form a permutation null; "
            "a probe failed (NaN) or a manipulation is missing for some query."
        )
    names = [str(c) for c in t.columns]
    if "baseline" not in names:
        raise ValueError("the configuration has no baseline manipulation to take Delta AUC over.")
    twice = np.rint(2 * rankdata(membership_score(metric, delta.to_numpy(np.float64)), axis=0)).astype(np.int64)
    base = twice[:, names.index("baseline")]
    found = _groups(names, groups)
    sums = np.column_stack([twice[:, idx].sum(axis=1) - len(idx) * base for _, idx in found])
    members = theta.drop_duplicates("query_id").set_index("query_id").is_member.astype(bool).reindex(t.index)
    return GroupRanks(
        t.index.to_numpy(), members.to_numpy(bool), tuple(g for g, _ in found), tuple(len(i) for _, i in found), sums
    )


def manipulation_aucs(scores: pd.DataFrame, metric: str = "loss", epochs: list[int] | None = None) -> pd.DataFrame:
    """AUC of the calibrated per-manipulation score Delta L_k(q) = L_k,theta(q) - L_k,ref(q), per epoch (App. A.3)."""
    ref = scores[scores.model == "ref"].set_index(["query_id", "manipulation"])[metric]
    theta_all = scores[scores.model == "theta"]
    if epochs is not None:
        theta_all = theta_all[theta_all.epoch.isin(epochs)]
    rows = []
    for epoch, theta in theta_all.groupby("epoch"):
        t = theta.set_index(["query_id", "manipulation"])
        delta = membership_score(metric, (t[metric] - ref.reindex(t.index)).to_numpy())
        frame = t.assign(score=delta).reset_index()
        for (name, category), part in frame.groupby(["manipulation", "category"]):
            member = part.is_member.astype(bool)
            rows.append(
                {
                    "epoch": int(epoch),
                    "manipulation": name,
                    "category": category,
                    "auc": auc(part.score[member].to_numpy(), part.score[~member].to_numpy()),
                }
            )
    return pd.DataFrame(rows)


def group_ranks_of(frame: pd.DataFrame, sizes: dict[str, int]) -> GroupRanks:
    """The :class:`GroupRanks` that :meth:`GroupRanks.frame` wrote (``sizes``: each group's number of
    manipulations)."""
    groups = tuple(c for c in frame.columns if c not in ("query_id", "is_member"))
    return GroupRanks(
        frame.query_id.to_numpy(), frame.is_member.to_numpy(bool), groups, tuple(int(sizes[g]) for g in groups),
        frame[list(groups)].to_numpy(np.int64),
    )  # fmt: skip


__all__ = ["GROUPS", "GroupRanks", "group_ranks", "group_ranks_of", "manipulation_aucs"]
