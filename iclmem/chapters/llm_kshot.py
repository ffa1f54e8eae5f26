"""Golchin et al. 2024, "Memorization In In-Context Learning", Sec. 3-5, Tab. 1-3, Fig. 2-4; claims D1-D9.

The paper layer of notebook 06 (``notebooks/06_llm_kshot_replication.py``): what only that chapter needs,
apart from the engine (:mod:`iclmem.llm`, which never imports from here). Four parts:

* **the paper's reference values**: Tab. 2-3 (:data:`TABLE2`, :data:`TABLE3`), the memorization levels of
  Sec. 5.1 (:data:`MEMORIZATION_RANGES`, :data:`MEMORIZATION_NOTES`) and the constants the claims D1-D9 are
  formatted and checked with. Only numbers the paper states in its text and tables are here (GPT-4, 200
  instances per dataset); its figures are not digitized. The protocol (the k regimes, sizes, token budgets)
  is the engine's, in :mod:`iclmem.llm.protocol`;
* **the claims D1-D9** computed on this build's frames (below);
* **the figures**, the companions of the paper's Fig. 2-4 (:func:`plot_memorization`,
  :func:`plot_match_composition`, :func:`plot_performance_vs_memorization`);
* **the notebook's summaries**: the tables and glued numbers of the chapter's sections (sample, context
  window, judges, members vs non-members, correlations, claims, run).

The claims. Pure functions over the notebook's frames: ``mem`` (one judged memorization completion per model,
setting, k and instance: columns ``model, setting, k, instance_id, member, match``;
:func:`~iclmem.llm.replication.run_memorization` then :func:`~iclmem.llm.replication.add_judgement`) and ``perf``
(one classification answer per model, k and instance: ``model, k, instance_id, member, correct, error``;
:func:`~iclmem.llm.replication.run_performance`). Each ``claim_dN`` returns a :class:`ClaimResult`, the fields of
:func:`iclmem.chapters.claims.glue_claim`; the paper's values are formatted from the reference values above.

What is checked. The paper measured GPT-4 on WNLI, RTE, TREC and DBpedia; this build runs another model on
other data, so its *levels* are not comparable and each claim is checked for its **direction** (or equality)
on the rows of one :class:`Focus`: by default the fine-tuned model on its fine-tuning members (the rows a
model is known to have seen, the controlled analogue of GPT-4's training data).

How a verdict is decided (uniformly; the five words of :data:`iclmem.chapters.claims.VERDICTS`, chosen by
:func:`iclmem.chapters.verdicts.evidence_verdict` from what the claim's rule says on the build and under its null):

* **the rule on the build.** A directional claim (an effect > 0) *agrees* when its 95% percentile bootstrap interval
  over instances lies above 0; it is *contradicted* when the estimate does not have the claimed sign; in between (the
  claimed sign, but the interval includes 0: not distinguishable from no effect at this many instances) it is inside
  the noise. An equality claim (D4, D5 at k >= 25) agrees when the interval of the difference lies within
  +-:data:`EQUIVALENCE_MARGIN` percentage points (a margin of this companion, not of the paper), is contradicted when
  it lies wholly outside, and is inside the noise when it straddles the margin. An equality also needs memorization
  to be there: when the compared level's interval does not lie above the margin, every setting is within the margin of
  the others by the floor (two settings at 0% are trivially "equal"), and the claim is ``inconclusive``;
* **the rule under the claim's null.** Each claim has a null, a world in which the claim is false, built from this
  build's instances: the labels the claim contrasts made exchangeable within an instance (the ks for D1-D3 and D6-D7,
  the settings for D5 at k = 0), or between instances where the claim contrasts instances (D8: memorized vs not); for
  an equality the settings are exchanged within an instance and one of them is then thinned (memorized completions
  dropped at random) until it lies a margin below the other (D4, D5 at k >= 25), since exchangeable settings are what
  an equality claims. :data:`~iclmem.stats.N_PERMUTATIONS` draws
  (``n_perm``), seeded by the claim's ``seed``; each draw is judged by the claim's own rule with a
  :data:`NULL_BOOT`-resample bootstrap. The *null rate* is the share of draws in which the rule says "reproduced";
* **the verdict.** ``reproduced`` when the rule agrees and its null rate is at most 5%; ``inconclusive`` when it
  agrees but the null rate is higher (chance alone gives that answer), or when the disagreement lies inside the
  noise; ``differs`` when the build clearly contradicts the claim; ``not testable here`` when the frames lack what
  the claim needs (a k, a setting, a human review; the reason names it). D9 (a single share) has no groups to
  exchange: no null applies, and its Wilson interval decides. No D claim holds by construction.

Bootstraps resample instances with replacement (paired: an instance keeps all its k, settings and answers),
seeded, :data:`N_BOOT` resamples; replicates where the statistic is undefined are dropped and the interval is
undefined when fewer than half remain. Each record carries its null: what is exchangeable, the observed statistic,
its central 95% under the null and the null rate (:class:`ClaimResult`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .. import stats as _stats
from ..llm.chat import ChatBackend
from ..llm.judges import SHIPPED_THRESHOLDS, Thresholds
from ..llm.prompts import SETTINGS
from ..llm.protocol import regime
from ..llm.replication import Experiment, context_fit, correlation_table, memorized_vs_not, runnable_ks, window_capacity
from ..stats import N_PERMUTATIONS, NULL_LEVEL
from .claims import VERDICTS, claim_record, null_rate_text
from .verdicts import NullSummary, evidence_verdict, share_agreement, share_text, summarize_null

# -- the paper's reference values (GPT-4, 200 instances per dataset) ---------------------------------------------
_ROWS = ["full", "pairs_labels", "pairs_only"]

# Tab. 2: Pearson correlation of performance and memorization (exact + near-exact) across regimes.
TABLE2 = pd.DataFrame(
    {"WNLI": [0.98, 1.00, 0.99], "TREC": [0.95, 0.91, 0.92], "DBpedia": [0.91, 0.88, 0.89], "RTE": [-0.55, -0.30, -0.30]},
    index=pd.Index(_ROWS, name="setting"),
)
# Tab. 3: the same with memorization counted by exact matches only.
TABLE3 = pd.DataFrame(
    {"WNLI": [0.97, 0.99, 0.97], "TREC": [0.87, 0.77, 0.82], "DBpedia": [0.88, 0.93, 0.89], "RTE": [-0.40, -0.50, -0.47]},
    index=pd.Index(_ROWS, name="setting"),
)

# Sec. 5.1, Observations 1-2 (memorization = exact + near-exact, percent of instances).
MEMORIZATION_RANGES = {"zero-shot": (11.0, 16.5), "few-shot": (18.0, 63.5), "many-shot": (24.0, 75.0)}
MEMORIZATION_NOTES = {
    "WNLI": "increases up to 75% at 200-shot",
    "RTE": "increases up to 24% at 200-shot",
    "TREC": "stays around 40% after 25-shot",
    "DBpedia": "stays around 53% after 25-shot",
}

# -- constants of the claims D1-D9 (/work/shared/claims.md) ---------------------------------------------------
# Sec. 5.1: "We use the second setting when discussing memorization in ICL, as it closely resembles standard ICL";
# the first (full information) is the upper bound, the third (only segment pairs) identifies the key element.
ICL_SETTING = "pairs_labels"
UPPER_BOUND_SETTING = "full"
KEY_ELEMENT_SETTING = "pairs_only"
# Sec. 5.1, Observation 2: "providing only a few demonstrations (e.g., 25 shots) sharply increases memorization".
SHARP_RISE_K = 25
MEMORIZATION_AT_200_SHOT = {"WNLI": 75.0, "RTE": 24.0}  # Observation 2, percent of instances
MEMORIZATION_PLATEAU_AFTER_25_SHOT = {"TREC": 40.0, "DBpedia": 53.0}  # Observation 2, "remains at around"
# Tab. 1: near-exact matches at the first k that are exact matches at the second k (full information setting).
NEAR_TO_EXACT_TRANSITIONS = {"WNLI": (25, 50), "DBpedia": (25, 50), "TREC": (25, 100)}
# Sec. 5.1, Observation 5: segment pairs and labels reach the full-information level "25 shots and onward".
SETTINGS_EQUAL_FROM_K = 25
# Sec. 5.2, Observation 1: ICL outperforms zero-shot when memorization in few-shot regimes reaches "around 40% or higher".
ICL_GAIN_MEMORIZATION = 40.0
# Sec. 4, "Human Evaluation": share of GPT-4's judge labels changed by the human review (all borderline cases
# between near-exact and inexact), and the judge's agreement with humans reported by Golchin & Surdeanu (2023a).
HUMAN_REVIEW_CHANGED_PERCENT = 5.0
JUDGE_HUMAN_ACCURACY = (92.0, 100.0)


# -- the claims D1-D9 ---------------------------------------------------------------------------------------------
N_BOOT = 2000
CONFIDENCE = 0.95
#: Bootstrap resamples of the rule inside each null draw (the build's own interval uses ``n_boot``, :data:`N_BOOT`).
NULL_BOOT = 200
#: Equality claims (D4, D5): the largest difference, in percentage points of memorization, still counted as equal.
#: The paper states no number ("reaches its maximum", "equivalent"); this margin is the companion's choice.
EQUIVALENCE_MARGIN = 10.0
SHORT_SETTINGS = {"full": "full", "pairs_labels": "seg.+labels", "pairs_only": "seg. only"}
MEMORIZED = ("exact", "near-exact")


@dataclass(frozen=True)
class Focus:
    """The rows a claim is computed on: one model, its fine-tuning members only or all instances."""

    model: str
    members_only: bool = False

    def rows(self, frame: pd.DataFrame, members_only: bool | None = None) -> pd.DataFrame:
        out = frame[frame["model"] == self.model]
        if self.members_only if members_only is None else members_only:
            out = out[out["member"].astype(bool)]
        return out

    def describe(self, members_only: bool | None = None) -> str:
        only = self.members_only if members_only is None else members_only
        return f"{self.model} model, {'its fine-tuning members' if only else 'all instances'}"


@dataclass(frozen=True)
class Interval:
    """A seeded percentile bootstrap interval over instances."""

    lo: float
    hi: float
    n_units: int
    n_boot: int
    n_valid: int
    seed: int
    level: float = CONFIDENCE

    def bounds(self, fmt: str = "{:+.0f}", unit: str = " points") -> str:
        return f"[{fmt.format(self.lo)}, {fmt.format(self.hi)}]{unit}"

    def method(self) -> str:
        return f"{self.level:.0%} percentile bootstrap over {self.n_units} instances, {self.n_boot} resamples, seed {self.seed}"

    def text(self, fmt: str = "{:+.0f}", unit: str = " points") -> str:
        return f"{self.bounds(fmt, unit)}, {self.method()}"


@dataclass(frozen=True)
class ClaimResult:
    """One claim as :func:`iclmem.chapters.claims.glue_claim` records it, its null included.

    ``null``: what the null assumes exchangeable (or why no null applies); ``observed``: the statistic the rule reads;
    ``null_range``: that statistic's central 95% under the null; ``null_rate``: how often the rule says "reproduced"
    under the null. A ``reproduced`` result without a null, or with a null rate above 5%, is refused (:class:`ClaimError`).
    """

    claim_id: str
    paper: str
    ours: str
    verdict: str
    reason: str
    interval: str | None = None
    null: str | None = None
    observed: str | None = None
    null_range: str | None = None
    null_rate: float | None = None

    def __post_init__(self) -> None:
        self.record()  # raises if malformed

    def record(self) -> dict[str, Any]:
        return claim_record(self.claim_id, self.paper, self.ours, self.verdict, self.reason, self.interval, null=self.null,
                            observed=self.observed, null_range=self.null_range, null_rate=self.null_rate)


# -- statistics ------------------------------------------------------------------------------------------------
def bootstrap(n_units: int, stat: Callable[[np.ndarray], float], n_boot: int = N_BOOT, seed: int = 0,
              level: float = CONFIDENCE) -> Interval | None:
    """Percentile interval of ``stat(indices)`` over ``n_boot`` resamples of ``n_units`` units with replacement.

    ``None`` with fewer than 2 units or when ``stat`` is undefined (not finite) in more than half the resamples.
    """
    if n_units < 2:
        return None
    rng = np.random.default_rng(seed)
    values = np.array([stat(rng.integers(0, n_units, n_units)) for _ in range(n_boot)], dtype=float)
    values = values[np.isfinite(values)]
    if len(values) < n_boot / 2:
        return None
    alpha = (1 - level) / 2
    lo, hi = np.quantile(values, [alpha, 1 - alpha])
    return Interval(float(lo), float(hi), n_units, n_boot, len(values), seed, level)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r along the last axis of ``x`` and ``y`` (broadcast), over the positions where both are finite; NaN for
    fewer than 2 such points or a constant series."""
    x, y = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float))
    ok = np.isfinite(x) & np.isfinite(y)
    n = ok.sum(axis=-1)
    with _quiet():
        mx = np.where(ok, x, 0.0).sum(axis=-1) / n
        my = np.where(ok, y, 0.0).sum(axis=-1) / n
        dx = np.where(ok, x - mx[..., None], 0.0)
        dy = np.where(ok, y - my[..., None], 0.0)
        flat_x = np.where(ok, x, -np.inf).max(axis=-1) == np.where(ok, x, np.inf).min(axis=-1)
        flat_y = np.where(ok, y, -np.inf).max(axis=-1) == np.where(ok, y, np.inf).min(axis=-1)
        r = (dx * dy).sum(axis=-1) / np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))
    return np.where((n >= 2) & ~flat_x & ~flat_y, np.clip(r, -1.0, 1.0), np.nan)


def pearson(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Pearson's r; NaN for fewer than 2 points or a constant series (non-finite pairs left out)."""
    return float(_pearson_rows(np.asarray(x, float).ravel(), np.asarray(y, float).ravel()))


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence numpy's warnings on empty slices (nanmean of all-NaN): those statistics are NaN, and NaN is handled."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _answers_directional(estimate: Any, lo: Any, hi: Any, sign: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise (agrees, contradicted) of a directional rule: agrees when the estimate has the claimed sign and the
    interval lies strictly on that side of 0; contradicted when the estimate lacks the claimed sign (0 included)."""
    est, lo, hi = (np.asarray(a, float) for a in (estimate, lo, hi))
    defined = np.isfinite(est) & np.isfinite(lo) & np.isfinite(hi)
    right = sign * est > 0
    lower = lo if sign > 0 else -hi
    return defined & right & (lower > 0), defined & ~right


def _answers_equivalence(lo: Any, hi: Any, margin: float, one_sided: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise (agrees, contradicted) of an equality rule: agrees when the interval lies within +-``margin``
    (``one_sided``: above -``margin``); contradicted when it lies wholly beyond the margin."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    defined = np.isfinite(lo) & np.isfinite(hi)
    inside = (lo > -margin) & (one_sided | (hi < margin))
    outside = (hi <= -margin) | (~np.asarray(one_sided) & (lo >= margin))
    return defined & inside, defined & outside


def directional_agreement(estimate: float, interval: Interval | None, sign: int = 1) -> tuple[bool | None, bool]:
    """(agrees, contradicted) of a directional claim (an effect with sign ``sign``) on the build.

    Agrees when the estimate has the claimed sign and the bootstrap interval lies strictly on that side of 0;
    contradicted (a clear disagreement) when the estimate does not have the claimed sign; neither when it has the sign
    but the interval includes 0 (inside the noise). ``(None, False)`` without an interval or estimate.
    """
    if interval is None or not np.isfinite(estimate):
        return None, False
    agrees, contradicted = _answers_directional(estimate, interval.lo, interval.hi, sign)
    return bool(agrees), bool(contradicted)


def equivalence_agreement(interval: Interval | None, margin: float = EQUIVALENCE_MARGIN,
                          one_sided: bool = False) -> tuple[bool | None, bool]:
    """(agrees, contradicted) of an equality claim: the interval within +-``margin`` (``one_sided``: above -``margin``),
    or wholly beyond it; neither when it straddles the margin. ``(None, False)`` without an interval."""
    if interval is None:
        return None, False
    agrees, contradicted = _answers_equivalence(interval.lo, interval.hi, margin, one_sided)
    return bool(agrees), bool(contradicted)


def directional_verdict(estimate: float, interval: Interval | None, sign: int = 1, null_rate: float | None = None) -> str:
    """The verdict of a directional claim: :func:`directional_agreement` read by
    :func:`~iclmem.chapters.verdicts.evidence_verdict` with the rule's ``null_rate`` (needed when the rule agrees)."""
    agrees, contradicted = directional_agreement(estimate, interval, sign)
    return evidence_verdict(agrees, null_rate, contradicted=contradicted)


def equivalence_verdict(interval: Interval | None, margin: float = EQUIVALENCE_MARGIN, one_sided: bool = False,
                        null_rate: float | None = None) -> str:
    """The verdict of an equality claim: :func:`equivalence_agreement` read by
    :func:`~iclmem.chapters.verdicts.evidence_verdict` with the rule's ``null_rate`` (needed when the rule agrees)."""
    agrees, contradicted = equivalence_agreement(interval, margin, one_sided)
    return evidence_verdict(agrees, null_rate, contradicted=contradicted)


def _directional_why(estimate: float, interval: Interval | None, sign: int = 1, what: str = "the difference") -> str:
    if interval is None:
        return f"{what} has no bootstrap interval (fewer than 2 instances or undefined in most resamples)"
    side = "above" if sign > 0 else "below"
    agrees, _ = directional_agreement(estimate, interval, sign)
    if agrees:
        return f"{what} is {'positive' if sign > 0 else 'negative'} and its interval lies {side} 0"
    if sign * estimate > 0:
        return (f"{what} has the claimed sign but its interval includes 0: not distinguishable from no effect with "
                f"{interval.n_units} instances")
    return f"{what} is {estimate:+.2g}, not in the claimed direction"


def _equivalence_why(estimate: float, interval: Interval | None, margin: float, one_sided: bool, what: str) -> str:
    if interval is None:
        return f"{what} has no bootstrap interval (fewer than 2 instances)"
    bound = f"above -{margin:g} points" if one_sided else f"within +-{margin:g} points"
    agrees, outside = equivalence_agreement(interval, margin, one_sided)
    if agrees:
        return f"the interval of {what} lies {bound} (the companion's equality margin)"
    if outside:
        return f"the interval of {what} lies outside the margin ({bound} counts as equal): clearly different"
    return (f"{what} is {estimate:+.0f} points but its interval is not {bound} (the companion's equality margin): "
            f"equality not established with {interval.n_units} instances")


# -- the nulls -------------------------------------------------------------------------------------------------
# Each claim's null is a world in which the claim is false, built from the build's own instances: for an effect (D1-D3,
# D5's zero-shot part, D6-D8) the labels the claim contrasts are exchanged at random (within an instance, or between
# instances where the claim contrasts instances); for an equality (D4, D5's k >= 25 part) the settings are exchanged
# within an instance and one of them is then thinned to a margin below the other. Every null draw is judged by the
# claim's own rule, with a NULL_BOOT-resample bootstrap; the null rate is the share of draws the rule calls reproduced.
def _null_rng(seed: int, claim_id: str) -> np.random.Generator:
    """The null's generator of one claim, seeded by the claim's ``seed`` and its number (claims draw apart)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(claim_id.lstrip("D")), 0x6E756C6C]))


def _chunks(n_draws: int, per_draw: int, budget: int = 4_000_000) -> Iterator[slice]:
    """Slices of the draws so that a chunk holds at most ``budget`` numbers (``per_draw`` each)."""
    step = max(1, budget // max(1, per_draw))
    for start in range(0, n_draws, step):
        yield slice(start, min(n_draws, start + step))


def _row_permutations(rng: np.random.Generator, n_perm: int, n: int, size: int) -> np.ndarray:
    """``(n_perm, n, size)``: an independent uniform permutation of ``range(size)`` per draw and instance."""
    return np.argsort(rng.random((n_perm, n, size)), axis=-1)


def _permute_within(x: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """``x`` (instances x labels x ...) with each instance's labels (axis 1) reordered by ``perms`` (draws x instances x
    labels): ``(draws, instances, labels, ...)``."""
    return x[np.arange(x.shape[0])[None, :, None], perms]


def _row_intervals(reps: np.ndarray, level: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each row of ``reps`` (draws x resamples), as :func:`bootstrap` takes it: undefined
    resamples dropped, NaN where fewer than half are defined."""
    reps = np.asarray(reps, float)
    finite = np.isfinite(reps)
    enough = finite.sum(axis=-1) >= reps.shape[-1] / 2
    alpha = (1 - level) / 2
    with _quiet():
        lo, hi = np.nanquantile(np.where(finite, reps, np.nan), [alpha, 1 - alpha], axis=-1)
    return np.where(enough, lo, np.nan), np.where(enough, hi, np.nan)


def _null_boot(rng: np.random.Generator, n_draws: int, n: int) -> np.ndarray:
    """``(n_draws, NULL_BOOT, n)``: each null draw's own bootstrap resamples of the ``n`` instances (independent across
    draws, so that the null rate is a plain binomial share of independent draws)."""
    return rng.integers(0, n, (n_draws, NULL_BOOT, n), dtype=np.int32)


def _per_draw(values: np.ndarray, boot: np.ndarray) -> np.ndarray:
    """``values`` (draws x instances x ...) gathered along the instances by each draw's resamples ``boot`` (draws x
    resamples x instances): (draws x resamples x instances x ...)."""
    return values[np.arange(len(values))[:, None, None], boot]


def _reduce_rows(contrasts: np.ndarray, boot: np.ndarray, total: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per draw (rows of ``contrasts``, draws x instances): the mean (``total``: sum) over instances, and over each of
    the draw's resamples ``boot`` (draws x resamples x instances). NaN contrasts are left out of a mean, as in the
    claims' statistics."""
    reduce = np.sum if total else np.nanmean
    reps = np.empty(boot.shape[:2])
    with _quiet():
        est = reduce(contrasts, axis=1)
        for sl in _chunks(len(contrasts), boot[0].size):
            reps[sl] = reduce(_per_draw(contrasts[sl], boot[sl]), axis=-1)
    return est, reps


def _directional_null(contrasts: np.ndarray, boot: np.ndarray, sign: int = 1,
                      total: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(estimate, agrees) of the directional rule on each null draw of per-instance contrasts (draws x instances)."""
    est, reps = _reduce_rows(contrasts, boot, total)
    lo, hi = _row_intervals(reps)
    return est, _answers_directional(est, lo, hi, sign)[0]


def _gain_null(x: np.ndarray, gain_cols: Sequence[int], zero_col: int, est: float, seed: int, claim_id: str,
               n_perm: int) -> NullSummary:
    """The null of a "k > 0 minus zero-shot" contrast (D1, D6): each instance's k labels (columns of ``x``) permuted,
    the contrast of the permuted columns judged by the directional rule in every draw."""
    rng = _null_rng(seed, claim_id)
    xp = _permute_within(x, _row_permutations(rng, n_perm, len(x), x.shape[1]))
    with _quiet():
        contrasts = (np.nanmean(xp[..., list(gain_cols)], axis=-1) - xp[..., zero_col]) * 100
    null_est, null_agrees = _directional_null(contrasts, _null_boot(rng, n_perm, len(x)))
    return summarize_null(est, null_est, null_agrees)


def _present(levels: np.ndarray, boot: np.ndarray, margin: float) -> np.ndarray:
    """Per null draw: does the higher of the settings' mean levels have its interval above ``margin``? ``levels``:
    per-instance levels in points, settings x instances (the same in every draw) or settings x draws x instances."""
    levels = np.asarray(levels, float)
    if levels.ndim == 2:
        levels = np.broadcast_to(levels[:, None], (len(levels), len(boot), levels.shape[1]))
    top = np.max([_reduce_rows(setting, boot)[1] for setting in levels], axis=0)  # draws x resamples
    return _row_intervals(top)[0] > margin


def _keep_share(level: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The share of a setting's memorization to keep so that its mean ``level`` falls to ``target`` (clipped to [0, 1];
    1 where the level is 0 or already at or below the target)."""
    with _quiet():
        keep = np.asarray(target, float) / np.asarray(level, float)
    return np.where(np.asarray(level) > 0, np.clip(np.nan_to_num(keep, nan=1.0), 0.0, 1.0), 1.0)


def _thin(rng: np.random.Generator, values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``values`` (memorization, 0-1) with each cell kept with probability ``keep`` (broadcast) and set to 0 otherwise
    (NaN stays NaN): memorized completions dropped at random, as in a build whose setting surfaces less."""
    return np.where((rng.random(values.shape) < keep) | np.isnan(values), values, 0.0)


def _rate_why(agrees: bool | None, rate: float, n: int) -> str:
    """The reason's sentence on the null rate."""
    if agrees is None:
        return ""
    if not agrees:
        return f" Under the null the same rule says reproduced in {rate:.0%} of {n} draws."
    if rate <= NULL_LEVEL + 1e-12:
        return f" Under the null the same rule says so in {rate:.0%} of {n} draws (at most {NULL_LEVEL:.0%})."
    return (f" But under the null the same rule says so in {rate:.0%} of {n} draws (more than {NULL_LEVEL:.0%}): chance "
            "alone gives this answer too often, so the verdict is inconclusive.")


def _draws_text(n_perm: int, seed: int, n_boot: int) -> str:
    return (f"{n_perm} draws (seed {seed}), each judged by the claim's rule with a {NULL_BOOT}-resample bootstrap (the build's "
            f"own interval: {n_boot} resamples)")


def _range_text(summary: NullSummary, fmt: str = "{:+.0f}", unit: str = " points") -> str:
    return f"[{fmt.format(summary.lo)}, {fmt.format(summary.hi)}]{unit} over {summary.n} draws"


@dataclass(frozen=True)
class _Null:
    """A D claim's null as its record carries it, and the reason's sentence on its rate (all empty: no null computed)."""

    null: str | None = None
    observed: str | None = None
    null_range: str | None = None
    null_rate: float | None = None
    why: str = ""

    def fields(self) -> dict[str, Any]:
        return {"null": self.null, "observed": self.observed, "null_range": self.null_range, "null_rate": self.null_rate}


def _null_of(summary: NullSummary, agrees: bool | None, null: str, observed: str, unit: str = " points") -> _Null:
    """The :class:`_Null` of a claim whose null is one :class:`NullSummary` (its range in ``unit``)."""
    return _Null(null, observed, _range_text(summary, unit=unit), summary.rate, _rate_why(agrees, summary.rate, summary.n))


# -- frames -> matrices ----------------------------------------------------------------------------------------
def memorization_matrix(mem: pd.DataFrame, focus: Focus, settings: Sequence[str] | None = None, measure: str = "memorized",
                        members_only: bool | None = None, column: str = "match") -> pd.DataFrame:
    """Instances x k: the share (0-1) of the ``settings`` (all when ``None``) in which the instance was memorized
    (``measure="memorized"``: exact or near-exact, Sec. 3.2) or matched exactly (``"exact"``)."""
    df = focus.rows(mem, members_only)
    df = df[df[column].notna()]
    if settings is not None:
        df = df[df["setting"].isin(list(settings))]
    hit = df[column].isin(MEMORIZED) if measure == "memorized" else df[column] == "exact"
    out = df.assign(hit=hit.astype(float)).pivot_table(index="instance_id", columns="k", values="hit", aggfunc="mean")
    return out.reindex(columns=sorted(out.columns))


def correct_matrix(perf: pd.DataFrame, focus: Focus, members_only: bool | None = None) -> pd.DataFrame:
    """Instances x k: 1.0 when the k-shot classification answer was correct (failed requests left out)."""
    df = focus.rows(perf, members_only)
    df = df[df["error"].isna()]
    out = df.assign(hit=df["correct"].astype(float)).pivot_table(index="instance_id", columns="k", values="hit", aggfunc="mean")
    return out.reindex(columns=sorted(out.columns))


def icl_settings(mem: pd.DataFrame) -> tuple[list[str] | None, str]:
    """The paper's standard-ICL setting (segment pairs and labels, Sec. 5.1) when run, else the mean of all settings."""
    if ICL_SETTING in set(mem["setting"]):
        return [ICL_SETTING], "segment pairs and labels setting"
    return None, "mean of the settings run, without the segment pairs and labels setting"


def _ks_text(ks: Sequence[int]) -> str:
    return "k = " + ", ".join(str(int(k)) for k in ks)


def _mean_pct(m: pd.DataFrame, ks: Sequence[int]) -> float:
    return float(np.nanmean(m[list(ks)].to_numpy()) * 100) if len(ks) and len(m) else float("nan")


def _needs(claim_id: str, paper_text: str, ours: str, reason: str) -> ClaimResult:
    return ClaimResult(claim_id, paper_text, ours, "not testable here", reason)


# -- D1, D2: ICL raises memorization over zero-shot ---------------------------------------------------------------
def paper_d1() -> str:
    r = MEMORIZATION_RANGES
    return ", ".join(f"{name} {lo:g}-{hi:g}%" for name, (lo, hi) in r.items()) + " memorized (exact + near-exact, GPT-4)"


def claim_d1(mem: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0, n_perm: int = N_PERMUTATIONS) -> ClaimResult:
    """D1 (Sec. 5.1, Observation 1): ICL surfaces more memorization than zero-shot; levels per regime.

    Checked: memorization (exact + near-exact) with k > 0 (mean of the ks run) minus zero-shot, per instance of the
    focus, in the standard-ICL setting; the paper's levels (GPT-4, four datasets) are quoted, not compared. The rule:
    the bootstrap interval of the mean difference lies above 0.

    Null: an instance's memorization is exchangeable across the ks run (k = 0 included), i.e. the demonstrations
    change nothing; each draw permutes the k labels within every instance (``n_perm`` draws, seeded by ``seed``).
    """
    settings, where = icl_settings(mem)
    m = memorization_matrix(mem, focus, settings)
    ks = list(m.columns)
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return _needs("D1", paper_d1(), f"k run: {ks}", "D1 needs the zero-shot regime (k = 0) and at least one k > 0.")
    x = m.to_numpy()
    zero_col, shot_cols = ks.index(0), [ks.index(k) for k in shots]
    zero, icl = x[:, zero_col], np.nanmean(x[:, shot_cols], axis=1)

    def stat(idx: np.ndarray) -> float:
        return float(np.nanmean(icl[idx] - zero[idx]) * 100)

    est = stat(np.arange(len(x)))
    ci = bootstrap(len(x), stat, n_boot, seed)
    levels = []
    for name in MEMORIZATION_RANGES:
        rk = [k for k in ks if regime(k) == name]
        if not rk:
            levels.append(f"{name}: no k run")
            continue
        per_k = [_mean_pct(m, [k]) for k in rk]
        spread = f" ({_ks_text(rk)}: {min(per_k):.0f}-{max(per_k):.0f}%)" if len(rk) > 1 else f" (k = {rk[0]})"
        levels.append(f"{name} {_mean_pct(m, rk):.0f}%{spread}")
    ours = "; ".join(levels) + f"; k > 0 minus zero-shot {est:+.0f} points"
    if focus.members_only:
        nm = memorization_matrix(mem, focus, settings, members_only=False)
        nm = nm.loc[nm.index.difference(m.index)]
        if len(nm):
            ours += f" (non-members: zero-shot {_mean_pct(nm, [0]):.0f}%, k > 0 {_mean_pct(nm, shots):.0f}%)"
    missing = [name for name in ("few-shot", "many-shot") if not any(regime(k) == name for k in shots)]
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        summary = _gain_null(x, shot_cols, zero_col, est, seed, "D1", n_perm)
        nul = _null_of(summary, agrees, (
            "memorization exchangeable across the ks of an instance (k = 0 included: the demonstrations change "
            f"nothing), its k labels permuted within every instance; {_draws_text(n_perm, seed, n_boot)}"),
            f"k > 0 minus zero-shot: {est:+.1f} points")
    reason = (f"Direction checked on the {focus.describe()}, {where}: memorization with k > 0 ({_ks_text(shots)}) minus "
              f"zero-shot; {_directional_why(est, ci)}. The paper's levels are GPT-4's on WNLI/RTE/TREC/DBpedia and are "
              f"not compared" + (f"; no k of the {' and '.join(missing)} regime was run" if missing else "") + "." + nul.why)
    return ClaimResult("D1", paper_d1(), ours, evidence_verdict(agrees, nul.null_rate, contradicted=contradicted), reason,
                       ci.text() if ci else None, **nul.fields())


def paper_d2() -> str:
    top = ", ".join(f"{d} {v:g}%" for d, v in MEMORIZATION_AT_200_SHOT.items())
    flat = ", ".join(f"{d} ~{v:g}%" for d, v in MEMORIZATION_PLATEAU_AFTER_25_SHOT.items())
    return f"{SHARP_RISE_K} shots sharply raise memorization over zero-shot; at 200-shot {top}; after 25-shot {flat}"


def claim_d2(mem: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0, n_perm: int = N_PERMUTATIONS) -> ClaimResult:
    """D2 (Sec. 5.1, Observation 2): a few demonstrations (25 shots) sharply raise memorization over zero-shot.

    Checked: memorization at k = 25 (the smallest k > 0 run when 25 is not) minus k = 0, per instance of the focus,
    standard-ICL setting; the rule: its bootstrap interval lies above 0. The per-dataset levels are GPT-4's and not
    comparable.

    Null: an instance's memorization at k = 25 and at k = 0 are exchangeable; each draw swaps the two labels at random
    within every instance (a random sign of its difference).
    """
    settings, where = icl_settings(mem)
    m = memorization_matrix(mem, focus, settings)
    ks = list(m.columns)
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return _needs("D2", paper_d2(), f"k run: {ks}", "D2 needs k = 0 and at least one k > 0.")
    k1 = SHARP_RISE_K if SHARP_RISE_K in shots else shots[0]
    x = m.to_numpy()
    diff = x[:, ks.index(k1)] - x[:, ks.index(0)]

    def stat(idx: np.ndarray) -> float:
        return float(np.nanmean(diff[idx]) * 100)

    est = stat(np.arange(len(x)))
    ci = bootstrap(len(x), stat, n_boot, seed)
    curve = ", ".join(f"{_mean_pct(m, [k]):.0f}% at k = {k}" for k in ks)
    ours = f"k = 0 to k = {k1}: {est:+.0f} points ({curve})"
    note = "" if k1 == SHARP_RISE_K else f" No k = {SHARP_RISE_K} was run: the smallest k > 0 run (k = {k1}) is used."
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        rng = _null_rng(seed, "D2")
        signs = rng.choice((-1.0, 1.0), (n_perm, len(x)))
        null_est, null_agrees = _directional_null(signs * diff * 100, _null_boot(rng, n_perm, len(x)))
        summary = summarize_null(est, null_est, null_agrees)
        nul = _null_of(summary, agrees, (
            f"memorization at k = {k1} and at k = 0 exchangeable within an instance (the two labels swapped at random "
            f"per instance); {_draws_text(n_perm, seed, n_boot)}"),
            f"k = {k1} minus k = 0: {est:+.1f} points")
    reason = (f"Direction checked on the {focus.describe()}, {where}: memorization at k = {k1} minus zero-shot; "
              f"{_directional_why(est, ci)}.{note} The dataset levels (WNLI, RTE, TREC, DBpedia with GPT-4) are not "
              f"comparable.{nul.why}")
    return ClaimResult("D2", paper_d2(), ours, evidence_verdict(agrees, nul.null_rate, contradicted=contradicted), reason,
                       ci.text() if ci else None, **nul.fields())


# -- D3: near-exact matches turn exact as k grows ----------------------------------------------------------------
def paper_d3() -> str:
    steps = ", ".join(f"{d} {a}->{b}-shot" for d, (a, b) in NEAR_TO_EXACT_TRANSITIONS.items())
    return f"near-exact matches turn exact as k grows (Tab. 1: {steps})"


_MATCH_CODES = {"exact": 2, "near-exact": 1}  # any other judged label: 0; no row: -1


def _match_cube(mem: pd.DataFrame, focus: Focus, ks: Sequence[int] | None = None,
                column: str = "match") -> tuple[pd.Index, list[list[tuple[int, int]]], np.ndarray]:
    """The focus's judged matches as codes (instances x settings x ks: 2 exact, 1 near-exact, 0 other, -1 none) and,
    per setting, the consecutive pairs of the ks it was run at (column positions), over the ``ks`` given (all: ``None``)."""
    df = focus.rows(mem)
    df = df[df[column].notna()]
    wide = df.pivot_table(index="instance_id", columns=["setting", "k"], values=column, aggfunc="first")
    settings = list(dict.fromkeys(wide.columns.get_level_values(0)))
    use = sorted(k for k in set(wide.columns.get_level_values(1)) if ks is None or k in set(ks))
    codes = np.full((len(wide), len(settings), len(use)), -1, dtype=np.int8)
    pairs: list[list[tuple[int, int]]] = []
    for s, setting in enumerate(settings):
        present = [k for k in sorted(wide[setting].columns) if k in use]
        for k in present:
            col = wide[(setting, k)]
            codes[:, s, use.index(k)] = np.where(col.isna(), -1, col.map(_MATCH_CODES).fillna(0)).astype(np.int8)
        pairs.append([(use.index(a), use.index(b)) for a, b in zip(present, present[1:], strict=False)])
    return wide.index, pairs, codes


def _transition_counts(codes: np.ndarray, pairs: Sequence[Sequence[tuple[int, int]]]) -> tuple[np.ndarray, np.ndarray]:
    """(up, down) over ``codes`` (... x settings x ks): near-exact -> exact and exact -> near-exact between the
    consecutive ks of each setting."""
    up = np.zeros(codes.shape[:-2], dtype=np.int64)
    down = np.zeros(codes.shape[:-2], dtype=np.int64)
    for s, setting_pairs in enumerate(pairs):
        for a, b in setting_pairs:
            ca, cb = codes[..., s, a], codes[..., s, b]
            up += (ca == 1) & (cb == 2)
            down += (ca == 2) & (cb == 1)
    return up, down


def transitions(mem: pd.DataFrame, focus: Focus, ks: Sequence[int] | None = None, column: str = "match") -> pd.DataFrame:
    """Per instance of the focus: ``up`` = (setting, consecutive k pair) where a near-exact match at the smaller k is
    an exact match at the larger k, ``down`` = the reverse; over the ``ks`` given (all when ``None``)."""
    index, pairs, codes = _match_cube(mem, focus, ks, column)
    up, down = _transition_counts(codes, pairs)
    return pd.DataFrame({"up": up, "down": down}, index=index)


def claim_d3(mem: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0, n_perm: int = N_PERMUTATIONS) -> ClaimResult:
    """D3 (Sec. 5.1, Observation 3; Tab. 1): as demonstrations increase, near-exact matches become exact matches.

    Checked: over consecutive k > 0 (k = 0 included when fewer than two k > 0 were run) and all settings, the number
    of near-exact -> exact transitions of an instance minus exact -> near-exact ones; also the exact share of the
    memorized matches at the first and last of those ks. The rule: the bootstrap interval of the net count lies above 0.

    Null: the order of an instance's ks carries nothing (its matches exchangeable across k); each draw permutes the k
    labels within every instance, the same permutation for all its settings.
    """
    rows = focus.rows(mem)
    ks_all = sorted(set(rows["k"]))
    shots = [k for k in ks_all if k > 0]
    ks = shots if len(shots) >= 2 else ks_all
    if len(ks) < 2:
        return _needs("D3", paper_d3(), f"k run: {ks_all}", "D3 needs at least two values of k.")
    judged = rows[rows["match"].notna() & rows["k"].isin(ks)]
    if not judged["match"].isin(MEMORIZED).any():
        return _needs("D3", paper_d3(), f"no exact or near-exact match at {_ks_text(ks)}",
                      f"On the {focus.describe()}: no memorized completion at {_ks_text(ks)}, so no match can turn exact.")
    _, pairs, codes = _match_cube(mem, focus, ks)
    up, down = _transition_counts(codes, pairs)
    net = up - down

    def stat(idx: np.ndarray) -> float:
        return float(net[idx].sum())

    n = len(net)
    est = stat(np.arange(n))
    ci = bootstrap(n, stat, n_boot, seed)

    def exact_share(k: int) -> str:
        hit = judged[(judged["k"] == k) & judged["match"].isin(MEMORIZED)]
        return f"{(hit['match'] == 'exact').mean() * 100:.0f}% at k = {k}" if len(hit) else f"none memorized at k = {k}"

    ours = (f"{int(up.sum())} near-exact -> exact, {int(down.sum())} exact -> near-exact transitions (net {est:+.0f}); "
            f"exact share of memorized matches {exact_share(ks[0])}, {exact_share(ks[-1])}")
    note = "" if ks == shots else " Fewer than two k > 0 were run, so the transitions include k = 0."
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        rng = _null_rng(seed, "D3")
        perms = _row_permutations(rng, n_perm, n, codes.shape[2])
        permuted = _permute_within(codes.transpose(0, 2, 1), perms).transpose(0, 1, 3, 2)  # draws x instances x settings x ks
        p_up, p_down = _transition_counts(permuted, pairs)
        null_est, null_agrees = _directional_null((p_up - p_down).astype(float), _null_boot(rng, n_perm, n), total=True)
        summary = summarize_null(est, null_est, null_agrees)
        nul = _null_of(summary, agrees, (
            "an instance's matches exchangeable across its ks (the order of k carries nothing), its k labels permuted "
            f"within every instance, the same permutation in all its settings; {_draws_text(n_perm, seed, n_boot)}"),
            f"net near-exact -> exact transitions: {est:+.0f}", unit=" transitions")
    reason = (f"Checked on the {focus.describe()}, all settings, consecutive {_ks_text(ks)}: near-exact -> exact minus "
              f"exact -> near-exact transitions of the same instance and setting; "
              f"{_directional_why(est, ci, what='the net count')}.{note}{nul.why}")
    return ClaimResult("D3", paper_d3(), ours, evidence_verdict(agrees, nul.null_rate, contradicted=contradicted), reason,
                       ci.text("{:+.0f}", " transitions") if ci else None, **nul.fields())


# -- D4, D5: settings ------------------------------------------------------------------------------------------
def paper_d4() -> str:
    return "segment pairs alone (no labels, no instruction) reach ~the maximum memorization of the settings (Obs. 7)"


def _setting_stats(world: np.ndarray, key: int, boot: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """D4's statistics on each null draw of ``world`` (draws x settings x instances x ks), on all its instances
    (``boot`` None: arrays over draws) or on each of the draw's resamples ``boot`` (draws x resamples x instances):
    the gap (key setting minus the highest setting, mean over k) and the level (the highest setting, mean over k), in
    points."""
    if boot is None:
        picked = world[:, :, None]  # draws x settings x 1 x instances x ks
    else:
        p, s = world.shape[:2]
        picked = world[np.arange(p)[:, None, None, None], np.arange(s)[None, :, None, None], boot[:, None]]
    with _quiet():
        means = np.nanmean(picked, axis=-2) * 100  # draws x settings x resamples x ks
    top = means.max(axis=1)
    gap, level = np.mean(means[:, key] - top, axis=-1), np.mean(top, axis=-1)
    return (gap[:, 0], level[:, 0]) if boot is None else (gap, level)


def claim_d4(mem: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0,
             margin: float = EQUIVALENCE_MARGIN, n_perm: int = N_PERMUTATIONS) -> ClaimResult:
    """D4 (Sec. 5.1, Observation 7): maximum memorization is reached with only segment pairs in the prompt.

    Checked: for each k > 0, memorization of the only-segment-pairs setting minus the largest memorization of the
    settings run (the maximum, full information being the paper's upper bound), averaged over k. The rule: the gap's
    interval lies above -``margin`` points (exceeding the maximum counts as reaching it) *and* the maximum's interval
    lies above ``margin`` points: below that every setting is within the margin of the maximum, so equality would hold by
    the floor (two settings at 0% are trivially "equal"); then the verdict is inconclusive.

    Null: the claim is false by the margin. The settings are exchanged within every instance (its setting labels
    permuted, the same permutation at all its ks), then the only-segment-pairs setting's memorized completions are
    dropped at random until, in expectation, it lies ``margin`` points below the highest other setting at each k: a
    build where segment pairs alone fall just a margin short. Thinning, not a shift, keeps the data 0/1, so ties between
    settings stay as likely as in such a build (a percentile bootstrap over tied instances is [0, 0] and would otherwise
    look certain). Exchanging the settings alone would not do: equal settings are what the claim says.
    """
    run = [s for s in SHORT_SETTINGS if s in set(focus.rows(mem)["setting"])]
    if KEY_ELEMENT_SETTING not in run or len(run) < 2:
        return _needs("D4", paper_d4(), f"settings run: {', '.join(run)}",
                      "D4 compares the only-segment-pairs setting with the other settings; not all of them were run.")
    mats = [memorization_matrix(mem, focus, [s]) for s in run]
    index = mats[0].index
    shots = [k for k in mats[0].columns if k > 0]
    if not shots:
        return _needs("D4", paper_d4(), "no k > 0 run", "D4 concerns prompts with demonstrations; no k > 0 was run.")
    cube = np.stack([mt.reindex(index=index, columns=shots).to_numpy() for mt in mats])  # settings x instances x ks
    key = run.index(KEY_ELEMENT_SETTING)
    if not np.nansum(cube) > 0:
        return _needs("D4", paper_d4(), f"no memorization at {_ks_text(shots)} in any setting",
                      f"On the {focus.describe()}: nothing is memorized at {_ks_text(shots)} in any setting, so there is no "
                      "maximum to reach.")

    def stat(idx: np.ndarray) -> float:
        means = np.nanmean(cube[:, idx, :], axis=1) * 100  # settings x ks
        return float(np.mean(means[key] - means.max(axis=0)))

    def level_stat(idx: np.ndarray) -> float:
        return float(np.mean(np.nanmean(cube[:, idx, :], axis=1).max(axis=0)) * 100)

    n = len(index)
    est, level = stat(np.arange(n)), level_stat(np.arange(n))
    ci, level_ci = bootstrap(n, stat, n_boot, seed), bootstrap(n, level_stat, n_boot, seed)
    means = np.nanmean(cube, axis=1) * 100
    best = [SHORT_SETTINGS[run[i]] for i in means.argmax(axis=0)]
    ours = (f"seg. only {means[key].mean():.0f}% vs the maximum {means.max(axis=0).mean():.0f}% (mean of {_ks_text(shots)}; "
            f"highest setting per k: {', '.join(best)}); gap {est:+.0f} points")
    gap_agrees, contradicted = equivalence_agreement(ci, margin, one_sided=True)
    present = level_ci is not None and level_ci.lo > margin
    agrees = None if ci is None or level_ci is None else bool(gap_agrees and present)
    nul = _Null()
    if agrees is not None:
        rng = _null_rng(seed, "D4")
        perms = _row_permutations(rng, n_perm, n, len(run))
        world = _permute_within(cube.transpose(1, 0, 2), perms).transpose(0, 2, 1, 3)  # draws x settings x instances x ks
        with _quiet():
            means = np.nanmean(world, axis=2)  # draws x settings x ks
        others = np.delete(means, key, axis=1).max(axis=1)  # draws x ks: the highest other setting
        world[:, key] = _thin(rng, world[:, key], _keep_share(means[:, key], others - margin / 100)[:, None, :])
        boot = _null_boot(rng, n_perm, n)
        null_gap, _ = _setting_stats(world, key)
        gaps, levels = np.empty((n_perm, NULL_BOOT)), np.empty((n_perm, NULL_BOOT))
        for sl in _chunks(n_perm, cube.size * NULL_BOOT):
            gaps[sl], levels[sl] = _setting_stats(world[sl], key, boot[sl])
        null_agrees = (_answers_equivalence(*_row_intervals(gaps), margin, one_sided=True)[0]
                       & (_row_intervals(levels)[0] > margin))
        summary = summarize_null(est, null_gap, null_agrees)
        nul = _null_of(summary, agrees, (
            f"segment pairs alone {margin:g} points short of the maximum (the claim just false): the settings exchanged "
            f"within every instance (its setting labels permuted, the same at all its ks), then the only-segment-pairs "
            f"setting's memorized completions dropped at random until, in expectation, it lies {margin:g} points below the "
            f"highest other setting at each k; {_draws_text(n_perm, seed, n_boot)}"),
            f"seg. only minus the maximum: {est:+.1f} points")
    floor = ""
    if gap_agrees and not present and level_ci is not None:
        floor = (f" But the maximum's own interval {level_ci.bounds('{:.0f}', '%')} does not lie above the {margin:g}-point "
                 f"margin: below it every setting is within the margin of the maximum, so 'reaching the maximum' would hold by "
                 "the floor, whatever the prompt; memorization too low to tell, so inconclusive.")
    reason = (f"Checked on the {focus.describe()}: only-segment-pairs memorization minus the highest setting per k "
              f"({_ks_text(shots)}); {_equivalence_why(est, ci, margin, True, 'the gap')}; the maximum is {level:.0f}%."
              f"{floor}{nul.why}")
    interval = None if ci is None else ci.text() + (f"; maximum {level_ci.bounds('{:.0f}', '%')}" if level_ci else "")
    return ClaimResult("D4", paper_d4(), ours, evidence_verdict(agrees, nul.null_rate, contradicted=contradicted), reason, interval,
                       **nul.fields())


def paper_d5() -> str:
    return (f"full information equals segment pairs + labels from k >= {SETTINGS_EQUAL_FROM_K}; "
            "the two differ only at zero-shot (Obs. 5)")


def claim_d5(mem: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0,
             margin: float = EQUIVALENCE_MARGIN, n_perm: int = N_PERMUTATIONS) -> ClaimResult:
    """D5 (Sec. 5.1, Observation 5): with k >= 25 the segment pairs and labels setting reaches the full-information
    level; the two settings differ at zero-shot.

    Checked, on full-information minus segment-pairs-and-labels memorization per instance: (a) at k >= 25 (the k > 0
    run when none is that large) its interval lies within +-``margin`` points, with the higher setting's level there
    above ``margin`` points (else both are within the margin of each other by the floor, and (a) proves nothing);
    (b) at k = 0 its interval lies above 0 (full information, the paper's upper bound, surfaces more). Reproduced when
    (a) and (b) hold; differs when (a)'s interval lies wholly outside the margin or (b)'s estimate is not positive.

    Null: the larger of two rates, one per part made false. (b): the two settings exchanged at k = 0 within every
    instance (the labels swapped at random per instance), k >= 25 as observed. (a): the two settings exchanged at
    k >= 25 within every instance, then one of them thinned (memorized completions dropped at random, as for D4) until,
    in expectation, it lies ``margin`` points below the other, on either side (the claim just false), k = 0 as observed.
    """
    run = set(focus.rows(mem)["setting"])
    if not {UPPER_BOUND_SETTING, ICL_SETTING} <= run:
        return _needs("D5", paper_d5(), f"settings run: {', '.join(sorted(run))}",
                      "D5 compares the full-information and the segment pairs and labels settings; not both were run.")
    full = memorization_matrix(mem, focus, [UPPER_BOUND_SETTING])
    pl = memorization_matrix(mem, focus, [ICL_SETTING]).reindex(index=full.index, columns=full.columns)
    ks = list(full.columns)
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return _needs("D5", paper_d5(), f"k run: {ks}", "D5 needs k = 0 and at least one k > 0.")
    late = [k for k in shots if k >= SETTINGS_EQUAL_FROM_K] or shots
    if not (np.nansum(full[late].to_numpy()) + np.nansum(pl[late].to_numpy())) > 0:
        return _needs("D5", paper_d5(), f"no memorization at {_ks_text(late)} in either setting",
                      f"On the {focus.describe()}: nothing is memorized at {_ks_text(late)} in either setting, so their "
                      "equality is vacuous.")
    d = (full - pl).to_numpy() * 100
    late_cols = [ks.index(k) for k in late]
    d_late, d_zero = np.nanmean(d[:, late_cols], axis=1), d[:, ks.index(0)]
    with _quiet():
        lvl = np.stack([np.nanmean(f.to_numpy()[:, late_cols], axis=1) for f in (full, pl)]) * 100  # 2 x instances

    def stat_late(idx: np.ndarray) -> float:
        return float(np.nanmean(d_late[idx]))

    def stat_zero(idx: np.ndarray) -> float:
        return float(np.nanmean(d_zero[idx]))

    def stat_level(idx: np.ndarray) -> float:
        return float(np.max(np.nanmean(lvl[:, idx], axis=1)))

    n = len(d)
    est_late, est_zero, level = stat_late(np.arange(n)), stat_zero(np.arange(n)), stat_level(np.arange(n))
    ci_late, ci_zero = bootstrap(n, stat_late, n_boot, seed), bootstrap(n, stat_zero, n_boot, seed)
    ci_level = bootstrap(n, stat_level, n_boot, seed)
    same_late, apart_late = equivalence_agreement(ci_late, margin)
    higher_zero, not_higher_zero = directional_agreement(est_zero, ci_zero)
    present = ci_level is not None and ci_level.lo > margin
    computable = ci_late is not None and ci_zero is not None and ci_level is not None
    agrees = bool(same_late and higher_zero and present) if computable else None
    contradicted = bool(apart_late or not_higher_zero)
    nul = _Null()
    if computable:
        rng = _null_rng(seed, "D5")
        boot = _null_boot(rng, n_perm, n)
        # each part as observed, on every draw's own resamples (the other part is the one made false)
        _, late_reps = _reduce_rows(np.broadcast_to(d_late, (n_perm, n)), boot)
        _, zero_reps = _reduce_rows(np.broadcast_to(d_zero, (n_perm, n)), boot)
        present_obs = _present(lvl, boot, margin)
        late_obs = _answers_equivalence(*_row_intervals(late_reps), margin)[0] & present_obs
        zero_obs = _answers_directional(est_zero, *_row_intervals(zero_reps))[0]
        # (b) false: the two settings swapped at random at k = 0 within each instance
        zero_est, zero_agrees = _directional_null(rng.choice((-1.0, 1.0), (n_perm, n)) * d_zero, boot)
        rate_b = float(np.mean(zero_agrees & late_obs))
        # (a) false: the settings swapped at k >= 25 within each instance, then one of them thinned to a margin below the other
        swap = (rng.random((n_perm, n)) < 0.5)[..., None]
        late_f, late_p = full.to_numpy()[:, late_cols], pl.to_numpy()[:, late_cols]
        world_f, world_p = np.where(swap, late_p, late_f), np.where(swap, late_f, late_p)  # draws x instances x late ks
        with _quiet():
            mean_f, mean_p = np.nanmean(world_f, axis=(1, 2)), np.nanmean(world_p, axis=(1, 2))
        rate_a, edge_est = 0.0, []
        for edge in (margin, -margin):
            if edge > 0:  # full information `margin` points above: segment pairs and labels thinned
                wf, wp = world_f, _thin(rng, world_p, _keep_share(mean_p, mean_f - margin / 100)[:, None, None])
            else:
                wf, wp = _thin(rng, world_f, _keep_share(mean_f, mean_p - margin / 100)[:, None, None]), world_p
            with _quiet():
                e, reps = _reduce_rows(np.nanmean(wf - wp, axis=2) * 100, boot)
                world_present = _present(np.stack([np.nanmean(w, axis=2) for w in (wf, wp)]) * 100, boot, margin)
            edge_agrees = _answers_equivalence(*_row_intervals(reps), margin)[0] & world_present & zero_obs
            rate_a = max(rate_a, float(np.mean(edge_agrees)))
            edge_est.append(e)
        rate = max(rate_a, rate_b)
        zero_summary = summarize_null(est_zero, zero_est, zero_agrees)
        lo_a, hi_a = _stats.null_range(np.concatenate(edge_est))
        null = (f"the larger of two rates: (b) the two settings exchanged at k = 0 within every instance (labels swapped at "
                f"random), {_ks_text(late)} as observed: {rate_b:.0%}; (a) the two settings exchanged at {_ks_text(late)} "
                f"within every instance, then one setting's memorized completions dropped at random until, in expectation, it "
                f"lies {margin:g} points below the other (either side; equality just false), k = 0 as observed: {rate_a:.0%}; "
                f"{_draws_text(n_perm, seed, n_boot)}")
        observed = f"full minus seg.+labels: {est_late:+.1f} points at {_ks_text(late)}, {est_zero:+.1f} points at k = 0"
        null_range = (f"k = 0, settings swapped: {_range_text(zero_summary)}; {_ks_text(late)}, {margin:g} points apart: "
                      f"[{lo_a:+.0f}, {hi_a:+.0f}] points")
        nul = _Null(null, observed, null_range, rate, _rate_why(agrees, rate, n_perm))
    ours = f"full minus seg.+labels: {est_late:+.0f} points at {_ks_text(late)}, {est_zero:+.0f} points at k = 0"
    note = "" if late[0] >= SETTINGS_EQUAL_FROM_K else f" No k >= {SETTINGS_EQUAL_FROM_K} was run: part (a) uses {_ks_text(late)}."
    zero_why = _directional_why(est_zero, ci_zero, what="full information minus segment pairs and labels")
    floor = ""
    if same_late and not present and ci_level is not None:
        floor = (f" The higher setting's level at {_ks_text(late)} ({level:.0f}%, interval {ci_level.bounds('{:.0f}', '%')}) "
                 f"does not lie above the {margin:g}-point margin: below it the two settings are within the margin of each "
                 "other by the floor, so (a) proves nothing (memorization too low to tell).")
    reason = (f"Checked on the {focus.describe()}, full information minus segment pairs and labels: (a) "
              f"{_equivalence_why(est_late, ci_late, margin, False, f'the difference at {_ks_text(late)}')}; (b) at k = 0 "
              f"{zero_why}. Reproduced needs (a) equal, with memorization above the margin there, and (b) full information "
              f"higher.{note}{floor}{nul.why}")
    interval = (None if not computable else
                f"{_ks_text(late)}: {ci_late.bounds()}; k = 0: {ci_zero.bounds()}; higher level at {_ks_text(late)}: "
                f"{ci_level.bounds('{:.0f}', '%')} ({ci_late.method()})")
    return ClaimResult("D5", paper_d5(), ours, evidence_verdict(agrees, nul.null_rate, contradicted=contradicted), reason, interval,
                       **nul.fields())


# -- D6, D7, D8: performance -----------------------------------------------------------------------------------
def paper_d6() -> str:
    return f"ICL beats zero-shot performance when memorization in few-shot regimes reaches ~{ICL_GAIN_MEMORIZATION:g}% or more"


def claim_d6(mem: pd.DataFrame, perf: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0,
             threshold: float | None = None, n_perm: int = N_PERMUTATIONS) -> ClaimResult:
    """D6 (Sec. 5.2, Observation 1): ICL outperforms zero-shot when surfaced memorization reaches about 40%.

    Checked: the ks > 0 where the focus's memorization (standard-ICL setting) reaches ``threshold``; there, accuracy
    minus zero-shot accuracy per instance (paired), averaged over those ks; the rule: its bootstrap interval lies above
    0. Not testable when no k reaches it. ``threshold``: :data:`ICL_GAIN_MEMORIZATION` when ``None``.

    Null: an instance's classification answers are exchangeable across the ks run (the demonstrations do not change
    accuracy); each draw permutes the k labels of the answers within every instance, the ks where memorization reaches
    the threshold kept.
    """
    threshold = ICL_GAIN_MEMORIZATION if threshold is None else threshold
    settings, where = icl_settings(mem)
    m = memorization_matrix(mem, focus, settings)
    c = correct_matrix(perf, focus)
    ks = [k for k in m.columns if k in set(c.columns)]
    shots = [k for k in ks if k > 0]
    if 0 not in ks or not shots:
        return _needs("D6", paper_d6(), f"k run: {ks}", "D6 needs zero-shot and k > 0 accuracy and memorization.")
    level = {k: _mean_pct(m, [k]) for k in shots}
    high = [k for k in shots if level[k] >= threshold]
    top = max(shots, key=lambda k: level[k])
    if not high:
        return _needs("D6", paper_d6(), f"memorization at most {level[top]:.0f}% (k = {top})",
                      f"On the {focus.describe()}: memorization ({where}) never reaches {threshold:g}% at k > 0 "
                      f"(at most {level[top]:.0f}% at k = {top}): the claim's condition does not occur in this run.")
    x = c.to_numpy()
    cols = list(c.columns)
    high_cols, zero_col = [cols.index(k) for k in high], cols.index(0)
    gain = np.nanmean(x[:, high_cols], axis=1) - x[:, zero_col]

    def stat(idx: np.ndarray) -> float:
        return float(np.nanmean(gain[idx]) * 100)

    est = stat(np.arange(len(x)))
    ci = bootstrap(len(x), stat, n_boot, seed)
    acc0, acc_high = _mean_pct(c, [0]), _mean_pct(c, high)
    ours = (f"memorization >= {threshold:g}% at {_ks_text(high)} ({', '.join(f'{level[k]:.0f}%' for k in high)}); accuracy "
            f"there {acc_high:.0f}% vs zero-shot {acc0:.0f}% ({est:+.0f} points)")
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        summary = _gain_null(x, high_cols, zero_col, est, seed, "D6", n_perm)
        nul = _null_of(summary, agrees, (
            "an instance's classification answers exchangeable across the ks run (the demonstrations do not change "
            f"accuracy), their k labels permuted within every instance; {_draws_text(n_perm, seed, n_boot)}"),
            f"accuracy at {_ks_text(high)} minus zero-shot: {est:+.1f} points")
    reason = (f"Checked on the {focus.describe()}: at the ks > 0 where memorization ({where}) reaches {threshold:g}%, "
              f"k-shot minus zero-shot accuracy of the same instances; {_directional_why(est, ci, what='the accuracy gain')}."
              f"{nul.why}")
    return ClaimResult("D6", paper_d6(), ours, evidence_verdict(agrees, nul.null_rate, contradicted=contradicted), reason,
                       ci.text() if ci else None, **nul.fields())


def paper_d7() -> str:
    t = TABLE2
    cols = ", ".join(f"{d} " + "/".join(f"{v:.2f}" for v in t[d]) for d in t.columns)
    return f"Pearson r(performance, memorization) across k, {'/'.join(SHORT_SETTINGS[s] for s in t.index)}: {cols} (Tab. 2)"


def claim_d7(mem: pd.DataFrame, perf: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0,
             n_perm: int = N_PERMUTATIONS) -> ClaimResult:
    """D7 (Sec. 5.2, Observation 3; Tab. 2): performance and memorization (exact + near-exact) correlate very strongly
    across the k regimes where ICL improves on zero-shot (WNLI, TREC, DBpedia: r ~0.9-1.0), negatively where it does
    not (RTE: r -0.30 to -0.55).

    Checked: Pearson r across the ks run of the focus's accuracy and memorization, per setting, with an interval from
    a bootstrap over instances (r recomputed on each resample). The predicted sign is that of the ICL gain (mean
    k > 0 accuracy minus zero-shot); reproduced when every setting's interval lies on that side of 0; differs when a
    setting's r does not have that sign. Two ks give r = +-1 by construction: at least three are needed.

    Null: an instance's memorization is exchangeable across the ks run (its k curve unrelated to accuracy's); each
    draw permutes the k labels of the memorization within every instance, the same permutation in all its settings,
    accuracy kept.
    """
    c = correct_matrix(perf, focus)
    run = [s for s in SHORT_SETTINGS if s in set(focus.rows(mem)["setting"])]
    ks = [k for k in c.columns if k in set(focus.rows(mem)["k"])]
    if len(ks) < 3 or 0 not in ks:
        return _needs("D7", paper_d7(), f"k run: {ks}",
                      f"A correlation across k needs at least three k values including k = 0 (run: {ks}); with two, r is +-1 "
                      "or undefined by construction.")
    index = c.index
    acc = c.reindex(columns=ks).to_numpy()
    mems = {s: memorization_matrix(mem, focus, [s]).reindex(index=index, columns=ks).to_numpy() for s in run}
    gain = float(np.nanmean(acc[:, 1:]) - np.nanmean(acc[:, 0])) * 100
    sign = 1 if gain > 0 else -1
    rs, cis = {}, {}
    for s, mx in mems.items():
        def stat(idx: np.ndarray, mx: np.ndarray = mx) -> float:
            return pearson(np.nanmean(acc[idx], axis=0), np.nanmean(mx[idx], axis=0))

        rs[s] = stat(np.arange(len(index)))
        cis[s] = bootstrap(len(index), stat, n_boot, seed)
    defined = [s for s in run if np.isfinite(rs[s]) and cis[s] is not None]
    ours = (", ".join(f"{SHORT_SETTINGS[s]} r = {rs[s]:.2f}" for s in run) +
            f" ({_ks_text(ks)}; ICL accuracy gain {gain:+.0f} points)")
    if not defined:
        return _needs("D7", paper_d7(), ours, f"On the {focus.describe()} accuracy or memorization does not vary with k: "
                      "Pearson's r is undefined in every setting.")
    answers = {s: directional_agreement(rs[s], cis[s], sign) for s in defined}
    agrees = all(a for a, _ in answers.values())
    contradicted = any(x for _, x in answers.values())
    # the null: memorization's k labels permuted within each instance (all settings alike), accuracy kept
    n = len(index)
    rng = _null_rng(seed, "D7")
    perms = _row_permutations(rng, n_perm, n, len(ks))
    boot = _null_boot(rng, n_perm, n)
    acc_all, acc_reps = np.nanmean(acc, axis=0), np.empty((n_perm, NULL_BOOT, len(ks)))  # ks; draws x resamples x ks
    with _quiet():
        for sl in _chunks(n_perm, boot[0].size * len(ks)):
            acc_reps[sl] = np.nanmean(acc[boot[sl]], axis=2)
    all_agree, any_defined = np.ones(n_perm, bool), np.zeros(n_perm, bool)
    ranges = []
    for s in run:
        mp = _permute_within(mems[s], perms)  # draws x instances x ks
        r_reps = np.empty((n_perm, NULL_BOOT))
        with _quiet():
            r_est = _pearson_rows(acc_all, np.nanmean(mp, axis=1))
            for sl in _chunks(n_perm, boot[0].size * len(ks)):
                r_reps[sl] = _pearson_rows(acc_reps[sl], np.nanmean(_per_draw(mp[sl], boot[sl]), axis=2))
        lo, hi = _row_intervals(r_reps)
        ok = np.isfinite(r_est) & np.isfinite(lo) & np.isfinite(hi)
        all_agree &= ~ok | _answers_directional(r_est, lo, hi, sign)[0]
        any_defined |= ok
        if s in defined:
            sm = summarize_null(rs[s], r_est, ok)
            ranges.append(f"{SHORT_SETTINGS[s]} {_range_text(sm, '{:+.2f}', '')}")
    null_agrees = all_agree & any_defined
    rate = float(null_agrees.mean())
    null = ("an instance's memorization exchangeable across the ks run (its k curve unrelated to accuracy's), its k labels "
            f"permuted within every instance, the same in all its settings, accuracy kept; {_draws_text(n_perm, seed, n_boot)}")
    observed = ", ".join(f"{SHORT_SETTINGS[s]} r = {rs[s]:+.2f}" for s in defined) + f" (predicted sign {'+' if sign > 0 else '-'})"
    side = "positive (ICL beats zero-shot, as WNLI/TREC/DBpedia)" if sign > 0 else "negative (ICL does not beat zero-shot, as RTE)"
    n_agree, n_wrong = sum(a for a, _ in answers.values()), sum(x for _, x in answers.values())
    reason = (f"Checked on the {focus.describe()}: Pearson r across {_ks_text(ks)} of accuracy and memorization per setting; "
              f"the paper's pattern predicts r {side}; {n_agree} of {len(defined)} settings with a defined r have their "
              f"interval on that side of 0" + (f", {n_wrong} have r of the other sign" if n_wrong else "") +
              ("" if len(defined) == len(run) else "; the others have an undefined r") +
              ". Few ks make each r rest on few points." + _rate_why(agrees, rate, n_perm))
    method = next(cis[s].method() for s in defined)
    interval = "; ".join(f"{SHORT_SETTINGS[s]} " + (cis[s].bounds("{:.2f}", "") if cis[s] else "undefined") for s in run)
    interval += f" (r recomputed per resample; {method})"
    return ClaimResult("D7", paper_d7(), ours, evidence_verdict(agrees, rate, contradicted=contradicted), reason, interval,
                       null=null, observed=observed, null_range="; ".join(ranges), null_rate=rate)


def paper_d8() -> str:
    return "performance on memorized instances is higher than on non-memorized ones across nearly all regimes (Sec. 5.2, Obs. 2)"


def _memorized_gap(cells: Sequence[tuple[np.ndarray, np.ndarray]], mem_idx: np.ndarray, acc_idx: np.ndarray) -> np.ndarray:
    """D8's statistic for index arrays ``mem_idx`` (draws x resamples x instances, rows of the memorization) and
    ``acc_idx`` (the same shape, rows of the accuracy, paired with them): the mean over the (setting, k) cells
    holding both groups of accuracy on memorized minus non-memorized instances, in points (NaN when no cell has both)."""
    total = np.zeros(mem_idx.shape[:-1])
    count = np.zeros(mem_idx.shape[:-1])
    with _quiet():
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


def claim_d8(mem: pd.DataFrame, perf: pd.DataFrame, focus: Focus, n_boot: int = N_BOOT, seed: int = 0,
             n_perm: int = N_PERMUTATIONS) -> ClaimResult:
    """D8 (Sec. 5.2, Observation 2): accuracy on memorized instances exceeds accuracy on non-memorized ones.

    Checked on the focus model with **all** its instances (members and non-members: memorized vs not is the split):
    per (setting, k) cell holding both groups, accuracy of the memorized minus the non-memorized instances, averaged
    over the cells; bootstrap over instances (cells lacking a group in a resample are skipped); the rule: the interval
    lies above 0.

    Null: the claim contrasts instances, so its null exchanges instances: which instance is memorized is unrelated to
    which is classified right. Each draw permutes the instances of the memorization against those of the accuracy (an
    instance's memorization moves whole, all settings and ks). A within-instance permutation across k would keep an
    instance-level link, which is the claim itself.
    """
    c = correct_matrix(perf, focus, members_only=False)
    run = [s for s in SHORT_SETTINGS if s in set(focus.rows(mem, False)["setting"])]
    ks = list(c.columns)
    cells = []
    for s in run:
        mx = memorization_matrix(mem, focus, [s], members_only=False).reindex(index=c.index, columns=ks).to_numpy()
        cells += [(s, k, mx[:, j], c.to_numpy()[:, j]) for j, k in enumerate(ks)]

    def diffs(idx: np.ndarray) -> list[tuple[str, int, float]]:
        out = []
        for s, k, mcol, ccol in cells:
            mm, cc = mcol[idx], ccol[idx]
            ok = np.isfinite(mm) & np.isfinite(cc)
            hit = mm[ok] > 0
            if hit.any() and (~hit).any():
                out.append((s, k, float(cc[ok][hit].mean() - cc[ok][~hit].mean()) * 100))
        return out

    def stat(idx: np.ndarray) -> float:
        d = diffs(idx)
        return float(np.mean([x for *_, x in d])) if d else float("nan")

    n = len(c)
    full = diffs(np.arange(n))
    if not full:
        return _needs("D8", paper_d8(), "no (setting, k) cell with both memorized and non-memorized instances",
                      f"On the {focus.describe(False)}: no (setting, k) holds both memorized and non-memorized instances.")
    est = stat(np.arange(n))
    ci = bootstrap(n, stat, n_boot, seed)
    by_regime = pd.DataFrame(full, columns=["setting", "k", "d"]).assign(regime=lambda f: f["k"].map(regime))
    per = ", ".join(f"{r} {g['d'].mean():+.0f} points" for r, g in by_regime.groupby("regime", sort=False))
    ours = (f"memorized minus non-memorized accuracy {est:+.0f} points (mean of {len(full)} (setting, k) cells; higher in "
            f"{int((by_regime['d'] > 0).sum())} of {len(full)}; by regime: {per})")
    agrees, contradicted = directional_agreement(est, ci)
    nul = _Null()
    if ci is not None:
        rng = _null_rng(seed, "D8")
        perm = np.argsort(rng.random((n_perm, n)), axis=1)
        boot = _null_boot(rng, n_perm, n)
        rows = np.concatenate([np.broadcast_to(np.arange(n), (n_perm, 1, n)), boot], axis=1)  # row 0: the whole sample
        values = np.empty(rows.shape[:2])
        pairs = [(mcol, ccol) for *_, mcol, ccol in cells]
        for sl in _chunks(n_perm, rows[0].size * len(pairs)):
            values[sl] = _memorized_gap(pairs, _per_draw(perm[sl], rows[sl]), rows[sl])
        null_est = values[:, 0]
        null_agrees = _answers_directional(null_est, *_row_intervals(values[:, 1:]))[0]
        summary = summarize_null(est, null_est, null_agrees)
        nul = _null_of(summary, agrees, (
            "which instances are memorized unrelated to which are classified right: the instances of the memorization "
            "permuted against those of the accuracy (an instance's memorization moves whole, all settings and ks); "
            f"{_draws_text(n_perm, seed, n_boot)}"),
            f"memorized minus non-memorized accuracy: {est:+.1f} points")
    reason = (f"Checked on the {focus.describe(False)}: per (setting, k) with both groups, accuracy of memorized minus "
              f"non-memorized instances, averaged; {_directional_why(est, ci)}.{nul.why}")
    return ClaimResult("D8", paper_d8(), ours, evidence_verdict(agrees, nul.null_rate, contradicted=contradicted), reason,
                       ci.text() if ci else None, **nul.fields())


# -- D9: human review of the judge ---------------------------------------------------------------------------
def paper_d9() -> str:
    lo, hi = JUDGE_HUMAN_ACCURACY
    return (f"human review changed {HUMAN_REVIEW_CHANGED_PERCENT:g}% of GPT-4's judge labels, all borderline near-exact "
            f"vs inexact (the judge's agreement with humans: {lo:g}-{hi:g}%)")


D9_NO_NULL = ("no null applies: the claim is one share (the judge labels a human review changed, over all judged "
              "completions), not a contrast between groups, so there are no labels to exchange; its evidence is the 95% "
              "Wilson interval of that share")


def claim_d9(agreement: dict[str, Any] | None = None, review: Any = None) -> ClaimResult:
    """D9 (Sec. 4, "Human Evaluation"): a human review changed 5% of the GPT-4 judge's labels, all borderline cases
    between near-exact and inexact.

    ``review``: an :class:`~iclmem.llm.review.ReviewResult` (a reviewed CSV imported with
    :func:`~iclmem.llm.review.import_review`). With it, the share of this build's judge labels the review changed,
    over all judged completions as in the paper, with its 95% Wilson interval; reproduced when the paper's 5% lies
    inside it (:func:`iclmem.chapters.verdicts.share_agreement`), differs when outside. No null applies
    (:data:`D9_NO_NULL`): a single share has no groups to exchange. Without a review, not testable; ``agreement``
    (offline vs LLM judge, :func:`iclmem.llm.judges.agreement`) is quoted as context, as two automatic judges agreeing
    is not the paper's measure.
    """
    paper_share = HUMAN_REVIEW_CHANGED_PERCENT / 100
    if review is not None and review.n_judged:
        value, interval = share_text(review.n_changed, review.n_judged)
        kinds = ", ".join(f"{int(r.n)} {r.match_judge} -> {r.match}" for r in review.changes.itertuples()) or "none"
        ours = (f"human review changed {value} of the judge's labels ({review.n_reviewed} borderline cases reviewed; "
                f"changes: {kinds})")
        agrees, why = share_agreement(review.n_changed, review.n_judged, paper_share)
        verdict = evidence_verdict(agrees, None, no_null=True, contradicted=agrees is False)
        borderline = all({a, b} <= {"near-exact", "no"} for a, b in zip(review.changes["match_judge"], review.changes["match"],
                                                                          strict=True))
        reason = (f"Share of this build's judge labels changed by the imported human review, over all {review.n_judged} judged "
                  f"completions as in the paper: {why}. " + ("Every change is between near-exact and inexact, as in the paper."
                                                             if borderline and review.n_changed else
                                                             "Not every change is between near-exact and inexact."
                                                             if review.n_changed else "The review changed no label."))
        return ClaimResult("D9", paper_d9(), ours, verdict, reason, f"{interval} (95% Wilson)", null=D9_NO_NULL,
                           observed=f"labels changed: {value}")
    if agreement and agreement.get("n"):
        ours = (f"no human review; offline and LLM judges agree on {agreement['agreement']:.0%} of {agreement['n']} "
                f"completions (Cohen's kappa {agreement['kappa']:.2f})")
    else:
        ours = "no human review; no second judge was run"
    reason = ("The share of judge labels a human review changes needs a human review of this build's completions: export the "
              "borderline cases (notebook parameter review_export), label them, and import the file (review_file). The "
              "agreement of the two automatic judges is shown as context, not as that share.")
    return ClaimResult("D9", paper_d9(), ours, "not testable here", reason)


def kappa_reading(kappa: float) -> str:
    """Landis & Koch's (1977) words for Cohen's kappa: "near chance" up to 0.20, then "fair", "moderate",
    "substantial" (above 0.60) and "almost perfect" (above 0.80); "not measured" for NaN."""
    if not np.isfinite(kappa):
        return "not measured"
    for bound, word in ((0.2, "near chance"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"


# -- all -------------------------------------------------------------------------------------------------------
def all_claims(mem: pd.DataFrame, perf: pd.DataFrame, focus: Focus, agreement: dict[str, Any] | None = None,
               n_boot: int = N_BOOT, seed: int = 0, review: Any = None, n_perm: int = N_PERMUTATIONS) -> list[ClaimResult]:
    """D1-D9 in order (``mem`` judged, ``perf`` as run; ``review``: an imported human review, for D9; ``n_perm``: null
    draws per claim)."""
    return [claim_d1(mem, focus, n_boot, seed, n_perm), claim_d2(mem, focus, n_boot, seed, n_perm),
            claim_d3(mem, focus, n_boot, seed, n_perm), claim_d4(mem, focus, n_boot, seed, n_perm=n_perm),
            claim_d5(mem, focus, n_boot, seed, n_perm=n_perm), claim_d6(mem, perf, focus, n_boot, seed, n_perm=n_perm),
            claim_d7(mem, perf, focus, n_boot, seed, n_perm), claim_d8(mem, perf, focus, n_boot, seed, n_perm),
            claim_d9(agreement, review)]


def claims_table(results: Sequence[ClaimResult]) -> pd.DataFrame:
    """One row per claim: paper, ours, interval, verdict and the null rate (the scorecard's columns)."""
    return pd.DataFrame([{"claim": r.claim_id, "paper": r.paper, "ours": r.ours, "interval": r.interval or "",
                          "verdict": r.verdict, "null rate": null_rate_text(r.record())} for r in results]).set_index("claim")


def verdict_counts(results: Sequence[ClaimResult]) -> str:
    """``"2 reproduced, 5 differs, 2 not testable here"`` (verdicts in :data:`iclmem.chapters.claims.VERDICTS` order, zeros left out)."""
    counts = pd.Series([r.verdict for r in results]).value_counts()
    return ", ".join(f"{int(counts[v])} {v}" for v in VERDICTS if v in counts.index) or "no claims"


# -- figures: the companions of the paper's Fig. 2-4 (seaborn) -----------------------------------------------------
def _group_label(df: pd.DataFrame) -> pd.Series:
    if "member" in df.columns:
        return df["model"] + " / " + df["member"].map({True: "members", False: "non-members"})
    return df["model"]


def plot_memorization(rates: pd.DataFrame) -> sns.FacetGrid:
    """Fig. 2 companion: memorization (%) against k, one column per setting; top row exact + near-exact,
    bottom row exact only. ``rates`` comes from ``memorization_rates(..., by=(model, member, setting, k))``."""
    df = rates.copy()
    df["group"] = _group_label(df)
    long = df.melt(id_vars=["group", "setting", "k"], value_vars=["memorized", "exact"], var_name="measure", value_name="percent")
    long["measure"] = long["measure"].map({"memorized": "exact + near-exact", "exact": "exact only"})
    long["setting"] = long["setting"].map(SETTINGS)
    g = sns.relplot(data=long, x="k", y="percent", hue="group", style="group", col="setting", row="measure", kind="line",
                    marker="o", height=2.6, aspect=1.25, col_order=[SETTINGS[s] for s in SETTINGS if SETTINGS[s] in set(long.setting)],
                    facet_kws={"margin_titles": True})
    g.set_titles(col_template="{col_name}", row_template="{row_name}")
    g.set_axis_labels("k (demonstrations)", "memorization (%)")
    g.set(ylim=(-3, 103))
    g.figure.suptitle("Memorization across k-shot regimes (cf. Fig. 2 of the paper)", y=1.03)
    return g


def plot_match_composition(judged: pd.DataFrame, column: str = "match") -> sns.FacetGrid:
    """Fig. 3 companion: share of exact and near-exact matches per k, per setting and group (stacked)."""
    df = judged[judged[column].notna()].copy()
    df["group"] = _group_label(df)
    df["setting"] = df["setting"].map(SETTINGS)
    df["exact"] = (df[column] == "exact") * 100.0
    df["near-exact"] = (df[column] == "near-exact") * 100.0
    pivot = df.groupby(["group", "setting", "k"], observed=True)[["exact", "near-exact"]].mean().reset_index()
    groups, settings = list(dict.fromkeys(pivot["group"])), [SETTINGS[s] for s in SETTINGS if SETTINGS[s] in set(pivot.setting)]
    fig, axes = plt.subplots(len(groups), len(settings), figsize=(3.2 * len(settings), 2.2 * len(groups)), sharey=True, squeeze=False)
    for i, grp in enumerate(groups):
        for j, st in enumerate(settings):
            ax = axes[i][j]
            sub = pivot[(pivot.group == grp) & (pivot.setting == st)].sort_values("k")
            x = [str(k) for k in sub["k"]]
            ax.bar(x, sub["exact"], color=sns.color_palette()[0], label="exact")
            ax.bar(x, sub["near-exact"], bottom=sub["exact"], color=sns.color_palette()[1], label="near-exact")
            ax.set_ylim(0, 100)
            if i == 0:
                ax.set_title(st, fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{grp}\n%", fontsize=8)
            if i == len(groups) - 1:
                ax.set_xlabel("k")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Exact and near-exact matches (cf. Fig. 3 of the paper)")
    fig.tight_layout()
    return fig


def plot_performance_vs_memorization(acc: pd.DataFrame, rates: pd.DataFrame, measure: str = "memorized",
                                     chance: float | None = None) -> Any:
    """Fig. 4 companion: k-shot accuracy (left) and memorization in the three settings against k, one panel per model.

    ``chance``: accuracy of a uniform guess (percent), drawn as a dotted line.
    """
    models = list(dict.fromkeys(rates["model"]))
    fig, axes = plt.subplots(1, 1 + len(models), figsize=(3.6 * (1 + len(models)), 3.4), squeeze=False)
    left = axes[0][0]
    sns.lineplot(data=acc, x="k", y="accuracy", hue="model", marker="o", ax=left)
    if chance is not None:
        left.axhline(chance, color="grey", linestyle=":", linewidth=1, label="chance")
    left.set(title="performance (k-shot ICL)", xlabel="k (demonstrations)", ylabel="accuracy (%)", ylim=(-3, 103))
    left.legend(fontsize=7)
    df = rates.copy()
    df["setting"] = df["setting"].map(SETTINGS)
    what = "exact + near-exact" if measure == "memorized" else "exact"
    for ax, model in zip(axes[0][1:], models, strict=True):
        sns.lineplot(data=df[df.model == model], x="k", y=measure, hue="setting", style="setting", marker="o", ax=ax)
        ax.set(title=f"memorization: {model}", xlabel="k (demonstrations)", ylabel=f"{what} (%)", ylim=(-3, 103))
        ax.legend(fontsize=7)
    fig.suptitle("Performance vs memorization (cf. Fig. 4 of the paper)")
    fig.tight_layout()
    return fig


# -- the notebook's summaries ------------------------------------------------------------------------------------
def glue_values(values: Mapping[str, object]) -> None:
    """Glue every value under its name with myst-nb, not displayed, as the object itself (a string keeps its
    quoted ``repr``, a number its digits), for ``{glue:text}`` in the chapter's prose."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, value, display=False)


def sample_table(exp: Experiment) -> pd.DataFrame:
    """One row (the dataset and split): rows read, usable, dropped (and why), instances, members, demonstrations."""
    data = exp.data
    return pd.DataFrame({
        "rows read": [data.n_rows], "usable": [len(data.instances)], "dropped (empty or one word)": [data.n_dropped_empty],
        "dropped (duplicate text)": [data.n_dropped_duplicate], "dropped (other label)": [data.n_dropped_label],
        "instances": [len(exp.instances)], "members": [len(exp.sample.members)], "demonstrations": [len(exp.sample.demonstrations)],
    }, index=[f"{data.spec.title} ({data.split})"])


@dataclass(frozen=True)
class ContextSummary:
    """Which of the configured ks the model's context window holds (section "Backends and context window")."""

    fit: pd.DataFrame  # :func:`~iclmem.llm.replication.context_fit`: the longest prompt per k and whether it fits
    ks: tuple[int, ...]  # the configured ks
    ks_run: list[int]  # the ks run (:func:`~iclmem.llm.replication.runnable_ks`)
    k_max: int  # the largest k the window holds (:func:`~iclmem.llm.replication.window_capacity`)
    probe_pool: int  # the demonstrations k_max was probed with: k_max == probe_pool means "at least k_max"
    model_id: str
    context_window: int | None

    @property
    def left_out(self) -> list[int]:
        """The configured ks not run (their prompts do not fit)."""
        return [k for k in self.ks if k not in self.ks_run]

    @property
    def largest_k(self) -> int | str:
        """``k_max``, or ``"at least <k_max>"`` when even the whole probe pool fits."""
        return self.k_max if self.k_max < self.probe_pool else f"at least {self.k_max}"

    def glued(self) -> dict[str, object]:
        """``largest_k`` and ``ks_run`` (``"0, 25, 50"``), the names the chapter's prose reads."""
        return {"largest_k": self.largest_k, "ks_run": ", ".join(map(str, self.ks_run))}

    def text(self) -> str:
        """One line: model, window, the largest k that fits, the ks run and those left out."""
        largest = self.k_max if self.k_max < self.probe_pool else f"at least {self.k_max} (the probe pool)"
        return (f"model {self.model_id}, context window {self.context_window}; largest k that fits: {largest}; "
                f"runs k = {self.ks_run}" + (f"; left out (too long): {self.left_out}" if self.left_out else ""))


def context_summary(backend: ChatBackend, exp: Experiment) -> ContextSummary:
    """Fit of every configured k to ``backend``'s context window and the largest k it holds (token counts only)."""
    fit = context_fit(backend, exp)
    ks_run = runnable_ks(fit)
    k_max, probe_pool = window_capacity(backend, exp)
    return ContextSummary(fit, tuple(exp.config.ks), ks_run, k_max, probe_pool, backend.model_id, backend.context_window)


def judges_text(agree: Mapping[str, Any], n_unparsed: int, thresholds: Thresholds = SHIPPED_THRESHOLDS) -> str:
    """One line: the offline judge's thresholds and its agreement with the LLM judge (:func:`~iclmem.llm.judges.agreement`)."""
    return (f"thresholds: ROUGE-L >= {thresholds.rouge_l}, similarity >= {thresholds.semantic}; "
            f"{agree['n']} pairs judged by both: agreement {agree['agreement']:.0%}, Cohen's kappa {agree['kappa']:.2f}, "
            f"{n_unparsed} unparseable LLM answers (missing, left out of both judges' counts)")


def judge_glue(agree: Mapping[str, Any] | None) -> dict[str, str]:
    """``judge_agreement`` (percent) and ``judge_kappa`` of the two judges; ``"n/a"`` when no LLM judge ran (``None``)."""
    if agree is None:
        return {"judge_agreement": "n/a", "judge_kappa": "n/a"}
    return {"judge_agreement": f"{agree['agreement']:.0%}", "judge_kappa": f"{agree['kappa']:.2f}"}


def ground_truth_table(rates: pd.DataFrame) -> pd.DataFrame:
    """Memorization (%) per model, setting and k (rows), members vs non-members (columns, exact + near-exact and exact).

    ``rates``: :func:`~iclmem.llm.replication.memorization_rates` by ``(model, member, setting, k)``.
    """
    gt = rates.pivot_table(index=["model", "setting", "k"], columns="member", values=["memorized", "exact"])
    gt.columns = [f"{'exact' if a == 'exact' else 'exact+near'} ({'members' if b else 'non-members'})" for a, b in gt.columns]
    return gt.reindex(columns=sorted(gt.columns))


GROUND_TRUTH_NAMES = ("ft_members_kshot", "ft_nonmembers_kshot", "ft_members_zeroshot", "base_kshot", "ft_members_by_k")


def ground_truth_glue(rates: pd.DataFrame | None) -> dict[str, str]:
    """The summary's numbers of the controlled experiment, from ``rates`` by ``(model, member, setting, k)``.

    Each is a mean over the rows of ``rates`` (one per setting and k, as the tables show them), in percent:
    ``ft_members_kshot`` and ``ft_nonmembers_kshot`` (fine-tuned model, members / non-members, k > 0),
    ``ft_members_zeroshot`` (members, k = 0), ``base_kshot`` (the base model, all instances, k > 0) and
    ``ft_members_by_k`` (``"12% at k = 0, 40% at k = 25"``). All ``"n/a"`` without fine-tuning (``rates`` None).
    """
    if rates is None:
        return dict.fromkeys(GROUND_TRUTH_NAMES, "n/a")
    tuned = rates[rates.model == "fine-tuned"]
    base = rates[rates.model == "base"]
    by_k = tuned[tuned.member].groupby("k").memorized.mean()
    return {
        "ft_members_kshot": f"{tuned[tuned.member & (tuned.k > 0)].memorized.mean():.0f}%",
        "ft_nonmembers_kshot": f"{tuned[~tuned.member & (tuned.k > 0)].memorized.mean():.0f}%",
        "ft_members_zeroshot": f"{tuned[tuned.member & (tuned.k == 0)].memorized.mean():.0f}%",
        "base_kshot": f"{base[base.k > 0].memorized.mean():.0f}%",
        "ft_members_by_k": ", ".join(f"{v:.0f}% at k = {k}" for k, v in by_k.items()),
    }


def correlation_tables(rates: pd.DataFrame, acc: pd.DataFrame) -> pd.DataFrame:
    """This build's companions of Tab. 2 (exact + near-exact) and Tab. 3 (exact only), side by side.

    ``rates``: memorization rates by ``(model, setting, k)``; ``acc``: :func:`~iclmem.llm.replication.accuracy`.
    """
    return pd.concat({"exact + near-exact (Tab. 2)": correlation_table(rates, acc, "memorized"),
                      "exact only (Tab. 3)": correlation_table(rates, acc, "exact")}, axis=1)


def paper_correlation_tables() -> pd.DataFrame:
    """The paper's Tab. 2 and Tab. 3 side by side (settings x datasets, GPT-4)."""
    return pd.concat({"Tab. 2 (exact + near-exact)": TABLE2, "Tab. 3 (exact only)": TABLE3}, axis=1)


def memorized_vs_not_table(mem: pd.DataFrame, perf: pd.DataFrame) -> pd.DataFrame:
    """Accuracy and instance count on memorized vs not memorized instances per model, setting and k, one column
    each (:func:`~iclmem.llm.replication.memorized_vs_not`)."""
    table = memorized_vs_not(mem, perf).pivot_table(index=["model", "setting", "k"], columns="memorized", values=["accuracy", "n"])
    table.columns = [f"{a} ({'memorized' if b else 'not memorized'})" for a, b in table.columns]
    return table


def claims_glue(results: Sequence[ClaimResult], agree: Mapping[str, Any] | None) -> dict[str, object]:
    """The claims section's glued values: ``verdict-<ID>`` per claim, ``claims_verdicts`` (:func:`verdict_counts`),
    ``claims_n_boot``, ``claims_confidence``, ``equivalence_margin``, the null's ``claims_n_perm`` (draws per claim),
    ``claims_null_boot`` (bootstrap resamples per draw) and ``null_level`` (the largest null rate of a reproduced
    claim, percent), and ``judge_reading`` (:func:`kappa_reading` of the two judges' kappa, ``"not measured"`` when no
    LLM judge ran: ``agree`` None)."""
    values: dict[str, object] = {f"verdict-{r.claim_id}": r.verdict for r in results}
    values.update({
        "claims_verdicts": verdict_counts(results), "claims_n_boot": N_BOOT, "claims_confidence": f"{CONFIDENCE:.0%}",
        "equivalence_margin": f"{EQUIVALENCE_MARGIN:g}", "claims_n_perm": N_PERMUTATIONS, "claims_null_boot": NULL_BOOT,
        "null_level": f"{NULL_LEVEL:.0%}",
        "judge_reading": kappa_reading(agree["kappa"]) if agree is not None else "not measured",
    })
    return values


def run_glue(exp: Experiment, mem: pd.DataFrame, perf: pd.DataFrame, models: str, wall_minutes: float) -> dict[str, object]:
    """The run's size for the chapter's introduction and summary: instances, members, settings (lower case),
    ``models`` (a phrase), max new tokens, wall minutes (one decimal), completions, how many came from the cache and
    how many failed (left out of every rate, and named in the summary)."""
    return {
        "run_instances": len(exp.instances), "run_members": len(exp.sample.members),
        "run_settings": ", ".join(SETTINGS[s].lower() for s in exp.config.settings), "run_models": models,
        "run_tokens": exp.config.max_new_tokens, "wall_minutes": f"{wall_minutes:.1f}",
        "n_completions": len(mem) + len(perf), "n_cached": int(mem.cached.sum() + perf.cached.sum()),
        "n_failed": int(mem["error"].notna().sum() + perf["error"].notna().sum()),
    }


__all__ = [
    # reference values
    "TABLE2", "TABLE3", "MEMORIZATION_RANGES", "MEMORIZATION_NOTES", "ICL_SETTING", "UPPER_BOUND_SETTING",
    "KEY_ELEMENT_SETTING", "SHARP_RISE_K", "MEMORIZATION_AT_200_SHOT", "MEMORIZATION_PLATEAU_AFTER_25_SHOT",
    "NEAR_TO_EXACT_TRANSITIONS", "SETTINGS_EQUAL_FROM_K", "ICL_GAIN_MEMORIZATION", "HUMAN_REVIEW_CHANGED_PERCENT",
    "JUDGE_HUMAN_ACCURACY",
    # claims
    "CONFIDENCE", "D9_NO_NULL", "EQUIVALENCE_MARGIN", "N_BOOT", "NULL_BOOT", "ClaimResult", "Focus", "Interval",
    "all_claims", "bootstrap", "claim_d1", "claim_d2", "claim_d3", "claim_d4", "claim_d5", "claim_d6", "claim_d7",
    "claim_d8", "claim_d9", "claims_table", "correct_matrix", "kappa_reading", "directional_agreement",
    "directional_verdict", "equivalence_agreement", "equivalence_verdict", "icl_settings", "memorization_matrix",
    "pearson", "transitions", "verdict_counts",
    # figures
    "plot_match_composition", "plot_memorization", "plot_performance_vs_memorization",
    # the notebook's summaries
    "ContextSummary", "GROUND_TRUTH_NAMES", "claims_glue", "context_summary", "correlation_tables", "glue_values",
    "ground_truth_glue", "ground_truth_table", "judge_glue", "judges_text", "memorized_vs_not_table",
    "paper_correlation_tables", "run_glue", "sample_table",
]
