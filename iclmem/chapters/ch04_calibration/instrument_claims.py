"""Paper 1, Sec. 4.2 and Tab. 3 (the instrument's verdicts): the scorecard rows P1 and P2 of notebook 04.

* P1, the probe detects memorization known to be there, read at one cell of the sensitivity curve: the strongest
  memorization (:func:`strongest_setting`) or a cell chosen by a stated rule on the vanilla attack alone
  (:func:`rule_setting`, :func:`rule_p1`); each null draw makes the same choice on its permuted vanilla attack
  (:func:`selection_null`, :func:`rule_selection_null`) and reads the probe's permuted bound there
  (:func:`null_lower_bounds`);
* P2, the negative control (null halves of the non-members);
* :func:`p1_cells`: P1's cells side by side on loss, entropy and confidence.

Re-exported by :mod:`.instrument`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from iclmem.chapters.ch04_calibration.calibration import MIN_SETS_TO_PASS
from iclmem.report.records import claim_record
from iclmem.report.verdicts import evidence_verdict, verdict_without_null

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
    from iclmem.stats import permuted_labels

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


def _cell_text(row: pd.Series) -> str:
    """Where a curve cell is: table and condition when the curve has them, learning rate and epoch."""
    where = [
        f"{row['dataset']}" if "dataset" in row.index else "",
        f"{row['condition']}" if "condition" in row.index else "",
    ]
    head = ", ".join(w for w in where if w)
    return (head + ", " if head else "") + f"lr {row.learning_rate:g}, epoch {int(row.epoch)}"


def p1_record(
    curve: pd.DataFrame,
    null_lower_bounds: Mapping[str, np.ndarray] | None,
    null_selection: np.ndarray | None = None,
    setting: pd.Series | None = None,
    rule: str | None = None,
) -> dict:
    """P1, the probe detects known memorization, read at one cell of the curve (see :func:`instrument_claims`).

    ``rule``: the stated rule that chose ``setting`` (:func:`rule_setting`); without it P1 reads the strongest
    setting (:func:`strongest_setting`). ``null_selection``: the cell each null draw chooses by the same rule (-1:
    none, which reads as no agreement).
    """
    paper = "(the book's instrument; the paper reports no control)"
    if curve.empty:
        return claim_record("P1", paper, "no sensitivity run", "not testable here", "the sensitivity curve was not run")
    if rule is not None and setting is None:
        return claim_record(
            "P1",
            paper,
            "no cell of the curve meets the rule",
            "inconclusive",
            f"P1's cell is chosen by {rule}; no cell meets it, so nothing is known to detect",
        )
    top = strongest_setting(curve) if setting is None else setting
    there = bool(top["vanilla lo"] > 0.5)
    seen = bool(top["probe lo"] > 0.5)
    ours = (
        f"probe AUC(Delta S) {top['probe AUC']:.3f} [{top['probe lo']:.3f}, {top['probe hi']:.3f}] where the vanilla "
        f"attack gives {top['vanilla AUC']:.3f} [{top['vanilla lo']:.3f}, {top['vanilla hi']:.3f}] ({_cell_text(top)})"
    )
    bounds = None if null_lower_bounds is None else null_lower_bounds.get(f"{top.run_key}@{int(top.epoch)}")
    rate = None if bounds is None or not len(bounds) else float(np.mean(np.asarray(bounds) > 0.5))
    replayed = null_selection is not None and bool(null_lower_bounds)
    if replayed:
        keys = [f"{k}@{int(e)}" for k, e in zip(curve.run_key, curve.epoch, strict=True)]
        chosen = [
            null_lower_bounds[keys[j]][i] if j >= 0 and keys[j] in null_lower_bounds else -np.inf
            for i, j in enumerate(np.asarray(null_selection))
        ]
        rate = float(np.mean(np.asarray(chosen) > 0.5))
    if not there:
        verdict, why = (
            "inconclusive",
            "the vanilla attack does not show memorization either: there is nothing known to detect",
        )
    else:
        verdict = evidence_verdict(seen, rate, contradicted=True) if rate is not None else verdict_without_null(seen)
        why = (
            "memorization is there (the vanilla attack's interval is above 0.5) and the probe's interval is above "
            "0.5 too"
            if seen
            else "memorization is there (the vanilla attack's interval is above 0.5) but the probe's interval reaches "
            "0.5: the zero-information probe does not surface it at this query count"
        )
    if rule is not None:
        why = f"the cell is chosen by {rule}, before any probe AUC is read; " + why
    return claim_record(
        "P1",
        paper,
        ours,
        verdict,
        why,
        null=(
            "membership permuted across each run's probed queries and pool; each draw chooses its own "
            + (
                "strongest setting (largest permuted vanilla AUC)"
                if rule is None
                else f"cell by {rule} on its permuted vanilla attack"
            )
            + " and the probe's bound rule is read there"
            if replayed
            else "membership permuted across the chosen run's probed queries; the probe's bound rule there"
            if rate is not None
            else None
        ),
        observed=f"{top['probe lo']:.3f}",
        null_rate=rate,
        null_draws=(len(null_selection) if replayed else len(bounds)) if rate is not None else None,
    )


def instrument_claims(
    curve: pd.DataFrame,
    null_lower_bounds: Mapping[str, np.ndarray] | None,
    negative: Mapping,
    null_selection: np.ndarray | None = None,
    setting: pd.Series | None = None,
    rule: str | None = None,
) -> list[dict]:
    """The scorecard's two instrument rows: P1, the probe detects known memorization; P2, the negative control.

    P1 (:func:`p1_record`) reads one setting of the curve, the strongest (largest vanilla AUC) or, with ``rule``,
    ``setting`` chosen by that rule (:func:`rule_setting`): it agrees when memorization is there (the vanilla
    attack's interval above 0.5) and the probe's interval is above 0.5 too; its null permutes
    membership across that run's probed queries (``null_lower_bounds``: ``"<run key>@<epoch>"`` -> the
    probe's permuted lower bounds there). It differs when memorization is there and the probe does
    not see it; without memorization it is inconclusive (nothing to detect). ``null_selection``
    (:func:`selection_null`, :func:`rule_selection_null`): the setting each null draw chooses; the null rate then
    reads draw ``i``'s probe bound at draw ``i``'s own choice, so the choice is paid for in the null. P2 passes when
    the null-halves intervals exclude 0.5 no more often than chance (:func:`~.calibration.negative_control`).
    """
    records = [p1_record(curve, null_lower_bounds, null_selection, setting, rule)]
    paper = "(the book's instrument; the paper reports no control)"
    n, excluded, p = (
        int(negative.get("n", 0)),
        int(negative.get("excluded", 0)),
        float(negative.get("p_value", math.nan)),
    )
    sets, shares = int(negative.get("sets", 0)), negative.get("set_shares", [])
    reason = (
        "two random halves of each non-member set, one posing as members, must look like chance: about 5% of 95% "
        "intervals exclude 0.5. Every configuration of one set attacks the same two halves, so the unit is the set: "
        "the control fails when the sets' mean share is far above 5% (one-sided t-test, p < 0.01)"
    )
    if not n:
        records.append(
            claim_record("P2", paper, "no fine-tuned configuration", "not testable here", "the grid is empty")
        )
    else:
        ours = (
            f"{excluded} of {n} null-halves intervals exclude 0.5 ({excluded / n:.0%}); over {sets} non-member sets "
            f"the shares are {', '.join(f'{v:.0%}' for v in shares)}"
            + (
                ""
                if math.isnan(p)
                else f" (t-test p = {p:.3g}; the naive binomial p = {negative.get('binomial_p', math.nan):.3g})"
            )
        )
        passed = negative.get("passed")
        word = negative.get("verdict", "not testable" if passed is None else "passes" if passed else "fails")
        verdict = {"not testable": "not testable here", "fails": "differs", "inconclusive": "inconclusive"}.get(
            word, evidence_verdict(bool(passed), None, no_null=True)
        )
        if word == "inconclusive":
            reason = f"{sets} non-member sets are too few for a pass (it needs {MIN_SETS_TO_PASS}): " + reason
        records.append(
            claim_record(
                "P2",
                paper,
                ours,
                verdict,
                reason if passed is not None else f"{sets} non-member set(s): too few units to test; " + reason,
                null="no null applies: the control is itself a test against chance "
                "(a one-sided t-test of the non-member sets' shares against the 5% rate)",
                observed=f"{excluded}/{n} in {sets} sets",
            )
        )
    return records


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
    null = null_summaries(part, scores, n_permutations, seed, n_boot, progress=False)
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
    n_permutations: int = 0,
    seed: int = 0,
    n_boot: int = 200,
) -> tuple[pd.Series | None, np.ndarray | None, dict[str, np.ndarray]]:
    """P1's cell by :func:`rule_setting`, the rule replayed in every null draw (:func:`rule_selection_null`) and the
    probe's permuted lower bounds at every cell some draw (or the real rule) chooses: ``(cell, selection, bounds)``.

    Only the chosen cells' null is computed (under the null the rule rarely chooses any).
    """
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
        row = {"cell": name, "where": _cell_text(cell), "vanilla AUC": _interval(cell, "vanilla")}
        row["probe loss"] = _interval(cell, "probe")
        for metric in ("entropy", "confidence"):
            if f"probe {metric} AUC" in cell.index:
                row[f"probe {metric}"] = _interval(cell, f"probe {metric}")
        rows.append(row)
    return pd.DataFrame(rows)


def _interval(cell: pd.Series, name: str) -> str:
    return f"{cell[f'{name} AUC']:.3f} [{cell[f'{name} lo']:.3f}, {cell[f'{name} hi']:.3f}]"


__all__ = [
    "CONTROL_CONDITION",
    "P1_VANILLA_BOUND",
    "instrument_claims",
    "null_lower_bounds",
    "p1_cells",
    "p1_record",
    "rule_p1",
    "rule_selection_null",
    "rule_setting",
    "selection_null",
    "strongest_setting",
]
