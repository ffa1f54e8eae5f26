"""Manipulations that give a model the baseline's very input (App. A.3, Tab. 7; issue 53 item 7).

A manipulation that changes nothing the model can see is no measurement on that model: its
Delta AUC over the baseline is 0 by construction. For the reference LTM (row-order invariant, and
invariant to multiplying every distinct row's count by one integer, :mod:`iclmem.probe.invariances`)
``mixed_true_5_non_true_5`` (every candidate x5) is the baseline context, as are the uniform
scalings and the shuffles. :func:`same_as_baseline` finds them for any model's declared invariances
by building multiple-choice contexts (2, 3 and 5 candidates, several queries and seeds), applying
each manipulation and comparing the canonical task keys with the baseline's. A manipulation counts
only when it equals the baseline on every context tried; a random one that sometimes does is not
listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .contexts import mc_context
from .invariances import Invariances, task_key
from .manipulations import get_manipulation, resolve_manipulations

BASELINE = "baseline"


def same_as_baseline(
    invariances: Invariances,
    names: Iterable[str] | None = None,
    class_counts: Sequence[int] = (2, 3, 5),
    seeds: Sequence[int] = (0, 1, 2),
) -> list[str]:
    """The manipulations (of ``names``, default every one of Tab. 7) whose context a model with ``invariances``
    cannot tell from the baseline's, on every probe context tried (in suite order)."""
    baseline = get_manipulation(BASELINE)
    out = []
    for m in resolve_manipulations(names):
        if m.name == BASELINE:
            continue
        same = True
        for k in class_counts:
            for seed in seeds:
                rng = np.random.default_rng([seed, k])
                candidates = np.arange(k)
                ctx = mc_context(rng.normal(size=6).astype(np.float32), int(rng.integers(k)), candidates)
                base = baseline.apply(ctx, seed, seed, None, None).to_task("classification")
                other = m.apply(ctx, seed, seed, None, None).to_task("classification")
                if task_key(base, invariances) != task_key(other, invariances):
                    same = False
                    break
            if not same:
                break
        if same:
            out.append(m.name)
    return out


__all__ = ["same_as_baseline"]
