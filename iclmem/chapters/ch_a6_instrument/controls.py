"""Paper 1, Sec. 4.2 and App. A (the probe itself): the negative and the positive control of appendix A6, each with a
computed verdict.

:func:`negative_control`: two random halves of each non-member set, one posing as members, must look like chance
(the scorecard's P2, :func:`~iclmem.chapters.ch_a6_instrument.claims.p2_record`); :func:`positive_control`: the
control's AUC(Delta S) at one probing epoch must have its interval above 0.5.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from iclmem.chapters.ch04_calibration.tables import pooled_conditions
from iclmem.probe.summary import fine_tuned

#: Level of the controls' intervals and the largest share of null intervals allowed to exclude 0.5 by chance.
CONTROL_LEVEL = 0.95


#: Columns that name a configuration's non-member set: configurations that share it share its null halves.
NON_MEMBER_SET = ("dataset", "query_size", "seed")
#: Non-member sets a pass needs: with fewer, a t-test over the sets cannot show that the intervals hold their 5%
#: (a failure can still be shown from 3 sets on).
MIN_SETS_TO_PASS = 10
#: How the page says each verdict of :func:`negative_control`.
NEGATIVE_CONTROL_PHRASES = {
    "passes": "passes",
    "fails": "fails",
    "inconclusive": f"is inconclusive (too few non-member sets for a pass, which needs {MIN_SETS_TO_PASS})",
    "not testable": "is not testable (fewer than 3 non-member sets)",
}


def negative_control(
    summary: pd.DataFrame, metric: str = "loss", max_p: float = 0.01, clusters: tuple[str, ...] = NON_MEMBER_SET
) -> dict:
    """The null-halves control over every fine-tuned configuration: how often its interval excludes 0.5.

    Each configuration attacks two random halves of its non-members (:func:`iclmem.stats.metrics.null_halves`);
    at the 95% level about 5% of intervals exclude 0.5 by chance. The halves are drawn once per
    non-member set, so every configuration of one set (its runs, learning rates, label conditions and
    epochs) attacks the *same* two halves and their exclusions are strongly correlated: a count over
    configurations is not binomial. The test therefore treats each non-member set (``clusters``
    present in ``summary``) as one unit: its share of excluding intervals, and a one-sided t-test of
    the sets' mean share against 5%. The control *fails* when that p-value is below ``max_p``; with
    fewer than 3 sets it is not testable (``p_value`` NaN, ``passed`` None). The naive binomial
    p-value over configurations is kept beside it (``binomial_p``) to show what ignoring the
    clustering would say. ``verdict``: ``passes`` only from :data:`MIN_SETS_TO_PASS` sets on; with
    fewer, a non-significant result is ``inconclusive``.
    """
    s = fine_tuned(summary)
    lo, hi = s[f"null_auc_{metric}_lo"].to_numpy(dtype=float), s[f"null_auc_{metric}_hi"].to_numpy(dtype=float)
    n = int(len(s))
    flags = (lo > 0.5) | (hi < 0.5)
    excluded = int(flags.sum())
    keys = [c for c in clusters if c in s.columns]
    shares = (
        pd.Series(flags, index=s.index).groupby([s[c] for c in keys]).mean()
        if keys and n
        else pd.Series(flags, dtype=float)
    )
    k = int(len(shares)) if keys else n
    binomial = float(stats.binomtest(excluded, n, 1 - CONTROL_LEVEL, alternative="greater").pvalue) if n else math.nan
    if k >= 3 and float(shares.std(ddof=1)) > 0:
        p = float(stats.ttest_1samp(shares.to_numpy(), 1 - CONTROL_LEVEL, alternative="greater").pvalue)
    elif k >= 3:  # every set has the same share: no spread to test against
        p = 0.0 if float(shares.iloc[0]) > 1 - CONTROL_LEVEL else 1.0
    else:
        p = math.nan
    return {
        "n": n,
        "excluded": excluded,
        "share": excluded / n if n else math.nan,
        "sets": k,
        "set_shares": [round(float(v), 3) for v in shares.to_numpy()],
        "p_value": p,
        "binomial_p": binomial,
        "passed": None if math.isnan(p) else bool(p >= max_p),
        "verdict": (
            "not testable"
            if math.isnan(p)
            else "fails"
            if p < max_p
            else "passes"
            if k >= MIN_SETS_TO_PASS
            else "inconclusive"
        ),
        "median_auc": float(np.median(s[f"null_auc_{metric}"])) if n else math.nan,
    }


def positive_control(control: pd.DataFrame, epoch: int, metric: str = "loss") -> dict:
    """The positive control's verdict: AUC(Delta S) of ``metric`` at ``epoch`` must have its interval above 0.5."""
    row = control[control.epoch == epoch]
    if row.empty:
        raise ValueError(f"the control was not probed at epoch {epoch}; probe it there.")
    r = row.iloc[0]
    auc, lo, hi = float(r[f"auc_{metric}"]), float(r[f"auc_{metric}_lo"]), float(r[f"auc_{metric}_hi"])
    passed = lo > 0.5
    meaning = (
        "the probe detects memorization that is known to be there, at this query count"
        if passed
        else "the probe does not separate known members from non-members at this query count, so a non-detection "
        "elsewhere "
        "in this book is no evidence of absence, and a detection whose interval reaches 0.5 is no evidence of "
        "memorization"
    )
    return {"auc": auc, "lo": lo, "hi": hi, "passed": passed, "outcome": r.outcome, "meaning": meaning}


def negative_control_texts(result: dict, summary: pd.DataFrame) -> dict[str, str]:
    """The values the page states of the negative control ``result`` (:func:`negative_control` of ``summary``):
    ``null_excluded``, ``null_verdict``, ``null_p`` and ``share_conditions`` (the label conditions it pools)."""
    return {
        "null_excluded": f"{result['excluded']} of {result['n']} ({result['share']:.0%})",
        "null_verdict": NEGATIVE_CONTROL_PHRASES[result["verdict"]],
        "null_p": f"{result['p_value']:.3g}",
        "share_conditions": pooled_conditions(fine_tuned(summary)),
    }


__all__ = [
    "CONTROL_LEVEL",
    "MIN_SETS_TO_PASS",
    "NEGATIVE_CONTROL_PHRASES",
    "NON_MEMBER_SET",
    "negative_control",
    "negative_control_texts",
    "positive_control",
]
