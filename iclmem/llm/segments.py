"""Segment pairs: an instance split into an initial and a subsequent segment (paper Sec. 3.1, Sec. 4 "Data").

"We create pairs of random-length segments for dataset instances by randomly deriving the initial segment
from 60% to 80% of each instance's length, based on the white space count." The fraction is drawn per
instance from a generator seeded by ``(seed, instance id)``, so different instances get different cut
points and a given instance gets the same cut in every run and every k. NLI instances split at the
sentence boundary: sentence 1 is the initial segment, sentence 2 the one to replicate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclmem.llm.datasets import Instance, Kind, stable_int


@dataclass(frozen=True)
class SegmentPair:
    """``first`` is shown in the prompt, ``second`` is what the model should replicate."""

    instance_id: str
    label: str
    first: str
    second: str
    fraction: float | None = None  # drawn share of whitespace tokens in ``first`` (None for NLI)


def split_instance(
    instance: Instance, kind: Kind, seed: int = 0, segment_min: float = 0.6, segment_max: float = 0.8
) -> SegmentPair:
    """Split one instance; ``segment_min``/``segment_max`` bound the initial segment's share of tokens."""
    if not 0.0 < segment_min <= segment_max < 1.0:
        raise ValueError(f"need 0 < segment_min <= segment_max < 1, got {segment_min}, {segment_max}")
    if kind == "nli":
        if len(instance.parts) != 2 or not all(p.strip() for p in instance.parts):
            raise ValueError(f"NLI instance {instance.id!r} needs two non-empty sentences")
        return SegmentPair(instance.id, instance.label, instance.parts[0], instance.parts[1])
    words = instance.text.split()
    if len(words) < 2:
        raise ValueError(
            f"instance {instance.id!r} has {len(words)} whitespace tokens; at least 2 are needed to split it"
        )
    rng = np.random.default_rng([seed, stable_int(instance.id)])
    fraction = float(rng.uniform(segment_min, segment_max))
    cut = min(max(round(fraction * len(words)), 1), len(words) - 1)
    return SegmentPair(instance.id, instance.label, " ".join(words[:cut]), " ".join(words[cut:]), fraction)
