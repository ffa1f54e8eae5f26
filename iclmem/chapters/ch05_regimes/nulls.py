"""Paper 1, Sec. 6 and App. D (Tab. 12): C13's membership null (notebook 05).

The probe scores of the sweep's runs, read from the results store (:func:`regime_scores`), and the sweep's rows
under permuted membership (:func:`regime_null`), for :func:`iclmem.chapters.ch05_regimes.claims.regime_claim`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pandas as pd

from iclmem.data import Dataset
from iclmem.probe.null import null_summaries
from iclmem.stats.permutation import NullDraws
from iclmem.sweep.gridfile import Grid
from iclmem.sweep.tasks import (
    task_reference as loaded_model,  # the M_ref a sweep task fine-tunes from (None, a path or tabicl:/tabpfn:)
)
from iclmem.training.grid import probe_views, run_spec, table_of
from iclmem.training.regimes import RegimeError

#: C13's null, as its record states it.
REGIME_NULL = (
    "membership permuted across each run's probed queries, per dataset view (views that probe the same queries, "
    "e.g. one table's single-task runs at each learning rate, permuted alike); same scores, same M_ref"
)


def regime_scores(
    grid: Grid,
    rows: pd.DataFrame,
    query_size: int = 512,
    reference: object = None,
    results_dir: str | None = None,
    carte_dir: str | None = None,
    tables: Mapping[str, Dataset] | None = None,
) -> dict[str, pd.DataFrame]:
    """The probe scores of every dataset view that ``rows`` hold at ``query_size``, by view key (the rows' ``run_key``).

    Each spec's run is loaded from the results store (never trained: :func:`iclmem.training.grid.run_spec`
    with ``load_only``) and probed with the grid's probe settings through
    :func:`iclmem.training.grid.probe_views`, which reads the scores the sweep task stored. ``reference``:
    the sweep's M_ref (None, a checkpoint path, or ``tabicl:`` / ``tabpfn:`` spec). Raises
    :class:`RegimeError` naming the runs the store lacks.
    """
    wanted = set(rows.run_key[(rows.query_size == query_size) & (rows.label_condition == "none")])
    specs = [s for s in grid.specs if s.query_size == query_size and s.label_condition == "none"]
    ref = loaded_model(reference)
    used = {
        d: tables[d]
        if tables and d in tables
        else (grid.sources[d].load(carte_dir) if d in grid.sources else table_of(d, None, carte_dir))
        for s in specs
        for d in s.datasets
    }
    probe, scores = grid.probe, {}
    for spec in specs:
        run = run_spec(spec, ref, results_dir, False, carte_dir, used, load_only=True)
        if run is None:
            continue
        settings = replace(probe, manipulations=probe.manipulations or None)  # a grid file's [] means all 48
        for view, _, frame in probe_views(run, used, ref, settings, results_dir):
            if view.key in wanted:
                scores[view.key] = frame
    missing = sorted(wanted - set(scores))
    if missing:
        raise RegimeError(
            f"the results store holds no run for {len(missing)} probed view(s) of the sweep (e.g. {missing[0]}); "
            "run the sweep here (compute = True) to compute C13's null."
        )
    return scores


def regime_null(
    grid: Grid,
    rows: pd.DataFrame,
    n_permutations: int = 100,
    query_size: int = 512,
    reference: object = None,
    results_dir: str | None = None,
    carte_dir: str | None = None,
    tables: Mapping[str, Dataset] | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """C13's membership null: the sweep's fine-tuned rows at ``query_size`` under ``n_permutations`` permutations.

    :func:`iclmem.probe.null.null_summaries` of the rows with the scores of :func:`regime_scores`
    (cached, no model runs), with the grid's probe seed and bootstrap size; the bootstrap lower
    bounds are recomputed, since the claim's rule reads the bound reading. One frame with a
    ``perm`` column, for :func:`~iclmem.chapters.ch05_regimes.claims.regime_claim`.
    """
    used = rows[(rows.query_size == query_size) & (rows.label_condition == "none") & (rows.epoch > 0)]
    scores = regime_scores(grid, used, query_size, reference, results_dir, carte_dir, tables)
    draws = NullDraws(n_permutations, grid.probe.seed, grid.probe.n_boot)
    return null_summaries(used, scores, draws, bounds=True, progress=progress)
