"""Paper 1, Sec. 4.2 and Tab. 2 (the probe's settings): what separates a cell the probe sees from one it does not
(appendix A6).

The book's grid finds the probe near-perfect on wine_pl (regression, ten candidates, a 256-row
context, lr 1e-2) and blind on the breast_cancer control (binary, a 64-row context, lr 3e-4) where
a vanilla attack shows memorization. Five things differ. :func:`factor_table` changes one at a
time from each of the two cells and reads the probe's AUC(Delta S) (loss, with its interval) and
the vanilla attack's beside it:

* ``n_candidates`` (regression: the true value and n - 1 distractors; a binary table has 2 always);
* the context size C' of fine-tuning;
* the learning rate;
* the label condition (N against All);
* the task: the same target binned into classes (:func:`binned_table`) against regression.

Every run goes through the results store (:func:`iclmem.training.grid.run_grid`,
:func:`iclmem.training.grid.probe_grid`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from iclmem.chapters.ch_a6_instrument.instrument import auc_interval, context_scores
from iclmem.data import Dataset
from iclmem.probe.settings import ProbeSettings
from iclmem.training.grid import RunSpec, probe_grid, run_grid, table_of


@dataclass(frozen=True)
class FactorCase:
    """One cell of the factor table: a run (``spec``) probed at ``epoch`` with ``n_candidates``."""

    cell: str  # which starting cell it varies ("seen", "blind")
    factor: str  # what it changes ("none" for the starting cell itself)
    value: str
    spec: RunSpec
    epoch: int
    n_candidates: int = 10


def binned_table(table: Dataset, n_bins: int = 10, name: str | None = None) -> Dataset:
    """``table`` with its regression target cut into ``n_bins`` quantile classes (codes 0..n_bins-1), a
    classification table with the same rows and features."""
    if table.task != "regression":
        raise ValueError(f"{table.name} is a {table.task} table: only a regression target can be binned.")
    codes = pd.qcut(table.target.rank(method="first"), n_bins, labels=False).astype(int)
    target = pd.Series(np.asarray(codes), index=table.target.index, name=table.target_name)
    return table.with_(
        name=name or f"{table.name}_binned",
        target=target,
        task="classification",
        notes=(*table.notes, f"target cut into {n_bins} quantile classes"),
    )


def factor_cases(
    seen: RunSpec, seen_epoch: int, blind: RunSpec, blind_epoch: int, binned_name: str, n_candidates: int = 10
) -> list[FactorCase]:
    """One factor at a time from each starting cell (see the module docstring); each cell's own values are the
    other cell's, so the table reads "what if this cell had the other's ...".

    ``binned_name``: the name under which :func:`binned_table` of the seen cell's table is passed to
    :func:`factor_table`.
    """
    cases = [FactorCase("seen", "none", "as run", seen, seen_epoch, n_candidates)]
    cases += [FactorCase("seen", "n_candidates", str(k), seen, seen_epoch, k) for k in (5, 2) if k < n_candidates]
    cases += [
        FactorCase(
            "seen",
            "context size",
            str(blind.context_size),
            replace(seen, context_size=blind.context_size),
            seen_epoch,
            n_candidates,
        ),
        FactorCase(
            "seen",
            "learning rate",
            f"{blind.learning_rate:g}",
            replace(seen, learning_rate=blind.learning_rate),
            seen_epoch,
            n_candidates,
        ),
        FactorCase(
            "seen",
            "label condition",
            blind.label_condition,
            replace(seen, label_condition=blind.label_condition),
            seen_epoch,
            n_candidates,
        ),
        FactorCase(
            "seen", "task", "classification (binned)", replace(seen, dataset=binned_name), seen_epoch, n_candidates
        ),
        FactorCase("blind", "none", "as run", blind, blind_epoch, n_candidates),
        FactorCase(
            "blind",
            "context size",
            str(seen.context_size),
            replace(blind, context_size=seen.context_size),
            blind_epoch,
            n_candidates,
        ),
        FactorCase(
            "blind",
            "learning rate",
            f"{seen.learning_rate:g}",
            replace(blind, learning_rate=seen.learning_rate),
            blind_epoch,
            n_candidates,
        ),
        FactorCase(
            "blind",
            "label condition",
            seen.label_condition,
            replace(blind, label_condition=seen.label_condition),
            blind_epoch,
            n_candidates,
        ),
    ]
    return cases


def factor_table(
    cases: Sequence[FactorCase],
    reference,
    tables: Mapping[str, Dataset] | None = None,
    max_queries: int | None = 50,
    n_boot: int = 200,
    seed: int = 0,
) -> pd.DataFrame:
    """Per case: the probe's AUC(Delta S) on the loss with its interval, its change from the starting cell, and the
    vanilla attack's AUC on C' (is memorization there?)."""
    specs = list(dict.fromkeys(c.spec for c in cases))
    runs = dict(zip(specs, run_grid(specs, reference, tables=tables, progress=False), strict=True))
    rows = []
    for case in cases:
        run = runs[case.spec]
        table = table_of(case.spec.dataset, tables)
        summary, _ = probe_grid(
            [case.spec],
            [run],
            reference,
            ProbeSettings(
                n_candidates=case.n_candidates, max_queries=max_queries, epochs=(case.epoch,), seed=seed, n_boot=n_boot
            ),
            progress=False,
            tables={case.spec.dataset: table},
        )
        p = summary.iloc[0]
        vanilla = auc_interval(*context_scores(run, table, case.epoch, reference, 1.0, seed), n_boot, seed)
        rows.append(
            {
                "cell": case.cell,
                "dataset": case.spec.dataset,
                "factor": case.factor,
                "value": case.value,
                "probe AUC": float(p.auc_loss),
                "probe lo": float(p.auc_loss_lo),
                "probe hi": float(p.auc_loss_hi),
                "vanilla AUC": vanilla["auc"],
                "vanilla lo": vanilla["lo"],
            }
        )
    out = pd.DataFrame(rows)
    start = out[out.factor == "none"].set_index("cell")["probe AUC"]
    out["change"] = out["probe AUC"] - out.cell.map(start)
    return out


def strongest_factor(table: pd.DataFrame) -> str:
    """The factor whose change moves the probe's AUC most (largest absolute change, either cell), for the page."""
    moved = table[table.factor != "none"]
    if moved.empty:
        return "none"
    row = moved.loc[moved.change.abs().idxmax()]
    return f"{row.factor} ({row.cell} cell, {row.value}: {row.change:+.3f})"


__all__ = ["FactorCase", "binned_table", "factor_cases", "factor_table", "strongest_factor"]
