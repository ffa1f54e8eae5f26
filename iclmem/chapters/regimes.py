"""Chapter 5 (notebook 05): realistic training regimes, the encoding check and the regime-decay claim.

Paper sections: Sec. 6 ("Limitations"), App. D (Tab. 12).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import fisher_exact

from ..claims import claim_record
from ..finetune import RunData, prepare_run_data
from ..grid import RunSpec, prepared_table, run_spec
from ..regimes import MULTI_TASK, PAPER_DATASETS, PAPER_TABLE12, REGIMES, detectable_counts


def encoding_balance(specs: Sequence[RunSpec], results_dir: str | None = None, carte_dir: str | None = None) -> pd.DataFrame:
    """Per regime, dataset and encoded column: the missing-value share among probed members and among non-members.

    The runs are read from the results store (trained if missing). A column whose missing values
    track membership would let the attack detect the encoding instead of memorization (App. A.1,
    "Distributional shift"); ``p`` is Fisher's exact test of equal shares.
    """
    rows = []
    for spec in specs:
        run = run_spec(spec, results_dir=results_dir, carte_dir=carte_dir)
        for name in spec.datasets:
            view = run.task(name) if spec.regime in MULTI_TASK else run
            table = prepared_table(name, carte_dir)
            data = prepare_run_data(view.manifest, table, view.config)
            rows += [{"regime": spec.regime, "dataset": name, **r} for r in missing_balance(data)]
    return pd.DataFrame(rows)


def missing_balance(data: RunData) -> list[dict]:
    """Per encoded column of a run's data: missing share among members, among non-members, and Fisher's exact p."""
    rows = []
    for j, column in enumerate(np.asarray(data.encoder.columns)[data.feature_columns]):
        m, n = np.isnan(data.member_x[:, j]), np.isnan(data.non_member_x[:, j])
        p = float(fisher_exact([[m.sum(), (~m).sum()], [n.sum(), (~n).sum()]]).pvalue)
        rows.append({"column": str(column), "missing members": float(m.mean()), "missing non-members": float(n.mean()), "p": p})
    return rows


def balance_summary(balance: pd.DataFrame) -> pd.DataFrame:
    """Per regime: the largest member / non-member gap in missing share over all columns, and the smallest p-value."""
    gap = (balance["missing members"] - balance["missing non-members"]).abs()
    return (balance.assign(gap=gap).groupby("regime", sort=False)
            .agg(columns=("column", "size"), largest_gap=("gap", "max"), smallest_p=("p", "min"))
            .reindex([r for r in REGIMES if r in set(balance.regime)]))


def regime_claim(peaks: pd.DataFrame, peaks_ci: pd.DataFrame) -> dict:
    """C13: detectable tasks fall from regime to regime (paper: 5 -> 2 -> 1 of 10; the last only at epoch 10)."""
    paper = detectable_counts(PAPER_TABLE12, PAPER_DATASETS)
    ours, ours_ci = detectable_counts(peaks), detectable_counts(peaks_ci)
    n = peaks.dataset.nunique()
    paper_text = " -> ".join(str(int(c)) for c in paper) + f" of {PAPER_DATASETS} (multi-task random: only at epoch 10)"
    text = " -> ".join(str(int(c)) for c in ours) + f" of {n}"
    if len(ours) < 2:
        return claim_record("C13", paper_text, text, "not testable here", "the comparison needs at least two regimes")
    v = ours.to_numpy()
    decays = bool(v[-1] < v[0] and (v[1:] <= v[:-1]).all())
    return claim_record("C13", paper_text, text, "reproduced" if decays else "differs",
                        f"the count {'falls' if decays else 'does not fall'} from regime to regime (point-estimate rule of Tab. 3); "
                        "with the bootstrap lower bound above 0.5: " + " -> ".join(str(int(c)) for c in ours_ci))


__all__ = ["encoding_balance", "missing_balance", "balance_summary", "regime_claim"]
