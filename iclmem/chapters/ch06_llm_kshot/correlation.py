"""Golchin et al. 2024, Sec. 5.2 (Observations 2 and 3), Tab. 2: the steps of the claims D7 (Pearson r of accuracy and
memorization across k, per setting; read net of non-members where the model has them,
:func:`net_setting_correlations`) and D8 (accuracy on memorized vs non-memorized instances), notebook 06.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iclmem.chapters.ch06_llm_kshot.contrast import StratifiedInterval, stratified_interval
from iclmem.chapters.ch06_llm_kshot.nulls import (
    ClaimNull,
    draw_chunks,
    gather_resamples,
    null_boot,
    null_of,
    null_rng,
    permute_within,
    range_text,
    rate_why,
    row_intervals,
    row_permutations,
)
from iclmem.chapters.ch06_llm_kshot.paper import SHORT_SETTINGS
from iclmem.chapters.ch06_llm_kshot.rules import (
    NULL_BOOT,
    ClaimDraws,
    Interval,
    instance_interval,
    pearson,
    pearson_rows,
    quiet,
)
from iclmem.report.verdicts import directional_answers, summarize_null
from iclmem.stats.intervals import stratified_indices

#: D7's "very strong" correlation (Obs. 3: "Pearson coefficients provide very strong evidence"): r >= 0.8, the usual
#: lower bound of "very strong" (Evans 1996). The paper states no number; its positive Tab. 2 values are 0.88-1.00.
VERY_STRONG_R = 0.8


@dataclass(frozen=True)
class CurveReading:
    """D7's reading on the build that its null is set against (Sec. 5.2, Obs. 3): Pearson r per setting (``rs``), the
    settings whose r and interval are defined (``defined``), the "very strong" threshold on r (``strength``) and the
    rule's answer on the build (``agrees``)."""

    rs: dict[str, float]
    defined: list[str]
    strength: float
    agrees: bool


def k0_kept_permutations(rng: np.random.Generator, n_perm: int, n: int, ks: Sequence[int]) -> np.ndarray:
    """``(n_perm, n, len(ks))`` column orders that keep the k = 0 column in place and permute the ks > 0 within each
    instance (a uniform permutation per draw and instance)."""
    zero = list(ks).index(0)
    shots = [j for j in range(len(ks)) if j != zero]
    inner = row_permutations(rng, n_perm, n, len(shots))
    out = np.empty((n_perm, n, len(ks)), dtype=inner.dtype)
    out[..., zero] = zero
    out[..., shots] = np.asarray(shots)[inner]
    return out


def memorized_gap(
    cells: Sequence[tuple[np.ndarray, np.ndarray]], mem_idx: np.ndarray, acc_idx: np.ndarray
) -> np.ndarray:
    """D8's statistic for index arrays ``mem_idx`` (draws x resamples x instances, rows of the memorization) and
    ``acc_idx`` (the same shape, rows of the accuracy, paired with them): the mean over the (setting, k) cells
    holding both groups of accuracy on memorized minus non-memorized instances, in points (NaN when no cell has
    both)."""
    total = np.zeros(mem_idx.shape[:-1])
    count = np.zeros(mem_idx.shape[:-1])
    with quiet():
        for mcol, ccol in cells:
            mm, cc = mcol[mem_idx], ccol[acc_idx]
            ok = np.isfinite(mm) & np.isfinite(cc)
            hit, miss = ok & (mm > 0), ok & ~(mm > 0)
            n1, n0 = hit.sum(axis=-1), miss.sum(axis=-1)
            d = (np.where(hit, cc, 0.0).sum(axis=-1) / n1 - np.where(miss, cc, 0.0).sum(axis=-1) / n0) * 100
            valid = (n1 > 0) & (n0 > 0)
            total += np.where(valid, d, 0.0)
            count += valid
        return np.where(count > 0, total / count, np.nan)


def curve_null(
    acc: np.ndarray,
    mems: dict[str, np.ndarray],
    ks: list[int],
    reading: CurveReading,
    draws: ClaimDraws,
    member: np.ndarray | None = None,
) -> ClaimNull:
    """D7's null (Sec. 5.2, Obs. 3): memorization's k > 0 labels permuted within every instance (all settings alike),
    k = 0 and accuracy (instances x ks) kept; per draw, does every setting's r interval lie at or above
    ``reading.strength``? Its rate is the share of draws where every setting's r interval lies at or above it; its
    range, each defined setting's null r (``draws.n_perm`` draws seeded by ``draws.seed``).

    With ``member`` (D7 read net of non-members): ``mems`` hold all instances of the model and ``acc`` its members
    only (in the order of the members among them); every instance's k > 0 labels are permuted, members and
    non-members alike, the series is the members' mean minus the non-members' at each k, and the draws resample
    members and non-members apart, as :func:`net_setting_correlations`."""
    run, n_perm = list(mems), draws.n_perm
    rs, defined, strength = reading.rs, reading.defined, reading.strength
    # the null: memorization's k > 0 labels permuted within each instance (all settings alike), k = 0 and accuracy kept
    n = len(next(iter(mems.values())))
    rng = null_rng(draws.seed, "D7")
    perms = k0_kept_permutations(rng, n_perm, n, ks)
    if member is None:
        boot = null_boot(rng, n_perm, n)
        boot_m, boot_n = boot, None
    else:
        boot_m = rng.integers(0, int(member.sum()), (n_perm, NULL_BOOT, int(member.sum())), dtype=np.int32)
        boot_n = rng.integers(0, int((~member).sum()), (n_perm, NULL_BOOT, int((~member).sum())), dtype=np.int32)
    acc_all, acc_reps = np.nanmean(acc, axis=0), np.empty((n_perm, NULL_BOOT, len(ks)))  # ks; draws x resamples x ks
    step = n * NULL_BOOT * len(ks)
    with quiet():
        for sl in draw_chunks(n_perm, step):
            acc_reps[sl] = np.nanmean(acc[boot_m[sl]], axis=2)
    null_agrees = np.ones(n_perm, bool)
    ranges = []
    for s in run:
        mp = permute_within(mems[s], perms)  # draws x instances x ks
        r_reps = np.empty((n_perm, NULL_BOOT))
        with quiet():
            if member is None:
                r_est = pearson_rows(acc_all, np.nanmean(mp, axis=1))
                for sl in draw_chunks(n_perm, step):
                    r_reps[sl] = pearson_rows(acc_reps[sl], np.nanmean(gather_resamples(mp[sl], boot_m[sl]), axis=2))
            else:
                on, off = mp[:, member], mp[:, ~member]
                r_est = pearson_rows(acc_all, np.nanmean(on, axis=1) - np.nanmean(off, axis=1))
                for sl in draw_chunks(n_perm, step):
                    series = np.nanmean(gather_resamples(on[sl], boot_m[sl]), axis=2) - np.nanmean(
                        gather_resamples(off[sl], boot_n[sl]), axis=2
                    )
                    r_reps[sl] = pearson_rows(acc_reps[sl], series)
        lo, _ = row_intervals(r_reps)
        null_agrees &= np.isfinite(lo) & (lo >= strength)
        if s in defined:
            sm = summarize_null(rs[s], r_est, np.isfinite(lo) & (lo >= strength))
            ranges.append(f"{SHORT_SETTINGS[s]} {range_text(sm, '{:+.2f}', '')}")
    rate = float(null_agrees.mean())
    if member is None:
        null = (
            "memorization's curve over the ks > 0 unrelated to accuracy's, k = 0 kept: the k > 0 labels of the "
            "memorization permuted within every instance (the same in all its settings), k = 0 and accuracy as "
            f"observed; {draws.text}"
        )
    else:
        null = (
            "surfaced memorization's curve over the ks > 0 unrelated to accuracy's, net of non-members, k = 0 kept: "
            "the k > 0 labels of the memorization permuted within every instance, members and non-members alike (the "
            "same in all its settings), k = 0 and the members' accuracy as observed, the members' mean minus the "
            "non-members' recomputed at each k, members and non-members resampled apart; "
            f"{draws.text}"
        )
    basis = "" if member is None else "net of non-members; "
    observed = (
        ", ".join(f"{SHORT_SETTINGS[s]} r = {rs[s]:+.2f}" for s in defined)
        + f" ({basis}very strong: r >= {strength:g})"
    )
    return ClaimNull(null, observed, "; ".join(ranges), rate, rate_why(reading.agrees, rate, n_perm))


def net_setting_correlations(
    acc: np.ndarray, mems: dict[str, np.ndarray], member: np.ndarray, n_boot: int, seed: int
) -> tuple[dict[str, float], dict[str, StratifiedInterval | None], dict[str, float]]:
    """D7's Pearson r read net of non-members (Sec. 5.2, Obs. 3; Tab. 2): per setting, r across the ks of the
    members' mean accuracy (``acc``: members x ks, in the order of the members among ``mems``' rows) and surfaced
    memorization, the members' mean minus the non-members' at each k (``mems``: all instances x ks); its stratified
    bootstrap interval (members and non-members resampled apart, a member keeping its accuracy and memorization); and
    r without the first k (k = 0)."""
    n_m, n_n = int(member.sum()), int((~member).sum())
    im, inn = stratified_indices(n_m, n_n, n_boot, seed)
    with quiet():
        acc_series, acc_reps = np.nanmean(acc, axis=0), np.nanmean(acc[im], axis=1)  # ks; resamples x ks
    rs, cis, r_shots = {}, {}, {}
    for s, mx in mems.items():
        on, off = mx[member], mx[~member]
        with quiet():
            series = np.nanmean(on, axis=0) - np.nanmean(off, axis=0)
            reps = pearson_rows(acc_reps, np.nanmean(on[im], axis=1) - np.nanmean(off[inn], axis=1))
            r_shots[s] = pearson(acc_series[1:], series[1:])
        rs[s] = pearson(acc_series, series)
        cis[s] = stratified_interval(reps, n_m, n_n, seed)
    return rs, cis, r_shots


def setting_correlations(
    acc: np.ndarray, mems: dict[str, np.ndarray], n_boot: int, seed: int
) -> tuple[dict[str, float], dict[str, Interval | None], dict[str, float]]:
    """D7's Pearson r (Sec. 5.2, Tab. 2) of mean accuracy and mean memorization across the ks (columns of ``acc`` and
    of each setting's ``mems``), per setting: r, its interval over instances, and r without the first k (k = 0)."""
    rs, cis, r_shots = {}, {}, {}
    n = len(acc)
    for s, mx in mems.items():

        def stat(idx: np.ndarray, mx: np.ndarray = mx) -> float:
            return pearson(np.nanmean(acc[idx], axis=0), np.nanmean(mx[idx], axis=0))

        rs[s] = stat(np.arange(n))
        cis[s] = instance_interval(n, stat, n_boot, seed)
        with quiet():
            r_shots[s] = pearson(np.nanmean(acc[:, 1:], axis=0), np.nanmean(mx[:, 1:], axis=0))
    return rs, cis, r_shots


def r_intervals_text(cis: dict[str, Interval | None], run: list[str], defined: list[str]) -> str:
    """D7's interval field: each setting's r interval (``undefined`` where none) and the bootstrap's method."""
    method = next(cis[s].method() for s in defined)
    interval = "; ".join(
        f"{SHORT_SETTINGS[s]} " + (cis[s].bounds("{:.2f}", "") if cis[s] else "undefined") for s in run
    )
    return interval + f" (r recomputed per resample; {method})"


def memorized_gap_null(
    cells: list[tuple[str, int, np.ndarray, np.ndarray]],
    est: float,
    agrees: bool | None,
    draws: ClaimDraws,
) -> ClaimNull:
    """D8's null (Sec. 5.2, Obs. 2): the instances of the memorization permuted against those of the accuracy (an
    instance's memorization moves whole); each draw judged by D8's rule on ``cells`` ((setting, k, memorization,
    accuracy) columns over the instances; ``draws.n_perm`` draws seeded by ``draws.seed``)."""
    n, n_perm = len(cells[0][2]), draws.n_perm
    rng = null_rng(draws.seed, "D8")
    perm = np.argsort(rng.random((n_perm, n)), axis=1)
    boot = null_boot(rng, n_perm, n)
    rows = np.concatenate([np.broadcast_to(np.arange(n), (n_perm, 1, n)), boot], axis=1)  # row 0: the whole sample
    values = np.empty(rows.shape[:2])
    pairs = [(mcol, ccol) for *_, mcol, ccol in cells]
    for sl in draw_chunks(n_perm, rows[0].size * len(pairs)):
        values[sl] = memorized_gap(pairs, gather_resamples(perm[sl], rows[sl]), rows[sl])
    null_est = values[:, 0]
    null_agrees = directional_answers(null_est, *row_intervals(values[:, 1:]))[0]
    summary = summarize_null(est, null_est, null_agrees)
    return null_of(
        summary,
        agrees,
        (
            "which instances are memorized unrelated to which are classified right: the instances of the "
            "memorization "
            "permuted against those of the accuracy (an instance's memorization moves whole, all settings and ks); "
            f"{draws.text}"
        ),
        f"memorized minus non-memorized accuracy: {est:+.1f} points",
    )


def r_without_zero_text(r_shots: dict[str, float], run: list[str]) -> str:
    """D7's r per setting over the ks > 0 only (Sec. 5.2, Tab. 2), ``undefined`` where it is not finite."""
    return ", ".join(
        f"{SHORT_SETTINGS[s]} {r_shots[s]:+.2f}" if np.isfinite(r_shots[s]) else f"{SHORT_SETTINGS[s]} undefined"
        for s in run
    )


def memorized_differences(
    cells: list[tuple[str, int, np.ndarray, np.ndarray]], idx: np.ndarray
) -> list[tuple[str, int, float]]:
    """D8's per-cell contrast (Sec. 5.2, Obs. 2) on the instances ``idx``: (setting, k, accuracy of memorized minus
    non-memorized instances in points) for each cell of ``cells`` holding both groups."""
    out = []
    for s, k, mcol, ccol in cells:
        mm, cc = mcol[idx], ccol[idx]
        ok = np.isfinite(mm) & np.isfinite(cc)
        hit = mm[ok] > 0
        if hit.any() and (~hit).any():
            out.append((s, k, float(cc[ok][hit].mean() - cc[ok][~hit].mean()) * 100))
    return out


def memorized_difference(cells: list[tuple[str, int, np.ndarray, np.ndarray]], idx: np.ndarray) -> float:
    """D8's statistic: the mean of :func:`memorized_differences` over the cells (NaN when no cell has both groups)."""
    d = memorized_differences(cells, idx)
    return float(np.mean([x for *_, x in d])) if d else float("nan")


__all__ = [
    "memorized_difference",
    "memorized_differences",
    "r_without_zero_text",
    "memorized_gap_null",
    "curve_null",
    "CurveReading",
    "net_setting_correlations",
    "VERY_STRONG_R",
    "k0_kept_permutations",
    "memorized_gap",
]
