"""Paper 1, App. D (Tab. 12): the tables of notebook 05.

Tab. 12 from the sweep's rows (:func:`regime_peak_table`, the peak detectable memorization per dataset and
regime), its layout (:func:`wide_table`), and C13's counts beside the paper's and their nulls
(:func:`regime_count_table`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from iclmem.chapters.ch05_regimes.claims import BOUND, POINT, RegimeEvidence, count_range, decays, detectable_counts
from iclmem.chapters.ch05_regimes.paper import PAPER_DATASETS, PAPER_TABLE12, REGIME_TITLES
from iclmem.stats.outcomes import Outcome, with_primary_metric
from iclmem.training.regimes import REGIMES, RegimeError


def regime_peak_table(
    rows: pd.DataFrame,
    query_size: int = 512,
    metric: str = "best",
    label_condition: str = "none",
    require_ci: bool = False,
) -> pd.DataFrame:
    """Tab. 12 from sweep rows: per dataset and regime, the probing epoch with the highest AUC(Delta S).

    Only epochs whose Tab. 3 outcome is detectable memorization count (epoch 0, M_ref, never does);
    a (dataset, regime) without one gets NaN ("--" in the paper). ``metric`` is ``"loss"``,
    ``"entropy"`` or ``"best"`` (default): per epoch the higher of the two AUCs, since Tab. 3
    detects on loss *or* entropy; the TPRs are of the same metric. Rows are filtered to
    ``query_size`` and ``label_condition``; the peak runs over every learning rate in ``rows``
    (the paper's single-task column takes the peak across all learning rates). ``require_ci``
    also asks the lower bound of the bootstrap interval of that AUC to exceed 0.5 (few probed
    queries: the point estimate exceeds 0.5 by chance half the time). Columns: dataset, regime,
    epoch, learning_rate, metric, auc, auc_lo, tpr10, tpr1, members_logged, detectable.
    """
    if metric not in ("loss", "entropy", "best"):
        raise RegimeError(f"metric must be 'loss', 'entropy' or 'best', got {metric!r}.")
    data = with_primary_metric(
        rows[(rows.query_size == query_size) & (rows.label_condition == label_condition) & (rows.epoch > 0)], metric
    )
    out = []
    for (dataset, regime), group in data.groupby(["dataset", "regime"], sort=False):
        hits = group[(group.outcome == Outcome.MEMORIZATION.value) & ((group.auc_lo > 0.5) | (not require_ci))]
        row = {
            "dataset": dataset,
            "regime": regime,
            "members_logged": int(group.members_logged.max()),
            "detectable": not hits.empty,
        }
        if not hits.empty:
            best = hits.loc[hits.auc.idxmax()]
            row.update(
                epoch=int(best.epoch),
                learning_rate=float(best.learning_rate),
                metric=best.metric,
                auc=float(best.auc),
                auc_lo=float(best.auc_lo),
                tpr10=float(best.tpr10),
                tpr1=float(best.tpr1),
            )
        out.append(row)
    cols = [
        "dataset",
        "regime",
        "epoch",
        "learning_rate",
        "metric",
        "auc",
        "auc_lo",
        "tpr10",
        "tpr1",
        "members_logged",
        "detectable",
    ]
    return pd.DataFrame(out, columns=cols).astype({"epoch": "Int64"})


def wide_table(peaks: pd.DataFrame, values: Sequence[str] = ("epoch", "auc", "tpr10", "tpr1")) -> pd.DataFrame:
    """Tab. 12's layout: one row per dataset, (regime, value) columns in the order of
    :data:`iclmem.training.regimes.REGIMES`."""
    wide = peaks.pivot(index="dataset", columns="regime", values=list(values)).swaplevel(axis=1)
    order = [(r, v) for r in REGIMES for v in values if (r, v) in wide.columns]
    wide = wide[order]
    for col in [c for c in wide.columns if c[1] == "epoch"]:
        wide[col] = wide[col].astype("Int64")
    return wide.rename(columns=REGIME_TITLES, level=0)


def regime_count_table(evidence: RegimeEvidence) -> pd.DataFrame:
    """Tab. 12's counts side by side: the paper's, this build's under the point rule and the bound reading, and their
    nulls.

    One row per regime (Tab. 12's titles); the null columns give the central 95% of each count
    over the permutations, and the last row how often the count falls from regime to regime.
    """
    order = list(evidence.counts[BOUND].index)
    paper = detectable_counts(PAPER_TABLE12, PAPER_DATASETS).reindex(order)
    n = evidence.n_datasets
    table = pd.DataFrame(
        {
            "paper (of 10)": paper.astype("Int64"),
            f"point rule (of {n})": evidence.counts[POINT].reindex(order),
            f"bound reading (of {n})": evidence.counts[BOUND].reindex(order),
        }
    )
    if evidence.n_permutations:
        for reading, label in ((POINT, "point rule"), (BOUND, "bound reading")):
            drawn = evidence.null_counts[reading]
            table[f"{label}, null 95% range"] = ["[{}, {}]".format(*count_range(drawn[r])) for r in order]
    table = table.astype(object)
    fall = pd.Series({c: "" for c in table.columns}, name="falls?")
    fall["paper (of 10)"] = "yes" if decays(paper) else "no"
    for reading, label in ((POINT, "point rule"), (BOUND, "bound reading")):
        fall[f"{label} (of {n})"] = "yes" if evidence.agrees(reading) else "no"
        if evidence.n_permutations:
            fall[f"{label}, null 95% range"] = f"by chance in {evidence.null_rate(reading):.0%}"
    table.index = [REGIME_TITLES.get(r, r) for r in order]
    return pd.concat([table, fall.to_frame().T])
