"""Appendix A6 (the instrument; Sec. 4.2 and Tab. 3 set what it must see): the records of the instrument rows P1,
P2 and P3 for the scorecard. The paper reports no control; these are the book's.

* P1 :func:`p1_record` (at the cell :mod:`.instrument_cells` chooses), P2 :func:`p2_record` (the negative control
  of :mod:`.controls`), both: :func:`instrument_claims`; P3 :func:`p3_record` (the member-only control of
  :mod:`.member_control`, scored by :mod:`iclmem.probe.label_control`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from iclmem.chapters.ch_a6_instrument.controls import MIN_SETS_TO_PASS
from iclmem.chapters.ch_a6_instrument.instrument_cells import cell_text, strongest_setting
from iclmem.chapters.ch_a6_instrument.member_control import DETECTABLE
from iclmem.probe.null import null_summaries
from iclmem.report.records import claim_record
from iclmem.report.verdicts import (
    evidence_verdict,
    verdict_without_null,
)
from iclmem.stats.permutation import NullDraws

#: What the paper says of the instrument rows P1 and P2.
INSTRUMENT_PAPER = "(the book's instrument; the paper reports no control)"


def _p1_null_rate(
    curve: pd.DataFrame,
    top: pd.Series,
    null_lower_bounds: Mapping[str, np.ndarray] | None,
    null_selection: np.ndarray | None,
) -> tuple[float | None, bool, np.ndarray | None]:
    """P1's null rate at cell ``top`` (the share of permuted lower bounds above 0.5), whether each draw read its own
    choice of cell (``null_selection`` replayed), and the permuted bounds at ``top``."""
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
    return rate, replayed, bounds


def _p1_verdict(there: bool, seen: bool, rate: float | None) -> tuple[str, str]:
    """P1's verdict and why: memorization there (vanilla attack) and seen by the probe, against the null rate."""
    if not there:
        return (
            "inconclusive",
            "the vanilla attack does not show memorization either: there is nothing known to detect",
        )
    verdict = evidence_verdict(seen, rate, contradicted=True) if rate is not None else verdict_without_null(seen)
    why = (
        "memorization is there (the vanilla attack's interval is above 0.5) and the probe's interval is above 0.5 too"
        if seen
        else "memorization is there (the vanilla attack's interval is above 0.5) but the probe's interval reaches "
        "0.5: the zero-information probe does not surface it at this query count"
    )
    return verdict, why


def _p1_null_text(replayed: bool, rate: float | None, rule: str | None) -> str | None:
    """How P1's record states its null."""
    return (
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
    )


def p1_record(
    curve: pd.DataFrame,
    null_lower_bounds: Mapping[str, np.ndarray] | None,
    null_selection: np.ndarray | None = None,
    setting: pd.Series | None = None,
    rule: str | None = None,
) -> dict:
    """P1, the probe detects known memorization, read at one cell of the curve (see :func:`instrument_claims`).

    ``rule``: the stated rule that chose ``setting`` (:func:`~.instrument_cells.rule_setting`); without it P1 reads
    the strongest setting (:func:`~.instrument_cells.strongest_setting`). ``null_selection``: the cell each null draw
    chooses by the same rule (-1: none, which reads as no agreement).
    """
    paper = INSTRUMENT_PAPER
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
        f"attack gives {top['vanilla AUC']:.3f} [{top['vanilla lo']:.3f}, {top['vanilla hi']:.3f}] ({cell_text(top)})"
    )
    rate, replayed, bounds = _p1_null_rate(curve, top, null_lower_bounds, null_selection)
    verdict, why = _p1_verdict(there, seen, rate)
    if rule is not None:
        why = f"the cell is chosen by {rule}, before any probe AUC is read; " + why
    return claim_record(
        "P1",
        paper,
        ours,
        verdict,
        why,
        null=_p1_null_text(replayed, rate, rule),
        observed=f"{top['probe lo']:.3f}",
        null_rate=rate,
        null_draws=(len(null_selection) if replayed else len(bounds)) if rate is not None else None,
    )


#: The most non-member sets whose shares P2's record lists one by one; more are summarized by their spread.
LISTED_SETS = 12


def _shares_text(shares: Sequence[float]) -> str:
    """The non-member sets' shares of excluding intervals: each one (up to :data:`LISTED_SETS`), else how many are
    0%, their median and their largest."""
    if len(shares) <= LISTED_SETS:
        return ", ".join(f"{v:.0%}" for v in shares)
    values = np.asarray(shares, dtype=float)
    return f"0% in {int((values == 0).sum())}, median {np.median(values):.0%}, largest {values.max():.0%}"


def p2_record(negative: Mapping) -> dict:
    """P2, the negative control (Sec. 4.2): the null-halves intervals exclude 0.5 no more often than chance
    (:func:`~.controls.negative_control`'s verdict over the non-member sets)."""
    paper = INSTRUMENT_PAPER
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
        return claim_record("P2", paper, "no fine-tuned configuration", "not testable here", "the grid is empty")
    ours = (
        f"{excluded} of {n} null-halves intervals exclude 0.5 ({excluded / n:.0%}); over {sets} non-member sets "
        f"the shares are {_shares_text(shares)}"
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
    return claim_record(
        "P2",
        paper,
        ours,
        verdict,
        reason if passed is not None else f"{sets} non-member set(s): too few units to test; " + reason,
        null="no null applies: the control is itself a test against chance "
        "(a one-sided t-test of the non-member sets' shares against the 5% rate)",
        observed=f"{excluded}/{n} in {sets} sets",
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
    ``setting`` chosen by that rule (:func:`~.instrument_cells.rule_setting`): it agrees when memorization is there
    (the vanilla attack's interval above 0.5) and the probe's interval is above 0.5 too; its null permutes
    membership across that run's probed queries (``null_lower_bounds``: ``"<run key>@<epoch>"`` -> the
    probe's permuted lower bounds there). It differs when memorization is there and the probe does
    not see it; without memorization it is inconclusive (nothing to detect). ``null_selection``
    (:func:`~.instrument_cells.selection_null`, :func:`~.instrument_cells.rule_selection_null`): the setting each
    null draw chooses; the null rate then reads draw ``i``'s probe bound at draw ``i``'s own choice, so the choice is
    paid for in the null. P2 (:func:`p2_record`) passes when the null-halves intervals exclude 0.5 no more often than
    chance (:func:`~.controls.negative_control`).
    """
    return [p1_record(curve, null_lower_bounds, null_selection, setting, rule), p2_record(negative)]


def _p3_null_rate(
    control: pd.DataFrame,
    controlled: Mapping[str, pd.DataFrame],
    keys: list,
    outcome_rule: str,
    n_permutations: int,
    seed: int,
    n_boot: int,
) -> float:
    """P3's null rate: the share of membership permutations of the control's rows ``keys`` in which every one of them
    reads detectable."""
    null = null_summaries(
        control[control.set_index(["run_key", "epoch"]).index.isin(keys)],
        dict(controlled),
        NullDraws(n_permutations, seed, n_boot),
        reading=outcome_rule,
        progress=False,
    )
    per_draw = null.groupby("perm").outcome.apply(lambda o: bool((o == DETECTABLE).all()))
    return float(per_draw.mean())


def _p3_why(agrees: bool, none_kept: bool) -> str:
    """Why P3 reads as it does: all, none or some of the detectable M rows stay detectable under the control."""
    return (
        "every M row that reads detectable as built stays detectable when the non-members also carry shuffled labels: "
        "the M signal is membership, not the label type"
        if agrees
        else "none of the M rows that read detectable as built stays detectable when the non-members also carry "
        "shuffled labels: the M signal separates shuffled from true labels, not members from non-members"
        if none_kept
        else "some M rows that read detectable as built lose it under the control: part of the M signal is label type"
    )


def p3_record(
    table: pd.DataFrame,
    control: pd.DataFrame,
    controlled: Mapping[str, pd.DataFrame],
    outcome_rule: str,
    n_permutations: int,
    seed: int = 0,
    n_boot: int = 200,
) -> dict:
    """P3: the M rows that read detectable stay detectable when the non-members too carry shuffled labels.

    It agrees when every M row detectable as built is detectable under the control; it differs when none is; in
    between it is inconclusive. Its null permutes membership across each run's probed queries of the control (there
    both pools carry shuffled labels, so they are exchangeable without memorization) and reads the same rule;
    ``n_permutations = 0`` gives no null.
    """
    paper = "(the book's control of condition M; the paper reads M rows as memorization, Tab. 3, 10, 11)"
    if table.empty:
        return claim_record("P3", paper, "no M row", "not testable here", "the grid has no non-collapsed M row")
    hit = table[table.outcome == DETECTABLE]
    if hit.empty:
        n_control = int((table["control outcome"] == DETECTABLE).sum())
        return claim_record(
            "P3",
            paper,
            f"no M row of {len(table)} reads detectable as built ({n_control} under the control)",
            "not testable here",
            "no M row reads detectable: there is no M signal to control",
        )
    kept = hit[hit["control outcome"] == DETECTABLE]
    keys = list(zip(hit.run_key, hit.epoch, strict=True))
    values = "; ".join(
        f"{r['dataset']} Q={r['query_size']} lr {r['learning_rate']:g} epoch {int(r['epoch'])}: {r['AUC']:.3f} -> "
        f"{r['control AUC']:.3f} [{r['control lo']:.3f}, {r['control hi']:.3f}]"
        for r in hit.to_dict("records")
    )
    ours = f"{len(kept)} of {len(hit)} M rows detectable as built stay detectable under the control ({values})"
    agrees = len(kept) == len(hit)
    rate = (
        _p3_null_rate(control, controlled, keys, outcome_rule, n_permutations, seed, n_boot) if n_permutations else None
    )
    verdict = (
        evidence_verdict(agrees, rate, contradicted=kept.empty)
        if rate is not None
        else ("inconclusive" if agrees or not kept.empty else "differs")
    )
    why = _p3_why(agrees, kept.empty)
    return claim_record(
        "P3",
        paper,
        ours,
        verdict,
        why,
        null=(
            "membership permuted across each run's probed queries under the control (both pools on shuffled labels); "
            "the rule reads the same rows"
            if rate is not None
            else None
        ),
        observed=f"{len(kept)}/{len(hit)}",
        null_rate=rate,
        null_draws=n_permutations if rate is not None else None,
    )
