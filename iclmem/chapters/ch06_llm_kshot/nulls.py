"""Golchin et al. 2024, Sec. 5: the permutation nulls of the claims D1-D8 (notebook 06).

Each claim's null is a world in which the claim is false, built from the build's own instances; every null draw is
judged by the claim's own rule. Vectorized over draws.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclmem.chapters.ch06_llm_kshot.rules import (
    CONFIDENCE,
    NULL_BOOT,
    ClaimDraws,
    quiet,
)
from iclmem.report.records import ClaimResult
from iclmem.report.verdicts import (
    NullSummary,
    directional_answers,
    evidence_verdict,
    summarize_null,
)
from iclmem.stats.permutation import NULL_LEVEL


def null_rng(seed: int, claim_id: str) -> np.random.Generator:
    """The null's generator of one claim, seeded by the claim's ``seed`` and its number (claims draw apart)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(claim_id.lstrip("D")), 0x6E756C6C]))


def draw_chunks(n_draws: int, per_draw: int, budget: int = 4_000_000) -> Iterator[slice]:
    """Slices of the draws so that a chunk holds at most ``budget`` numbers (``per_draw`` each)."""
    step = max(1, budget // max(1, per_draw))
    for start in range(0, n_draws, step):
        yield slice(start, min(n_draws, start + step))


def row_permutations(rng: np.random.Generator, n_perm: int, n: int, size: int) -> np.ndarray:
    """``(n_perm, n, size)``: an independent uniform permutation of ``range(size)`` per draw and instance."""
    return np.argsort(rng.random((n_perm, n, size)), axis=-1)


def permute_within(x: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """``x`` (instances x labels x ...) with each instance's labels (axis 1) reordered by ``perms`` (draws x instances x
    labels): ``(draws, instances, labels, ...)``."""
    return x[np.arange(x.shape[0])[None, :, None], perms]


def row_intervals(reps: np.ndarray, level: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each row of ``reps`` (draws x resamples), as
    :func:`~iclmem.chapters.ch06_llm_kshot.rules.instance_interval` takes it: undefined resamples dropped, NaN where
    fewer than half are defined."""
    reps = np.asarray(reps, float)
    finite = np.isfinite(reps)
    enough = finite.sum(axis=-1) >= reps.shape[-1] / 2
    alpha = (1 - level) / 2
    with quiet():
        lo, hi = np.nanquantile(np.where(finite, reps, np.nan), [alpha, 1 - alpha], axis=-1)
    return np.where(enough, lo, np.nan), np.where(enough, hi, np.nan)


def null_boot(rng: np.random.Generator, n_draws: int, n: int) -> np.ndarray:
    """``(n_draws, NULL_BOOT, n)``: each null draw's own bootstrap resamples of the ``n`` instances (independent across
    draws, so that the null rate is a plain binomial share of independent draws)."""
    return rng.integers(0, n, (n_draws, NULL_BOOT, n), dtype=np.int32)


def gather_resamples(values: np.ndarray, boot: np.ndarray) -> np.ndarray:
    """``values`` (draws x instances x ...) gathered along the instances by each draw's resamples ``boot`` (draws x
    resamples x instances): (draws x resamples x instances x ...)."""
    return values[np.arange(len(values))[:, None, None], boot]


def reduce_rows(contrasts: np.ndarray, boot: np.ndarray, total: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per draw (rows of ``contrasts``, draws x instances): the mean (``total``: sum) over instances, and over each of
    the draw's resamples ``boot`` (draws x resamples x instances). NaN contrasts are left out of a mean, as in the
    claims' statistics."""
    reduce = np.sum if total else np.nanmean
    reps = np.empty(boot.shape[:2])
    with quiet():
        est = reduce(contrasts, axis=1)
        for sl in draw_chunks(len(contrasts), boot[0].size):
            reps[sl] = reduce(gather_resamples(contrasts[sl], boot[sl]), axis=-1)
    return est, reps


def directional_null(
    contrasts: np.ndarray, boot: np.ndarray, sign: int = 1, total: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(estimate, agrees) of the directional rule on each null draw of per-instance contrasts (draws x instances)."""
    est, reps = reduce_rows(contrasts, boot, total)
    lo, hi = row_intervals(reps)
    return est, directional_answers(est, lo, hi, sign)[0]


def gain_null(
    x: np.ndarray, gain_cols: Sequence[int], zero_col: int, est: float, claim_id: str, draws: ClaimDraws
) -> NullSummary:
    """The null of a "k > 0 minus zero-shot" contrast (D1, D6; Sec. 5.1 Obs. 1, Sec. 5.2 Obs. 1): each instance's k
    labels (columns of ``x``) permuted, the contrast of the permuted columns judged by the directional rule in every
    draw (``draws.n_perm`` draws seeded by ``draws.seed`` and the claim)."""
    rng = null_rng(draws.seed, claim_id)
    xp = permute_within(x, row_permutations(rng, draws.n_perm, len(x), x.shape[1]))
    with quiet():
        contrasts = (np.nanmean(xp[..., list(gain_cols)], axis=-1) - xp[..., zero_col]) * 100
    null_est, null_agrees = directional_null(contrasts, null_boot(rng, draws.n_perm, len(x)))
    return summarize_null(est, null_est, null_agrees)


def present_above(levels: np.ndarray, boot: np.ndarray, margin: float) -> np.ndarray:
    """Per null draw: does the higher of the settings' mean levels have its interval above ``margin``? ``levels``:
    per-instance levels in points, settings x instances (the same in every draw) or settings x draws x instances."""
    levels = np.asarray(levels, float)
    if levels.ndim == 2:
        levels = np.broadcast_to(levels[:, None], (len(levels), len(boot), levels.shape[1]))
    top = np.max([reduce_rows(setting, boot)[1] for setting in levels], axis=0)  # draws x resamples
    return row_intervals(top)[0] > margin


def keep_share(level: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The share of a setting's memorization to keep so that its mean ``level`` falls to ``target`` (clipped to [0, 1];
    1 where the level is 0 or already at or below the target)."""
    with quiet():
        keep = np.asarray(target, float) / np.asarray(level, float)
    return np.where(np.asarray(level) > 0, np.clip(np.nan_to_num(keep, nan=1.0), 0.0, 1.0), 1.0)


def thin(rng: np.random.Generator, values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``values`` (memorization, 0-1) with each cell kept with probability ``keep`` (broadcast) and set to 0 otherwise
    (NaN stays NaN): memorized completions dropped at random, as in a build whose setting surfaces less."""
    return np.where((rng.random(values.shape) < keep) | np.isnan(values), values, 0.0)


def rate_why(agrees: bool | None, rate: float, n: int) -> str:
    """The reason's sentence on the null rate."""
    if agrees is None:
        return ""
    if not agrees:
        return f" Under the null the same rule says reproduced in {rate:.0%} of {n} draws."
    if rate <= NULL_LEVEL + 1e-12:
        return f" Under the null the same rule says so in {rate:.0%} of {n} draws (at most {NULL_LEVEL:.0%})."
    return (
        f" But under the null the same rule says so in {rate:.0%} of {n} draws (more than {NULL_LEVEL:.0%}): chance "
        "alone gives this answer too often, so the verdict is inconclusive."
    )


def range_text(summary: NullSummary, fmt: str = "{:+.0f}", unit: str = " points") -> str:
    return f"[{fmt.format(summary.lo)}, {fmt.format(summary.hi)}]{unit} over {summary.n} draws"


@dataclass(frozen=True)
class ClaimNull:
    """A D claim's null as its record carries it, and the reason's sentence on its rate (all empty: no null
    computed)."""

    null: str | None = None
    observed: str | None = None
    null_range: str | None = None
    null_rate: float | None = None
    why: str = ""

    def fields(self) -> dict[str, Any]:
        return {
            "null": self.null,
            "observed": self.observed,
            "null_range": self.null_range,
            "null_rate": self.null_rate,
        }


def null_of(summary: NullSummary, agrees: bool | None, null: str, observed: str, unit: str = " points") -> ClaimNull:
    """The :class:`ClaimNull` of a claim whose null is one :class:`NullSummary` (its range in ``unit``)."""
    return ClaimNull(
        null, observed, range_text(summary, unit=unit), summary.rate, rate_why(agrees, summary.rate, summary.n)
    )


def judged_record(
    claim_id: str,
    paper: str,
    ours: str,
    reason: str,
    answers: tuple[bool | None, bool],
    nul: ClaimNull,
    interval: str | None,
) -> ClaimResult:
    """A D claim's record (Sec. 5): its verdict from the rule's ``answers`` on the build, (agrees, contradicted) as
    :func:`~iclmem.chapters.ch06_llm_kshot.rules.directional_agreement` gives them, and the null rate
    (:func:`iclmem.report.verdicts.evidence_verdict`), with the null's fields."""
    agrees, contradicted = answers
    verdict = evidence_verdict(agrees, nul.null_rate, contradicted=contradicted)
    return ClaimResult(claim_id, paper, ours, verdict, reason, interval, **nul.fields())


__all__ = [
    "judged_record",
    "null_rng",
    "draw_chunks",
    "row_permutations",
    "permute_within",
    "row_intervals",
    "null_boot",
    "gather_resamples",
    "reduce_rows",
    "directional_null",
    "gain_null",
    "present_above",
    "keep_share",
    "thin",
    "rate_why",
    "range_text",
    "ClaimNull",
    "null_of",
]
