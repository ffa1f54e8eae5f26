"""Label randomization as a null-hypothesis control (Sec. 4.1, following Annamalai et al. 2024; Tab. 2, Tab. 4).

Labels are permuted *within* each chosen pool, so every pool keeps exactly its label multiset (its
marginal distribution), and the member/non-member statistics of the split are unchanged. The
permutation is a random cyclic one (Sattolo's algorithm): no row keeps its own label position, so for a
pool with more than one distinct label a large share of labels actually changes.
"""

from __future__ import annotations

import numpy as np

from iclmem.data.errors import DataError

LABEL_CONDITIONS: tuple[str, ...] = ("none", "members", "non-members", "all")
_ALIASES = {"non_members": "non-members", "nonmembers": "non-members", "both": "all", "": "none", "false": "none"}
#: which pools each condition randomizes ("all" = members and non-members; the context pool never is)
RANDOMIZED_POOLS: dict[str, tuple[str, ...]] = {
    "none": (),
    "members": ("members",),
    "non-members": ("non_members",),
    "all": ("members", "non_members"),
}


def normalize_label_condition(condition: str) -> str:
    """Canonical spelling of a label condition (``none``, ``members``, ``non-members``, ``all``)."""
    key = str(condition).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in LABEL_CONDITIONS:
        raise DataError(f"unknown label_condition {condition!r}; use one of {', '.join(LABEL_CONDITIONS)}")
    return key


def cyclic_permutation(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random n-cycle as an index array ``perm`` (``perm[i] != i`` for all i when n >= 2)."""
    order = rng.permutation(n)
    perm = np.empty(n, dtype=np.int64)
    perm[order] = np.roll(order, -1)
    return perm


def randomize_labels(labels: np.ndarray, seed: int | np.random.SeedSequence) -> np.ndarray:
    """The labels permuted by a random cycle: same multiset, (almost always) different assignment."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    return labels[cyclic_permutation(len(labels), rng)]


def randomize_pools(labels: dict[str, np.ndarray], condition: str, seed: int) -> dict[str, np.ndarray]:
    """Randomized labels for the pools that ``condition`` names, each pool with its own seeded stream."""
    condition = normalize_label_condition(condition)
    out = {}
    for i, pool in enumerate(("members", "non_members")):
        if pool in RANDOMIZED_POOLS[condition]:
            out[pool] = randomize_labels(labels[pool], np.random.SeedSequence([seed, i]))
    return out
