"""Paper 1, Sec. 5, App. A.4, App. B (Tab. 1, Tab. 8, Fig. 2, Fig. 5, Fig. 6, Tab. 9), App. C (Tab. 10 / 11): the
outcome and margin summaries of chapter 4 (notebook 04).

The tables a probing summary gives beside the paper's outcome shares (Fig. 5), calibration counts (App. A.4) and Tab. 1
(all three in :mod:`.paper`): the detectable peaks (Tab. 1 / 8), the effect of the calibrated margin (App. A.4), the
outcome shares (Fig. 5) and their evolution over epochs (Fig. 2), the data characteristics (Fig. 6 / Tab. 9), Tab. 3's
shuffled-label check and Tab. 10 / 11's layout, the outcome shares under the membership null and the smallest AUC each
detection rule finds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclmem.chapters.ch03_probing.probing import PAPER_PEAKS, detectable_rows
from iclmem.chapters.ch04_calibration.paper import PAPER_TABLE1
from iclmem.probe.summary import fine_tuned, membership_rows
from iclmem.report.verdicts import cluster_share_interval
from iclmem.stats.outcomes import (
    DEFAULT_MARGIN_RULE,
    OUTCOME_ORDER,
    Outcome,
    calibrated_margin,
    reclassify,
    with_primary_metric,
)
from iclmem.stats.permutation import beyond_null, min_detectable_auc, null_range

MEMORIZATION = Outcome.MEMORIZATION.value
KEYS = ["dataset", "query_size", "learning_rate", "epoch"]


def shuffled_label_check(summary: pd.DataFrame, shuffled: str = "members", min_drop: float = 0.0) -> pd.DataFrame:
    """Per configuration (dataset, Q, lr, epoch > 0) present under N and under ``shuffled``: does the signal weaken?

    The AUC under N is that of its primary metric (:func:`iclmem.stats.outcomes.with_primary_metric`); the
    shuffled AUC is of the same metric at the same epoch. ``weakens``: the shuffled AUC is lower
    than N's by more than ``min_drop``. ``verdict``: "weakens" / "does not weaken" for
    configurations detectable under N, "n/a" otherwise (Tab. 3 states the clause for detectable
    memorization only). Under ``members`` the members' labels were shuffled before fine-tuning
    and the probe asks for those shuffled labels (Sec. 4.1, "label randomization").
    """
    s = fine_tuned(summary)
    normal = with_primary_metric(s[s.label_condition == "none"])
    other = s[s.label_condition == shuffled]
    if normal.empty or other.empty:
        return pd.DataFrame(
            columns=[*KEYS, "metric", "auc_N", "auc_shuffled", "detectable_N", "detectable_shuffled", "verdict"]
        )
    merged = normal.merge(other, on=KEYS, suffixes=("", "_sh"), validate="one_to_one")
    merged["auc_N"] = merged.auc
    merged["auc_shuffled"] = np.where(merged.metric == "entropy", merged.auc_entropy_sh, merged.auc_loss_sh)
    merged["detectable_N"] = merged.outcome == MEMORIZATION
    merged["detectable_shuffled"] = merged.outcome_sh == MEMORIZATION
    weakens = merged.auc_shuffled < merged.auc_N - min_drop
    merged["verdict"] = np.where(~merged.detectable_N, "n/a", np.where(weakens, "weakens", "does not weaken"))
    return merged[
        [*KEYS, "metric", "auc_N", "auc_shuffled", "detectable_N", "detectable_shuffled", "verdict"]
    ].reset_index(drop=True)


def exhaustive_table(summary: pd.DataFrame, shuffled: str = "members") -> pd.DataFrame:
    """Tab. 10 / 11: per dataset, Q and learning rate, N's peak epoch with AUC under N and under the shuffled condition.

    The peak epoch is the one with N's highest AUC(Delta S) on its primary metric; the TPRs belong to
    that metric; the shuffled AUC is of the same metric at the same epoch (Tab. 10's "S" column),
    and the check column is :func:`shuffled_label_check`'s verdict there.
    """
    s = with_primary_metric(fine_tuned(summary))
    normal = s[s.label_condition == "none"]
    if normal.empty:
        return pd.DataFrame()
    peak = normal.loc[normal.groupby(["dataset", "query_size", "learning_rate"]).auc.idxmax()]
    check = shuffled_label_check(summary, shuffled)
    peak = peak.merge(check[[*KEYS, "auc_shuffled", "verdict"]], on=KEYS, how="left")
    cols = {
        "dataset": "dataset",
        "query_size": "Q",
        "learning_rate": "LR",
        "epoch": "Ep.",
        "delta_lv_members": "dLv IN",
        "delta_lv_non_members": "dLv OUT",
        "metric": "metric",
        "auc": "AUC N",
        "auc_shuffled": f"AUC {shuffled}",
        "mu_gap": "mu_gap",
        "sigma_gap": "sigma_gap",
        "tpr10": "TPR@10%",
        "tpr1": "TPR@1%",
        "outcome": "outcome",
        "verdict": "shuffled check",
    }
    out = peak[[c for c in cols if c in peak.columns]].rename(columns=cols)
    out["outcome"] = out.outcome.map({o.value: o.short for o in Outcome})
    return out.sort_values(["Q", "dataset", "LR"], ascending=[True, True, False]).reset_index(drop=True)


def outcome_null_shares(
    summary: pd.DataFrame, null: pd.DataFrame, readings: Sequence[str] = ("text", "printed", "bound")
) -> pd.DataFrame:
    """Per reading, Q and outcome: the build's share of configurations and its share under the membership null.

    ``summary``: the build's summary; ``null``: :func:`iclmem.probe.null.null_summaries` without a
    reading (each reading reclassifies both). Columns reading, Q, outcome, build (%), null mean (%),
    null 95% range (%), and the build's share exceeding the null's 95% quantile.
    """
    rows = []
    for reading in readings:
        ours, theirs = fine_tuned(reclassify(summary, reading)), reclassify(null, reading)
        for q, part in ours.groupby("query_size"):
            per_perm = theirs[theirs.query_size == q].groupby("perm").outcome
            for outcome in OUTCOME_ORDER:
                shares = per_perm.apply(lambda o, outcome=outcome: float((o == outcome).mean())) * 100
                lo, hi = null_range(shares)
                build = float((part.outcome == outcome).mean()) * 100
                rows.append(
                    {
                        "reading": reading,
                        "Q": int(q),
                        "outcome": outcome,
                        "build %": round(build, 1),
                        "null mean %": round(float(shares.mean()), 1),
                        "null 95% range": f"[{lo:.1f}, {hi:.1f}]",
                        "above chance": bool(beyond_null(build, shares)),
                    }
                )
    return pd.DataFrame(rows)


def detect_share_texts(shares: pd.DataFrame) -> dict[str, str]:
    """``build_detect_<reading>_<Q>`` and ``null_detect_<reading>_<Q>`` texts of :func:`outcome_null_shares` ("-"
    where absent)."""
    out = {f"{kind}_detect_{r}_{q}": "-" for kind in ("build", "null") for r in set(shares.reading) for q in (50, 512)}
    for _, row in shares[shares.outcome == MEMORIZATION].iterrows():
        out[f"build_detect_{row.reading}_{row.Q}"] = f"{row['build %']:.0f}%"
        out[f"null_detect_{row.reading}_{row.Q}"] = f"{row['null mean %']:.0f}%"
    return out


#: Label conditions in the order the prose names them, with their names there (Tab. 2 / 10: N, M, S = All).
_CONDITION_ORDER = {"none": "N", "members": "M", "all": "All", "flip": "flip"}


def pooled_conditions(summary: pd.DataFrame) -> str:
    """The label conditions ``summary``'s rows pool, as the prose states a share's basis: "N and M pooled", "N only"."""
    present = set(summary.label_condition) if "label_condition" in summary.columns else set()
    names = [name for key, name in _CONDITION_ORDER.items() if key in present] + sorted(present - set(_CONDITION_ORDER))
    if not names:
        return "no label condition"
    return f"{names[0]} only" if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]} pooled"


def share_basis_texts(summary: pd.DataFrame, query_sizes: Sequence[int] = (50, 512)) -> dict[str, str]:
    """What the chapter's shares are over, for its prose (issue 53 item 5): ``share_conditions``, the label conditions
    the outcome tables and the calibration count pool (every fine-tuned row); ``claim_conditions``, those the
    membership-null claims read (N and All, :func:`membership_rows`); ``claim_runs_<Q>``, how many runs one of those
    claims' shares at ``Q`` rests on per probing epoch ("-" where the grid has no such runs)."""
    claim_rows = fine_tuned(membership_rows(summary))
    out = {
        "share_conditions": pooled_conditions(fine_tuned(summary)),
        "claim_conditions": pooled_conditions(claim_rows),
    }
    out.update({f"claim_runs_{q}": "-" for q in query_sizes})
    for q, part in claim_rows.groupby("query_size"):
        out[f"claim_runs_{int(q)}"] = str(int(part.groupby("epoch").run_key.nunique().max()))
    return out


def power_table(n_pairs: Sequence[tuple[int, int]], power: float = 0.8) -> pd.DataFrame:
    """The smallest AUC(Delta S) each detection rule finds with ``power``, at the probed member / non-member counts.

    Point rule of the text (one-sided test at 5%, what AUC > 0.5 at its best could mean) and the
    bound reading (the lower bound of a 95% interval above 0.5: one-sided 2.5%), by Hanley-McNeil
    variances, beside the paper's detectable peaks.
    """
    rows = []
    for n_m, n_n in sorted(set(n_pairs)):
        rows.append(
            {
                "members": n_m,
                "non-members": n_n,
                "smallest AUC at 80% power, one-sided 5%": min_detectable_auc(n_m, n_n, power, 0.05),
                "smallest AUC at 80% power, bound reading (2.5%)": min_detectable_auc(n_m, n_n, power, 0.025),
                "paper's detectable peaks": f"{PAPER_TABLE1.auc.min():.2f}-{PAPER_PEAKS['auc']:.2f}",
            }
        )
    return pd.DataFrame(rows)


DETECTABLE_COLUMNS = [
    "dataset",
    "learning_rate",
    "epoch",
    "query_size",
    "label_condition",
    "metric",
    "auc",
    "auc_lo",
    "auc_hi",
    "tpr10",
    "tpr1",
]


def detectable_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Tab. 1 / Tab. 8: the peak configuration per dataset and Q among those with detectable memorization.

    AUC and TPRs belong to one metric, the one with the higher AUC (Tab. 8's "primary metric").
    """
    s = detectable_rows(summary)
    if s.empty:
        return pd.DataFrame(columns=DETECTABLE_COLUMNS)
    top = s.loc[s.groupby(["dataset", "query_size"]).auc.idxmax()]
    return top[DETECTABLE_COLUMNS].reset_index(drop=True)


def calibration_counts(
    raw_tpr: np.ndarray,
    ref_tpr: np.ndarray,
    calibrated_tpr: np.ndarray,
    kept: np.ndarray,
    threshold: float = 0.10,
    rule: str = DEFAULT_MARGIN_RULE,
) -> dict[str, np.ndarray]:
    """App. A.4's counts per draw (axis 0) over the rows ``kept`` (the non-collapsed ones): the rows, their raw
    TPR@10% >= ``threshold`` signals, those the calibrated margin removes and those it keeps (C11's statistic is
    ``vanished / raw_tpr10_signals``)."""
    raw = (np.asarray(raw_tpr, dtype=float) >= threshold) & kept
    calibrated = raw & calibrated_margin(raw_tpr, ref_tpr, calibrated_tpr, rule, threshold)
    return {
        "non_collapsed": kept.sum(axis=1),
        "raw_tpr10_signals": raw.sum(axis=1),
        "vanished": (raw & ~calibrated).sum(axis=1),
        "calibrated_signals": calibrated.sum(axis=1),
    }


def calibration_effect(
    summary: pd.DataFrame, threshold: float = 0.10, rule: str = DEFAULT_MARGIN_RULE, metric: str = "loss"
) -> dict[str, int]:
    """App. A.4: among non-collapsed configurations, raw TPR@10% >= threshold signals, and how many keep the
    calibrated margin (:func:`calibration_counts` of the summary's fine-tuned rows)."""
    s = fine_tuned(summary)
    tprs = [s[f"{c}_{metric}"].to_numpy(dtype=float)[None, :] for c in ("raw_tpr10", "ref_tpr10", "tpr10")]
    counts = calibration_counts(*tprs, ~s.collapsed.astype(bool).to_numpy()[None, :], threshold, rule)
    return {key: int(value[0]) for key, value in counts.items()}


def outcome_shares(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5: % of configurations (run x probing epoch > 0) per outcome, by Q."""
    s = fine_tuned(summary)
    shares = pd.crosstab(s.outcome, s.query_size, normalize="columns").mul(100)
    shares.columns = [f"Q={q}" for q in shares.columns]
    return shares.reindex(list(OUTCOME_ORDER)).fillna(0.0)


def temporal_evolution(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2: % of configurations per outcome at each probing epoch, by Q (long format)."""
    s = fine_tuned(summary)
    shares = (
        s.groupby(["query_size", "epoch"]).outcome.value_counts(normalize=True).mul(100).rename("percent").reset_index()
    )
    full = pd.MultiIndex.from_product(
        [sorted(s.query_size.unique()), sorted(s.epoch.unique()), list(OUTCOME_ORDER)],
        names=["query_size", "epoch", "outcome"],
    )
    return shares.set_index(["query_size", "epoch", "outcome"]).reindex(full, fill_value=0.0).reset_index()


def data_characteristics(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 6 / Tab. 9: per dataset k, alpha and which Q showed detectable memorization."""
    s = fine_tuned(summary)
    mem = s[s.outcome == Outcome.MEMORIZATION.value]
    rows = []
    for name, part in s.groupby("dataset"):
        qs = set(mem.loc[mem.dataset == name, "query_size"])
        all_q = set(part.query_size)
        category = (
            "No signal"
            if not qs
            else "Both Q"
            if qs == all_q and len(all_q) > 1
            else " & ".join(f"Q={q} only" for q in sorted(qs))
        )
        counts = {
            f"detectable runs Q={q}": int(mem[(mem.dataset == name) & (mem.query_size == q)].run_key.nunique())
            for q in sorted(all_q)
        }
        rows.append(
            {
                "dataset": name,
                "task": part.task.iloc[0],
                "k": int(part.k.iloc[0]),
                "alpha": float(part.alpha.iloc[0]),
                "category": category,
                **counts,
            }
        )
    return pd.DataFrame(rows)


#: The label conditions of :func:`shuffled_contrast`, as the grid names them (Tab. 2: N, M, All).
CONTRAST_CONDITIONS: tuple[str, ...] = ("none", "members", "all")


def shuffled_contrast(summary: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Condition M judged against All, not against a membership null (Tab. 2, Tab. 3's shuffled-label clause).

    Under M only the members carry shuffled labels, so Delta S can separate "shuffled label" from "true label" with
    no memorization, and permuting membership understates chance. Under All both pools carry shuffled labels: the
    label type is the same on both sides, and what M adds over All is the label-type signal. Per Q: the detectable
    share under N, M and All (run x epoch rows), and M minus All with a 95% interval from a bootstrap over runs
    (each condition's runs resampled apart, :func:`~iclmem.report.verdicts.cluster_share_interval`). A condition
    missing from the grid gives NaN and says so."""
    s = fine_tuned(summary)
    rng = np.random.default_rng(seed)
    rows = []
    for q in sorted(s.query_size.unique()):
        at_q = s[s.query_size == q]
        row: dict = {"query_size": int(q)}
        parts = {}
        for cond in CONTRAST_CONDITIONS:
            part = at_q[at_q.label_condition == cond]
            flags = (part.outcome == MEMORIZATION).to_numpy(bool)
            row[f"detectable {cond}"] = float(flags.mean()) if len(flags) else np.nan
            row[f"runs {cond}"] = int(part.run_key.nunique()) if len(part) else 0
            if len(part):
                parts[cond] = (flags, list(part.run_key))
        if "members" in parts and "all" in parts:
            lo, hi = cluster_share_interval(*parts["members"], n_boot=n_boot, seed=rng, minus=parts["all"])
            row["M minus All"] = row["detectable members"] - row["detectable all"]
            row["interval"] = f"[{lo:+.3f}, {hi:+.3f}]"
            row["reading"] = (
                "M above All: label type, not membership, can explain M's detections"
                if lo > 0
                else "M below All"
                if hi < 0
                else "M and All not separable at this size"
            )
        else:
            missing = [c for c in ("members", "all") if c not in parts]
            row["M minus All"] = np.nan
            row["interval"] = ""
            row["reading"] = f"not in the grid: label condition(s) {', '.join(missing)} (add them to label_conditions)"
        rows.append(row)
    return pd.DataFrame(rows)
