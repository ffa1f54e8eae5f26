"""Golchin et al. 2024, Sec. 4-5, Tab. 2-3: notebook 06's tables (sample, members vs non-members, correlations with
intervals, memorized vs not, the controlled gaps, the claims D1-D9).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.matrices import MEMORIZED, Focus, correct_matrix, memorization_matrix
from iclmem.chapters.ch06_llm_kshot.paper import (
    SHORT_SETTINGS,
    TABLE2,
    TABLE3,
)
from iclmem.chapters.ch06_llm_kshot.rules import (
    CONFIDENCE,
    N_BOOT,
    instance_interval,
    pearson,
)
from iclmem.llm.replication import (
    Experiment,
    correlation_table,
    memorized_vs_not,
)
from iclmem.report.glue import null_rate_text
from iclmem.report.records import VERDICTS, ClaimResult
from iclmem.stats.intervals import paired_bootstrap, unpaired_difference


def sample_table(exp: Experiment) -> pd.DataFrame:
    """One row (the dataset and split): rows read, usable, dropped (and why), instances, members, demonstrations."""
    data = exp.data
    return pd.DataFrame(
        {
            "rows read": [data.n_rows],
            "usable": [len(data.instances)],
            "dropped (empty or one word)": [data.n_dropped_empty],
            "dropped (duplicate text)": [data.n_dropped_duplicate],
            "dropped (other label)": [data.n_dropped_label],
            "instances": [len(exp.instances)],
            "members": [len(exp.sample.members)],
            "demonstrations": [len(exp.sample.demonstrations)],
        },
        index=[f"{data.spec.title} ({data.split})"],
    )


def ground_truth_table(rates: pd.DataFrame) -> pd.DataFrame:
    """Memorization (%) per model, setting and k (rows), members vs non-members (columns, exact + near-exact and exact).

    ``rates``: :func:`~iclmem.llm.replication.memorization_rates` by ``(model, member, setting, k)``.
    """
    gt = rates.pivot_table(index=["model", "setting", "k"], columns="member", values=["memorized", "exact"])
    gt.columns = [
        f"{'exact' if a == 'exact' else 'exact+near'} ({'members' if b else 'non-members'})" for a, b in gt.columns
    ]
    return gt.reindex(columns=sorted(gt.columns))


def correlation_tables(rates: pd.DataFrame, acc: pd.DataFrame) -> pd.DataFrame:
    """This build's companions of Tab. 2 (exact + near-exact) and Tab. 3 (exact only), side by side.

    ``rates``: memorization rates by ``(model, setting, k)``; ``acc``: :func:`~iclmem.llm.replication.accuracy`.
    """
    return pd.concat(
        {
            "exact + near-exact (Tab. 2)": correlation_table(rates, acc, "memorized"),
            "exact only (Tab. 3)": correlation_table(rates, acc, "exact"),
        },
        axis=1,
    )


def paper_correlation_tables() -> pd.DataFrame:
    """The paper's Tab. 2 and Tab. 3 side by side (settings x datasets, GPT-4)."""
    return pd.concat({"Tab. 2 (exact + near-exact)": TABLE2, "Tab. 3 (exact only)": TABLE3}, axis=1)


def memorized_vs_not_table(mem: pd.DataFrame, perf: pd.DataFrame) -> pd.DataFrame:
    """Accuracy and instance count on memorized vs not memorized instances per model, setting and k, one column
    each (:func:`~iclmem.llm.replication.memorized_vs_not`)."""
    table = memorized_vs_not(mem, perf).pivot_table(
        index=["model", "setting", "k"], columns="memorized", values=["accuracy", "n"]
    )
    table.columns = [f"{a} ({'memorized' if b else 'not memorized'})" for a, b in table.columns]
    return table


def claim_results_table(results: Sequence[ClaimResult]) -> pd.DataFrame:
    """One row per claim: paper, ours, interval, verdict and the null rate (the scorecard's columns)."""
    return pd.DataFrame(
        [
            {
                "claim": r.claim_id,
                "paper": r.paper,
                "ours": r.ours,
                "interval": r.interval or "",
                "verdict": r.verdict,
                "null rate": null_rate_text(r.record()),
            }
            for r in results
        ]
    ).set_index("claim")


def verdict_counts_text(results: Sequence[ClaimResult]) -> str:
    """``"2 reproduced, 5 differs, 2 not testable here"`` (verdicts in :data:`iclmem.report.glue.VERDICTS` order,
    zeros left out)."""
    counts = pd.Series([r.verdict for r in results]).value_counts()
    return ", ".join(f"{int(counts[v])} {v}" for v in VERDICTS if v in counts.index) or "no claims"


def _per_instance(mem: pd.DataFrame, model: str, member: bool | None, shots: bool) -> pd.Series:
    df = mem[(mem["model"] == model) & mem["match"].notna()]
    if member is not None:
        df = df[df["member"].astype(bool) == member]
    df = df[df["k"] > 0] if shots else df[df["k"] == 0]
    return df.assign(hit=df["match"].isin(MEMORIZED).astype(float)).groupby("instance_id")["hit"].mean()


def ground_truth_gaps(
    mem: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0, tuned: str = "fine-tuned", base: str = "base"
) -> pd.DataFrame:
    """Memorization gaps of the controlled experiment (percentage points, exact + near-exact, mean over settings and k),
    with 95% percentile bootstrap intervals: members minus non-members of the fine-tuned model (k > 0 and k = 0;
    instances resampled within each group) and fine-tuned minus base on the members (k > 0; paired over instances).
    Empty without a fine-tuned model in ``mem``."""
    if tuned not in set(mem["model"]):
        return pd.DataFrame(columns=["comparison", "regime", "estimate", "interval", "instances"])
    rows = []
    for shots, regime in ((True, "k > 0"), (False, "k = 0")):
        a, b = _per_instance(mem, tuned, True, shots).to_numpy(), _per_instance(mem, tuned, False, shots).to_numpy()
        if len(a) and len(b):
            lo, hi = (100 * x for x in unpaired_difference(a, b, n_boot, seed, CONFIDENCE))
            rows.append(
                {
                    "comparison": "fine-tuned: members minus non-members",
                    "regime": regime,
                    "estimate": (a.mean() - b.mean()) * 100,
                    "interval": f"[{lo:+.0f}, {hi:+.0f}]",
                    "instances": f"{len(a)} + {len(b)}",
                }
            )
    if base in set(mem["model"]):
        t, u = _per_instance(mem, tuned, True, True), _per_instance(mem, base, True, True)
        both = t.index.intersection(u.index)
        if len(both):
            d = (t[both] - u[both]).to_numpy()
            lo, hi, _ = paired_bootstrap(len(d), lambda i, d=d: float(np.mean(d[i])) * 100, n_boot, seed, CONFIDENCE)
            rows.append(
                {
                    "comparison": "members: fine-tuned minus base",
                    "regime": "k > 0",
                    "estimate": d.mean() * 100,
                    "interval": f"[{lo:+.0f}, {hi:+.0f}]",
                    "instances": str(len(both)),
                }
            )
    return pd.DataFrame(rows)


def correlation_intervals(
    mem: pd.DataFrame, perf: pd.DataFrame, measure: str = "memorized", n_boot: int = N_BOOT, seed: int = 0
) -> pd.DataFrame:
    """Pearson's r across the ks run of accuracy and memorization (``memorized``: exact + near-exact, Tab. 2;
    ``exact``: Tab. 3), per model and setting, with a 95% percentile bootstrap interval over instances (r recomputed
    on each resample, instances keeping all their ks; all instances of the model). ``r`` is NaN when either series is
    constant; the interval is missing when r is undefined in most resamples or fewer than three ks were run."""
    rows = []
    for model in dict.fromkeys(mem["model"]):
        focus = Focus(model)
        c = correct_matrix(perf, focus)
        for setting in [s for s in SHORT_SETTINGS if s in set(focus.rows(mem)["setting"])]:
            m = memorization_matrix(mem, focus, [setting], measure)
            ks = [k for k in c.columns if k in set(m.columns)]
            index = c.index.intersection(m.index)
            acc, mx = c.loc[index, ks].to_numpy(), m.loc[index, ks].to_numpy()

            def stat(idx: np.ndarray, acc: np.ndarray = acc, mx: np.ndarray = mx) -> float:
                return pearson(np.nanmean(acc[idx], axis=0), np.nanmean(mx[idx], axis=0))

            r = stat(np.arange(len(index))) if len(index) else float("nan")
            ci = instance_interval(len(index), stat, n_boot, seed) if len(ks) >= 3 else None
            rows.append(
                {
                    "model": model,
                    "setting": SHORT_SETTINGS[setting],
                    "ks": len(ks),
                    "r": r,
                    "interval": ci.bounds("{:.2f}", "") if ci else "undefined",
                    "instances": len(index),
                }
            )
    return pd.DataFrame(rows)


__all__ = [
    "sample_table",
    "ground_truth_table",
    "correlation_tables",
    "paper_correlation_tables",
    "memorized_vs_not_table",
    "claim_results_table",
    "verdict_counts_text",
    "ground_truth_gaps",
    "correlation_intervals",
]
