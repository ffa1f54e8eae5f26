"""Paper 1, Sec. 4.2 (the probe's reach): the sensitivity curve on every table the book ships (appendix A6).

The positive control of :mod:`.instrument` asks, on one table, whether the zero-information probe
finds memorization that a vanilla attack on the training context C' shows to be there. One table
cannot say whether the probe is blind or the control was set where it is blind: the book's grid
finds the probe near-perfect on one configuration of wine_pl (a regression table, ten candidates)
and blind on breast_cancer (binary) where memorization is known. This module runs the same curve
on every table, under label conditions ``none`` (N) and ``all`` (both pools carry permuted
labels, so only memorization separates them):

* :func:`curve_settings`: one :class:`CurveSetting` (learning rates x probing epochs, context size)
  per table; the CARTE tables at the book's grid settings (so their N runs *are* grid runs, read
  from the store), the control's table at the control's settings (its ``all`` runs *are* the
  control's runs);
* :func:`run_table_curves`: fine-tune (or load), probe and measure every setting through the results
  store, giving one curve row per (table, condition, learning rate, epoch):
  :func:`.instrument.sensitivity_table`'s columns plus ``dataset`` and ``condition``;
* :func:`weakest_per_table` and :func:`plot_table_curves`: per table the weakest memorization
  (vanilla AUC) at which the probe's interval clears 0.5, or none; one panel per table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclmem.chapters.ch_a6_instrument.instrument import error_bars, sensitivity_specs, sensitivity_table
from iclmem.chapters.ch_a6_instrument.instrument_fit import control_unfit
from iclmem.chapters.ch_a6_instrument.probe_settings import DEFAULT_PROBE
from iclmem.data import Dataset
from iclmem.probe.settings import ProbeSettings
from iclmem.training.grid import RunSpec, probe_grid, run_grid, table_of

#: What the curve's label conditions are called on the page (Tab. 2: N; the control's condition: All).
CONDITION_NAMES: dict[str, str] = {"none": "N", "all": "All", "members": "M", "flip": "flip"}


@dataclass(frozen=True)
class CurveSetting:
    """The memorization strengths one table's curve tries: runs per learning rate, probed at ``epochs``."""

    dataset: str
    learning_rates: tuple[float, ...]
    epochs: tuple[int, ...]
    context_size: int

    def specs(self, condition: str, query_size: int, seed: int) -> list[RunSpec]:
        """One run per learning rate under ``condition``, fine-tuned to the last probing epoch."""
        return sensitivity_specs(
            self.dataset, self.learning_rates, self.epochs, query_size, self.context_size, seed, condition
        )


def curve_settings(
    datasets: Sequence[str],
    learning_rates: Sequence[float],
    epochs: Sequence[int],
    context_size: int,
    control: CurveSetting | None = None,
) -> list[CurveSetting]:
    """The curve's settings: ``datasets`` at one grid of learning rates x epochs, then the ``control``'s table at its
    own (None: no control).

    A table named both ways is run once, at the control's settings.
    """
    control_dataset = control.dataset if control is not None else None
    if not learning_rates or not epochs:
        raise ValueError(
            "the sensitivity curve needs at least one learning rate and one probing epoch (curve_learning_rates, "
            "curve_epochs); give e.g. [0.01, 0.001] and [10, 100]."
        )
    out = [
        CurveSetting(d, tuple(map(float, learning_rates)), tuple(map(int, epochs)), int(context_size))
        for d in datasets
        if d != control_dataset
    ]
    if control is not None:
        out.append(
            CurveSetting(
                control.dataset,
                tuple(map(float, control.learning_rates)),
                tuple(map(int, control.epochs)),
                int(control.context_size),
            )
        )
    return out


@dataclass
class TableCurves:
    """The curves of :func:`run_table_curves` and what they were computed from."""

    curve: pd.DataFrame
    summary: pd.DataFrame
    scores: dict[str, pd.DataFrame]
    vanilla_scores: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    specs: list[RunSpec] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # table -> why its curve was not run (control_unfit)


def run_table_curves(
    settings: Sequence[CurveSetting],
    conditions: Sequence[str],
    query_size: int,
    reference,
    probe: ProbeSettings = DEFAULT_PROBE,
    tables: Mapping[str, Dataset] | None = None,
    progress: bool = False,
) -> TableCurves:
    """Every setting's runs under every condition, fine-tuned, probed with ``probe``'s settings and measured through
    the results store.

    All runs are fine-tuned in one :func:`~iclmem.training.grid.run_grid` call (so ``$ICLMEM_WORKERS`` share them); each
    table is probed at its own epochs. Runs that equal the grid's or the control's (same spec) are read, not
    computed. A table that cannot carry the curve at ``query_size`` under ``conditions``
    (:func:`.instrument_fit.control_unfit`) is left out, and ``skipped`` says why.
    """
    seed = probe.seed
    unfit = {s.dataset: control_unfit(table_of(s.dataset, tables), query_size, conditions) for s in settings}
    settings = [s for s in settings if not unfit[s.dataset]]
    specs_of = {(s.dataset, c): s.specs(c, query_size, seed) for s in settings for c in conditions}
    every = [spec for specs in specs_of.values() for spec in specs]
    runs = dict(zip(every, run_grid(every, reference, tables=tables, progress=progress), strict=True))
    curves, summaries, scores, vanilla = [], [], {}, {}
    for setting in settings:
        table = table_of(setting.dataset, tables)
        at = replace(probe, epochs=tuple(setting.epochs), manipulations=None)  # its own epochs, all 48 manipulations
        for condition in conditions:
            specs = specs_of[(setting.dataset, condition)]
            part = [runs[s] for s in specs]
            summary, sc = probe_grid(
                specs,
                part,
                reference,
                at,
                progress=progress,
                tables={setting.dataset: table},
            )
            curve = sensitivity_table(specs, part, summary, table, reference, at, vanilla)
            curves.append(curve.assign(dataset=setting.dataset, condition=condition))
            summaries.append(summary)
            scores.update(sc)
    curve = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    if not curve.empty:
        first = ["dataset", "condition"]
        curve = curve[first + [c for c in curve.columns if c not in first]]
    summary = pd.concat(summaries, ignore_index=True) if summaries else pd.DataFrame()
    return TableCurves(curve, summary, scores, vanilla, every, {d: why for d, why in unfit.items() if why})


def weakest_per_table(curve: pd.DataFrame) -> pd.DataFrame:
    """Per table: the weakest memorization (vanilla AUC) at which the probe's interval clears 0.5, or none.

    One row per table: ``weakest detected`` (that vanilla AUC, NaN for none), its condition, learning rate, epoch
    and probe AUC with interval; ``settings`` and ``with memorization`` (vanilla interval above 0.5) count the rows.
    """
    rows = []
    for dataset, part in curve.groupby("dataset", sort=False) if not curve.empty else ():
        hits = part[part["probe detects"]]
        row: dict = {
            "dataset": dataset,
            "settings": len(part),
            "with memorization": int((part["vanilla lo"] > 0.5).sum()),
            "probe detects": int(len(hits)),
        }
        if len(hits):
            h = hits.loc[hits["vanilla AUC"].idxmin()]
            row.update(
                {
                    "weakest detected": float(h["vanilla AUC"]),
                    "condition": CONDITION_NAMES.get(h.condition, h.condition),
                    "learning_rate": float(h.learning_rate),
                    "epoch": int(h.epoch),
                    "probe AUC": float(h["probe AUC"]),
                    "probe lo": float(h["probe lo"]),
                    "probe hi": float(h["probe hi"]),
                }
            )
        else:
            row.update({"weakest detected": np.nan, "condition": "none"})
        rows.append(row)
    return pd.DataFrame(rows)


def weakest_text(weakest: pd.DataFrame) -> str:
    """One clause per table of :func:`weakest_per_table` for the page's closing note."""
    parts = []
    for r in weakest.to_dict("records"):
        value = r["weakest detected"]
        if np.isnan(value):
            parts.append(f"{r['dataset']}: none of {r['settings']} settings")
        else:
            parts.append(
                f"{r['dataset']}: vanilla AUC {value:.3f} ({r['condition']}, lr {r['learning_rate']:g}, "
                f"epoch {int(r['epoch'])})"
            )
    return "; ".join(parts) if parts else "no table was run"


def plot_table_curves(curve: pd.DataFrame) -> plt.Figure:
    """One panel per table: the probe's AUC(Delta S) against the vanilla attack's AUC with intervals, N and All
    apart."""
    datasets = list(dict.fromkeys(curve.dataset)) if not curve.empty else []
    n = max(1, len(datasets))
    fig, axes = plt.subplots(1, n, figsize=(2.9 * n, 3.2), sharey=True, squeeze=False)
    style = {"none": ("#1f77b4", "o"), "all": ("#d62728", "s")}
    for ax, dataset in zip(axes[0], datasets, strict=False):
        part = curve[curve.dataset == dataset]
        for condition, rows in part.groupby("condition", sort=False):
            colour, marker = style.get(condition, ("#7f7f7f", "^"))
            x, y = rows["vanilla AUC"], rows["probe AUC"]
            ax.errorbar(
                x,
                y,
                xerr=error_bars(rows, "vanilla"),
                yerr=error_bars(rows, "probe"),
                fmt=marker,
                color=colour,
                ms=4,
                lw=0.8,
                alpha=0.8,
                label=CONDITION_NAMES.get(condition, condition),
            )
        ax.plot([0.3, 1], [0.3, 1], color="k", lw=0.7, ls=":")
        ax.axhline(0.5, color="grey", lw=0.7)
        ax.axvline(0.5, color="grey", lw=0.7)
        ax.set_xlim(0.3, 1.0)
        ax.set_ylim(0.3, 1.0)
        ax.set_title(dataset, fontsize=9)
        ax.set_xlabel("vanilla AUC on C'", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
    axes[0][0].set_ylabel("probe AUC(Delta S)")
    fig.tight_layout()
    return fig


__all__ = [
    "CONDITION_NAMES",
    "CurveSetting",
    "TableCurves",
    "curve_settings",
    "plot_table_curves",
    "run_table_curves",
    "weakest_per_table",
    "weakest_text",
]
