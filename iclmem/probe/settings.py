"""How a run is probed (Sec. 4.2, Tab. 2, Tab. 7): one settings object for the sweep's grid files and the chapters'
own runs (issue 54 item 4: one declaration, not one per caller).

Its fields, in this order, are part of every sweep task's key (:func:`iclmem.sweep.tasks.spec_input_key` hashes
``asdict`` of it): a new field or another order moves every key, so add a field only with a default at the end.
Its fields are keyword-only: a call names what it sets, so ``ProbeSettings(10, 50)`` cannot mean another field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ProbeSettings:
    """``n_candidates`` labels per query; at most ``max_queries`` probed queries per pool (None: every query); the
    probed ``epochs`` (None: every epoch the run kept, the paper's probing epochs up to its last); the probe's
    ``seed``; ``n_boot`` bootstrap draws of each AUC's interval; the ``manipulations`` (None: all 48 of Tab. 7)."""

    n_candidates: int = 10
    max_queries: int | None = None
    epochs: tuple[int, ...] | None = None
    seed: int = 0
    n_boot: int = 1000
    manipulations: tuple[str, ...] | None = None

    def epochs_for(self, kept: Sequence[int]) -> list[int]:
        """The probed epochs among those a run ``kept``."""
        return list(kept) if self.epochs is None else [e for e in self.epochs if e in kept]


#: Every default: 10 candidates, every query, every kept epoch, seed 0, 1,000 bootstrap draws, all 48 manipulations.
PROBE_DEFAULTS = ProbeSettings()
#: A probing grid's defaults (:func:`iclmem.training.grid.probe_grid`): the same, with 200 bootstrap draws.
GRID_PROBE = ProbeSettings(n_boot=200)


__all__ = ["GRID_PROBE", "PROBE_DEFAULTS", "ProbeSettings"]
