"""Label randomization as a null-hypothesis control (Sec. 4.1, following Annamalai et al. 2024; Tab. 2, Tab. 4).

Labels are permuted *within* each chosen pool, so every pool keeps exactly its label multiset (its
marginal distribution), and the member/non-member statistics of the split are unchanged. The
permutation is a random cyclic one (Sattolo's algorithm): no row keeps its own label position, so for a
pool with more than one distinct label a large share of labels actually changes.

Condition ``flip`` (not in the paper; an instrument control, Sec. 4.2) instead moves *every* label
of both pools to another class, drawn uniformly among the table's other classes: no member and no
non-member keeps its true label, and the pools' label marginals are not kept (a binary table's
labels are inverted). It is defined for classification tables only.
"""

from __future__ import annotations

import numpy as np

from iclmem.data.errors import DataError

LABEL_CONDITIONS: tuple[str, ...] = ("none", "members", "non-members", "all", "flip")
_ALIASES = {"non_members": "non-members", "nonmembers": "non-members", "both": "all", "": "none", "false": "none"}
#: which pools each condition randomizes ("all" = members and non-members; the context pool never is)
RANDOMIZED_POOLS: dict[str, tuple[str, ...]] = {
    "none": (),
    "members": ("members",),
    "non-members": ("non_members",),
    "all": ("members", "non_members"),
    "flip": ("members", "non_members"),
}
#: conditions that move every label to another class instead of permuting the pool
FLIP_CONDITIONS: tuple[str, ...] = ("flip",)


def normalize_label_condition(condition: str) -> str:
    """Canonical spelling of a label condition (``none``, ``members``, ``non-members``, ``all``, ``flip``)."""
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


def flip_labels(labels: np.ndarray, classes: np.ndarray, seed: int | np.random.SeedSequence) -> np.ndarray:
    """Every label replaced by another class, uniformly among ``classes`` minus the row's own (never the true label)."""
    labels = np.asarray(labels)
    classes = np.asarray(classes)
    if len(classes) < 2:
        raise DataError(
            f"label_condition 'flip' needs at least two classes; the table has {len(classes)}. "
            "Use label_condition 'all' instead."
        )
    index = np.searchsorted(classes, labels)
    if (index >= len(classes)).any() or (classes[np.minimum(index, len(classes) - 1)] != labels).any():
        raise DataError(
            "label_condition 'flip': a label is not among the table's classes; pass the table's sorted classes."
        )
    # a uniform draw among the other len(classes) - 1 classes: shift by 1..len(classes)-1 modulo the class count
    shift = np.random.default_rng(seed).integers(1, len(classes), size=len(labels))
    return classes[(index + shift) % len(classes)]


def randomize_pools(
    labels: dict[str, np.ndarray], condition: str, seed: int, classes: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Randomized labels for the pools that ``condition`` names, each pool with its own seeded stream.

    ``classes``: the table's sorted classes, needed by ``flip`` (None for a regression table).
    """
    condition = normalize_label_condition(condition)
    if condition in FLIP_CONDITIONS and classes is None:
        raise DataError(
            f"label_condition {condition!r} moves every label to another class and needs a classification "
            "table; use 'all' for a regression table."
        )
    out = {}
    for i, pool in enumerate(("members", "non_members")):
        if pool in RANDOMIZED_POOLS[condition]:
            stream = np.random.SeedSequence([seed, i])
            out[pool] = (
                flip_labels(labels[pool], np.sort(np.asarray(classes)), stream)
                if condition in FLIP_CONDITIONS
                else randomize_labels(labels[pool], stream)
            )
    return out
