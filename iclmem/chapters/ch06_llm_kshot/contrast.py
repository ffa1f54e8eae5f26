"""Golchin et al. 2024, Sec. 5.1 and 5.2: memorization net of non-members, the reading of every claim whose basis is
:data:`~iclmem.chapters.ch06_llm_kshot.basis.NET` (D1-D5, D7; :mod:`~iclmem.chapters.ch06_llm_kshot.basis`).

The paper had no membership ground truth: its rates count every near-exact match, including those a model gets on
rows it never saw (templates, predictable fields, guessing). The controlled experiment of notebook 06 has non-members,
so a claim about memorization reads the member rate minus the non-member rate under the same prompt
(:func:`excess_rise`): for a rise from zero-shot to k shots, ``(member - non-member at k) - (member - non-member at
k = 0)``; for two settings (D4, D5), ``(member - non-member in one) - (member - non-member in the other)``; for the
transitions of D3, the shares of an instance's (setting, consecutive k) pairs that turn exact and that turn back.

Its interval at small n is closed form: Newcombe's hybrid score interval of each member-minus-non-member difference
(an instance's share over the ks counts as a fractional success), the two combined by MOVER
(:mod:`iclmem.stats.intervals`); from :data:`BOOTSTRAP_MIN_N` instances per group, a stratified percentile bootstrap
over instances (members and non-members resampled apart, an instance keeping all its ks). :func:`excess_draws` computes
the same rule on many null draws at once. The null of a net rise permutes membership across the model's instances
(:func:`excess_rise_null`, :func:`net_contrast`), each draw judged by the same rule; the nulls of the net equalities
(D4, D5) and of D7's net curve exchange what those claims contrast (:mod:`~iclmem.chapters.ch06_llm_kshot.equality`,
:mod:`~iclmem.chapters.ch06_llm_kshot.correlation`).

Also "memorization present" net of non-members (:func:`excess_level`, :func:`net_presence_draws`), which the
equalities D4 and D5 need, and the reason's sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.matrices import Focus, memorization_matrix
from iclmem.chapters.ch06_llm_kshot.nulls import (
    ClaimNull,
    null_of,
    null_rng,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    CONFIDENCE,
    NULL_BOOT,
    ClaimDraws,
    Interval,
    quiet,
)
from iclmem.report.verdicts import (
    directional_answers,
    summarize_null,
)
from iclmem.stats.intervals import mover, newcombe, percentile_interval, stratified_indices

#: Per group (members, non-members), the fewest instances at which an interval is a percentile bootstrap over
#: instances; below it, Newcombe's hybrid score intervals combined by MOVER (a bootstrap over a handful of 0/1
#: instances gives intervals that are too narrow, often [0, 0]).
BOOTSTRAP_MIN_N = 30


#: An equality claim (D4, D5) needs memorization present before it can be reproduced: with membership ground truth,
#: the member-minus-non-member level of the highest compared setting must have its Newcombe interval above this many
#: points (below it, settings are "equal" by the floor). The companion's choice, equal to the equality margin.
PRESENCE_FLOOR = 10.0


def membership(mem: pd.DataFrame, focus: Focus, index: pd.Index) -> np.ndarray:
    """Per instance of ``index``: is it a member of the focus model's fine-tuning set?"""
    flags = focus.rows(mem, False).groupby("instance_id")["member"].first().astype(bool)
    return flags.reindex(index).fillna(False).to_numpy(dtype=bool)


def has_ground_truth(member: np.ndarray) -> bool:
    """Both members and non-members among the instances: the member-minus-non-member reading applies."""
    return bool(member.any() and (~member).any())


def ground_truth(mem: pd.DataFrame, focus: Focus) -> bool:
    """Does the focus model have members and non-members among its instances (Sec. 5: a controlled fine-tune), so that
    a claim can be read net of non-members?"""
    flags = focus.rows(mem, False).groupby("instance_id")["member"].first().astype(bool).to_numpy()
    return has_ground_truth(flags)


def excess_level(
    mem: pd.DataFrame, focus: Focus, settings: list[str], ks: list[int]
) -> tuple[str, float, float, float] | None:
    """(setting, estimate, lo, hi) in points: the highest member-minus-non-member memorization over ``ks`` among
    ``settings`` of the focus model, with its Newcombe interval (an instance's share over the ks a fractional success);
    ``None`` without membership ground truth."""
    best = None
    for setting in settings:
        m = memorization_matrix(mem, focus, [setting], members_only=False)
        share = m.reindex(columns=ks).mean(axis=1, skipna=True).dropna()
        member = membership(mem, focus, share.index)
        if not has_ground_truth(member):
            return None
        x = share.to_numpy()
        k_m, n_m, k_n, n_n = x[member].sum(), member.sum(), x[~member].sum(), (~member).sum()
        est = 100 * (k_m / n_m - k_n / n_n)
        lo, hi = (100 * float(b) for b in newcombe(k_m, n_m, k_n, n_n))
        if best is None or est > best[1]:
            best = (setting, float(est), lo, hi)
    return best


def net_presence_draws(shares: np.ndarray, member: np.ndarray, floor: float = PRESENCE_FLOOR) -> np.ndarray:
    """Per draw: does the highest member-minus-non-member level among the settings have its Newcombe interval above
    ``floor`` points (:func:`excess_level`'s rule)? ``shares``: draws x settings x instances, each instance's share
    (0-1) over the ks compared (NaN: not run)."""
    fin = np.isfinite(shares)
    m, nn = fin & member, fin & ~member
    k_m, n_m = np.where(m, shares, 0.0).sum(axis=-1), m.sum(axis=-1)
    k_n, n_n = np.where(nn, shares, 0.0).sum(axis=-1), nn.sum(axis=-1)
    with quiet():
        est = k_m / n_m - k_n / n_n
        lo, _ = newcombe(k_m, n_m, k_n, n_n)
    top = np.argmax(np.where(np.isfinite(est), est, -np.inf), axis=1)
    return np.take_along_axis(lo, top[:, None], axis=1)[:, 0] * 100 > floor


def presence_text(level: tuple[str, float, float, float] | None, floor: float = PRESENCE_FLOOR) -> str:
    """The reason's sentence on memorization present net of non-members ("" without membership ground truth: the raw
    level decides, and the record's basis sentence says so)."""
    if level is None:
        return ""
    setting, est, lo, hi = level
    side = "above" if lo > floor else "not above"
    return (
        f" Net of non-members, the highest setting ({setting}) memorizes {est:+.0f} points, Newcombe interval "
        f"[{lo:+.0f}, {hi:+.0f}]: {side} the presence floor of {floor:g} points"
        + ("." if lo > floor else ", so equality cannot be told from the floor: inconclusive.")
    )


@dataclass(frozen=True)
class Excess:
    """A member-minus-non-member contrast (a rise, or a difference of settings), in points, with its 95% interval."""

    estimate: float
    lo: float
    hi: float
    member_rise: float
    non_member_rise: float
    n_members: int
    n_non_members: int
    method: str

    def bounds(self) -> str:
        return f"[{self.lo:+.0f}, {self.hi:+.0f}] points"

    def text(self) -> str:
        return f"{self.bounds()}, {self.method}"

    def interval(self) -> Interval:
        """Its bounds as an :class:`~iclmem.chapters.ch06_llm_kshot.rules.Interval` over all its instances, for the
        rules' sentences (:func:`~iclmem.chapters.ch06_llm_kshot.rules.equivalence_why`)."""
        return Interval(self.lo, self.hi, self.n_members + self.n_non_members, 0, 0, 0)


@dataclass(frozen=True)
class StratifiedInterval(Interval):
    """A percentile bootstrap interval over instances with members and non-members resampled apart (D7's net r)."""

    n_members: int = 0
    n_non_members: int = 0

    def method(self) -> str:
        return (
            f"{self.level:.0%} stratified percentile bootstrap over instances ({self.n_members} members, "
            f"{self.n_non_members} non-members resampled apart), {self.n_boot} resamples, seed {self.seed}"
        )


def stratified_interval(reps: np.ndarray, n_m: int, n_n: int, seed: int) -> StratifiedInterval | None:
    """The percentile interval of a statistic's stratified resamples ``reps`` (undefined ones dropped; ``None`` when
    fewer than half are defined, as :func:`~iclmem.chapters.ch06_llm_kshot.rules.instance_interval`)."""
    reps = np.asarray(reps, float)
    ok = np.isfinite(reps)
    if ok.sum() < len(reps) / 2 or min(n_m, n_n) < 2:
        return None
    lo, hi = percentile_interval(reps[ok], CONFIDENCE)
    return StratifiedInterval(lo, hi, n_m + n_n, len(reps), int(ok.sum()), seed, CONFIDENCE, n_m, n_n)


def _closed_form(after: np.ndarray, before: np.ndarray, member: np.ndarray) -> tuple[np.ndarray, ...]:
    """(estimate, lo, hi) in points of the excess rise per row of ``member`` (draws x instances; ``after`` and
    ``before`` one row for all draws or one per draw), Newcombe + MOVER."""
    n_m = member.sum(axis=-1)
    n_n = member.shape[-1] - n_m
    a_m, b_m = (member * after).sum(axis=-1), (member * before).sum(axis=-1)
    a_n, b_n = after.sum(axis=-1) - a_m, before.sum(axis=-1) - b_m
    with np.errstate(invalid="ignore", divide="ignore"):
        e_a, e_b = a_m / n_m - a_n / n_n, b_m / n_m - b_n / n_n
    lo_a, hi_a = newcombe(a_m, n_m, a_n, n_n)
    lo_b, hi_b = newcombe(b_m, n_m, b_n, n_n)
    lo, hi = mover(e_a, lo_a, hi_a, e_b, lo_b, hi_b)
    return 100 * (e_a - e_b), 100 * lo, 100 * hi


def excess_rise(after: np.ndarray, before: np.ndarray, member: np.ndarray, n_boot: int, seed: int) -> Excess:
    """The rise ``after - before`` (per-instance memorization shares, 0-1) of the members minus that of the
    non-members, in points, with its interval (module docstring). Instances with an undefined share are left out."""
    ok = np.isfinite(after) & np.isfinite(before)
    after, before, member = after[ok], before[ok], member[ok]
    rise = after - before
    n_m, n_n = int(member.sum()), int((~member).sum())
    est, lo, hi = (float(x) for x in _closed_form(after, before, member))
    method = (
        f"Newcombe hybrid score intervals of member minus non-member, combined by MOVER ({n_m} members, {n_n} "
        f"non-members; fewer than {BOOTSTRAP_MIN_N} per group)"
    )
    if min(n_m, n_n) >= BOOTSTRAP_MIN_N:
        im, inn = stratified_indices(n_m, n_n, n_boot, seed)
        reps = (rise[member][im].mean(axis=1) - rise[~member][inn].mean(axis=1)) * 100
        lo, hi = percentile_interval(reps, CONFIDENCE)
        method = (
            f"{CONFIDENCE:.0%} stratified percentile bootstrap over instances ({n_m} members, {n_n} non-members "
            f"resampled apart), {n_boot} resamples, seed {seed}"
        )
    return Excess(est, lo, hi, float(rise[member].mean() * 100), float(rise[~member].mean() * 100), n_m, n_n, method)


def excess_draws(
    after: np.ndarray,
    before: np.ndarray,
    member: np.ndarray,
    rng: np.random.Generator,
    order: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, lo, hi) in points of :func:`excess_rise`'s contrast on each null draw, with the interval it would
    use (closed form below :data:`BOOTSTRAP_MIN_N` per group, else a :data:`NULL_BOOT`-resample stratified bootstrap).

    ``after``, ``before`` (finite shares, 0-1) and ``member`` broadcast to draws x instances (one row for all draws or
    one per draw); every row has the same number of members. ``order``: per draw, its instances with the members first
    (default: from ``member``)."""
    member = np.asarray(member, bool)
    shape = np.broadcast_shapes(np.shape(after), np.shape(before), member.shape)
    shape = shape if len(shape) == 2 else (1, *shape)
    after_d, before_d, member_d = (np.broadcast_to(x, shape) for x in (after, before, member))
    est, lo, hi = _closed_form(after_d, before_d, member_d)
    n_draws, n = shape
    n_m = int(member_d[0].sum())
    n_n = n - n_m
    if min(n_m, n_n) >= BOOTSTRAP_MIN_N:
        order = np.argsort(~member_d, axis=1, kind="stable") if order is None else order
        rise = after_d - before_d
        rows = np.arange(n_draws)[:, None, None]
        pick_m = np.take_along_axis(order[:, None, :n_m], rng.integers(0, n_m, (n_draws, NULL_BOOT, n_m)), axis=2)
        pick_n = np.take_along_axis(order[:, None, n_m:], rng.integers(0, n_n, (n_draws, NULL_BOOT, n_n)), axis=2)
        reps = (rise[rows, pick_m].mean(axis=2) - rise[rows, pick_n].mean(axis=2)) * 100
        a = (1 - CONFIDENCE) / 2
        lo, hi = np.quantile(reps, [a, 1 - a], axis=1)
    return est, lo, hi


def excess_rise_null(
    after: np.ndarray, before: np.ndarray, member: np.ndarray, rng: np.random.Generator, n_perm: int
) -> tuple[np.ndarray, np.ndarray]:
    """(estimates, agrees) of the excess rise's directional rule on ``n_perm`` draws with membership permuted across
    the instances (group sizes kept), each judged with the interval :func:`excess_rise` would use."""
    ok = np.isfinite(after) & np.isfinite(before)
    after, before, member = after[ok], before[ok], member[ok]
    n, n_m = len(member), int(member.sum())
    order = np.argsort(rng.random((n_perm, n)), axis=1)
    drawn = np.zeros((n_perm, n), dtype=bool)
    np.put_along_axis(drawn, order[:, :n_m], True, axis=1)
    est, lo, hi = excess_draws(after, before, drawn, rng, order)
    return est, directional_answers(est, lo, hi)[0]


def excess_why(ex: Excess, agrees: bool, what: str) -> str:
    if agrees:
        return f"{what} is positive and its interval lies above 0"
    if ex.estimate > 0:
        return (
            f"{what} has the claimed sign but its interval includes 0: not distinguishable from no effect with "
            f"{ex.n_members} members and {ex.n_non_members} non-members"
        )
    if ex.hi < 0:
        return f"{what} is {ex.estimate:+.2g} points, not in the claimed direction, and its interval excludes 0"
    return (
        f"{what} is {ex.estimate:+.2g} points, not in the claimed direction, but its interval reaches 0: inside the "
        f"noise with {ex.n_members} members and {ex.n_non_members} non-members"
    )


def net_contrast(
    claim_id: str,
    after: np.ndarray,
    before: np.ndarray,
    member: np.ndarray,
    draws: ClaimDraws,
    observed: str,
) -> tuple[Excess, bool, bool, ClaimNull]:
    """A directional claim read net of non-members (Sec. 5.1): ``after - before`` of the members minus that of the
    non-members (:func:`excess_rise`, ``draws.n_boot`` resamples), the directional rule's answers (agrees,
    contradicted) and its null, the member labels permuted across the instances (:func:`excess_rise_null`,
    ``draws.n_perm`` draws); ``observed`` names the statistic."""
    n_perm, seed = draws.n_perm, draws.seed
    ex = excess_rise(after, before, member, draws.n_boot, seed)
    agrees, contradicted = (bool(a) for a in directional_answers(ex.estimate, ex.lo, ex.hi))
    null_est, null_agrees = excess_rise_null(after, before, member, null_rng(seed, claim_id), n_perm)
    summary = summarize_null(ex.estimate, null_est, null_agrees)
    nul = null_of(
        summary,
        agrees,
        (
            "membership exchangeable across the model's instances (which rows were fine-tuned on carries nothing): the "
            f"member labels permuted across its {ex.n_members + ex.n_non_members} instances, group sizes kept; "
            f"{n_perm} draws (seed {seed}), each judged by the same rule and interval"
        ),
        f"{observed}: {ex.estimate:+.1f} points",
    )
    return ex, agrees, contradicted, nul


def rise_excess(
    claim_id: str,
    mem: pd.DataFrame,
    focus: Focus,
    settings: list[str] | None,
    shot_ks: Sequence[int],
    draws: ClaimDraws,
) -> tuple[Excess, bool, bool, ClaimNull] | None:
    """Memorization at ``shot_ks`` (mean) minus zero-shot, members minus non-members of the focus model (D1, D2;
    Sec. 5.1, Obs. 1-2), with its rule's answers and membership-permutation null (:func:`net_contrast`); ``None`` when
    the model has no membership ground truth."""
    m = memorization_matrix(mem, focus, settings, members_only=False)
    member = membership(mem, focus, m.index)
    if not has_ground_truth(member) or 0 not in m.columns:
        return None
    x = m.to_numpy()
    with quiet():
        after = np.nanmean(x[:, [list(m.columns).index(k) for k in shot_ks]], axis=1)
    before = x[:, list(m.columns).index(0)]
    return net_contrast(claim_id, after, before, member, draws, "members minus non-members, rise")


__all__ = [
    "BOOTSTRAP_MIN_N",
    "PRESENCE_FLOOR",
    "membership",
    "has_ground_truth",
    "ground_truth",
    "excess_level",
    "net_presence_draws",
    "presence_text",
    "Excess",
    "StratifiedInterval",
    "stratified_interval",
    "excess_rise",
    "excess_draws",
    "excess_rise_null",
    "excess_why",
    "net_contrast",
    "rise_excess",
]
