"""Paper 1, App. A.1 ("Distributional shift"), for the regimes of Sec. 6 / App. D: the encoding-balance check of
notebook 05's probed splits.

A column whose missing values track membership would let the attack detect the encoding instead of memorization:
per regime, dataset and encoded column, the missing share among probed members and non-members
(:func:`encoding_balance`, :func:`missing_balance`) and the largest gap per regime (:func:`balance_summary`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import fisher_exact

from iclmem.data import Dataset
from iclmem.training.finetune import RunData, prepare_run_data
from iclmem.training.grid import RunSpec, run_spec, table_of
from iclmem.training.regimes import MULTI_TASK, REGIMES


def encoding_balance(
    specs: Sequence[RunSpec],
    results_dir: str | None = None,
    carte_dir: str | None = None,
    tables: Mapping[str, Dataset] | None = None,
) -> pd.DataFrame:
    """Per regime, dataset and encoded column: the missing-value share among probed members and among non-members.

    The runs are read from the results store (trained if missing). A column whose missing values
    track membership would let the attack detect the encoding instead of memorization (App. A.1,
    "Distributional shift"); ``p`` is Fisher's exact test of equal shares. ``tables``: the notebook's
    tables by name (a file of your own), else loaded by name.
    """
    rows = []
    for spec in specs:
        run = run_spec(spec, results_dir=results_dir, carte_dir=carte_dir, tables=tables)
        for name in spec.datasets:
            view = run.view(name) if spec.regime in MULTI_TASK else run
            table = table_of(name, tables, carte_dir)
            data = prepare_run_data(view.manifest, table, view.config)
            rows += [{"regime": spec.regime, "dataset": name, **r} for r in missing_balance(data)]
    return pd.DataFrame(rows)


def missing_balance(data: RunData) -> list[dict]:
    """Per encoded column of a run's data: missing share among members, among non-members, and Fisher's exact p."""
    rows = []
    for j, column in enumerate(np.asarray(data.encoder.columns)[data.feature_columns]):
        m, n = np.isnan(data.member_x[:, j]), np.isnan(data.non_member_x[:, j])
        p = float(fisher_exact([[m.sum(), (~m).sum()], [n.sum(), (~n).sum()]]).pvalue)
        rows.append(
            {"column": str(column), "missing members": float(m.mean()), "missing non-members": float(n.mean()), "p": p}
        )
    return rows


def balance_summary(balance: pd.DataFrame) -> pd.DataFrame:
    """Per regime: the largest member / non-member gap in missing share over all columns, and the smallest p-value."""
    gap = (balance["missing members"] - balance["missing non-members"]).abs()
    return (
        balance.assign(gap=gap)
        .groupby("regime", sort=False)
        .agg(columns=("column", "size"), largest_gap=("gap", "max"), smallest_p=("p", "min"))
        .reindex([r for r in REGIMES if r in set(balance.regime)])
    )
