"""Paper 1, Sec. 4.2 and App. A (the probe itself): a positive control that can pass, and the probe's sensitivity curve
(appendix A6).

The zero-information probe is the paper's instrument. A reader can interpret its non-detections
only if the book shows a setting where it finds memorization that is known to be there. This
module builds that evidence on one table:

* **the control.** Label condition ``all``: members *and* non-members carry labels permuted within
  their pool, so no feature predicts either; whatever fine-tuning teaches beyond the members'
  own rows helps both alike, and only memorization separates them. (With ``members`` only, members
  are asked for shuffled labels and non-members for true ones, so generalization from fine-tuning
  counts against the members and can mask memorization.) Condition ``flip`` (every label of both
  pools moved to another class, so no member keeps its true label) is the alternative a user can
  choose; on a binary table it is an inversion the model can learn as a rule, which is why the book
  keeps ``all``.
* **the sensitivity curve** (:func:`sensitivity_table`, :func:`run_sensitivity` on a :class:`SensitivitySpec`): runs
  of increasing memorization strength
  (learning rate x epochs); per (run, epoch) the vanilla attack's AUC on the training context C'
  (is memorization there?) beside the probe's AUC(Delta S), both with intervals;
* **where the signal is lost** (:func:`context_attack`): the same calibrated loss attack with
  half of C' as the context, between the full training context and the probe's zero-information
  one; :func:`vanilla_attack` is it on all of C';
* :func:`weakest_detection`: the weakest memorization the probe detects on the curve. The scorecard's instrument rows
  read the curve in :mod:`.claims` (P1 at the cell :mod:`.instrument_cells` chooses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclmem.chapters.ch_a6_instrument.instrument_cells import (
    CONTROL_CONDITION,
    null_lower_bounds,
    selection_null,
    strongest_setting,
)
from iclmem.chapters.ch_a6_instrument.instrument_fit import control_unfit
from iclmem.chapters.ch_a6_instrument.probe_settings import DEFAULT_PROBE
from iclmem.data import Dataset
from iclmem.probe.settings import ProbeSettings
from iclmem.probe.theta_outputs import predicted, theta_outputs
from iclmem.stats.metrics import attack_metrics
from iclmem.training.finetune import FinetuneRun, prepare_run_data
from iclmem.training.grid import RunSpec


def sensitivity_specs(
    dataset: str,
    learning_rates: Sequence[float],
    epochs: Sequence[int],
    query_size: int,
    context_size: int,
    seed: int = 0,
    label_condition: str = CONTROL_CONDITION,
) -> list[RunSpec]:
    """One run per learning rate, fine-tuned to the largest of ``epochs`` (each run is probed at every one of them)."""
    return [
        RunSpec(dataset, float(lr), int(query_size), label_condition, int(max(epochs)), int(seed), int(context_size))
        for lr in learning_rates
    ]


def context_scores(
    run: FinetuneRun, table: Dataset, epoch: int, reference, fraction: float = 1.0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Member and non-member scores of the calibrated loss attack with a seeded ``fraction`` of C' as the context.

    Per query ``-(L(M_theta, q | C) - L(M_ref, q | C))`` with the same context ``C`` for both models
    (higher means member); ``fraction=1`` is the vanilla attack on C' itself.
    """
    import torch

    data = prepare_run_data(run.manifest, table, run.config)
    n = len(data.context_y)
    keep = np.sort(np.random.default_rng([seed, 0xC0]).choice(n, size=max(1, round(fraction * n)), replace=False))
    cx, cy = data.context_x[keep], data.context_y[keep]
    tasks = [
        data.task_for(data.member_x, data.member_y, cx, cy),
        data.task_for(data.non_member_x, data.non_member_y, cx, cy),
    ]
    outputs = theta_outputs(run, epoch, reference, tasks)  # from the store or a bundle: no weights needed
    theta = [predicted(outputs, i)[0] for i in range(len(tasks))]
    with torch.no_grad():
        ref = [np.asarray(p.loss(), dtype=np.float64) for p in reference.predict(tasks)]
    return -(theta[0] - ref[0]), -(theta[1] - ref[1])


def context_attack(
    run: FinetuneRun, table: Dataset, epoch: int, reference, fraction: float = 1.0, seed: int = 0, n_boot: int = 200
) -> dict[str, float]:
    """AUC of :func:`context_scores`: ``auc``, ``lo``, ``hi`` (stratified bootstrap interval)."""
    member, non_member = context_scores(run, table, epoch, reference, fraction, seed)
    return auc_interval(member, non_member, n_boot, seed)


def vanilla_attack(run, table, epoch: int, reference, n_boot: int = 200, seed: int = 0) -> dict:
    """The plain loss attack on the training-style context C' (no multiple-choice probe), calibrated.

    Per query, ``L_v(M_theta) - L_v(M_ref)`` on the run's vanilla context (Tab. 3's vanilla loss);
    lower means member: :func:`context_attack` on all of C'. Returns AUC
    with its bootstrap interval (keys ``auc``, ``lo``, ``hi``).
    """
    return context_attack(run, table, epoch, reference, 1.0, seed, n_boot)


def auc_interval(member: np.ndarray, non_member: np.ndarray, n_boot: int = 200, seed: int = 0) -> dict[str, float]:
    """``auc``, ``lo``, ``hi`` of an attack's scores (:func:`iclmem.stats.metrics.attack_metrics`' stratified
    bootstrap)."""
    out = attack_metrics(member, non_member, n_boot=n_boot, seed=seed, fprs=())
    return {"auc": out["auc"], "lo": out["auc_lo"], "hi": out["auc_hi"]}


def sensitivity_table(
    specs: Sequence[RunSpec],
    runs: Sequence[FinetuneRun],
    summary: pd.DataFrame,
    table: Dataset,
    reference,
    probe: ProbeSettings,
    vanilla_scores: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """Per (learning rate, epoch of ``probe.epochs``): the vanilla attack on C', the attack on half of C' and the
    probe, each AUC with its interval (``probe``'s seed and bootstrap draws; ``summary`` was probed with ``probe``).

    ``vanilla_scores``: filled, when given, with the vanilla attack's (member, non-member) scores per
    ``"<run key>@<epoch>"``, for :func:`selection_null`.

    ``summary``: :func:`iclmem.training.grid.probe_grid`'s summary of ``runs`` (the probe's AUC(Delta S) on the loss).
    ``probe detects``: the probe's interval lies above 0.5 (the bound reading of Tab. 3).
    """
    rows, n_boot, seed = [], probe.n_boot, probe.seed
    for spec, run in zip(specs, runs, strict=True):
        for epoch in probe.epochs or ():
            probed = summary[(summary.run_key == run.key) & (summary.epoch == epoch)]
            if probed.empty:
                continue
            p = probed.iloc[0]
            member, non_member = context_scores(run, table, epoch, reference, 1.0, seed)
            full = auc_interval(member, non_member, n_boot, seed)
            if vanilla_scores is not None:
                vanilla_scores[f"{run.key}@{int(epoch)}"] = (member, non_member)
            half = context_attack(run, table, epoch, reference, 0.5, seed, n_boot)
            rows.append(
                {
                    "learning_rate": spec.learning_rate,
                    "epoch": int(epoch),
                    **health(run, epoch),
                    **held_out_quality(run, table, epoch, reference),
                    "vanilla AUC": full["auc"],
                    "vanilla lo": full["lo"],
                    "vanilla hi": full["hi"],
                    "half-context AUC": half["auc"],
                    "half-context lo": half["lo"],
                    "half-context hi": half["hi"],
                    "probe AUC": float(p.auc_loss),
                    "probe lo": float(p.auc_loss_lo),
                    "probe hi": float(p.auc_loss_hi),
                    "probe detects": bool(p.auc_loss_lo > 0.5),
                    **{
                        f"probe {metric} {part}": float(p[f"auc_{metric}{suffix}"])
                        for metric in ("entropy", "confidence")
                        for part, suffix in (("AUC", ""), ("lo", "_lo"), ("hi", "_hi"))
                        if f"auc_{metric}{suffix}" in p.index
                    },
                    "run_key": run.key,
                }
            )
    return pd.DataFrame(rows)


def health(run: FinetuneRun, epoch: int) -> dict[str, float]:
    """A run's health at ``epoch`` from its fine-tuning log: ``loss ratio`` (vanilla loss of M_theta over M_ref on all
    queries, Tab. 3's collapse reading) and ``held-out loss ratio`` (the same on the non-members alone: above 1, the
    model got worse on rows it never saw). NaN where the log has no row for ``epoch``."""
    m = run.metrics
    at = m[m.epoch == epoch] if "epoch" in m else m.iloc[0:0]
    if at.empty or "loss_ratio" not in at:
        return {"loss ratio": float("nan"), "held-out loss ratio": float("nan")}
    r = at.iloc[0]
    held = float(r["theta_loss_non_members"]) / max(float(r["ref_loss_non_members"]), 1e-12)
    return {"loss ratio": float(r["loss_ratio"]), "held-out loss ratio": held}


def held_out_quality(run: FinetuneRun, table: Dataset, epoch: int, reference) -> dict[str, float]:
    """How well M_theta at ``epoch`` and M_ref predict the non-members (rows neither was fine-tuned on) from the run's
    training context C': accuracy for classification, R^2 of the predictive mean for regression. The recall control
    (:mod:`.instrument_recall`) asks the first to be no worse than the second."""
    import torch

    data = prepare_run_data(run.manifest, table, run.config)
    task = data.task_for(data.non_member_x, data.non_member_y)
    truth = np.asarray(data.non_member_y)

    def quality(point: np.ndarray) -> float:
        point = np.asarray(point)
        if data.task == "classification":
            return float(np.mean(point == truth))
        y = truth.astype(np.float64)
        return float(1.0 - np.mean((point - y) ** 2) / max(float(np.var(y)), 1e-12))

    with torch.no_grad():
        ref = reference.predict([task])[0].point()
    theta = predicted(theta_outputs(run, epoch, reference, [task]), 0)[1]  # from the store or a bundle
    return {"held-out quality": quality(theta), "held-out quality M_ref": quality(ref)}


def weakest_detection(curve: pd.DataFrame) -> dict:
    """The weakest memorization (vanilla AUC) at which the probe's interval clears 0.5; else the strongest setting
    tried.

    Keys: ``detected`` (bool), ``row`` (that row), ``text`` (a sentence for the page).
    """
    if curve.empty:
        return {"detected": False, "row": None, "text": "no setting was run"}
    hits = curve[curve["probe detects"]]
    if len(hits):
        row = hits.loc[hits["vanilla AUC"].idxmin()]
        text = (
            f"the probe's interval first clears 0.5 at a vanilla-attack AUC of {row['vanilla AUC']:.3f} (lr "
            f"{row.learning_rate:g}, "
            f"epoch {int(row.epoch)}; probe AUC {row['probe AUC']:.3f} [{row['probe lo']:.3f}, {row['probe hi']:.3f}])"
        )
        return {"detected": True, "row": row, "text": text}
    row = curve.loc[curve["vanilla AUC"].idxmax()]
    text = (
        "the probe's interval never clears 0.5; at the strongest memorization tried (vanilla AUC "
        f"{row['vanilla AUC']:.3f}, "
        f"lr {row.learning_rate:g}, epoch {int(row.epoch)}) the probe gives {row['probe AUC']:.3f} "
        f"[{row['probe lo']:.3f}, {row['probe hi']:.3f}]"
    )
    return {"detected": False, "row": row, "text": text}


@dataclass
class Sensitivity:
    """The sensitivity curve of :func:`run_sensitivity` and what it was computed from."""

    curve: pd.DataFrame
    summary: pd.DataFrame
    scores: dict[str, pd.DataFrame]
    null_lower_bounds: dict[
        str, np.ndarray
    ]  # "<run key>@<epoch>" -> the probe's lower bounds under membership permutations
    null_selection: np.ndarray | None = None  # per null draw, the curve row it chooses (selection_null)
    runs: dict[str, FinetuneRun] | None = None  # the control's runs by key (the context ladder reads them)
    skipped: str = ""  # why the control was not run on its table (:func:`.instrument_fit.control_unfit`); "" if run

    def strongest(self) -> pd.Series | None:
        """The curve's row with the strongest memorization (:func:`strongest_setting`); None when nothing was run."""
        return None if self.curve.empty else strongest_setting(self.curve)


@dataclass(frozen=True)
class SensitivitySpec:
    """The positive control's sensitivity curve (Sec. 4.2, App. A): ``dataset``, its runs' ``learning_rates`` (each
    fine-tuned to the largest of ``epochs`` and probed at every one), ``query_size`` members, a ``context_size``-row
    context, the ``label_condition`` of both pools and the ``n_permutations`` of the probe's null bounds."""

    dataset: str
    learning_rates: Sequence[float]
    epochs: Sequence[int]
    query_size: int
    context_size: int
    label_condition: str = CONTROL_CONDITION
    n_permutations: int = 100


def run_sensitivity(
    spec: SensitivitySpec,
    reference,
    probe: ProbeSettings = DEFAULT_PROBE,
    tables: Mapping[str, Dataset] | None = None,
) -> Sensitivity:
    """Fine-tune (or load) the control's runs, probe them at ``spec.epochs``, and build the curve and the probe's null
    bounds.

    ``spec.dataset`` is a table of ``tables`` (a file of your own) or a table's name. The runs are cached in the
    results store like every other run. A table that cannot carry the control (:func:`.instrument_fit.control_unfit`)
    runs nothing: the result is empty and ``skipped`` says why.
    """
    from iclmem.training.grid import probe_grid, run_grid, table_of

    table = table_of(spec.dataset, tables)
    skipped = control_unfit(table, spec.query_size, [spec.label_condition])
    if skipped:
        return Sensitivity(pd.DataFrame(), pd.DataFrame(), {}, {}, skipped=skipped)
    seed, n_boot, n_permutations, epochs = probe.seed, probe.n_boot, spec.n_permutations, spec.epochs
    specs = sensitivity_specs(
        spec.dataset, spec.learning_rates, epochs, spec.query_size, spec.context_size, seed, spec.label_condition
    )
    runs = run_grid(specs, reference, tables={spec.dataset: table})
    settings = ProbeSettings(
        n_candidates=probe.n_candidates, max_queries=probe.max_queries, epochs=tuple(epochs), seed=seed, n_boot=n_boot
    )
    summary, scores = probe_grid(specs, runs, reference, settings, tables={spec.dataset: table})
    vanilla: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    curve = sensitivity_table(specs, runs, summary, table, reference, settings, vanilla)
    bounds: dict[str, np.ndarray] = {}
    selection = None
    if n_permutations:
        bounds = null_lower_bounds(summary, scores, n_permutations, seed, n_boot)
        if not curve.empty:
            selection = selection_null(curve, vanilla, n_permutations, seed)
    return Sensitivity(curve, summary, scores, bounds, selection, {run.key: run for run in runs})


def category_aucs(scores: pd.DataFrame, epoch: int) -> pd.DataFrame:
    """Per manipulation category: the mean AUC of the calibrated per-manipulation loss delta at ``epoch`` (App. A.3),
    highest first."""
    from iclmem.probe.effects import manipulation_aucs

    per = manipulation_aucs(scores, epochs=[epoch])
    return (
        per.groupby("category")
        .auc.agg(mean_auc="mean", best_auc="max", manipulations="size")
        .reset_index()
        .sort_values("mean_auc", ascending=False, kind="stable")
        .reset_index(drop=True)
    )


def error_bars(rows: pd.DataFrame, name: str) -> list[np.ndarray]:
    """The lower and upper error bars of ``<name> AUC`` from its interval (``<name> lo``, ``<name> hi``), at least 0:
    a percentile bootstrap of few resamples (a small ``n_boot``) can leave the point estimate outside its interval."""
    auc = rows[f"{name} AUC"].to_numpy(dtype=float)
    low, high = auc - rows[f"{name} lo"].to_numpy(dtype=float), rows[f"{name} hi"].to_numpy(dtype=float) - auc
    return [np.clip(low, 0, None), np.clip(high, 0, None)]


def plot_sensitivity(curve: pd.DataFrame) -> plt.Figure:
    """Probe AUC(Delta S) and the half-context attack against the vanilla attack's AUC, with intervals, the diagonal
    and 0.5."""
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    x, xerr = curve["vanilla AUC"], error_bars(curve, "vanilla")
    for name, colour, marker in (("probe", "#d62728", "o"), ("half-context", "#1f77b4", "s")):
        y = curve[f"{name} AUC"]
        yerr = error_bars(curve, name)
        ax.errorbar(
            x,
            y,
            xerr=xerr,
            yerr=yerr,
            fmt=marker,
            color=colour,
            ms=5,
            lw=1,
            alpha=0.8,
            label="probe (zero-information context)" if name == "probe" else "half of C' as the context",
        )
    ax.plot([0.3, 1], [0.3, 1], color="k", lw=0.8, ls=":", label="diagonal (the vanilla attack)")
    ax.axhline(0.5, color="grey", lw=0.8)
    ax.axvline(0.5, color="grey", lw=0.8)
    ax.set_xlim(0.3, 1.0)
    ax.set_ylim(0.3, 1.0)
    ax.set_xlabel("vanilla attack AUC on C' (is memorization there?)")
    ax.set_ylabel("attack AUC")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


__all__ = [
    "Sensitivity",
    "SensitivitySpec",
    "category_aucs",
    "context_attack",
    "error_bars",
    "run_sensitivity",
    "plot_sensitivity",
    "sensitivity_specs",
    "sensitivity_table",
    "vanilla_attack",
    "weakest_detection",
]
