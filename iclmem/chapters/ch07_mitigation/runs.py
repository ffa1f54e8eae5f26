"""Chapter 7 (IclMem Sec. 6 names DP-SGD; Abadi et al. 2016; neither paper measures it): the series of DP runs.

One series fine-tunes one run per epsilon of a small grid with the same learning rate and epochs
(:mod:`iclmem.training.privacy`), plus the plain run (epsilon = inf) and a run clipped at C without noise (sigma = 0),
which parts clipping's effect from the noise's (:func:`run_mitigation`, its parameters :class:`MitigationSpec`). Each
run
is attacked by the **vanilla attack** (:func:`iclmem.chapters.ch_a6_instrument.instrument.context_scores`) and the
**probe** (AUC(Delta S) with intervals, the outcome of Tab. 3: :func:`iclmem.stats.outcomes.reclassify`), and its
utility read on held-out rows (:mod:`iclmem.chapters.ch07_mitigation.utility`); the result is a
:class:`Mitigation`, with the paired accuracy cost of each run (:func:`accuracy_cost`).

The privacy unit is one member row; the context-pool rows are public (:mod:`iclmem.training.privacy`), and the clipping
norm C is chosen on them (:func:`clipping_norm`). Outside the accounting: the feature encoder's fit (standardization and
category codes, :func:`iclmem.training.finetune.encoded_table`) reads every row's features, members included (never a
target), a deliberate choice of the whole book (fitted on the pool alone, categories only members hold become
missing values that track membership).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from iclmem.chapters.ch07_mitigation.thresholds import M1_EPSILON
from iclmem.chapters.ch07_mitigation.utility import held_out_utility, public_task
from iclmem.chapters.ch_a6_instrument.instrument import auc_interval, context_scores
from iclmem.chapters.ch_a6_instrument.instrument_cells import CONTROL_CONDITION
from iclmem.data import Dataset, prepared_table, split_manifest
from iclmem.probe.settings import ProbeSettings
from iclmem.stats.intervals import paired_bootstrap
from iclmem.stats.outcomes import DEFAULT_READING, reclassify
from iclmem.training.finetune import FinetuneConfig, finetune
from iclmem.training.grid import RunSpec, probe_grid
from iclmem.training.privacy import DEFAULT_DELTA, PrivacyConfig, epsilon, per_sample_gradients, per_sample_norms

#: Run labels: the plain run, and the run clipped at C without noise (sigma = 0: clipping alone, epsilon = inf).
PLAIN, CLIPPED = "∞", "∞ clipped"


def run_label(eps: float, clipped: bool = False) -> str:
    """The label of one run of the grid: ``"∞"`` (plain), ``"∞ clipped"`` (clipped, sigma = 0) or ``f"{eps:g}"``."""
    if math.isinf(eps):
        return CLIPPED if clipped else PLAIN
    return f"{eps:g}"


def clipping_norm(reference, table: Dataset, spec: RunSpec) -> float:
    """The clipping norm C, chosen on **public** rows: the median per-row gradient norm at M_ref of the context-pool
    rows outside C' with their true targets (:func:`~iclmem.chapters.ch07_mitigation.utility.public_task`), 2
    significant digits.

    No member is read, so the choice costs no privacy (the pool is public, :mod:`iclmem.training.privacy`); rounded so
    that float32 rounding never changes a run's key. (Choosing C on the members, the DP literature's habit, leaves that
    choice's privacy cost outside epsilon.)
    """
    manifest = split_manifest(table, spec.query_size, spec.seed, spec.label_condition)
    task, _ = public_task(manifest, table, spec.config(), reference.max_classes)
    with torch.no_grad():
        norms = per_sample_norms(per_sample_gradients(reference.clone(), task))
    return float(f"{float(norms.median()):.2g}")


def dp_config(
    spec: RunSpec, eps: float, max_grad_norm: float, delta: float = DEFAULT_DELTA, clipped: bool = False
) -> FinetuneConfig:
    """The spec's config kept at its last epoch only (and 0), with DP-SGD at ``eps`` (inf: the plain run; inf with
    ``clipped``: every member's gradient clipped at ``max_grad_norm``, no noise)."""
    base = replace(spec.config(), probe_epochs=(0, spec.epochs))
    if math.isinf(eps):
        if not clipped:
            return base
        return replace(base, privacy=PrivacyConfig(noise_multiplier=0.0, delta=delta, max_grad_norm=max_grad_norm))
    return replace(base, privacy=PrivacyConfig(target_epsilon=float(eps), delta=delta, max_grad_norm=max_grad_norm))


@dataclass
class Mitigation:
    """What :func:`run_mitigation` computed for one label condition: one row per run (column ``run``:
    :func:`run_label`), the clipping norm, the probe's summary, and per run the held-out correctness and the vanilla
    attack's scores."""

    table: pd.DataFrame
    max_grad_norm: float
    summary: pd.DataFrame
    correct: dict[str, np.ndarray]  # run label -> per held-out row, 1 where M_theta predicts its true target
    ref_correct: np.ndarray | None = None  # per held-out row, 1 where M_ref predicts its true target
    vanilla_scores: dict[str, np.ndarray] | None = None  # run label -> the vanilla attack's score per query
    n_members: int = 0  # the scores' first n_members queries are the members
    label_condition: str = CONTROL_CONDITION

    def private(self) -> list[float]:
        """The finite epsilons <= :data:`M1_EPSILON` of the grid."""
        return sorted(float(e) for e in self.table.epsilon if math.isfinite(e) and e <= M1_EPSILON)

    def row(self, run: str) -> pd.Series:
        return self.table.set_index("run").loc[run]


def accuracy_cost(
    m: Mitigation, run: str | float, against: str = "inf", n_boot: int = 200, seed: int = 0
) -> dict[str, float]:
    """Held-out accuracy of ``against`` ("inf": the plain run; "clipped": the clipped run without noise; "ref": M_ref)
    minus M_theta's at ``run`` (a run label, or an epsilon).

    With a paired bootstrap 95% interval (the same held-out rows resampled for both).
    """
    if against not in ("inf", "ref", "clipped"):
        raise ValueError(f"against must be 'inf', 'clipped' or 'ref', got {against!r}")
    run = run if isinstance(run, str) else run_label(float(run))
    a = m.ref_correct if against == "ref" else m.correct.get(PLAIN if against == "inf" else CLIPPED)
    if a is None:
        raise ValueError(f"the per-row correctness of {against!r} is missing from this Mitigation")
    b = m.correct[run]
    lo, hi, _ = paired_bootstrap(len(a), lambda i: float((a[i] - b[i]).mean()), n_boot, [seed, 0x0C])
    return {"cost": float(a.mean() - b.mean()), "lo": float(lo), "hi": float(hi)}


@dataclass(frozen=True)
class MitigationSpec:
    """Notebook 07's parameters of one series of DP runs, as the notebook names them (IclMem Sec. 6's DP-SGD).

    ``epsilons``: the privacy levels of the grid (``math.inf``: the plain run); ``reference``, the M_ref every run
    starts from, and the label condition are :func:`run_mitigation`'s own arguments;
    ``clipped_run``: also the run clipped at C without noise (sigma = 0, epsilon = inf: clipping's share of the
    effect, apart from the noise's); ``outcome_rule``: the reading of Tab. 3
    (:data:`iclmem.stats.outcomes.OUTCOME_READINGS`) of the outcome column.
    """

    dataset: str
    learning_rate: float
    epochs: int
    query_size: int
    context_size: int
    epsilons: Sequence[float]
    seed: int = 0
    n_candidates: int = 10
    max_queries: int | None = 50
    n_boot: int = 200
    delta: float = DEFAULT_DELTA
    outcome_rule: str = DEFAULT_READING
    clipped_run: bool = True


def run_mitigation(spec: MitigationSpec, reference, label_condition: str = CONTROL_CONDITION) -> Mitigation:
    """Fine-tune (or load) one run per epsilon of ``spec`` at ``label_condition``, attack, probe and score each; see
    the module docstring."""
    table = prepared_table(spec.dataset)
    base = RunSpec(
        spec.dataset,
        float(spec.learning_rate),
        int(spec.query_size),
        label_condition,
        int(spec.epochs),
        int(spec.seed),
        int(spec.context_size),
    )
    c = clipping_norm(reference, table, base)
    manifest = split_manifest(table, base.query_size, base.seed, base.label_condition)
    grid = [(float(e), False) for e in spec.epsilons] + ([(math.inf, True)] if spec.clipped_run else [])
    grid.sort(key=lambda g: (g[0], not g[1]))  # finite epsilons, then the clipped run, then the plain one
    runs = [
        finetune(manifest, table, dp_config(base, e, c, spec.delta, clip), reference, progress=True) for e, clip in grid
    ]
    epochs, n_boot, seed = spec.epochs, spec.n_boot, spec.seed
    settings = ProbeSettings(
        n_candidates=spec.n_candidates, max_queries=spec.max_queries, epochs=(epochs,), seed=seed, n_boot=n_boot
    )
    summary, _ = probe_grid([base] * len(runs), runs, reference, settings, progress=True)
    summary = reclassify(summary, spec.outcome_rule)
    rows, correct, ref_correct, scores = [], {}, None, {}
    for (eps, clip), run in zip(grid, runs, strict=True):
        label = run_label(eps, clip)
        member, non_member = context_scores(run, table, epochs, reference, 1.0, seed)
        scores[label] = np.concatenate([member, non_member])
        vanilla = auc_interval(member, non_member, n_boot, seed)
        p = summary[(summary.run_key == run.key) & (summary.epoch == epochs)].iloc[0]
        utility = held_out_utility(run, table, epochs, reference, n_boot, seed)
        correct[label], ref_correct = utility.pop("theta correct"), utility.pop("ref correct")
        rows.append(_run_row(label, eps, run, vanilla, p, utility, spec))
    m = Mitigation(pd.DataFrame(rows), c, summary, correct, ref_correct, scores, len(member), label_condition)
    _add_costs(m, n_boot, seed)
    return m


def _run_row(label: str, eps: float, run, vanilla: dict, p: pd.Series, utility: dict, spec: MitigationSpec) -> dict:
    """One row of a series' table: the run's privacy, its vanilla attack, its probe and its held-out utility."""
    epochs = spec.epochs
    sigma = 0.0 if run.config.privacy is None else run.config.privacy.sigma(epochs)
    return {
        "run": label,
        "epsilon": float(eps),
        "clipped": run.config.privacy is not None,
        "sigma": sigma,
        "epsilon (accountant)": epsilon(sigma, 1.0, epochs, spec.delta),
        "vanilla AUC": vanilla["auc"],
        "vanilla lo": vanilla["lo"],
        "vanilla hi": vanilla["hi"],
        "probe AUC": float(p.auc_loss),
        "probe lo": float(p.auc_loss_lo),
        "probe hi": float(p.auc_loss_hi),
        "outcome": p.outcome,
        **utility,
        "run_key": run.key,
    }


def _add_costs(m: Mitigation, n_boot: int, seed: int) -> None:
    """The paired accuracy cost of every run against M_ref and against the plain run, as columns of ``m.table``."""
    for against in ("ref", "inf"):
        if against == "inf" and PLAIN not in m.correct:
            continue
        costs = [accuracy_cost(m, label, against, n_boot, seed) for label in m.table.run]
        m.table[f"cost vs {against}"] = [x["cost"] for x in costs]
        m.table[f"cost vs {against} lo"], m.table[f"cost vs {against} hi"] = (
            [x["lo"] for x in costs],
            [x["hi"] for x in costs],
        )
