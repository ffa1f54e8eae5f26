"""Paper 1, Sec. 4.2 ("Difficulty Calibration", "Memorization Metric"), Sec. 5, App. A.4, App. B (Tab. 1,
Tab. 3, Tab. 8, Fig. 2, Fig. 5, Fig. 6, Tab. 9), App. C (Tab. 10 / 11): calibration and outcomes (notebook 04).

What only this chapter needs: the paper's outcome shares, calibration counts and Tab. 1, the
tables and figures of the outcomes (Fig. 2, 5, 6, Tab. 1 / 8 / 9), the controls and the claims
they carry. The outcome rules and the calibrated margin are the engine's :mod:`iclmem.outcomes`.

* :func:`shuffled_label_check`: Tab. 3's clause for detectable memorization, "the signal weakens
  materially under shuffled labels", as a computed check per configuration.
* :func:`exhaustive_table`: Tab. 10 / 11's layout, AUC(Delta S) under N beside the shuffled
  condition, with the check's verdict.
* :func:`negative_control` and :func:`positive_control`: controls whose verdict is computed.
* :func:`calibration_claims`: the records of claims C1-C9, C11, C15, C16 for the scorecard.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from scipy import stats

from ..outcomes import DEFAULT_MARGIN_RULE, OUTCOME_ORDER, Outcome, calibrated_margin, with_primary_metric
from .claims import claim_record
from .probing import PAPER_PEAKS, detectable_rows, fine_tuned
from .verdicts import percent, share_text, share_verdict

MEMORIZATION = Outcome.MEMORIZATION.value
KEYS = ["dataset", "query_size", "learning_rate", "epoch"]

#: C1 and C3 (Sec. 5, Sec. 6): tasks with detectable memorization / with TPR@1% > 0.1, of the 10 evaluated.
PAPER_DETECTABLE_TASKS = (8, 10)
PAPER_TPR1_TASKS = (2, 10)
#: C9 (Sec. 5, Fig. 2): share of Q=50 configurations with detectable memorization at epoch 1 and by epoch 250;
#: Q=512 peaks at epoch 50 with 5.5% and vanishes after.
PAPER_TEMPORAL = {"q50_epoch1": 0.042, "q50_epoch250": 0.20, "q512_peak": 0.055, "q512_peak_epoch": 50}
#: C15 (Sec. 5, App. B.3): beer_ratings at Q=512, AUC 0.59 but TPR@10% 0.49.
PAPER_LOCALIZED = {"auc": 0.59, "tpr10": 0.49}
#: Level of the controls' intervals and the largest share of null intervals allowed to exclude 0.5 by chance.
CONTROL_LEVEL = 0.95


def shuffled_label_check(summary: pd.DataFrame, shuffled: str = "members", min_drop: float = 0.0) -> pd.DataFrame:
    """Per configuration (dataset, Q, lr, epoch > 0) present under N and under ``shuffled``: does the signal weaken?

    The AUC under N is that of its primary metric (:func:`iclmem.outcomes.with_primary_metric`); the
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
        return pd.DataFrame(columns=[*KEYS, "metric", "auc_N", "auc_shuffled", "detectable_N", "detectable_shuffled", "verdict"])
    merged = normal.merge(other, on=KEYS, suffixes=("", "_sh"), validate="one_to_one")
    merged["auc_N"] = merged.auc
    merged["auc_shuffled"] = np.where(merged.metric == "entropy", merged.auc_entropy_sh, merged.auc_loss_sh)
    merged["detectable_N"] = merged.outcome == MEMORIZATION
    merged["detectable_shuffled"] = merged.outcome_sh == MEMORIZATION
    weakens = merged.auc_shuffled < merged.auc_N - min_drop
    merged["verdict"] = np.where(~merged.detectable_N, "n/a", np.where(weakens, "weakens", "does not weaken"))
    return merged[[*KEYS, "metric", "auc_N", "auc_shuffled", "detectable_N", "detectable_shuffled", "verdict"]].reset_index(drop=True)


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
    cols = {"dataset": "dataset", "query_size": "Q", "learning_rate": "LR", "epoch": "Ep.", "delta_lv_members": "dLv IN",
            "delta_lv_non_members": "dLv OUT", "metric": "metric", "auc": "AUC N", "auc_shuffled": f"AUC {shuffled}",
            "mu_gap": "mu_gap", "sigma_gap": "sigma_gap", "tpr10": "TPR@10%", "tpr1": "TPR@1%", "outcome": "outcome",
            "verdict": "shuffled check"}
    out = peak[[c for c in cols if c in peak.columns]].rename(columns=cols)
    out["outcome"] = out.outcome.map({o.value: o.short for o in Outcome})
    return out.sort_values(["Q", "dataset", "LR"], ascending=[True, True, False]).reset_index(drop=True)


def negative_control(summary: pd.DataFrame, metric: str = "loss", max_p: float = 0.01) -> dict:
    """The null-halves control over every fine-tuned configuration: how often its interval excludes 0.5.

    Each configuration attacks two random halves of its non-members (:func:`iclmem.metrics.null_halves`);
    at the 95% level about 5% of intervals exclude 0.5 by chance. The control *fails* when the count
    is improbably high for that rate (one-sided binomial p-value below ``max_p``). Configurations of
    one run share their non-members, so the count is correlated and the p-value is optimistic.
    """
    s = fine_tuned(summary)
    lo, hi = s[f"null_auc_{metric}_lo"].to_numpy(dtype=float), s[f"null_auc_{metric}_hi"].to_numpy(dtype=float)
    n = int(len(s))
    excluded = int(((lo > 0.5) | (hi < 0.5)).sum())
    p = float(stats.binomtest(excluded, n, 1 - CONTROL_LEVEL, alternative="greater").pvalue) if n else math.nan
    passed = bool(n and p >= max_p)
    return {"n": n, "excluded": excluded, "share": excluded / n if n else math.nan, "p_value": p, "passed": passed,
            "median_auc": float(np.median(s[f"null_auc_{metric}"])) if n else math.nan}


def positive_control(control: pd.DataFrame, epoch: int, metric: str = "loss") -> dict:
    """The positive control's verdict: AUC(Delta S) of ``metric`` at ``epoch`` must have its interval above 0.5."""
    row = control[control.epoch == epoch]
    if row.empty:
        raise ValueError(f"the control was not probed at epoch {epoch}; probe it there.")
    r = row.iloc[0]
    auc, lo, hi = float(r[f"auc_{metric}"]), float(r[f"auc_{metric}_lo"]), float(r[f"auc_{metric}_hi"])
    passed = lo > 0.5
    meaning = ("the probe detects memorization that is known to be there, at this query count" if passed else
               "the probe does not separate known members from non-members at this query count, so a non-detection elsewhere "
               "in this book is no evidence of absence, and a detection whose interval reaches 0.5 is no evidence of memorization")
    return {"auc": auc, "lo": lo, "hi": hi, "passed": passed, "outcome": r.outcome, "meaning": meaning}


def vanilla_attack(run, table, epoch: int, reference, n_boot: int = 200, seed: int = 0) -> dict:
    """The plain loss attack on the training-style context C' (no multiple-choice probe), calibrated.

    Per query, ``L_v(M_theta) - L_v(M_ref)`` on the run's vanilla context (Tab. 3's vanilla loss);
    lower means member. It asks whether the model memorized its members at all, which the
    positive control presupposes, independently of whether the zero-information probe surfaces it.
    Returns AUC with its bootstrap interval (keys ``auc``, ``lo``, ``hi``).
    """
    import torch

    from ..finetune import prepare_run_data
    from ..metrics import attack_metrics

    data = prepare_run_data(run.manifest, table, run.config)
    tasks = [data.task_for(data.member_x, data.member_y), data.task_for(data.non_member_x, data.non_member_y)]
    with torch.no_grad():
        theta = [np.asarray(p.loss(), dtype=np.float64) for p in run.model(epoch, reference).predict(tasks)]
        ref = [np.asarray(p.loss(), dtype=np.float64) for p in reference.predict(tasks)]
    m, n = -(theta[0] - ref[0]), -(theta[1] - ref[1])
    out = attack_metrics(m, n, n_boot=n_boot, seed=seed, fprs=())
    return {"auc": out["auc"], "lo": out["auc_lo"], "hi": out["auc_hi"]}


# --- claims ---------------------------------------------------------------------------------------


def _tables_with(summary: pd.DataFrame, mask: pd.Series) -> tuple[int, int]:
    """(tables with at least one configuration where ``mask`` holds, tables in the grid)."""
    s = fine_tuned(summary)
    return int(s.loc[mask.reindex(s.index, fill_value=False), "dataset"].nunique()), int(s.dataset.nunique())


def _share_by_q(summary: pd.DataFrame, outcome: str, q: int) -> tuple[int, int]:
    s = fine_tuned(summary)
    s = s[s.query_size == q]
    return int((s.outcome == outcome).sum()), int(len(s))


def _outcome_share_claim(cid: str, summary: pd.DataFrame, outcome: str, note: str = "") -> dict:
    parts, verdicts, reasons, intervals = [], [], [], []
    for q in (50, 512):
        k, n = _share_by_q(summary, outcome, q)
        paper = PAPER_OUTCOME_SHARES.loc[outcome, f"Q={q}"] / 100
        value, interval = share_text(k, n)
        verdict, reason = share_verdict(k, n, paper)
        parts.append(f"Q={q}: {value}")
        intervals.append(f"Q={q}: {interval}")
        verdicts.append(verdict)
        reasons.append(f"Q={q}: {reason}")
    paper_text = ", ".join(f"Q={q}: {PAPER_OUTCOME_SHARES.loc[outcome, f'Q={q}']:.1f}%" for q in (50, 512))
    verdict = ("not testable here" if all(v == "not testable here" for v in verdicts)
               else "reproduced" if all(v == "reproduced" for v in verdicts) else "differs")
    return claim_record(cid, paper_text, "; ".join(parts), verdict, "; ".join(reasons) + note, "; ".join(intervals))


def calibration_claims(summary: pd.DataFrame, n_paper_tables: int = 10) -> list[dict]:
    """Claim records C1-C9, C11, C15, C16 computed from the chapter's probing summary (one row per run x epoch)."""
    s = fine_tuned(summary)
    det = detectable_rows(summary)
    records = []

    k, n = _tables_with(summary, s.outcome == MEMORIZATION)
    value, interval = share_text(k, n)
    verdict, reason = share_verdict(k, n, PAPER_DETECTABLE_TASKS[0] / PAPER_DETECTABLE_TASKS[1])
    records.append(claim_record("C1", f"{PAPER_DETECTABLE_TASKS[0]}/{PAPER_DETECTABLE_TASKS[1]} tasks", f"{value} tables",
                                verdict, reason + "; detectable: Tab. 3's outcome (AUC(Delta S) > 0.5 on loss or entropy)", interval))

    if det.empty:
        records.append(claim_record("C2", f"max AUC(Delta S) {PAPER_PEAKS['auc']:.3f}", "no detectable configuration", "differs",
                                    "no configuration was classified as detectable memorization"))
    else:
        top = det.loc[det.auc.idxmax()]
        inside = top.auc_lo <= PAPER_PEAKS["auc"] <= top.auc_hi
        records.append(claim_record(
            "C2", f"max AUC(Delta S) {PAPER_PEAKS['auc']:.3f}", f"{top.auc:.3f} ({top.dataset}, lr {top.learning_rate:g}, epoch "
            f"{int(top.epoch)}, Q={int(top.query_size)}, {top.label_condition}, {top.metric})",
            "reproduced" if inside else "differs",
            f"the paper's peak lies {'inside' if inside else 'outside'} the bootstrap interval of this build's peak; the paper's "
            "Tab. 1 rows are on CARTE tables this build does not ship", f"[{top.auc_lo:.3f}, {top.auc_hi:.3f}]"))

    k, n = int(det[det.tpr1 > 0.1].dataset.nunique()), int(s.dataset.nunique())
    value, interval = share_text(k, n)
    verdict, reason = share_verdict(k, n, PAPER_TPR1_TASKS[0] / PAPER_TPR1_TASKS[1])
    records.append(claim_record("C3", f"{PAPER_TPR1_TASKS[0]}/{PAPER_TPR1_TASKS[1]} tasks", f"{value} tables", verdict,
                                reason + "; TPR@1% of the primary metric in a detectable configuration", interval))

    records.append(_outcome_share_claim("C4", summary, Outcome.COLLAPSE.value))
    records.append(_outcome_share_claim("C5", summary, Outcome.INVERSION.value))
    k50, n50 = _share_by_q(summary, MEMORIZATION, 50)
    k512, n512 = _share_by_q(summary, MEMORIZATION, 512)
    c6 = _outcome_share_claim("C6", summary, MEMORIZATION)
    if n50 and n512:  # the claim is also a direction: detectable memorization is rarer at Q=512
        falls = k50 / n50 > k512 / n512
        c6 = {**c6, "verdict": "reproduced" if c6["verdict"] == "reproduced" and falls else "differs",
              "reason": c6["reason"] + f"; direction (Q=50 above Q=512): {'holds' if falls else 'does not hold'}"}
    records.append(c6)
    c7a, c7b = _outcome_share_claim("C7", summary, Outcome.CONTEXT_OVERFITTING.value), _outcome_share_claim("C7", summary, Outcome.NO_SIGNAL.value)
    records.append(claim_record("C7", f"context overfitting {c7a['paper']}; no signal {c7b['paper']}",
                                f"context overfitting {c7a['ours']}; no signal {c7b['ours']}",
                                "reproduced" if c7a["verdict"] == c7b["verdict"] == "reproduced" else "differs",
                                f"context overfitting: {c7a['reason']}. No signal: {c7b['reason']}",
                                f"{c7a['interval']}; {c7b['interval']}"))
    records.append(_binary_claim(summary))
    records.append(_temporal_claim(summary))
    records.append(_calibration_claim(summary))
    records.append(_localized_claim(det))
    records.append(claim_record(
        "C16", "high-cardinality targets need high Q/n and a target not deducible from features (clear_corpus: none)",
        f"{s[s.task == 'regression'].dataset.nunique()} high-cardinality (regression) table(s) in the grid", "not testable here",
        "separating query coverage from deducibility needs several high-cardinality tables that differ in both (the paper "
        "contrasts beer_ratings with clear_corpus); the book's grid cannot vary them independently"))
    return records


def _binary_claim(summary: pd.DataFrame) -> dict:
    s = fine_tuned(summary)
    s = s[s.query_size == 50]
    if s.empty or "k" not in s.columns:
        return claim_record("C8", "binary tasks most vulnerable (chocolate_bar 13 detectable configs at Q=50; coffee 8)",
                            "no Q=50 configurations", "not testable here", "the grid has no Q=50 runs")
    binary = s.k.astype(float) == 2
    shares = {name: float((part.outcome == MEMORIZATION).mean()) for name, part in (("binary", s[binary]), ("other", s[~binary]))
              if len(part)}
    if len(shares) < 2:
        return claim_record("C8", "binary tasks most vulnerable at Q=50", "the grid lacks binary or non-binary tables",
                            "not testable here", "the comparison needs both kinds of table")
    holds = shares["binary"] > shares["other"]
    return claim_record("C8", "binary tasks most vulnerable at Q=50 (chocolate_bar 13 configs, coffee 8)",
                        f"detectable share at Q=50: binary {percent(shares['binary'])}, others {percent(shares['other'])}",
                        "reproduced" if holds else "differs",
                        f"direction (binary above the others) {'holds' if holds else 'does not hold'} on this build's tables")


def _temporal_claim(summary: pd.DataFrame) -> dict:
    s = fine_tuned(summary)
    per = s.assign(det=s.outcome == MEMORIZATION).groupby(["query_size", "epoch"]).det.mean()
    paper = (f"Q=50: {percent(PAPER_TEMPORAL['q50_epoch1'])} at epoch 1, {percent(PAPER_TEMPORAL['q50_epoch250'])} by epoch 250; "
             f"Q=512: peak {percent(PAPER_TEMPORAL['q512_peak'])} at epoch {PAPER_TEMPORAL['q512_peak_epoch']}, then vanishes")
    if 50 not in per.index.get_level_values(0) or 512 not in per.index.get_level_values(0):
        return claim_record("C9", paper, "the grid lacks Q=50 or Q=512", "not testable here", "both query sizes are needed")
    q50, q512 = per.loc[50], per.loc[512]
    text = "; ".join(f"Q={q}: " + ", ".join(f"ep {int(e)} {percent(v)}" for e, v in per.loc[q].items()) for q in (50, 512))
    grows = q50.iloc[-1] > q50.iloc[0]
    decays = q512.iloc[-1] < q512.max() or q512.max() == 0
    below = q512.iloc[-1] <= q50.iloc[-1]
    holds = grows and decays and below
    return claim_record("C9", paper, text, "reproduced" if holds else "differs",
                        f"shape: Q=50 grows from the first to the last probed epoch ({'yes' if grows else 'no'}); Q=512 ends below "
                        f"its peak or never detects ({'yes' if decays else 'no'}) and below Q=50 ({'yes' if below else 'no'})")


def _calibration_claim(summary: pd.DataFrame) -> dict:
    e = calibration_effect(summary)
    paper = PAPER_CALIBRATION["vanished"] / PAPER_CALIBRATION["raw_tpr10_signals"]
    value, interval = share_text(e["vanished"], e["raw_tpr10_signals"])
    verdict, reason = share_verdict(e["vanished"], e["raw_tpr10_signals"], paper)
    return claim_record("C11", f"{PAPER_CALIBRATION['vanished']} of {PAPER_CALIBRATION['raw_tpr10_signals']} raw TPR@10% signals "
                        f"vanish ({percent(paper)}), {PAPER_CALIBRATION['calibrated_signals']} remain",
                        f"{value} of raw signals vanish ({e['calibrated_signals']} remain, of {e['non_collapsed']} non-collapsed)",
                        verdict, reason + "; calibrated margin: Delta TPR@10% >= 0.10 (notebook 04 explains the reading)", interval)


def _localized_claim(det: pd.DataFrame) -> dict:
    paper = f"beer_ratings Q=512: AUC {PAPER_LOCALIZED['auc']:.2f} but TPR@10% {PAPER_LOCALIZED['tpr10']:.2f}"
    if len(det) < 2:
        return claim_record("C15", paper, f"{len(det)} detectable configuration(s)", "not testable here",
                            "comparing global and localized signals needs at least two detectable configurations")
    top_auc, top_tpr = det.loc[det.auc.idxmax()], det.loc[det.tpr10.idxmax()]
    apart = top_auc.name != top_tpr.name and top_tpr.auc < top_auc.auc
    return claim_record("C15", paper, f"highest TPR@10% {top_tpr.tpr10:.2f} at AUC {top_tpr.auc:.3f}; highest AUC {top_auc.auc:.3f} "
                        f"with TPR@10% {top_auc.tpr10:.2f}", "reproduced" if apart else "differs",
                        "the configuration with the strongest localized signal (TPR@10%) "
                        + ("is not" if apart else "is") + " the one with the strongest global signal (AUC), among detectable ones")


# --- tables of the outcomes -----------------------------------------------------------------

#: Fig. 5 of the paper: % of configurations per outcome (over all 1,128 runs).
PAPER_OUTCOME_SHARES = pd.DataFrame(
    {"Q=50": [55.2, 19.3, 12.0, 5.5, 8.0], "Q=512": [50.9, 19.9, 1.8, 6.7, 20.8]}, index=list(OUTCOME_ORDER))


#: App. A.4: non-collapsed configurations, raw TPR@10% >= 0.10, and how many survive calibration.
PAPER_CALIBRATION = {"non_collapsed": 530, "raw_tpr10_signals": 241, "vanished": 230, "calibrated_signals": 11}


#: Tab. 1 of the paper (Q=50 except beer_ratings and bikedekho at Q=512).
PAPER_TABLE1 = pd.DataFrame(
    [("buy_buy_baby", 1e-4, 10, 50, 0.61, 0.14, 0.12), ("chocolate_bar_ratings", 1e-3, 10, 50, 0.61, 0.18, 0.02),
     ("babies_r_us", 1e-4, 50, 50, 0.66, 0.02, 0.00), ("beer_ratings", 1e-4, 50, 512, 0.59, 0.49, 0.17),
     ("bikedekho", 1e-4, 10, 512, 0.58, 0.15, 0.02)],
    columns=["dataset", "learning_rate", "epoch", "query_size", "auc", "tpr10", "tpr1"])


DETECTABLE_COLUMNS = ["dataset", "learning_rate", "epoch", "query_size", "label_condition", "metric", "auc", "auc_lo", "auc_hi",
                      "tpr10", "tpr1"]


def detectable_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Tab. 1 / Tab. 8: the peak configuration per dataset and Q among those with detectable memorization.

    AUC and TPRs belong to one metric, the one with the higher AUC (Tab. 8's "primary metric").
    """
    s = detectable_rows(summary)
    if s.empty:
        return pd.DataFrame(columns=DETECTABLE_COLUMNS)
    top = s.loc[s.groupby(["dataset", "query_size"]).auc.idxmax()]
    return top[DETECTABLE_COLUMNS].reset_index(drop=True)


def calibration_effect(summary: pd.DataFrame, threshold: float = 0.10, rule: str = DEFAULT_MARGIN_RULE,
                       metric: str = "loss") -> dict[str, int]:
    """App. A.4: among non-collapsed configurations, raw TPR@10% >= threshold signals, and how many keep the calibrated margin."""
    s = fine_tuned(summary)
    s = s[~s.collapsed.astype(bool)]
    raw = (s[f"raw_tpr10_{metric}"] >= threshold).to_numpy()
    margin = calibrated_margin(s[f"raw_tpr10_{metric}"], s[f"ref_tpr10_{metric}"], s[f"tpr10_{metric}"], rule, threshold)
    calibrated = raw & margin
    return {"non_collapsed": int(len(s)), "raw_tpr10_signals": int(raw.sum()), "vanished": int((raw & ~calibrated).sum()),
            "calibrated_signals": int(calibrated.sum())}


def outcome_shares(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5: % of configurations (run x probing epoch > 0) per outcome, by Q."""
    s = fine_tuned(summary)
    shares = pd.crosstab(s.outcome, s.query_size, normalize="columns").mul(100)
    shares.columns = [f"Q={q}" for q in shares.columns]
    return shares.reindex(list(OUTCOME_ORDER)).fillna(0.0)


def temporal_evolution(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2: % of configurations per outcome at each probing epoch, by Q (long format)."""
    s = fine_tuned(summary)
    shares = s.groupby(["query_size", "epoch"]).outcome.value_counts(normalize=True).mul(100).rename("percent").reset_index()
    full = pd.MultiIndex.from_product([sorted(s.query_size.unique()), sorted(s.epoch.unique()), list(OUTCOME_ORDER)],
                                      names=["query_size", "epoch", "outcome"])
    return shares.set_index(["query_size", "epoch", "outcome"]).reindex(full, fill_value=0.0).reset_index()


def data_characteristics(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 6 / Tab. 9: per dataset k, alpha and which Q showed detectable memorization."""
    s = fine_tuned(summary)
    mem = s[s.outcome == Outcome.MEMORIZATION.value]
    rows = []
    for name, part in s.groupby("dataset"):
        qs = set(mem.loc[mem.dataset == name, "query_size"])
        all_q = set(part.query_size)
        category = "No signal" if not qs else "Both Q" if qs == all_q and len(all_q) > 1 else " & ".join(f"Q={q} only" for q in sorted(qs))
        counts = {f"detectable runs Q={q}": int(mem[(mem.dataset == name) & (mem.query_size == q)].run_key.nunique()) for q in sorted(all_q)}
        rows.append({"dataset": name, "task": part.task.iloc[0], "k": int(part.k.iloc[0]), "alpha": float(part.alpha.iloc[0]),
                     "category": category, **counts})
    return pd.DataFrame(rows)


# --- figures ----------------------------------------------------------------------------------

OUTCOME_COLORS = {"representational_collapse": "#7f7f7f", "loss_inversion": "#ff7f0e", "detectable_memorization": "#d62728",
                  "context_overfitting": "#1f77b4", "no_signal": "#bcbd22"}


def plot_outcome_shares(ours: pd.DataFrame, paper: pd.DataFrame) -> plt.Figure:
    """Fig. 5: % of configurations per outcome, ours beside the paper's, by Q."""
    data = pd.concat([ours.assign(source="iclmem"), paper.assign(source="paper")]).rename_axis("outcome").reset_index()
    long = data.melt(id_vars=["outcome", "source"], var_name="Q", value_name="percent")
    g = sns.catplot(data=long, y="outcome", x="percent", hue="source", col="Q", kind="bar", height=3, aspect=1.3,
                    order=list(paper.index))
    g.set_axis_labels("% of configurations", "")
    return g.figure


def plot_temporal_evolution(temporal: pd.DataFrame) -> sns.FacetGrid:
    """Fig. 2: % of configurations per outcome across fine-tuning epochs, one panel per Q."""
    g = sns.relplot(data=temporal, x="epoch", y="percent", hue="outcome", col="query_size", kind="line", marker="o",
                    palette=OUTCOME_COLORS, height=3, aspect=1.3)
    for ax in g.axes.flat:
        ax.set_xscale("log")
    g.set_axis_labels("fine-tuning epoch", "% of configurations")
    return g


def plot_data_characteristics(chars: pd.DataFrame) -> plt.Figure:
    """Fig. 6: datasets by target cardinality k and majority-class frequency alpha, coloured by signal."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    sns.scatterplot(data=chars, x="k", y="alpha", hue="category", s=80, ax=ax)
    for _, row in chars.iterrows():
        ax.annotate(row.dataset, (row.k, row.alpha), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("number of target classes k (distinct target values)")
    ax.set_ylabel(r"majority class frequency $\alpha$")
    return fig


__all__ = ["shuffled_label_check", "exhaustive_table", "negative_control", "positive_control", "vanilla_attack", "calibration_claims",
           "PAPER_DETECTABLE_TASKS", "PAPER_TPR1_TASKS", "PAPER_TEMPORAL", "PAPER_LOCALIZED", "PAPER_OUTCOME_SHARES", "PAPER_CALIBRATION",
           "PAPER_TABLE1", "DETECTABLE_COLUMNS", "OUTCOME_COLORS", "detectable_table", "calibration_effect", "outcome_shares",
           "temporal_evolution", "data_characteristics", "plot_outcome_shares", "plot_temporal_evolution", "plot_data_characteristics"]
