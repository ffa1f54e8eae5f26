"""Paper 1, Sec. 4.1, App. A.2 (Tab. 6): the paper's split statistics and thresholds, and what it reports per split."""

from __future__ import annotations

import pandas as pd

#: Tab. 6 of the paper: (dataset, task, Q) -> (KS stat, KS p, W, TVD); None where the paper prints "—"
PAPER_TAB6: dict[tuple[str, str, int], tuple[float | None, float | None, float | None, float | None]] = {
    ("anime_planet", "regression", 512): (0.029, 0.611, 0.025, None),
    ("babies_r_us", "regression", 512): (0.021, 0.968, 0.030, None),
    ("beer_ratings", "regression", 512): (0.021, 0.975, 0.021, None),
    ("bikedekho", "regression", 512): (0.025, 0.889, 0.014, None),
    ("bikewale", "regression", 512): (0.033, 0.595, 0.011, None),
    ("buy_buy_baby", "regression", 512): (0.035, 0.530, 0.065, None),
    ("cardekho", "regression", 512): (0.028, 0.763, 0.007, None),
    ("clear_corpus", "regression", 512): (0.023, 0.941, 0.032, None),
    ("chocolate_bar_ratings", "classification", 512): (None, None, None, 0.044),
    ("coffee_ratings", "classification", 512): (None, None, None, 0.056),
    ("anime_planet", "regression", 50): (0.026, 0.983, 0.024, None),
    ("babies_r_us", "regression", 50): (0.020, 1.000, 0.023, None),
    ("beer_ratings", "regression", 50): (0.025, 0.993, 0.016, None),
    ("bikedekho", "regression", 50): (0.027, 0.983, 0.012, None),
    ("bikewale", "regression", 50): (0.044, 0.622, 0.013, None),
    ("buy_buy_baby", "regression", 50): (0.027, 0.984, 0.041, None),
    ("cardekho", "regression", 50): (0.032, 0.921, 0.010, None),
    ("clear_corpus", "regression", 50): (0.027, 0.988, 0.038, None),
    ("chocolate_bar_ratings", "classification", 50): (None, None, None, 0.005),
    ("coffee_ratings", "classification", 50): (None, None, None, 0.043),
}
COLUMNS = ["KS stat", "KS p", "W", "TVD"]

#: Sec. 4.1's thresholds: KS < 0.05 (regression), TVD < 0.05 (classification); KS p-value > 0.05 (App. A.2).
KS_MAX, TVD_MAX, P_MIN = 0.05, 0.05, 0.05


def paper_table6() -> pd.DataFrame:
    """The paper's Tab. 6 as a DataFrame (values quoted from the paper text)."""
    rows = [
        {"dataset": d, "task": t, "Q": q, **dict(zip(COLUMNS, v, strict=True))} for (d, t, q), v in PAPER_TAB6.items()
    ]
    return (
        pd.DataFrame(rows).sort_values(["Q", "task", "dataset"], ascending=[False, False, True]).reset_index(drop=True)
    )


def paper_reference(dataset: str, task: str, query_size: int) -> str:
    """What the paper reports for this row: its own values for its ten tables, else its range for the task."""
    values = PAPER_TAB6.get((dataset, task, query_size))
    if values:
        ks, p, w, tvd = values
        return f"TVD {tvd:.3f}" if tvd is not None else f"KS {ks:.3f}, p {p:.3f}, W {w:.3f}"
    paper = [v for (_, t, q), v in PAPER_TAB6.items() if t == task and q == query_size]
    if not paper:
        criterion = "TVD" if task == "classification" else "KS"
        return f"not in paper (Q = 50, 512 only); criterion {criterion} < 0.05"
    if task == "classification":
        return (
            f"not in paper; its TVDs at Q={query_size}: {min(v[3] for v in paper):.3f}-{max(v[3] for v in paper):.3f}"
        )
    return (
        f"not in paper; its KS at Q={query_size}: {min(v[0] for v in paper):.3f}-{max(v[0] for v in paper):.3f}, "
        f"p >= {min(v[1] for v in paper):.3f}"
    )


def paper_split_extremes() -> dict[str, float]:
    """The largest KS statistic, the smallest KS p-value and the largest TVD of the paper's Tab. 6."""
    values = list(PAPER_TAB6.values())
    return {
        "max_ks": max(v[0] for v in values if v[0] is not None),
        "min_p": min(v[1] for v in values if v[1] is not None),
        "max_tvd": max(v[3] for v in values if v[3] is not None),
    }


__all__ = [
    "PAPER_TAB6",
    "COLUMNS",
    "KS_MAX",
    "TVD_MAX",
    "P_MIN",
    "paper_table6",
    "paper_reference",
    "paper_split_extremes",
]
