"""Paper 1, Tab. 3 against its own Tab. 10 / 11: which reading of the outcome rule the printed labels follow (notebook
04).

Tab. 3's text orders the rules collapse, inversion (``mu_gap > 0``), detectable memorization
(``AUC(Delta S) > 0.5``), context overfitting, no signal. The labels the paper prints in Tab. 10 / 11
do not follow that text: about half of the 34 non-collapsed rows get another label under it (e.g.
coffee_ratings at Q=512, AUC 0.519-0.525 with ``mu_gap < 0``, printed "Ctx.Ov." where the text gives
"Mem."). :data:`PAPER_ROWS` holds those 34 rows as transcribed from the paper;
:func:`fit_printed_reading` searches the rule orders and detectable cuts for the one that reproduces
the printed labels best, and :func:`reading_agreement` scores every reading of
:data:`iclmem.stats.outcomes.OUTCOME_READINGS` on them.
"""

from __future__ import annotations

import itertools
from importlib import resources

import numpy as np
import pandas as pd

from iclmem.stats.outcomes import OUTCOME_READINGS, SHORT, Outcome, OutcomeReading, classify_arrays
from iclmem.stats.permutation import hanley_mcneil_se

_FIXTURE = "tab10_11_non_collapsed.csv"
#: The cuts the search tries (AUC point estimates are printed to three decimals).
CUT_GRID = np.round(np.arange(0.5, 0.6001, 0.0005), 4)
#: Which printed AUC a row's detectability reads: Tab. 10 / 11 set AUCs in bold in either column (N or S).
AUC_SOURCES = ("N", "max(N, S)")


def paper_rows() -> pd.DataFrame:
    """The 34 non-collapsed rows of Tab. 10 (Q=50) and Tab. 11 (Q=512): AUC N and S, mu_gap, sigma_gap, TPRs, printed
    outcome."""
    with resources.files("iclmem.chapters.ch04_calibration").joinpath("paper_data", _FIXTURE).open() as f:
        return pd.read_csv(f)


def _auc(rows: pd.DataFrame, source: str) -> np.ndarray:
    """Each printed row's AUC(Delta S) from ``source`` (:data:`AUC_SOURCES`: N, or the larger of N and S)."""
    if source == "N":
        return rows.auc_n.to_numpy(dtype=float)
    if source == "max(N, S)":
        return np.fmax(rows.auc_n.to_numpy(dtype=float), rows.auc_s.to_numpy(dtype=float))
    raise ValueError(f"AUC source must be one of {AUC_SOURCES}, got {source!r}.")


def _bound(rows: pd.DataFrame, auc: np.ndarray, z: float = 1.959964) -> np.ndarray:
    """The normal-approximation 95% lower bound of each printed AUC, with Q members and Q non-members
    (Hanley-McNeil)."""
    q = rows.query_size.to_numpy(dtype=int)
    return np.array([a - z * hanley_mcneil_se(a, n, n) for a, n in zip(auc, q, strict=True)])


def classify_rows(rows: pd.DataFrame, reading: OutcomeReading | str, source: str = "max(N, S)") -> np.ndarray:
    """The short outcome label (as printed) of every row under ``reading``, reading its AUC from ``source``."""
    r = OUTCOME_READINGS[reading] if isinstance(reading, str) else reading
    auc = _auc(rows, source)
    lo = _bound(rows, auc) if r.detect_on == "bound" else None
    nan = np.full(len(rows), np.nan)
    out = classify_arrays(
        auc={"loss": auc, "entropy": nan},
        auc_lo=None if lo is None else {"loss": lo, "entropy": nan},
        mu_gap=rows.mu_gap,
        sigma_gap=rows.sigma_gap,
        collapsed=np.zeros(len(rows), bool),
        reading=r,
    )
    return np.array([SHORT[o] for o in out])


def fit_printed_reading(rows: pd.DataFrame | None = None) -> dict:
    """The rule order, AUC source and detectable cut whose labels agree with the printed ones on the most rows.

    Searched: both orders of inversion and detectable memorization after collapse (context
    overfitting and no signal stay last, as in every reading), both AUC sources of
    :data:`AUC_SOURCES`, and every cut of :data:`CUT_GRID`. Among the best, the cut is the middle of
    the widest run of consecutive best cuts (of the first order and source that reach the best).
    Returns order, source, cut, cut_range, agreement, n and the table of every (order, source)'s best.
    """
    rows = paper_rows() if rows is None else rows
    printed = rows.outcome.to_numpy()
    results = []
    for order, source in itertools.product(
        itertools.permutations((Outcome.INVERSION.value, Outcome.MEMORIZATION.value)), AUC_SOURCES
    ):
        hits = np.array(
            [
                (classify_rows(rows, OutcomeReading("search", order, "point", float(c), ""), source) == printed).sum()
                for c in CUT_GRID
            ]
        )
        best = int(hits.max())
        at = np.flatnonzero(hits == best)
        runs = np.split(at, np.flatnonzero(np.diff(at) > 1) + 1)
        widest = max(runs, key=len)
        results.append(
            {
                "order": " > ".join(SHORT[o] for o in order),
                "order_values": order,
                "source": source,
                "agreement": best,
                "cut_range": (float(CUT_GRID[widest[0]]), float(CUT_GRID[widest[-1]])),
                "cut": float(np.round((CUT_GRID[widest[0]] + CUT_GRID[widest[-1]]) / 2, 4)),
            }
        )
    table = pd.DataFrame(results)
    top = table.loc[table.agreement.idxmax()]
    return {
        "order": tuple(top.order_values),
        "source": top.source,
        "cut": top.cut,
        "cut_range": top.cut_range,
        "agreement": int(top.agreement),
        "n": len(rows),
        "search": table.drop(columns="order_values"),
    }


def reading_agreement(rows: pd.DataFrame | None = None, source: str = "max(N, S)") -> pd.DataFrame:
    """Per reading of :data:`OUTCOME_READINGS`: on how many of the printed rows it gives the paper's own label."""
    rows = paper_rows() if rows is None else rows
    out = []
    for name, reading in OUTCOME_READINGS.items():
        labels = classify_rows(rows, reading, source)
        agree = labels == rows.outcome.to_numpy()
        out.append(
            {
                "reading": name,
                "agrees with the printed label": int(agree.sum()),
                "rows": len(rows),
                "differs on": ", ".join(
                    f"{r.dataset} Q={r.query_size} lr {r.learning_rate:g} ({r.outcome} -> {lab})"
                    for r, lab, ok in zip(rows.itertuples(), labels, agree, strict=True)
                    if not ok
                )
                or "-",
                "description": reading.description,
            }
        )
    return pd.DataFrame(out)


__all__ = ["AUC_SOURCES", "CUT_GRID", "classify_rows", "fit_printed_reading", "paper_rows", "reading_agreement"]
