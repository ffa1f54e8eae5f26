"""Cross-validated offline-judge thresholds: the held-out fold is never fitted on; accuracy and kappa on held-out pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from iclmem.llm.judge_eval import cross_validate, cv_folds, kappa
from iclmem.llm.judges import Thresholds, fit_on_features


def _features(n_per: int = 6, seed: int = 0) -> pd.DataFrame:
    """Synthetic scored pairs: near-exact rows score high on both measures, "no" rows low on one; exact rows equal."""
    rng = np.random.default_rng(seed)
    rows = []
    for domain in ("nli", "question", "abstract"):
        for j in range(n_per):
            rows.append({"domain": domain, "label": "exact", "reference": f"a {domain} {j}", "candidate": f"A {domain} {j}!",
                         "rouge_l": 1.0, "semantic": 1.0})
            rows.append({"domain": domain, "label": "near-exact", "reference": f"b {j}", "candidate": f"c {j}",
                         "rouge_l": rng.uniform(0.6, 0.9), "semantic": rng.uniform(0.86, 0.99)})
            rows.append({"domain": domain, "label": "no", "reference": f"d {j}", "candidate": f"e {j}",
                         "rouge_l": rng.uniform(0.0, 0.5), "semantic": rng.uniform(0.3, 0.99)})
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
