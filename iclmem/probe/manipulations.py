"""The 48 context manipulations of App. A.3 / Tab. 7 as a registry of named, composable transforms.

A manipulation maps a multiple-choice context (:class:`~iclmem.probe.contexts.MCContext`) to
another, transforming ``(context_x, context_y, query_x)`` together. It is a sequence of
primitive *steps*; every step draws its randomness from ``query_rng(seed, query_id, step.key)``,
so a manipulation is deterministic per ``(seed, query)`` and a step shared by two manipulations
(e.g. the dropped columns of ``feature_reduction_2`` and ``shuffle_and_reduce_2``) makes the same
choice in both.

Primitive steps (factors multiply the rows of a label; the base context has one row per candidate):

* ``shuffle_{random,first,last}`` — position of the true target's row(s): a random permutation
  of all rows, or the true rows moved first / last (the other rows keep their order);
* ``reduce_2`` — drop 2 feature columns (random, the same from context and query); at least one
  column is always kept, so a table with ``F <= 2`` features drops ``F - 1``. A dropped column is
  *masked* (every cell of it missing, in context and query) rather than deleted, so every other
  column keeps its position: the reference LTM embeds columns by position
  (``LTMConfig.column_embedding``), and deleting a column would hand each later column the
  embedding of the one before it, while ConTextTab, the paper's model, identifies columns by name
  and relabels nothing when one is dropped. ``reduce_step(n, keep_positions=False)`` deletes;
* ``distract_{1,2}`` — append 1 or 2 columns of N(0, 1) noise to context and query (the encoded
  features are robust-standardized, so N(0, 1) is on their scale);
* ``uniform_f`` — every row x f;  ``random_f`` — each candidate's rows x c, c ~ U{1..f} per candidate;
* ``skew_true_f`` — the true candidate's rows x f;
* ``skew_non_true_k<k>_x<f>`` — k randomly chosen incorrect candidates x f (k is capped at the
  number of incorrect candidates, so on a binary task k = 2, 3 act like k = 1);
* ``mixed_true_t_non_true_n`` — the true candidate x t and every incorrect candidate x n
  (Fig. 4: ``mixed_true_5_non_true_5`` "simultaneously amplifying all labels by 5x").

Choices where Tab. 7 gives only a count (documented in the module constants):

* Mixed skewing, 7 of the 9 (true, non-true) factor pairs in {2,3,5}^2: the 6 unequal pairs,
  which skew the label distribution, plus (5, 5), which the paper names. (2, 2) and (3, 3) are
  left out: equal factors do not skew (they are uniform scaling; (2, 2) *is* ``uniform_2``).
* 2-way combinations (9): random shuffle + {uniform x2, x5, x10; skewed (true) x2, x3, x5;
  random x2, x5; feature reduction}. All three factors of the two axes the paper discusses
  (uniform scaling, true-label skew: the most effective perturbations, App. A.3); random
  scaling x10 is left out (the noisiest, largest contexts).
* 3-way stress tests (7): random shuffle + {skewed (true) x2, x3, x5; uniform x2, x5;
  random x2, x5} + feature reduction.

In a composition the steps run distribution first, then features, then position, so the
shuffle decides the final row order. Every result is checked against the model's limits
(512 context rows, 32 features for the reference LTM) with an error naming the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .contexts import MCContext, ProbeError, query_rng

Transform = Callable[[MCContext, np.random.Generator], MCContext]

#: Tab. 7 categories: key -> (label in Tab. 7, count in Tab. 7).
CATEGORIES: dict[str, tuple[str, int]] = {
    "baseline": ("Baseline", 1),
    "positional_shuffling": ("Positional Shuffling", 3),
    "feature_reduction": ("Feature Reduction", 1),
    "distractor_injection": ("Distractor Injection", 2),
    "uniform_scaling": ("Uniform Scaling", 3),
    "random_scaling": ("Random Scaling", 3),
    "skew_true": ("Skew True Target", 3),
    "skew_incorrect": ("Skew Incorrect Targets", 9),
    "mixed_skewing": ("Mixed Skewing", 7),
    "two_way": ("2-Way Combinations", 9),
    "three_way": ("3-Way Stress Tests", 7),
}

SCALING_FACTORS: tuple[int, ...] = (2, 5, 10)
SKEW_FACTORS: tuple[int, ...] = (2, 3, 5)
SKEW_COUNTS: tuple[int, ...] = (1, 2, 3)
#: (true factor, non-true factor): 6 unequal pairs + the paper's mixed_true_5_non_true_5.
MIXED_PAIRS: tuple[tuple[int, int], ...] = ((2, 3), (2, 5), (3, 2), (3, 5), (5, 2), (5, 3), (5, 5))
TWO_WAY: tuple[tuple[str, int], ...] = (
    ("uniform", 2),
    ("uniform", 5),
    ("uniform", 10),
    ("skewed", 2),
    ("skewed", 3),
    ("skewed", 5),
    ("random", 2),
    ("random", 5),
    ("reduce", 2),
)
THREE_WAY: tuple[tuple[str, int], ...] = (
    ("skewed", 2),
    ("skewed", 3),
    ("skewed", 5),
    ("uniform", 2),
    ("uniform", 5),
    ("random", 2),
    ("random", 5),
)


# -- primitive steps ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ManipulationStep:
    """One primitive transform; ``key`` names it and its random stream."""

    key: str
    stage: int  # 0 distribution, 1 features, 2 position: the order steps run in within a composition
    fn: Transform

    def __call__(self, ctx: MCContext, seed: int, query_id: int) -> MCContext:
        return self.fn(ctx, query_rng(seed, query_id, self.key))


def _scale_rows(ctx: MCContext, factor_of: Callable[[object], int]) -> MCContext:
    counts = np.fromiter((factor_of(v) for v in ctx.context_y.tolist()), dtype=np.int64, count=ctx.n_rows)
    return ctx.with_(context_x=np.repeat(ctx.context_x, counts, axis=0), context_y=np.repeat(ctx.context_y, counts))


def _incorrect(ctx: MCContext) -> list:
    return [c for c in ctx.candidates().tolist() if c != ctx.true_label]


def shuffle_step(position: str) -> ManipulationStep:
    """Positional shuffling (Tab. 7): the true target's row(s) at a random position, first or last."""
    if position not in ("random", "first", "last"):
        raise ProbeError(f"shuffle position must be 'random', 'first' or 'last', got {position!r}.")

    def fn(ctx: MCContext, rng: np.random.Generator) -> MCContext:
        true = ctx.true_rows()
        if position == "random":
            order = rng.permutation(ctx.n_rows)
        elif position == "first":
            order = np.concatenate([np.flatnonzero(true), np.flatnonzero(~true)])
        else:
            order = np.concatenate([np.flatnonzero(~true), np.flatnonzero(true)])
        return ctx.with_(context_x=ctx.context_x[order], context_y=ctx.context_y[order])

    return ManipulationStep(f"shuffle_{position}", 2, fn)


#: Feature reduction keeps the other columns' positions (see the module docstring): the dropped ones are masked.
KEEP_COLUMN_POSITIONS = True


def reduce_step(n_columns: int = 2, keep_positions: bool = KEEP_COLUMN_POSITIONS) -> ManipulationStep:
    """Feature reduction (Tab. 7): drop ``n_columns`` random columns from context AND query (keep >= 1).

    ``keep_positions``: a dropped column becomes a column of missing cells at its own position, so no other column
    moves (column identity, as ConTextTab keeps it by name); otherwise it is deleted and the later columns shift. The
    same columns are drawn either way (the step's random stream does not depend on it).
    """

    def fn(ctx: MCContext, rng: np.random.Generator) -> MCContext:
        f = ctx.n_features
        drop = rng.choice(f, size=min(n_columns, f - 1), replace=False)
        if keep_positions:
            cx = np.array(ctx.context_x, dtype=np.float32, copy=True)
            qx = np.array(ctx.query_x, dtype=np.float32, copy=True)
            cx[:, drop] = np.nan
            qx[:, drop] = np.nan
            return ctx.with_(context_x=cx, query_x=qx)
        keep = np.setdiff1d(np.arange(f), drop)
        return ctx.with_(context_x=ctx.context_x[:, keep], query_x=ctx.query_x[:, keep])

    return ManipulationStep(f"reduce_{n_columns}", 1, fn)


def distract_step(n_columns: int) -> ManipulationStep:
    """Distractor injection (Tab. 7): append ``n_columns`` N(0, 1) columns to context and query."""

    def fn(ctx: MCContext, rng: np.random.Generator) -> MCContext:
        noise = rng.standard_normal((ctx.n_rows + 1, n_columns)).astype(np.float32)
        return ctx.with_(context_x=np.hstack([ctx.context_x, noise[:-1]]), query_x=np.hstack([ctx.query_x, noise[-1:]]))

    return ManipulationStep(f"distract_{n_columns}", 1, fn)


def uniform_step(factor: int) -> ManipulationStep:
    """Uniform scaling (Tab. 7): every candidate row replicated ``factor`` times."""
    return ManipulationStep(f"uniform_{factor}", 0, lambda ctx, rng: _scale_rows(ctx, lambda v: factor))


def random_scale_step(factor: int) -> ManipulationStep:
    """Random scaling (Tab. 7): each candidate replicated a random count in 1..factor."""

    def fn(ctx: MCContext, rng: np.random.Generator) -> MCContext:
        cands = ctx.candidates().tolist()
        counts = dict(zip(cands, rng.integers(1, factor + 1, size=len(cands)).tolist(), strict=True))
        return _scale_rows(ctx, counts.__getitem__)

    return ManipulationStep(f"random_{factor}", 0, fn)


def skew_true_step(factor: int) -> ManipulationStep:
    """Skew true target (Tab. 7): the true candidate's row replicated ``factor`` times."""

    def fn(ctx: MCContext, rng: np.random.Generator) -> MCContext:
        true = ctx.true_label
        return _scale_rows(ctx, lambda v: factor if v == true else 1)

    return ManipulationStep(f"skew_true_{factor}", 0, fn)


def skew_non_true_step(k: int, factor: int) -> ManipulationStep:
    """Skew incorrect targets (Tab. 7): ``k`` random incorrect candidates replicated ``factor`` times."""

    def fn(ctx: MCContext, rng: np.random.Generator) -> MCContext:
        wrong = _incorrect(ctx)
        picked = {wrong[i] for i in rng.choice(len(wrong), size=min(k, len(wrong)), replace=False).tolist()}
        return _scale_rows(ctx, lambda v: factor if v in picked else 1)

    return ManipulationStep(f"skew_non_true_k{k}_x{factor}", 0, fn)


def mixed_step(true_factor: int, non_true_factor: int) -> ManipulationStep:
    """Mixed skewing (Tab. 7): the true candidate x ``true_factor``, every incorrect one x ``non_true_factor``."""

    def fn(ctx: MCContext, rng: np.random.Generator) -> MCContext:
        true = ctx.true_label
        return _scale_rows(ctx, lambda v: true_factor if v == true else non_true_factor)

    return ManipulationStep(f"mixed_true_{true_factor}_non_true_{non_true_factor}", 0, fn)


# -- manipulations --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Manipulation:
    """A named context manipulation pi_k of the suite Pi (App. A.3, Tab. 7)."""

    name: str
    category: str
    steps: tuple[ManipulationStep, ...]
    description: str = ""

    def apply(
        self,
        ctx: MCContext,
        seed: int = 0,
        query_id: int = 0,
        max_context: int | None = 512,
        max_features: int | None = 32,
    ) -> MCContext:
        """The manipulated context C_k, deterministic per ``(seed, query_id)``; checked against model limits."""
        for step in self.steps:
            ctx = step(ctx, seed, query_id)
        if max_context is not None and ctx.n_rows > max_context:
            raise ProbeError(
                f"manipulation {self.name!r} makes a context of {ctx.n_rows} rows, more than the model's "
                f"{max_context}; "
                "use fewer candidates (n_candidates) or leave this manipulation out."
            )
        if max_features is not None and ctx.n_features > max_features:
            raise ProbeError(
                f"manipulation {self.name!r} makes {ctx.n_features} feature columns, more than the model's "
                f"{max_features}; "
                f"fine-tune with FinetuneConfig(max_features={max_features - 2}) so distractor columns fit, or leave "
                "it out."
            )
        return ctx


def compose(
    *parts: Manipulation | ManipulationStep, name: str | None = None, category: str = "composed", description: str = ""
) -> Manipulation:
    """A manipulation running all steps of ``parts``, ordered distribution -> features -> position."""
    steps: list[ManipulationStep] = []
    for p in parts:
        steps.extend(p.steps if isinstance(p, Manipulation) else (p,))
    steps.sort(key=lambda s: s.stage)  # stable: keeps the given order within a stage
    name = name or "+".join(s.key for s in steps)
    return Manipulation(name, category, tuple(steps), description)


_DIST_STEPS: dict[str, Callable[[int], ManipulationStep]] = {
    "uniform": uniform_step,
    "skewed": skew_true_step,
    "random": random_scale_step,
}


def _build_registry() -> dict[str, Manipulation]:
    m: list[Manipulation] = [
        Manipulation("baseline", "baseline", (), "Unperturbed zero-information multiple-choice context.")
    ]
    for pos in ("random", "first", "last"):
        m.append(
            Manipulation(
                f"shuffle_{pos}",
                "positional_shuffling",
                (shuffle_step(pos),),
                f"True target's row at a {pos} position.",
            )
        )
    m.append(
        Manipulation(
            "feature_reduction_2", "feature_reduction", (reduce_step(2),), "Drop 2 feature columns (context and query)."
        )
    )
    for n in (1, 2):
        m.append(
            Manipulation(
                f"distractor_{n}", "distractor_injection", (distract_step(n),), f"Append {n} N(0,1) column(s)."
            )
        )
    for f in SCALING_FACTORS:
        m.append(Manipulation(f"uniform_{f}", "uniform_scaling", (uniform_step(f),), f"Every candidate x{f}."))
    for f in SCALING_FACTORS:
        m.append(
            Manipulation(f"random_{f}", "random_scaling", (random_scale_step(f),), f"Each candidate x U{{1..{f}}}.")
        )
    for f in SKEW_FACTORS:
        m.append(Manipulation(f"skew_true_{f}", "skew_true", (skew_true_step(f),), f"True candidate x{f}."))
    for k in SKEW_COUNTS:
        for f in SKEW_FACTORS:
            m.append(
                Manipulation(
                    f"skew_non_true_k{k}_x{f}",
                    "skew_incorrect",
                    (skew_non_true_step(k, f),),
                    f"{k} incorrect candidate(s) x{f}.",
                )
            )
    for t, n in MIXED_PAIRS:
        m.append(
            Manipulation(
                f"mixed_true_{t}_non_true_{n}",
                "mixed_skewing",
                (mixed_step(t, n),),
                f"True x{t}, every incorrect x{n}.",
            )
        )
    shuffle = shuffle_step("random")
    for kind, f in TWO_WAY:
        first = reduce_step(f) if kind == "reduce" else _DIST_STEPS[kind](f)
        m.append(
            compose(
                first,
                shuffle,
                name=f"shuffle_and_{kind}_{f}",
                category="two_way",
                description=f"Random shuffle + {kind} {f}.",
            )
        )
    for kind, f in THREE_WAY:
        m.append(
            compose(
                _DIST_STEPS[kind](f),
                reduce_step(2),
                shuffle,
                name=f"shuffle_{kind}_{f}_and_reduce",
                category="three_way",
                description=f"Random shuffle + {kind} {f} + drop 2 columns.",
            )
        )
    registry = {x.name: x for x in m}
    assert len(registry) == len(m), "duplicate manipulation names"
    return registry


#: The suite Pi: 48 manipulations by name, in Tab. 7 order.
MANIPULATIONS: dict[str, Manipulation] = _build_registry()


def manipulation_names(category: str | None = None) -> list[str]:
    """All 48 names (Tab. 7 order), or those of one category."""
    if category is not None and category not in CATEGORIES:
        raise ProbeError(f"unknown category {category!r}; valid: {', '.join(CATEGORIES)}.")
    return [n for n, m in MANIPULATIONS.items() if category is None or m.category == category]


def get_manipulation(name: str) -> Manipulation:
    """The registered manipulation ``name`` (error lists the valid names)."""
    try:
        return MANIPULATIONS[name]
    except KeyError:
        raise ProbeError(f"unknown manipulation {name!r}; valid names: {', '.join(MANIPULATIONS)}.") from None


def resolve_manipulations(names: Iterable[str | Manipulation] | None = None) -> list[Manipulation]:
    """``None`` -> the full suite; otherwise the named (or given) manipulations, without duplicates."""
    if names is None:
        return list(MANIPULATIONS.values())
    if isinstance(names, str):
        names = [names]
    out = [n if isinstance(n, Manipulation) else get_manipulation(n) for n in names]
    seen: set[str] = set()
    dupes = [m.name for m in out if m.name in seen or seen.add(m.name)]
    if dupes:
        raise ProbeError(f"manipulations {dupes} are given twice; pass each once.")
    if not out:
        raise ProbeError("no manipulations given; pass None for the full suite of 48.")
    return out


def category_counts(manipulations: Sequence[Manipulation] | None = None) -> dict[str, int]:
    """Number of manipulations per category (Tab. 7 "Count")."""
    counts = dict.fromkeys(CATEGORIES, 0)
    for m in resolve_manipulations(manipulations):
        counts[m.category] = counts.get(m.category, 0) + 1
    return counts


__all__ = [
    "CATEGORIES",
    "KEEP_COLUMN_POSITIONS",
    "MANIPULATIONS",
    "MIXED_PAIRS",
    "TWO_WAY",
    "THREE_WAY",
    "Manipulation",
    "ManipulationStep",
    "compose",
    "get_manipulation",
    "manipulation_names",
    "resolve_manipulations",
    "category_counts",
    "shuffle_step",
    "reduce_step",
    "distract_step",
    "uniform_step",
    "random_scale_step",
    "skew_true_step",
    "skew_non_true_step",
    "mixed_step",
]
