"""Permutation nulls and power (iclmem.stats), the membership null of a probing grid (iclmem.probe.null),
and the three readings of Tab. 3's outcome rule (iclmem.stats.outcomes,
iclmem.chapters.ch04_calibration.outcome_readings)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from iclmem.chapters.ch04_calibration.outcome_readings import fit_printed_reading, paper_rows, reading_agreement
from iclmem.probe.null import null_summaries, permutations, run_null
from iclmem.probe.summary import summarize_scores
from iclmem.stats.metrics import attack_metrics, attack_statistics, loss_gaps
from iclmem.stats.outcomes import OUTCOME_READINGS, PRINTED_CUT, Outcome, classify_arrays, classify_outcome
from iclmem.stats.permutation import (
    NullDraws,
    StatsError,
    beyond_null,
    hanley_mcneil_se,
    min_detectable_auc,
    permuted_attack_statistics,
    permuted_auc_lower_bounds,
    permuted_gaps,
    permuted_labels,
    query_set_seed,
)


def test_permuted_labels_keep_member_counts_and_are_seeded():
    lab = np.array([True] * 7 + [False] * 5)
    p = permuted_labels(lab, 50, seed=3)
    assert p.shape == (50, 12) and (p.sum(axis=1) == 7).all()
    assert (p == permuted_labels(lab, 50, seed=3)).all() and not (p == permuted_labels(lab, 50, seed=4)).all()
    assert len({tuple(r) for r in p}) > 40  # permutations differ
    assert query_set_seed([3, 1, 2]) == query_set_seed([1, 2, 3]) != query_set_seed([1, 2, 4])
    with pytest.raises(StatsError, match="members and non-members"):
        permuted_labels(np.ones(4, bool), 5, 0)


def test_permuted_statistics_equal_the_plain_ones_row_by_row():
    rng = np.random.default_rng(0)
    score = np.round(rng.normal(size=40), 1)  # ties on purpose
    labels = permuted_labels(np.arange(40) < 18, 30, seed=1)
    got = permuted_attack_statistics(score, labels)
    for i in range(0, 30, 7):
        want = attack_statistics(score[labels[i]], score[~labels[i]])
        for key in ("auc", "tpr1", "tpr10"):
            assert got[key][i] == pytest.approx(want[key])


def test_permuted_lower_bounds_behave_like_the_bootstrap_interval():
    rng = np.random.default_rng(1)
    member = np.arange(100) < 50
    strong = np.where(member, 1.5, 0.0) + rng.normal(size=100)
    lo = permuted_auc_lower_bounds(strong, member[None, :], n_boot=400, seed=0)[0]
    ref = attack_metrics(strong[member], strong[~member], n_boot=400, seed=0)
    assert lo == pytest.approx(ref["auc_lo"], abs=0.02) and lo > 0.5
    null_lo = permuted_auc_lower_bounds(strong, permuted_labels(member, 200, 0), n_boot=200, seed=0)
    assert 0.0 < (null_lo > 0.5).mean() < 0.1  # a 95% two-sided bound clears 0.5 about 2.5% of the time by chance


def test_permuted_gaps_equal_loss_gaps():
    rng = np.random.default_rng(2)
    loss = rng.gamma(2.0, size=(30, 4))
    lab = permuted_labels(np.arange(30) < 12, 5, seed=0)
    frame = pd.DataFrame(
        [
            {"query_id": q, "is_member": bool(lab[2][q]), "manipulation": f"m{k}", "loss": loss[q, k]}
            for q in range(30)
            for k in range(4)
        ]
    )
    want = loss_gaps(frame).reindex([f"m{k}" for k in range(4)]).to_numpy()
    assert permuted_gaps(loss, lab)[2] == pytest.approx(want)


def test_min_detectable_auc_has_the_power_it_claims():
    a = min_detectable_auc(50, 50)
    assert 0.6 < a < 0.68 and min_detectable_auc(512, 512) < min_detectable_auc(16, 16)
    assert hanley_mcneil_se(0.5, 50, 50) == pytest.approx(np.sqrt((0.25 + 98 * (1 / 3 - 0.25)) / 2500))
    # binormal scores whose AUC is `a`: a one-sided Mann-Whitney test at 5% detects them about 80% of the time
    from scipy.stats import norm

    shift = np.sqrt(2) * norm.ppf(a)
    rng = np.random.default_rng(0)
    hits = [
        mannwhitneyu(rng.normal(shift, 1, 50), rng.normal(0, 1, 50), alternative="greater").pvalue < 0.05
        for _ in range(600)
    ]
    assert 0.72 < np.mean(hits) < 0.88


def test_beyond_null_is_one_sided_and_strict():
    null = np.arange(100) / 100
    assert beyond_null(0.99, null) and not beyond_null(0.9, null) and beyond_null(0.0, null, side="less")
    assert not beyond_null(float("nan"), null) and not beyond_null(1.0, [np.nan])


# --- readings of Tab. 3 -----------------------------------------------------------------------------------


def test_classify_arrays_equals_classify_outcome_under_text_and_bound():
    rng = np.random.default_rng(5)
    n = 400
    auc_l, auc_e = rng.uniform(0.3, 0.7, n), rng.uniform(0.3, 0.7, n)
    lo_l, lo_e = auc_l - rng.uniform(0, 0.15, n), auc_e - rng.uniform(0, 0.15, n)
    mu, sigma = rng.normal(0, 0.05, n), rng.uniform(0, 0.4, n)
    collapsed = rng.random(n) < 0.2
    auc_l[::17] = np.nan
    for reading, require_ci in (("text", False), ("bound", True)):
        got = classify_arrays(
            auc={"loss": auc_l, "entropy": auc_e},
            auc_lo={"loss": lo_l, "entropy": lo_e},
            mu_gap=mu,
            sigma_gap=sigma,
            collapsed=collapsed,
            reading=reading,
        )
        for i in range(n):
            gaps = [mu[i] - sigma[i], mu[i] + sigma[i]]  # mean mu, population std sigma
            want = classify_outcome(
                gaps=gaps,
                auc={"loss": auc_l[i], "entropy": auc_e[i]},
                collapsed=bool(collapsed[i]),
                auc_ci_low={"loss": lo_l[i], "entropy": lo_e[i]},
                require_ci=require_ci,
            )
            assert got[i] == want.outcome.value, (reading, i)


def test_printed_reading_puts_detection_before_inversion():
    common = {"sigma_gap": [0.1], "collapsed": [False]}

    def auc(value: float) -> dict:
        return {"loss": [value], "entropy": [np.nan]}

    assert classify_arrays(auc=auc(0.6), mu_gap=[0.01], reading="printed", **common)[0] == Outcome.MEMORIZATION.value
    assert classify_arrays(auc=auc(0.6), mu_gap=[0.01], reading="text", **common)[0] == Outcome.INVERSION.value
    assert (
        classify_arrays(auc=auc(0.54), mu_gap=[-0.01], reading="printed", **common)[0]
        == Outcome.CONTEXT_OVERFITTING.value
    )
    with pytest.raises(ValueError, match="lower bounds"):
        classify_arrays(auc=auc(0.6), mu_gap=[0.01], reading="bound", **common)
    with pytest.raises(ValueError, match="lower bounds"):
        no_entropy = {"loss": [0.55], "entropy": None}
        classify_arrays(auc=auc(0.6), auc_lo=no_entropy, mu_gap=[0.01], reading="bound", **common)
    with pytest.raises(ValueError, match="outcome_rule"):
        classify_arrays(auc=auc(0.6), mu_gap=[0.01], reading="strict", **common)


def test_the_printed_reading_is_what_the_search_finds_on_the_paper_rows():
    rows = paper_rows()
    assert len(rows) == 34 and set(rows.outcome) == {"Mem.", "Inv.", "Ctx.Ov.", "No Sig."}
    assert (rows.query_size == 50).sum() == 17 == (rows.query_size == 512).sum()
    fit = fit_printed_reading(rows)
    printed = OUTCOME_READINGS["printed"]
    assert fit["order"] == printed.order and fit["cut"] == PRINTED_CUT == printed.cut
    assert (
        fit["agreement"] >= 30 and fit["cut_range"][0] <= 0.553
    )  # Tab. 10's bold 0.553 (buy_buy_baby) is above the cut
    agreement = reading_agreement(rows).set_index("reading")["agrees with the printed label"]
    assert (
        agreement["printed"] == fit["agreement"] and agreement["text"] < 20
    )  # the text disagrees with about half the rows


# --- the membership null of a probing summary ---------------------------------------------------------------


def _scores(rng: np.random.Generator, effect: float, n: int = 40, k: int = 6, epochs=(1, 10)) -> pd.DataFrame:
    """Synthetic probe scores of one run: members' loss lowered by ``effect`` under M_theta."""
    member = np.arange(n) < n // 2
    difficulty = rng.gamma(2.0, size=n)
    rows = []
    for model, epoch in [("ref", -1), *[("theta", e) for e in epochs]]:
        for q in range(n):
            for j in range(k):
                loss = difficulty[q] + rng.normal(0, 0.2) - (effect if model == "theta" and member[q] else 0.0)
                rows.append(
                    {
                        "query_id": 100 + q,
                        "is_member": bool(member[q]),
                        "manipulation": f"m{j}",
                        "category": "c",
                        "model": model,
                        "epoch": epoch,
                        "loss": max(loss, 0.01),
                        "entropy": max(loss, 0.01) * 0.5,
                        "confidence": 0.5,
                    }
                )
    return pd.DataFrame(rows)


def test_run_null_keeps_the_observed_statistics_for_the_identity_and_centres_at_chance():
    rng = np.random.default_rng(0)
    sc = _scores(rng, effect=0.8)
    null = run_null(sc, [1, 10], n_perm=200, seed=0, n_boot=100)
    assert set(null.epoch) == {1, 10} and len(null) == 400
    theta = sc[(sc.model == "theta") & (sc.epoch == 1)]
    observed = summarize_scores(theta, sc[sc.model == "ref"], n_boot=10)
    assert observed["auc_loss"] > 0.9  # the real labels separate
    e1 = null[null.epoch == 1]
    assert abs(e1.auc_loss.mean() - 0.5) < 0.03 and e1.auc_loss.quantile(0.95) < observed["auc_loss"]
    assert abs(e1.mu_gap.mean()) < abs(observed["mu_gap"]) / 5
    # the real labels in place of permutations give the real summary back
    real = sc[sc.model == "ref"].drop_duplicates("query_id").sort_values("query_id").is_member.to_numpy(dtype=bool)
    same = run_null(sc, [1], seed=0, n_boot=10, labels=real[None, :]).iloc[0]
    for key in (
        "auc_loss",
        "auc_entropy",
        "tpr10_loss",
        "tpr1_entropy",
        "raw_tpr10_loss",
        "ref_tpr10_loss",
        "mu_gap",
        "sigma_gap",
    ):
        assert same[key] == pytest.approx(observed[key]), key


def test_null_summaries_share_permutations_across_runs_of_one_query_set_and_reclassify():
    rng = np.random.default_rng(1)
    a = _scores(rng, 0.0)
    b = a.copy()  # a second learning rate: the same queries and M_ref scores, other M_theta scores
    theta = b.model == "theta"
    b.loc[theta, "loss"] = b.loc[theta, "loss"] * rng.uniform(0.5, 1.5, int(theta.sum()))
    summary = pd.DataFrame(
        [
            {
                "run_key": key,
                "epoch": e,
                "collapsed": False,
                "loss_ratio": 1.0,
                "learning_rate": lr,
                "auc_loss": 0.5,
                "mu_gap": 0.0,
                "outcome": "x",
            }
            for key, lr in (("a", 1e-3), ("b", 1e-4))
            for e in (0, 1, 10)
        ]
    )
    null = null_summaries(summary, {"a": a, "b": b}, NullDraws(40, 0, 50), reading="bound", progress=False)
    assert len(null) == 2 * 2 * 40 and set(null.outcome_reading) == {"bound"}
    assert set(null.outcome) <= {o.value for o in Outcome}
    perms = permutations(null)
    assert len(perms) == 40 and all(len(p) == 4 for p in perms)
    # both runs probe the same query ids, so permutation i relabels them alike: the TPR@10% of S_ref, which does not
    # depend on the run, is the same in both runs of every permutation
    for p in perms[:5]:
        assert p.loc[p.run_key == "a", "ref_tpr10_loss"].iloc[0] == p.loc[p.run_key == "b", "ref_tpr10_loss"].iloc[0]
    # under the null the text reading detects far more often than the bound reading
    from iclmem.stats.outcomes import reclassify

    text = reclassify(null, "text")
    assert (text.outcome == Outcome.MEMORIZATION.value).mean() > 3 * (null.outcome == Outcome.MEMORIZATION.value).mean()


def test_null_summaries_in_threads_equal_one_run_after_another():
    rng = np.random.default_rng(2)
    scores = {key: _scores(rng, shift) for key, shift in (("a", 0.0), ("b", 0.3), ("c", -0.2))}
    summary = pd.DataFrame(
        [
            {"run_key": key, "epoch": e, "collapsed": False, "loss_ratio": 1.0, "auc_loss": 0.5, "outcome": "x"}
            for key in scores
            for e in (0, 1, 10)
        ]
    )
    one = null_summaries(summary, scores, NullDraws(30, 3, 40), progress=False, workers=1)
    three = null_summaries(summary, scores, NullDraws(30, 3, 40), progress=False, workers=3)
    pd.testing.assert_frame_equal(one, three)
    assert one.groupby("run_key").auc_loss_lo.nunique().min() > 1  # each run's bounds vary over its permutations
