"""Tables and summaries of the probing sections, as the paper reports them (Sec. 5, App. A.3, A.4, B, C).

Inputs are the summary frame of :func:`iclmem.probe.grid.probe_grid` (one row per run and
probing epoch) and the raw probe scores. Nothing here computes a model output.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .metrics import auc, membership_score
from .outcomes import Outcome

OUTCOME_ORDER: tuple[str, ...] = tuple(o.value for o in Outcome)
SHORT = {o.value: o.short for o in Outcome}

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
#: Sec. 5 "Perturbation Effectiveness" and Fig. 4 of the paper (loss-based AUC(Delta S), detectable configurations).
PAPER_PERTURBATION = {"baseline_auc": 0.543, "skew_true_delta": 0.013, "best_single": "mixed_true_5_non_true_5",
                      "best_single_delta": 0.017, "positional_shuffling_delta": 0.0}
#: Tab. 8 of the paper: the highest peak AUC(Delta S) and the highest TPRs over its detectable configurations.
PAPER_PEAKS = {"auc": 0.668, "tpr10": 0.494, "tpr1": 0.166}


def _fine(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows of fine-tuned models only (epoch 0 is M_ref itself)."""
    return summary[summary.epoch > 0]


def best_auc(summary: pd.DataFrame) -> pd.Series:
    """AUC(Delta S) of the metric that signals most, loss or entropy (as Tab. 8 reports)."""
    return summary[["auc_loss", "auc_entropy"]].max(axis=1)


#: Per-metric columns that :func:`with_primary_metric` copies from the primary metric.
PRIMARY_COLUMNS: tuple[str, ...] = ("auc", "auc_lo", "auc_hi", "tpr10", "tpr1")


def with_primary_metric(summary: pd.DataFrame, metric: str = "best") -> pd.DataFrame:
    """``summary`` plus ``metric`` and the ``auc``, ``auc_lo``, ``auc_hi``, ``tpr10``, ``tpr1`` of that metric.

    ``metric="best"`` (Tab. 8: "We report AUC and TPR for the metric (loss or entropy) yielding the
    maximum signal"): per row, whichever of loss and entropy has the higher AUC(Delta S), ties to
    loss; the TPRs are that metric's own, never another metric's. ``"loss"`` / ``"entropy"`` fix it.
    """
    if metric not in ("best", "loss", "entropy"):
        raise ValueError(f"metric must be 'best', 'loss' or 'entropy', got {metric!r}.")
    out = summary.copy()
    if metric == "best":
        chosen = np.where(out["auc_entropy"].to_numpy(dtype=float) > out["auc_loss"].to_numpy(dtype=float), "entropy", "loss")
    else:
        chosen = np.full(len(out), metric)
    out["metric"] = chosen
    for col in PRIMARY_COLUMNS:
        base, _, bound = col.partition("_")
        values = {m: out.get(f"{base}_{m}" + (f"_{bound}" if bound else ""), pd.Series(np.nan, index=out.index)) for m in ("loss", "entropy")}
        out[col] = np.where(chosen == "entropy", values["entropy"], values["loss"]).astype(float)
    return out


def detectable_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """Fine-tuned configurations (epoch > 0) whose Tab. 3 outcome is detectable memorization, with their primary metric."""
    s = _fine(summary)
    return with_primary_metric(s[s.outcome == Outcome.MEMORIZATION.value])


def peak_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Tab. 10 / 11: per dataset, learning rate and Q, the epoch with the highest AUC(Delta S).

    The TPRs are those of the metric (loss or entropy) whose AUC is reported as the peak.
    """
    s = with_primary_metric(_fine(summary))
    idx = s.groupby(["dataset", "query_size", "label_condition", "learning_rate"]).auc.idxmax()
    peak = s.loc[idx]
    cols = {"dataset": "dataset", "query_size": "Q", "label_condition": "labels", "learning_rate": "LR", "epoch": "Ep.",
            "delta_lv_members": "dLv IN", "delta_lv_non_members": "dLv OUT", "auc_loss": "AUC loss", "auc_entropy": "AUC entropy",
            "mu_gap": "mu_gap", "sigma_gap": "sigma_gap", "metric": "TPR metric", "tpr10": "TPR@10%", "tpr1": "TPR@1%",
            "outcome": "outcome"}
    out = peak[list(cols)].rename(columns=cols)
    out["outcome"] = out.outcome.map(SHORT)
    return out.sort_values(["Q", "dataset", "labels", "LR"], ascending=[True, True, True, False]).reset_index(drop=True)


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


#: App. A.4's "calibrated margin (Delta TPR@10% >= 0.10)", the readings its text allows (see :func:`calibrated_margin`).
MARGIN_RULES: dict[str, str] = {
    "delta_tpr": "TPR@10% of S_theta minus TPR@10% of S_ref >= 0.10 (fine-tuning adds 0.10 to what M_ref already separates)",
    "tpr_over_fpr": "TPR@10% of Delta S minus the FPR of 0.10 >= 0.10 (the calibrated attack beats chance by 0.10)",
    "calibrated_tpr": "TPR@10% of Delta S >= 0.10 (the calibrated attack reaches the raw threshold; chance level itself)",
}
#: The reading used by default, chosen for its false-alarm rate under the null (see notebook 04 and the tests).
DEFAULT_MARGIN_RULE = "delta_tpr"


def calibrated_margin(raw_tpr: np.ndarray, ref_tpr: np.ndarray, calibrated_tpr: np.ndarray, rule: str = DEFAULT_MARGIN_RULE,
                      threshold: float = 0.10, fpr: float = 0.10) -> np.ndarray:
    """Whether App. A.4's calibrated margin holds, per configuration, under one reading of :data:`MARGIN_RULES`.

    ``raw_tpr``: TPR@fpr of S_theta alone; ``ref_tpr``: of S_ref alone; ``calibrated_tpr``: of Delta S.
    """
    if rule not in MARGIN_RULES:
        raise ValueError(f"unknown calibrated-margin rule {rule!r}; use one of {', '.join(MARGIN_RULES)}.")
    raw, ref, cal = (np.asarray(a, dtype=np.float64) for a in (raw_tpr, ref_tpr, calibrated_tpr))
    if rule == "delta_tpr":
        return raw - ref >= threshold - 1e-12
    if rule == "tpr_over_fpr":
        return cal - fpr >= threshold - 1e-12
    return cal >= threshold - 1e-12


def calibration_effect(summary: pd.DataFrame, threshold: float = 0.10, rule: str = DEFAULT_MARGIN_RULE,
                       metric: str = "loss") -> dict[str, int]:
    """App. A.4: among non-collapsed configurations, raw TPR@10% >= threshold signals, and how many keep the calibrated margin."""
    s = _fine(summary)
    s = s[~s.collapsed.astype(bool)]
    raw = (s[f"raw_tpr10_{metric}"] >= threshold).to_numpy()
    margin = calibrated_margin(s[f"raw_tpr10_{metric}"], s[f"ref_tpr10_{metric}"], s[f"tpr10_{metric}"], rule, threshold)
    calibrated = raw & margin
    return {"non_collapsed": int(len(s)), "raw_tpr10_signals": int(raw.sum()), "vanished": int((raw & ~calibrated).sum()),
            "calibrated_signals": int(calibrated.sum())}


def null_margin_rates(n_members: int = 50, n_non_members: int = 50, n_sim: int = 2000, seed: int = 0,
                      difficulty_sd: float = 1.0, noise_sd: float = 0.5, threshold: float = 0.10) -> pd.DataFrame:
    """How often each reading of the calibrated margin fires when nothing was memorized (members and non-members exchangeable).

    Each query gets a difficulty ``d ~ N(0, difficulty_sd)`` shared by both models; ``S_ref = d + e_ref`` and
    ``S_theta = d + e_theta`` with independent noise ``N(0, noise_sd)``: fine-tuning moved scores, but not with
    membership. Columns: rule, fires (share of null runs where raw TPR@10% >= threshold and the rule holds),
    fires_given_raw (the same share among null runs with a raw signal), description.
    """
    from .metrics import tpr_at_fpr

    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xA4]))
    n = n_members + n_non_members
    tprs = np.empty((n_sim, 3))
    for i in range(n_sim):
        d = rng.normal(0, difficulty_sd, n)
        s_ref, s_theta = d + rng.normal(0, noise_sd, n), d + rng.normal(0, noise_sd, n)
        member = rng.permutation(n) < n_members
        tprs[i] = [tpr_at_fpr(v[member], v[~member], 0.10) for v in (s_theta, s_ref, s_theta - s_ref)]
    raw = tprs[:, 0] >= threshold
    rows = []
    for rule, text in MARGIN_RULES.items():
        fires = raw & calibrated_margin(tprs[:, 0], tprs[:, 1], tprs[:, 2], rule, threshold)
        rows.append({"rule": rule, "fires": float(fires.mean()), "fires_given_raw": float(fires[raw].mean()) if raw.any() else np.nan,
                     "description": text})
    return pd.DataFrame(rows)


def outcome_shares(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5: % of configurations (run x probing epoch > 0) per outcome, by Q."""
    s = _fine(summary)
    shares = pd.crosstab(s.outcome, s.query_size, normalize="columns").mul(100)
    shares.columns = [f"Q={q}" for q in shares.columns]
    return shares.reindex(list(OUTCOME_ORDER)).fillna(0.0)


def temporal_evolution(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2: % of configurations per outcome at each probing epoch, by Q (long format)."""
    s = _fine(summary)
    shares = s.groupby(["query_size", "epoch"]).outcome.value_counts(normalize=True).mul(100).rename("percent").reset_index()
    full = pd.MultiIndex.from_product([sorted(s.query_size.unique()), sorted(s.epoch.unique()), list(OUTCOME_ORDER)],
                                      names=["query_size", "epoch", "outcome"])
    return shares.set_index(["query_size", "epoch", "outcome"]).reindex(full, fill_value=0.0).reset_index()


def data_characteristics(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 6 / Tab. 9: per dataset k, alpha and which Q showed detectable memorization."""
    s = _fine(summary)
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


def manipulation_aucs(scores: pd.DataFrame, metric: str = "loss", epochs: list[int] | None = None) -> pd.DataFrame:
    """AUC of the calibrated per-manipulation score Delta L_k(q) = L_k,theta(q) - L_k,ref(q), per epoch (App. A.3)."""
    ref = scores[scores.model == "ref"].set_index(["query_id", "manipulation"])[metric]
    theta_all = scores[scores.model == "theta"]
    if epochs is not None:
        theta_all = theta_all[theta_all.epoch.isin(epochs)]
    rows = []
    for epoch, theta in theta_all.groupby("epoch"):
        t = theta.set_index(["query_id", "manipulation"])
        delta = membership_score(metric, (t[metric] - ref.reindex(t.index)).to_numpy())
        frame = t.assign(score=delta).reset_index()
        for (name, category), part in frame.groupby(["manipulation", "category"]):
            member = part.is_member.astype(bool)
            rows.append({"epoch": int(epoch), "manipulation": name, "category": category,
                         "auc": auc(part.score[member].to_numpy(), part.score[~member].to_numpy())})
    return pd.DataFrame(rows)


def _deltas_over_baseline(per_config: list[pd.DataFrame]) -> pd.DataFrame:
    """All per-manipulation AUC rows, with ``delta_auc``: AUC minus the same configuration and epoch's baseline AUC."""
    frames = []
    for i, f in enumerate(per_config):
        base = f[f.manipulation == "baseline"].set_index("epoch").auc
        frames.append(f.assign(delta_auc=f.auc - f.epoch.map(base), config=i))
    return pd.concat(frames)


def manipulation_effects(per_config: list[pd.DataFrame]) -> pd.DataFrame:
    """Per manipulation: mean AUC and mean change of AUC over the baseline manipulation, over configurations (Fig. 4)."""
    if not per_config:
        return pd.DataFrame(columns=["manipulation", "category", "mean_auc", "mean_delta_auc", "n"])
    d = _deltas_over_baseline(per_config)
    return (d.groupby(["manipulation", "category"]).agg(mean_auc=("auc", "mean"), mean_delta_auc=("delta_auc", "mean"), n=("auc", "size"))
            .reset_index().sort_values("mean_delta_auc", ascending=False, kind="stable"))


def probing_vs_paper(summary: pd.DataFrame, per_config: list[pd.DataFrame]) -> pd.DataFrame:
    """Our probing headline numbers beside the paper's (Tab. 8 peaks; Sec. 5 / Fig. 4 perturbation effects).

    ``per_config``: :func:`manipulation_aucs` frames of the configurations Fig. 4 averages over.
    Peaks are over the detectable-memorization configurations (epoch > 0), as Tab. 8 reports them,
    each AUC with the TPRs of its own primary metric (:func:`with_primary_metric`).
    """
    fine = detectable_rows(summary)
    effects = manipulation_effects(per_config)
    by_cat = effects[effects.manipulation != "baseline"].groupby("category").mean_delta_auc.mean()
    best = effects[effects.manipulation != "baseline"].iloc[0] if len(effects) > 1 else None
    base = effects[effects.manipulation == "baseline"].mean_auc
    ours = {
        "peak AUC(Delta S), loss or entropy": fine.auc.max() if len(fine) else np.nan,
        "peak TPR@10% (primary metric)": fine.tpr10.max() if len(fine) else np.nan,
        "peak TPR@1% (primary metric)": fine.tpr1.max() if len(fine) else np.nan,
        "baseline manipulation: mean AUC": float(base.iloc[0]) if len(base) else np.nan,
        "skew true target: mean Delta AUC": by_cat.get("skew_true", np.nan),
        "positional shuffling: mean Delta AUC": by_cat.get("positional_shuffling", np.nan),
        "best single manipulation": best.manipulation if best is not None else "-",
        "best single manipulation: Delta AUC": best.mean_delta_auc if best is not None else np.nan,
    }
    paper = [PAPER_PEAKS["auc"], PAPER_PEAKS["tpr10"], PAPER_PEAKS["tpr1"], PAPER_PERTURBATION["baseline_auc"],
             PAPER_PERTURBATION["skew_true_delta"], PAPER_PERTURBATION["positional_shuffling_delta"],
             PAPER_PERTURBATION["best_single"], PAPER_PERTURBATION["best_single_delta"]]
    return pd.DataFrame({"iclmem": [_fmt(v) for v in ours.values()], "paper": [_fmt(v) for v in paper]}, index=list(ours))


def _fmt(v: object) -> str:
    """Numbers to three decimals (NaN as "-"), names as they are: one readable column of mixed values."""
    if isinstance(v, (float, np.floating)):
        return "-" if np.isnan(v) else f"{v:.3f}"
    return str(v)


def perturbation_effectiveness(per_config: list[pd.DataFrame]) -> pd.DataFrame:
    """Fig. 4: mean change of per-manipulation AUC over the baseline manipulation, by category.

    ``per_config`` holds :func:`manipulation_aucs` frames of the configurations to average over
    (the paper uses its detectable-memorization configurations).
    """
    if not per_config:
        return pd.DataFrame(columns=["category", "mean_delta_auc", "n"])
    d = _deltas_over_baseline(per_config)
    d = d[d.manipulation != "baseline"]
    return d.groupby("category").delta_auc.agg(mean_delta_auc="mean", n="size").reset_index().sort_values("mean_delta_auc")


def example_probe_contexts(query_x: np.ndarray, query_y: object, candidates: np.ndarray, names: list[str],
                           columns: list[str], seed: int = 0, query_id: int = 0) -> dict[str, pd.DataFrame]:
    """The manipulated multiple-choice contexts of one query as small tables (Sec. 4.2, Tab. 7).

    Column names follow the features through the manipulation: it is applied once more to a
    context whose cells hold the column index, with the same seed, which shows which columns a
    feature reduction kept; appended distractor columns are named ``noise_i``.
    """
    from .probe.contexts import mc_context
    from .probe.manipulations import get_manipulation

    base = mc_context(query_x, query_y, candidates)
    index = base.with_(context_x=np.tile(np.arange(len(columns), dtype=np.float32), (base.n_rows, 1)),
                       query_x=np.arange(len(columns), dtype=np.float32)[None, :])
    out = {}
    for name in names:
        manipulation = get_manipulation(name)
        ctx = manipulation.apply(base, seed=seed, query_id=query_id)
        kept = manipulation.apply(index, seed=seed, query_id=query_id).query_x[0]
        n_noise = 0
        labels = []
        for v in kept:
            if float(v).is_integer() and 0 <= v < len(columns):
                labels.append(columns[int(v)])
            else:
                labels.append(f"noise_{n_noise}")
                n_noise += 1
        frame = pd.DataFrame(ctx.context_x, columns=labels)
        frame["target"] = ctx.context_y
        frame["is true target"] = [bool(v == query_y) for v in ctx.context_y]
        out[name] = frame
    return out


def strongest_configuration(summary: pd.DataFrame) -> pd.Series:
    """The non-collapsed (run, epoch > 0) with the highest AUC(Delta S) on loss or entropy."""
    s = _fine(summary)
    s = s[~s.collapsed.astype(bool)]
    if s.empty:
        s = _fine(summary)
    return s.loc[best_auc(s).idxmax()]


def delta_frame(scores: pd.DataFrame, epoch: int) -> pd.DataFrame:
    """Delta S(q) per metric for one epoch, long format (metric, delta, membership) for plotting."""
    from .metrics import METRICS, delta_scores

    theta, ref = scores[(scores.model == "theta") & (scores.epoch == epoch)], scores[scores.model == "ref"]
    parts = [delta_scores(theta, ref, m).assign(metric=m) for m in METRICS]
    d = pd.concat(parts, ignore_index=True)
    d["membership"] = np.where(d.is_member.astype(bool), "member", "non-member")
    return d[["metric", "query_id", "membership", "delta", "score"]]


def roc_frame(scores: pd.DataFrame, epoch: int, metric: str = "loss") -> pd.DataFrame:
    """Log-log ROC points of the calibrated (Delta S) and the raw (S_theta) attack, for one epoch."""
    from .metrics import delta_scores, roc_points, split_members, suite_scores

    theta, ref = scores[(scores.model == "theta") & (scores.epoch == epoch)], scores[scores.model == "ref"]
    cal = delta_scores(theta, ref, metric)
    raw = suite_scores(theta, metric)
    raw["score"] = membership_score(metric, raw.S)
    return pd.concat([roc_points(*split_members(cal)).assign(label=f"calibrated, {metric}"),
                      roc_points(*split_members(raw)).assign(label=f"raw (S_theta), {metric}")], ignore_index=True)
