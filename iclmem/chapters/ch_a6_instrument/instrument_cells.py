"""Paper 1, Sec. 4.2 and Tab. 3 (the instrument's verdicts): the cell of the sensitivity curve that the scorecard
row P1 of appendix A6 reads, and that choice made again in every null draw.

* the cell: the strongest memorization (:func:`strongest_setting`) or a cell chosen by a stated rule on the vanilla
  attack alone (:func:`rule_setting`, :func:`rule_p1`);
* its null: each null draw makes the same choice on its permuted vanilla attack (:func:`selection_null`,
  :func:`rule_selection_null`) and reads the probe's permuted bound there (:func:`null_lower_bounds`);
* :func:`p1_cells`: P1's cells side by side on loss, entropy and confidence; :func:`cell_text`: where a cell is.

P1's record is :func:`iclmem.chapters.ch_a6_instrument.claims.p1_record`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from iclmem.stats.permutation import NullDraws

#: The control's label condition (see :mod:`.instrument`).
CONTROL_CONDITION = "all"


def strongest_setting(curve: pd.DataFrame) -> pd.Series:
    """The (run, epoch) of the curve with the strongest memorization (largest vanilla-attack AUC)."""
    return curve.loc[curve["vanilla AUC"].idxmax()]


#: P1's rule, fixed before any probe AUC is read: the vanilla attack's lower bound must exceed this (memorization
#: clearly there), and among such cells under the control's condition the weakest memorization is chosen.
P1_VANILLA_BOUND = 0.7


def rule_setting(
    curve: pd.DataFrame, bound: float = P1_VANILLA_BOUND, condition: str = CONTROL_CONDITION
) -> pd.Series | None:
    """P1's setting by its stated rule, read from the vanilla attack alone (never the probe's AUC).

    Among the curve's cells under ``condition`` (every table; a curve without a ``condition`` column is taken as
    all of it) whose vanilla-attack lower bound exceeds ``bound``, the one with the smallest vanilla AUC: memorization
    is clearly there, with the least fine-tuning pressure on it (nearest the paper's settings, farthest from
    collapse). None when no cell clears the bound.
    """
    if curve.empty:
        return None
    part = curve if "condition" not in curve.columns else curve[curve.condition == condition]
    clear = part[part["vanilla lo"] > bound]
    return None if clear.empty else clear.loc[clear["vanilla AUC"].idxmin()]


def rule_selection_null(
    curve: pd.DataFrame,
    vanilla_scores: Mapping[str, tuple[np.ndarray, np.ndarray]],
    n_perm: int,
    seed: int = 0,
    bound: float = P1_VANILLA_BOUND,
    condition: str = CONTROL_CONDITION,
    n_boot: int = 200,
) -> np.ndarray:
    """:func:`rule_setting` made again in every null draw: ``(n_perm,)`` positions of ``curve``, -1 where no cell is
    chosen.

    In draw ``i`` membership is permuted across each run's pool (one permutation for all epochs of a run, as in
    :func:`selection_null`); the vanilla attack's permuted lower bounds (the same stratified bootstrap,
    :func:`iclmem.probe.null.auc_lower_bounds`) and AUCs pick the draw's cell by the same rule.
    """
    from iclmem.probe.null import auc_lower_bounds

    auc = _permuted_vanilla_aucs(curve, vanilla_scores, n_perm, seed)
    eligible = np.zeros_like(auc, dtype=bool)
    labels = _permuted_run_labels(curve, vanilla_scores, n_perm, seed)
    for j, (key, epoch) in enumerate(zip(curve.run_key, curve.epoch, strict=True)):
        if "condition" in curve.columns and curve.condition.iloc[j] != condition:
            continue
        member, non_member = vanilla_scores[f"{key}@{int(epoch)}"]
        score = np.concatenate([member, non_member])
        eligible[:, j] = auc_lower_bounds(score, labels[key], n_boot, seed) > bound
    masked = np.where(eligible, auc, np.inf)
    pick = np.argmin(masked, axis=1)
    return np.where(eligible.any(axis=1), pick, -1)


def _permuted_run_labels(
    curve: pd.DataFrame, vanilla_scores: Mapping[str, tuple[np.ndarray, np.ndarray]], n_perm: int, seed: int
) -> dict[str, np.ndarray]:
    """Per run key: ``(n_perm, pool)`` permuted membership of its vanilla attack's pool (members first in the real
    order)."""
    from iclmem.stats.permutation import permuted_labels

    out: dict[str, np.ndarray] = {}
    for key, epoch in zip(curve.run_key, curve.epoch, strict=True):
        if key in out:
            continue
        member, non_member = vanilla_scores[f"{key}@{int(epoch)}"]
        is_member = np.arange(len(member) + len(non_member)) < len(member)
        run_seed = int.from_bytes(str(key).encode()[:8].ljust(8, b"\0"), "little") ^ int(seed)
        out[key] = permuted_labels(is_member, n_perm, run_seed)
    return out


def _permuted_vanilla_aucs(
    curve: pd.DataFrame, vanilla_scores: Mapping[str, tuple[np.ndarray, np.ndarray]], n_perm: int, seed: int
) -> np.ndarray:
    """``(n_perm, rows)`` vanilla-attack AUCs of every curve row under :func:`_permuted_run_labels` (Mann-Whitney from
    one matrix product per row)."""
    from scipy.stats import rankdata

    labels = _permuted_run_labels(curve, vanilla_scores, n_perm, seed)
    aucs = np.full((n_perm, len(curve)), -np.inf)
    for j, (key, epoch) in enumerate(zip(curve.run_key, curve.epoch, strict=True)):
        member, non_member = vanilla_scores[f"{key}@{int(epoch)}"]
        score = np.concatenate([member, non_member])
        n_m, n_n = float(len(member)), float(len(non_member))
        aucs[:, j] = (labels[key].astype(np.float64) @ rankdata(score) - n_m * (n_m + 1) / 2) / (n_m * n_n)
    return aucs


def selection_null(
    curve: pd.DataFrame, vanilla_scores: Mapping[str, tuple[np.ndarray, np.ndarray]], n_perm: int, seed: int = 0
) -> np.ndarray:
    """P1's setting chosen again in every null draw: ``(n_perm,)`` row positions of ``curve``.

    P1 reads the curve's strongest setting, the largest vanilla-attack AUC (:func:`strongest_setting`), a choice made
    with the real labels. In draw ``i`` membership is permuted across each run's pool (members and non-members of its
    vanilla attack; one permutation for all epochs of a run, as their pool is the same) and the setting with the
    largest permuted vanilla AUC is the draw's choice. Vectorized: scores ranked once per setting, AUCs of all draws
    from one matrix product (Mann-Whitney).
    """
    return np.argmax(_permuted_vanilla_aucs(curve, vanilla_scores, n_perm, seed), axis=1)


def cell_text(row: pd.Series) -> str:
    """Where a curve cell is: table and condition when the curve has them, learning rate and epoch."""
    where = [
        f"{row['dataset']}" if "dataset" in row.index else "",
        f"{row['condition']}" if "condition" in row.index else "",
    ]
    head = ", ".join(w for w in where if w)
    return (head + ", " if head else "") + f"lr {row.learning_rate:g}, epoch {int(row.epoch)}"


def null_lower_bounds(
    summary: pd.DataFrame,
    scores: Mapping[str, pd.DataFrame],
    n_permutations: int,
    seed: int = 0,
    n_boot: int = 200,
    cells: set[str] | None = None,
) -> dict[str, np.ndarray]:
    """``"<run key>@<epoch>"`` -> the probe's loss lower bounds under ``n_permutations`` membership permutations
    (:func:`iclmem.probe.null.null_summaries`), for every fine-tuned row of ``summary`` or only those in ``cells``."""
    from iclmem.probe.null import null_summaries

    keys = summary.run_key + "@" + summary.epoch.astype(int).astype(str)
    part = summary if cells is None else summary[keys.isin(cells)]
    if part.empty or not n_permutations:
        return {}
    null = null_summaries(part, scores, NullDraws(n_permutations, seed, n_boot), progress=False)
    return {
        f"{key}@{int(epoch)}": rows.sort_values("perm").auc_loss_lo.to_numpy()
        for (key, epoch), rows in null.groupby(["run_key", "epoch"])
    }


def rule_p1(
    curve: pd.DataFrame,
    vanilla_scores: Mapping[str, tuple[np.ndarray, np.ndarray]],
    summary: pd.DataFrame,
    scores: Mapping[str, pd.DataFrame],
    bound: float = P1_VANILLA_BOUND,
    null: NullDraws | None = None,
) -> tuple[pd.Series | None, np.ndarray | None, dict[str, np.ndarray]]:
    """P1's cell by :func:`rule_setting`, the rule replayed in every draw of ``null`` (:func:`rule_selection_null`;
    None: no null) and the probe's permuted lower bounds at every cell some draw (or the real rule) chooses:
    ``(cell, selection, bounds)``.

    Only the chosen cells' null is computed (under the null the rule rarely chooses any).
    """
    n_permutations, seed, n_boot = (null.n_perm, null.seed, null.n_boot) if null else (0, 0, 200)
    cell = rule_setting(curve, bound)
    if cell is None or not n_permutations:
        return cell, None, {}
    selection = rule_selection_null(curve, vanilla_scores, n_permutations, seed, bound, n_boot=n_boot)
    rows = {curve.index.get_loc(cell.name), *(int(j) for j in selection if j >= 0)}
    cells = {f"{curve.run_key.iloc[j]}@{int(curve.epoch.iloc[j])}" for j in rows}
    return cell, selection, null_lower_bounds(summary, scores, n_permutations, seed, n_boot, cells)


def p1_cells(cells: Mapping[str, pd.Series | None]) -> pd.DataFrame:
    """P1's cells side by side (e.g. the strongest memorization and the rule's cell): the vanilla attack and the probe
    on loss, entropy and confidence (Tab. 3 reads "loss or entropy"), each AUC with its interval."""
    rows = []
    for name, cell in cells.items():
        if cell is None:
            rows.append({"cell": name, "where": "no cell meets the rule"})
            continue
        row = {"cell": name, "where": cell_text(cell), "vanilla AUC": _interval(cell, "vanilla")}
        row["probe loss"] = _interval(cell, "probe")
        for metric in ("entropy", "confidence"):
            if f"probe {metric} AUC" in cell.index:
                row[f"probe {metric}"] = _interval(cell, f"probe {metric}")
        rows.append(row)
    return pd.DataFrame(rows)


def _interval(cell: pd.Series, name: str) -> str:
    """A cell's AUC of ``name`` with its interval, as text."""
    return f"{cell[f'{name} AUC']:.3f} [{cell[f'{name} lo']:.3f}, {cell[f'{name} hi']:.3f}]"


__all__ = [
    "CONTROL_CONDITION",
    "cell_text",
    "P1_VANILLA_BOUND",
    "null_lower_bounds",
    "p1_cells",
    "rule_p1",
    "rule_selection_null",
    "rule_setting",
    "selection_null",
    "strongest_setting",
]
