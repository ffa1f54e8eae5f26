"""Chapter 7: does DP-SGD (IclMem Sec. 6's named mitigation; Abadi et al. 2016) remove the memorization the book
measures?

Neither paper measures it. On the book's positive control (notebook 04, :mod:`.instrument`: label condition
``all``, a 64-row context, Q = 50) the model is fine-tuned at each epsilon of a small grid with the same
learning rate and epochs (:mod:`iclmem.privacy`; epsilon = inf is the plain run), and per epsilon:

* the **vanilla attack** (:func:`.instrument.context_scores`, with a membership-permutation null for M1)
  and the **probe's** AUC(Delta S), with intervals;
* the **outcome** of Tab. 3 under the book's reading (:func:`iclmem.outcomes.reclassify`, ``outcome_rule``,
  by default :data:`iclmem.outcomes.DEFAULT_READING`: detectable only when the AUC's interval clears 0.5);
* **utility** on held-out rows against their **true** targets (:func:`held_out_rows`: the context-pool rows
  outside C', never a query and never in the training context; under label condition ``all`` the members'
  and non-members' labels are permuted, so they cannot measure utility): loss and accuracy of M_theta and
  M_ref, and the accuracy cost against M_ref and against epsilon = inf, with bootstrap intervals.

The privacy unit is one member row; the context-pool rows are public (:mod:`iclmem.privacy`).
Claims M1 and M2 (:func:`mitigation_claims`) go to the scorecard under "Beyond the papers".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..data import Dataset, prepared_table, split_manifest
from ..finetune import FinetuneConfig, FinetuneRun, encoded_table, finetune, prepare_run_data
from ..grid import RunSpec, probe_grid
from ..intervals import paired_bootstrap
from ..ltm import ICLTask
from ..outcomes import DEFAULT_READING, reclassify
from ..privacy import DEFAULT_DELTA, PrivacyConfig, epsilon, per_sample_gradients, per_sample_norms
from ..stats import N_PERMUTATIONS, permuted_auc_lower_bounds, permuted_labels
from .claims import claim_record
from .instrument import CONTROL_CONDITION, auc_interval, context_scores
from .verdicts import evidence_verdict

#: M2's criterion: DP may cost at most this much held-out accuracy (absolute) against M_ref and against epsilon = inf.
UTILITY_BUDGET = 0.05
#: M1's privacy levels: "epsilon <= 4".
M1_EPSILON = 4.0


def clipping_norm(reference, table: Dataset, spec: RunSpec) -> float:
    """The clipping norm C, tuned on the non-private side: the median per-member gradient norm at M_ref (2 significant
    digits).

    It reads the members without privacy (the DP literature tunes hyperparameters so, leaving the tuning's own
    privacy cost unaccounted); rounded so that float32 rounding never changes a run's key.
    """
    manifest = split_manifest(table, spec.query_size, spec.seed, spec.label_condition)
    data = prepare_run_data(manifest, table, spec.config(), reference.max_classes)
    with torch.no_grad():
        norms = per_sample_norms(per_sample_gradients(reference.clone(), data.task_for(data.member_x, data.member_y)))
    median = float(norms.median())
    return float(f"{median:.2g}")


def dp_config(spec: RunSpec, eps: float, max_grad_norm: float, delta: float = DEFAULT_DELTA) -> FinetuneConfig:
    """The spec's config kept at its last epoch only (and 0), with DP-SGD at ``eps`` (inf: the plain run)."""
    base = replace(spec.config(), probe_epochs=(0, spec.epochs))
    return (
        base
        if math.isinf(eps)
        else replace(base, privacy=PrivacyConfig(target_epsilon=float(eps), delta=delta, max_grad_norm=max_grad_norm))
    )


def held_out_task(run: FinetuneRun, table: Dataset) -> tuple[ICLTask, np.ndarray]:
    """C' as the context and the held-out rows (the context pool outside C': never a member, a non-member or
    a row of C') as queries with their TRUE targets; and their ids.

    The targets are the table's target column at those rows, never the manifest's randomized labels
    (:meth:`~iclmem.data.manifest.SplitManifest.labels`): utility is accuracy on the task itself.
    """
    data = prepare_run_data(run.manifest, table, run.config)
    ids = np.setdiff1d(run.manifest.context, data.context_ids)
    encoded = encoded_table(table, run.manifest.table_fingerprint)[1]
    x = encoded[ids][:, data.feature_columns]
    return data.task_for(x, table.target.to_numpy()[ids]), ids


def held_out_utility(
    run: FinetuneRun, table: Dataset, epoch: int, reference, n_boot: int = 200, seed: int = 0
) -> dict[str, float]:
    """Loss and accuracy of M_theta (at ``epoch``) and M_ref on the held-out rows against their true targets.

    With bootstrap 95% intervals (rows resampled), the number of rows (``held-out rows``) and, per row, 1 where
    the model predicts the true target (``theta correct``, ``ref correct``: for M2's paired intervals).
    """
    task, ids = held_out_task(run, table)
    truth = np.asarray(task.query_y)
    out: dict[str, float] = {"held-out rows": float(len(ids))}
    with torch.no_grad():
        for name, model in (("theta", run.model(epoch, reference)), ("ref", reference)):
            pred = model.predict([task])[0]
            values = {
                "loss": np.asarray(pred.loss(), dtype=np.float64),
                "accuracy": (pred.point() == truth).astype(float),
            }
            out[f"{name} correct"] = values["accuracy"]
            for metric, v in values.items():
                out[f"{name} {metric}"] = float(v.mean())
                lo, hi, _ = paired_bootstrap(len(v), lambda i, v=v: float(v[i].mean()), n_boot, [seed, 0x07])
                out[f"{name} {metric} lo"], out[f"{name} {metric} hi"] = lo, hi
    return out


@dataclass
class Mitigation:
    """What :func:`run_mitigation` computed: one row per epsilon, the clipping norm, the sigmas and the probe's
    summary."""

    table: pd.DataFrame
    max_grad_norm: float
    summary: pd.DataFrame
    correct: dict[float, np.ndarray]  # epsilon -> per held-out row, 1 where M_theta predicts its true target
    ref_correct: np.ndarray | None = None  # per held-out row, 1 where M_ref predicts its true target
    vanilla_scores: dict[float, np.ndarray] | None = None  # epsilon -> the vanilla attack's score per query
    n_members: int = 0  # the scores' first n_members queries are the members


def m1_null_rate(
    m: Mitigation, private: Sequence[float], n_permutations: int = N_PERMUTATIONS, n_boot: int = 200, seed: int = 0
) -> float | None:
    """How often M1's rule says "reproduced" when membership carries nothing (None without scores).

    The members are permuted across the probed queries, the same permutation for every epsilon (the
    runs probe the same queries), and each run's bootstrap lower bound is recomputed under it. The rule
    holds when the non-private run's bound is above 0.5 and no private run's is; "covers 0.5" is read
    from the lower bound alone, which can only raise the rate (an upper bound on it).
    """
    if not m.vanilla_scores or math.inf not in m.vanilla_scores:
        return None
    n = len(m.vanilla_scores[math.inf])
    labels = permuted_labels(np.arange(n) < m.n_members, n_permutations, seed)
    bound = {e: permuted_auc_lower_bounds(m.vanilla_scores[e], labels, n_boot, seed) for e in [math.inf, *private]}
    holds = bound[math.inf] > 0.5
    for e in private:
        holds &= bound[e] <= 0.5
    return float(holds.mean())


def accuracy_cost(
    m: Mitigation, eps: float, against: str = "inf", n_boot: int = 200, seed: int = 0
) -> dict[str, float]:
    """Held-out accuracy of ``against`` ("inf": the non-private run; "ref": M_ref) minus M_theta's at ``eps``.

    With a paired bootstrap 95% interval (the same held-out rows resampled for both).
    """
    if against not in ("inf", "ref"):
        raise ValueError(f"against must be 'inf' or 'ref', got {against!r}")
    a = m.correct[math.inf] if against == "inf" else m.ref_correct
    if a is None:
        raise ValueError("M_ref's per-row correctness is missing (Mitigation.ref_correct)")
    b = m.correct[eps]
    lo, hi, _ = paired_bootstrap(len(a), lambda i: float((a[i] - b[i]).mean()), n_boot, [seed, 0x0C])
    return {"cost": float(a.mean() - b.mean()), "lo": float(lo), "hi": float(hi)}


def cost_verdict(costs: dict[str, dict[str, float]], budget: float = UTILITY_BUDGET) -> tuple[str, str]:
    """M2's rule on the paired cost intervals against M_ref and against epsilon = inf: (verdict, reason).

    reproduced: both intervals lie at or below ``budget``; differs: either lies above it; else inconclusive.
    """
    names = {"ref": "M_ref", "inf": "ε = ∞"}
    above = [names[k] for k, c in costs.items() if c["lo"] > budget]
    if above:
        return "differs", f"the paired interval of the cost against {' and '.join(above)} lies above {budget:.2f}"
    if all(c["hi"] <= budget for c in costs.values()):
        return "reproduced", f"the paired intervals of the cost against M_ref and ε = ∞ lie at or below {budget:.2f}"
    spans = [names[k] for k, c in costs.items() if c["hi"] > budget]
    return "inconclusive", f"the paired interval of the cost against {' and '.join(spans)} contains {budget:.2f}"


def removal_threshold(table: pd.DataFrame) -> float | None:
    """The largest finite epsilon at and below which every vanilla-attack interval covers 0.5 (None: none does)."""
    best = None
    for _, row in table[np.isfinite(table.epsilon)].sort_values("epsilon").iterrows():
        if row["vanilla lo"] > 0.5:
            break
        best = float(row["epsilon"])
    return best


def _eps_label(e: float) -> str:
    return "∞" if math.isinf(e) else f"{e:g}"


def mitigation_claims(m: Mitigation, n_boot: int = 200, seed: int = 0) -> list[dict]:
    """M1: DP-SGD at epsilon <= 4 removes the vanilla-attack signal; M2: at an accuracy cost of at most
    :data:`UTILITY_BUDGET`."""
    t = m.table.set_index("epsilon")
    paper = "(beyond the papers: IclMem Sec. 6 names DP-SGD, neither paper measures it)"
    private = [e for e in t.index if e <= M1_EPSILON]
    if math.inf not in t.index or not private:
        why = "the grid needs epsilon = inf and some epsilon <= 4"
        return [claim_record(i, paper, "not run", "not testable here", why) for i in ("M1", "M2")]
    top = t.loc[math.inf]
    ours = "; ".join(
        f"ε={_eps_label(e)}: {t.loc[e, 'vanilla AUC']:.3f} [{t.loc[e, 'vanilla lo']:.3f}, {t.loc[e, 'vanilla hi']:.3f}]"
        for e in sorted(t.index, reverse=True)
    )
    kept = [e for e in private if t.loc[e, "vanilla lo"] > 0.5]
    if not top["vanilla lo"] > 0.5:
        verdict, why = "inconclusive", "the non-private run's vanilla interval covers 0.5: there is no signal to remove"
    elif kept:
        verdict, why = (
            "differs",
            f"the vanilla interval stays above 0.5 at ε = {', '.join(_eps_label(e) for e in kept)}",
        )
    else:
        verdict, why = (
            "reproduced",
            (
                "the non-private run's vanilla interval is above 0.5 and every run at ε ≤ 4 has an interval that "
                "covers 0.5 (a non-detection at 50 + 50 queries: it rules out a large signal only)"
            ),
        )
    rate = m1_null_rate(m, private, n_boot=n_boot, seed=seed)
    if rate is None:
        null = (
            "no null applies: the verdict reads bootstrap 95% intervals against 0.5, themselves the test against chance"
        )
    else:
        null = (
            "membership exchangeable across the probed queries: the members permuted, the same permutation at every ε, "
            f"{N_PERMUTATIONS} draws, each run's interval bound recomputed and read by the same rule"
        )
        if verdict == "reproduced":  # agreement counts only when chance alone rarely gives it
            verdict = evidence_verdict(True, rate)
    records = [
        claim_record("M1", paper, ours, verdict, why, null=null, observed=f"{top['vanilla lo']:.3f}", null_rate=rate)
    ]
    worst = max(private)  # M2 reads the largest epsilon <= 4: the run of M1's that costs least
    costs = {k: accuracy_cost(m, worst, k, n_boot, seed) for k in ("ref", "inf")}
    ours = "; ".join(
        f"accuracy cost at ε={_eps_label(worst)} against {name}: {c['cost']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]"
        for name, c in zip(("M_ref", "ε=∞"), costs.values(), strict=True)
    )
    ours += " (held-out rows, true targets)"
    verdict, why = cost_verdict(costs)
    ci = "; ".join(f"[{c['lo']:+.3f}, {c['hi']:+.3f}]" for c in costs.values())
    records.append(
        claim_record(
            "M2",
            paper,
            ours,
            verdict,
            why,
            ci,
            null=("no null applies: the criterion is a stated utility budget, read against paired bootstrap intervals"),
            observed=f"{max(c['cost'] for c in costs.values()):+.3f}",
        )
    )
    return records


def _x(table: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Plot positions: log2 of each finite epsilon, infinity one step right of the largest."""
    finite = table.epsilon[np.isfinite(table.epsilon)]
    right = (np.log2(finite.max()) + 2) if len(finite) else 0.0
    x = np.array([right if math.isinf(e) else math.log2(e) for e in table.epsilon])
    return x, [_eps_label(e) for e in table.epsilon]


def plot_attack(table: pd.DataFrame) -> plt.Figure:
    """Vanilla-attack and probe AUC against epsilon, with 95% intervals and the 0.5 line."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    x, labels = _x(table)
    for name, colour, marker, dx in (("vanilla", "#1f77b4", "s", -0.08), ("probe", "#d62728", "o", 0.08)):
        y = table[f"{name} AUC"]
        ax.errorbar(
            x + dx,
            y,
            yerr=[y - table[f"{name} lo"], table[f"{name} hi"] - y],
            fmt=marker,
            color=colour,
            ms=5,
            capsize=3,
            label="vanilla attack on C'" if name == "vanilla" else "probe AUC(ΔS)",
        )
    ax.axhline(0.5, color="grey", lw=0.8)
    ax.set_xticks(x, labels)
    ax.set_xlabel("ε (δ = 1e-5; ∞: no DP)")
    ax.set_ylabel("attack AUC")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_utility(table: pd.DataFrame) -> plt.Figure:
    """Held-out accuracy and loss of M_theta against epsilon, with 95% intervals; M_ref's as a dashed line."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4))
    x, labels = _x(table)
    for ax, metric in zip(axes, ("accuracy", "loss"), strict=True):
        y = table[f"theta {metric}"]
        ax.errorbar(
            x,
            y,
            yerr=[y - table[f"theta {metric} lo"], table[f"theta {metric} hi"] - y],
            fmt="o",
            color="k",
            capsize=3,
            label="M_θ",
        )
        ax.axhline(float(table[f"ref {metric}"].iloc[0]), color="#2ca02c", ls="--", lw=1, label="M_ref")
        ax.set_xticks(x, labels)
        ax.set_xlabel("ε")
        ax.set_ylabel(f"held-out {metric}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def run_mitigation(
    dataset: str,
    learning_rate: float,
    epochs: int,
    query_size: int,
    context_size: int,
    epsilons: Sequence[float],
    reference,
    seed: int = 0,
    n_candidates: int = 10,
    max_queries: int | None = 50,
    n_boot: int = 200,
    label_condition: str = CONTROL_CONDITION,
    delta: float = DEFAULT_DELTA,
    outcome_rule: str = DEFAULT_READING,
) -> Mitigation:
    """Fine-tune (or load) one run per epsilon, attack, probe and score each; see the module docstring.

    ``outcome_rule``: the reading of Tab. 3 (:data:`iclmem.outcomes.OUTCOME_READINGS`) of the outcome column.
    """
    table = prepared_table(dataset)
    spec = RunSpec(
        dataset, float(learning_rate), int(query_size), label_condition, int(epochs), int(seed), int(context_size)
    )
    c = clipping_norm(reference, table, spec)
    manifest = split_manifest(table, spec.query_size, spec.seed, spec.label_condition)
    runs = [finetune(manifest, table, dp_config(spec, e, c, delta), reference, progress=True) for e in epsilons]
    summary, _ = probe_grid(
        [spec] * len(runs), runs, reference, [epochs], n_candidates, max_queries, seed, n_boot, progress=True
    )
    summary = reclassify(summary, outcome_rule)
    rows, correct, ref_correct, scores = [], {}, None, {}
    for eps, run in zip(epsilons, runs, strict=True):
        member, non_member = context_scores(run, table, epochs, reference, 1.0, seed)
        scores[float(eps)] = np.concatenate([member, non_member])
        vanilla = auc_interval(member, non_member, n_boot, seed)
        p = summary[(summary.run_key == run.key) & (summary.epoch == epochs)].iloc[0]
        sigma = 0.0 if run.config.privacy is None else run.config.privacy.sigma(epochs)
        utility = held_out_utility(run, table, epochs, reference, n_boot, seed)
        correct[float(eps)], ref_correct = utility.pop("theta correct"), utility.pop("ref correct")
        rows.append(
            {
                "epsilon": float(eps),
                "sigma": sigma,
                "epsilon (accountant)": epsilon(sigma, 1.0, epochs, delta),
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
        )
    m = Mitigation(pd.DataFrame(rows), c, summary, correct, ref_correct, scores, len(member))
    for against in ("ref", "inf"):
        if against == "inf" and math.inf not in correct:
            continue
        costs = [accuracy_cost(m, float(e), against, n_boot, seed) for e in epsilons]
        m.table[f"cost vs {against}"] = [x["cost"] for x in costs]
        m.table[f"cost vs {against} lo"], m.table[f"cost vs {against} hi"] = (
            [x["lo"] for x in costs],
            [x["hi"] for x in costs],
        )
    return m
