"""The offline judge's accuracy: cross-validated thresholds (the held-out fold is never fitted on), the
labelled completions of the book's runs, and no few-shot example of the LLM judge in any evaluation set."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from iclmem.llm.judge_accuracy import (
    CompletionAccuracy,
    completion_accuracy,
    cross_validate,
    cv_folds,
    drop_few_shot_examples,
    is_few_shot_example,
    judge_accuracy_table,
    kappa,
    load_completion_pairs,
)
from iclmem.llm.judges import (
    JUDGE_EXAMPLES,
    MATCHES,
    SHIPPED_THRESHOLDS,
    Thresholds,
    fit_on_features,
    load_labelled_pairs,
)


def _features(n_per: int = 6, seed: int = 0) -> pd.DataFrame:
    """Synthetic scored pairs: near-exact rows score high on both measures, "no" rows low on one; exact rows equal."""
    rng = np.random.default_rng(seed)
    rows = []
    for domain in ("nli", "question", "abstract"):
        for j in range(n_per):
            rows.append(
                {
                    "domain": domain,
                    "label": "exact",
                    "reference": f"a {domain} {j}",
                    "candidate": f"A {domain} {j}!",
                    "rouge_l": 1.0,
                    "semantic": 1.0,
                }
            )
            rows.append(
                {
                    "domain": domain,
                    "label": "near-exact",
                    "reference": f"b {j}",
                    "candidate": f"c {j}",
                    "rouge_l": rng.uniform(0.6, 0.9),
                    "semantic": rng.uniform(0.86, 0.99),
                }
            )
            rows.append(
                {
                    "domain": domain,
                    "label": "no",
                    "reference": f"d {j}",
                    "candidate": f"e {j}",
                    "rouge_l": rng.uniform(0.0, 0.5),
                    "semantic": rng.uniform(0.3, 0.99),
                }
            )
    out = pd.DataFrame(rows)
    out["pair_id"] = range(len(out))
    return out


def test_folds_are_stratified_and_seeded():
    f = _features()
    folds = cv_folds(f, 3, seed=1)
    assert np.array_equal(folds, cv_folds(f, 3, seed=1)) and not np.array_equal(folds, cv_folds(f, 3, seed=2))
    per = pd.crosstab([f["domain"], f["label"]], folds)
    assert (per.to_numpy() == 2).all()  # 6 pairs of each (domain, label) -> 2 in each of 3 folds
    with pytest.raises(ValueError, match="n_folds must be >= 2"):
        cv_folds(f, 1)


def test_cv_thresholds_never_see_the_held_out_fold():
    f = _features()
    seen: list[set[int]] = []

    def spy(train: pd.DataFrame) -> tuple[Thresholds, float]:
        seen.append(set(train["pair_id"]))
        return fit_on_features(train)

    res = cross_validate(f, n_folds=3, seed=0, fit=spy, n_boot=50)
    p = res.predictions
    assert len(seen) == 3 and p["predicted"].notna().all()
    for fold, train_ids in zip(sorted(set(p["fold"])), seen, strict=True):
        held = set(p.loc[p["fold"] == fold, "pair_id"])
        assert held and not (held & train_ids) and held | train_ids == set(f["pair_id"])


def test_held_out_pairs_do_not_move_their_folds_thresholds():
    f = _features()
    base = cross_validate(f, n_folds=3, seed=0, n_boot=50)
    held = (base.predictions["fold"] == 0).to_numpy() & (f["label"] == "no").to_numpy()
    poisoned = f.copy()  # fold 0's "no" pairs made to score like near-exact ones (folds depend on labels only)
    poisoned.loc[held, ["rouge_l", "semantic"]] = [0.95, 0.99]
    res = cross_validate(poisoned, n_folds=3, seed=0, n_boot=50)
    assert res.thresholds[0] == base.thresholds[0]  # fold 0 was labelled by thresholds fitted without it
    assert (res.predictions.loc[held, "predicted"] == "near-exact").all()  # and is scored with them: now wrong
    assert fit_on_features(poisoned)[0] != fit_on_features(f)[0]  # a fit that saw them would have moved


def test_summary_has_accuracy_and_kappa_with_intervals_per_kind_of_text():
    res = cross_validate(_features(), n_folds=3, seed=0, n_boot=200)
    s = res.summary().set_index("pairs")
    assert list(s.index) == ["all", "abstract", "nli", "question"] and s.loc["all", "n"] == 54
    for col in ("accuracy", "kappa"):
        assert (s[f"{col}_lo"] <= s[col] + 1e-12).all() and (s[col] <= s[f"{col}_hi"] + 1e-12).all()
    assert s.loc["all", "accuracy"] == pytest.approx(1.0)  # separable by construction
    assert "3-fold cross-validation" in res.text() and res.confusion().to_numpy().sum() == 54
    lodo = cross_validate(_features(), group="domain", n_boot=50)
    assert set(lodo.thresholds) == {"nli", "question", "abstract"}
    with pytest.raises(ValueError, match="choose 'fold' or 'domain'"):
        cross_validate(_features(), group="label")


def test_kappa_matches_sklearn():
    rng = np.random.default_rng(3)
    y = rng.choice(["exact", "near-exact", "no"], 40)
    p = np.where(rng.random(40) < 0.7, y, rng.choice(["exact", "near-exact", "no"], 40))
    assert kappa(y, p) == pytest.approx(cohen_kappa_score(y, p))
    assert np.isnan(kappa(np.array(["no", "no"]), np.array(["no", "no"])))


def _with_few_shot(features: pd.DataFrame) -> pd.DataFrame:
    """``features`` plus the LLM judge's few-shot examples, restyled (case, punctuation) as a copy in a file might
    be."""
    rows = [
        {
            "domain": "abstract",
            "label": lab,
            "reference": ref.upper(),
            "candidate": cand.rstrip(".") + "!",
            "rouge_l": 0.9,
            "semantic": 0.95,
            "pair_id": 1000 + j,
        }
        for j, (ref, cand, lab) in enumerate(JUDGE_EXAMPLES)
    ]
    return pd.concat([features, pd.DataFrame(rows)], ignore_index=True)


def test_few_shot_examples_are_never_evaluated():
    f = _with_few_shot(_features())
    assert is_few_shot_example(f).sum() == len(JUDGE_EXAMPLES) and len(drop_few_shot_examples(f)) == len(f) - 4
    res = cross_validate(f, n_folds=3, seed=0, n_boot=50)
    assert res.n_few_shot_dropped == 4 and set(res.predictions["pair_id"]) == set(_features()["pair_id"])
    assert "4 few-shot examples of the LLM judge left out" in res.text()
    shipped = load_labelled_pairs()  # two of the examples were also in the hand-written file
    assert is_few_shot_example(shipped).sum() == 2 and not is_few_shot_example(load_completion_pairs()).any()


def test_labelled_completions_record_their_source_and_the_stratified_sample():
    c = load_completion_pairs()
    assert len(c) >= 100 and set(c["label"]) <= set(MATCHES) and set(c["offline_call"]) <= set(MATCHES)
    for col in (
        "dataset",
        "instance_id",
        "model",
        "k",
        "setting",
        "occurrences",
        "sampling_weight",
        "reference",
        "candidate",
    ):
        assert c[col].notna().all() and (c[col].astype(str) != "").all(), col
    assert set(c["setting"]) <= {"full", "pairs_labels", "pairs_only"} and set(c["k"]) <= {0, 10, 25, 50}
    assert not c.duplicated(["reference", "candidate"]).any()
    # strata: every pair the offline judge called exact or near-exact (weight 1), a sample of the rest (weight > 1)
    called = c["offline_call"] != "no"
    assert called.sum() >= 10 and (c.loc[called, "sampling_weight"] == 1).all()
    assert (c.loc[~called, "sampling_weight"] > 1).all()
    stratum = (c.loc[~called, "sampling_weight"] * (~called).sum()).round(6)
    assert stratum.nunique() == 1 and float(stratum.iloc[0]).is_integer()  # weight = stratum size / sampled
    assert c["occurrences"].sum() <= 384  # the book's run: 384 memorization completions


def test_completion_accuracy_precision_and_recall_per_label():
    rows = (
        [("near-exact", "near-exact", 1.0)] * 6
        + [("no", "near-exact", 1.0)] * 2
        + [("near-exact", "no", 3.0)]
        + [("no", "no", 3.0)] * 8
        + [("exact", "exact", 1.0)]
    )
    f = pd.DataFrame(rows, columns=["label", "predicted", "sampling_weight"])
    per = CompletionAccuracy(f, SHIPPED_THRESHOLDS, 200, 0).per_label()
    near = per.loc["near-exact"]
    assert (near.called, near.labelled, near.correct) == (8, 7, 6)
    assert near.precision == pytest.approx(6 / 8) and near.recall == pytest.approx(6 / 7)
    assert near.precision_lo < 6 / 8 < near.precision_hi and near.recall_all == pytest.approx(6 / (6 + 3))
    assert per.loc["no", "precision"] == pytest.approx(8 / 9) and per.loc["exact", "recall"] == 1.0
    s = CompletionAccuracy(f, SHIPPED_THRESHOLDS, 200, 0).summary()
    assert s["accuracy"] == pytest.approx(15 / 18) and s["accuracy_lo"] <= s["accuracy"] <= s["accuracy_hi"]
    assert s["accuracy_all"] == pytest.approx((6 + 24 + 1) / (6 + 2 + 3 + 24 + 1))


@pytest.fixture(scope="module")
def encoder():
    from iclmem.llm.judges import default_encoder

    return default_encoder()


@pytest.mark.slow
def test_offline_judge_on_the_books_completions(encoder):
    """The shipped judge on the labelled completions: its calls are those recorded at sampling time (same thresholds
    and encoder), and it is shown beside the hand-written set."""
    res = completion_accuracy(encoder, n_boot=200)
    c = load_completion_pairs()
    assert list(res.predictions["predicted"]) == list(c["offline_call"])
    assert res.predictions["rouge_l"].to_numpy() == pytest.approx(c["rouge_l"].to_numpy(), abs=1e-3)
    per = res.per_label()
    called = c["offline_call"] == "near-exact"
    assert per.loc["near-exact", "called"] == called.sum()
    right = (called & (c["label"] == "near-exact")).sum()
    assert per.loc["near-exact", "precision"] == pytest.approx(right / called.sum())
    assert "near-exact calls" in res.text()
    table = judge_accuracy_table(encoder, n_folds=3, n_boot=100)
    assert list(table["evaluation set"]) == ["hand-written pairs", "completions of the book's runs"]
    assert list(table["pairs"]) == [len(load_labelled_pairs()) - 2, len(c)]
