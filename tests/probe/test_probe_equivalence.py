"""Equivalence classes of the 48 manipulations as the model sees them (Sec. 4.2, App. A.3, Tab. 7).

Brute-force checks run the shipped reference LTM on every manipulated context of a few queries of
small tables (scikit-learn's breast_cancer: 2 classes; iris: 3 classes; diabetes: regression with 10
candidates). Float tolerance: members of one class give probabilities equal to ``PROB_ATOL = 5e-6``
(float32 rounding of the attention sums; observed at most ~1e-6, batched or not), losses to 1e-4.
"""

from __future__ import annotations

import itertools
from collections import Counter
from functools import cache

import numpy as np
import pytest
import torch

from iclmem.data import load_dataset
from iclmem.ltm import TableEncoder, load_reference
from iclmem.probe import (
    MANIPULATIONS,
    ProbeQuery,
    build_probe_tasks,
    category_counts,
    classification_candidates,
    get_manipulation,
    mc_context,
    regression_candidates,
    resolve_manipulations,
)
from iclmem.probe.equivalence import (
    EQUIVALENCE_COLUMNS,
    NO_INVARIANCES,
    REFERENCE_INVARIANCES,
    Invariances,
    alternative_suite,
    canonical_context,
    effective_sizes,
    equivalence_classes,
    mixed_skewing_k,
    model_invariances,
    register_invariances,
    suite_effective_size,
    suite_equivalence,
)
from iclmem.probe.scoring import QueryTarget

torch.set_num_threads(1)

PROB_ATOL = 5e-6  # float32 tolerance between manipulations of one class (observed max ~1e-6)
LOSS_ATOL = 1e-4
DIFFERENT = 1e-4  # 20 x PROB_ATOL: pairs of different classes asserted to differ by at least this much

X = np.array([0.5, -1.0, 2.0, 0.0], dtype=np.float32)
BASELINE_CLASS = {
    "baseline",
    "shuffle_random",
    "shuffle_first",
    "shuffle_last",
    "uniform_2",
    "uniform_5",
    "uniform_10",
    "mixed_true_5_non_true_5",
    "shuffle_and_uniform_2",
    "shuffle_and_uniform_5",
    "shuffle_and_uniform_10",
}
REDUCE_CLASS = {
    "feature_reduction_2",
    "shuffle_and_reduce_2",
    "shuffle_uniform_2_and_reduce",
    "shuffle_uniform_5_and_reduce",
}


# -- fixtures: the real reference LTM and small tables --------------------------------------------------------
@pytest.fixture(scope="module")
def reference():
    return load_reference()


@cache
def _table(name: str):
    ds = load_dataset(name)
    x = TableEncoder().fit(ds.features).transform(ds.features)
    return ds, x, ds.target.to_numpy()


def table_queries(
    name: str, n: int, n_candidates: int = 10
) -> tuple[list[ProbeQuery], str, float | None, float | None]:
    ds, x, y = _table(name)
    ids = np.random.default_rng(0).choice(len(y), size=n, replace=False)
    if ds.task == "classification":
        classes = classification_candidates(y)
        qs = [ProbeQuery(int(i), x[i], y[i], False, classes) for i in ids]
        return qs, ds.task, None, None
    qs = [ProbeQuery(int(i), x[i], y[i], False, regression_candidates(y[i], y, n_candidates, 0, int(i))) for i in ids]
    return qs, ds.task, float(y.mean()), float(y.std())


def predictions(model, q: ProbeQuery, manipulations, task: str, center, scale) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities (n_manipulations, n_outputs) and losses of the query under every manipulation, one padded batch."""
    tasks, _ = build_probe_tasks([q], manipulations, target=QueryTarget(task, center, scale))
    with torch.no_grad():
        preds = model.predict(tasks)
    return np.stack([p.probabilities()[0] for p in preds]), np.array([float(p.loss()[0]) for p in preds])


# -- declared invariances -------------------------------------------------------------------------------------
def test_model_invariances_reference_unknown_declared_and_registered(reference):
    assert (
        model_invariances(reference) == Invariances(row_order=True, uniform_duplication=True) == REFERENCE_INVARIANCES
    )
    assert model_invariances(reference.clone()) == REFERENCE_INVARIANCES  # fine-tuned copies share the architecture
    assert model_invariances(reference.network) == REFERENCE_INVARIANCES
    assert model_invariances(object()) == NO_INVARIANCES == Invariances(False, False)

    class Declares:
        invariances = Invariances(row_order=True)

    class Registered:
        pass

    class Child(Registered):
        pass

    assert model_invariances(Declares()) == Invariances(True, False)
    register_invariances(Registered, Invariances(False, True))
    assert model_invariances(Child()) == Invariances(False, True)
    with pytest.raises(ValueError, match="must be an Invariances"):
        register_invariances(Registered, (True, True))


# -- canonical contexts ---------------------------------------------------------------------------------------
def test_canonical_context_row_order_and_uniform_duplication():
    ctx = mc_context(X, 2, np.arange(5))
    perm = ctx.with_(context_x=ctx.context_x[[3, 1, 4, 0, 2]], context_y=ctx.context_y[[3, 1, 4, 0, 2]])
    repeat = ctx.with_(context_x=np.repeat(ctx.context_x, 3, axis=0), context_y=np.repeat(ctx.context_y, 3))
    tile = ctx.with_(context_x=np.tile(ctx.context_x, (3, 1)), context_y=np.tile(ctx.context_y, 3))
    skew = get_manipulation("skew_true_3").apply(ctx)
    ref = canonical_context(ctx, REFERENCE_INVARIANCES)
    assert canonical_context(perm, REFERENCE_INVARIANCES) == ref
    assert canonical_context(repeat, REFERENCE_INVARIANCES) == ref == canonical_context(tile, REFERENCE_INVARIANCES)
    assert canonical_context(skew, REFERENCE_INVARIANCES) != ref
    # nothing assumed: only identical inputs merge
    none = canonical_context(ctx, NO_INVARIANCES)
    assert canonical_context(perm, NO_INVARIANCES) != none and canonical_context(repeat, NO_INVARIANCES) != none
    assert canonical_context(mc_context(X.copy(), 2, np.arange(5)), NO_INVARIANCES) == none
    # only one of the two invariances
    order_only, dup_only = Invariances(True, False), Invariances(False, True)
    assert canonical_context(perm, order_only) == canonical_context(ctx, order_only)
    assert canonical_context(repeat, order_only) != canonical_context(ctx, order_only)
    assert canonical_context(repeat, dup_only) == canonical_context(ctx, dup_only)  # runs of 3 copies, gcd 3
    assert canonical_context(perm, dup_only) != canonical_context(ctx, dup_only)
    assert canonical_context(tile, dup_only) != canonical_context(ctx, dup_only)  # not consecutive copies


def test_canonical_context_includes_the_query_and_normalizes_cells():
    ctx = mc_context(X, 2, np.arange(5))
    other_query = ctx.with_(query_x=ctx.query_x + 1)
    assert canonical_context(other_query, REFERENCE_INVARIANCES) != canonical_context(ctx, REFERENCE_INVARIANCES)
    other_target = ctx.with_(query_y=np.array([3]))
    assert canonical_context(other_target, REFERENCE_INVARIANCES) != canonical_context(ctx, REFERENCE_INVARIANCES)
    reduced = get_manipulation("feature_reduction_2").apply(ctx, 0, 1)
    assert canonical_context(reduced, REFERENCE_INVARIANCES).n_features == 4  # masked columns keep the width
    nan = np.array([np.nan, -0.0, 1.0], dtype=np.float32)
    payload = nan.copy()
    payload.view(np.uint32)[0] = 0x7FC00001  # another NaN bit pattern
    payload[1] = 0.0
    a, b = mc_context(nan, 0, [0, 1]), mc_context(payload, 0, [0, 1])
    assert canonical_context(a, NO_INVARIANCES) == canonical_context(b, NO_INVARIANCES)


# -- the suite for one query ----------------------------------------------------------------------------------
def test_suite_equivalence_frame_and_the_classes_of_a_10_candidate_query():
    cand = np.arange(10) * 1.5
    eq = suite_equivalence(None, X, cand[4], cand, REFERENCE_INVARIANCES, seed=0, query_id=0)
    assert list(eq.columns) == list(EQUIVALENCE_COLUMNS) and len(eq) == 48
    assert eq.manipulation.tolist() == list(MANIPULATIONS)
    assert eq.group.iloc[0] == 0 and list(dict.fromkeys(eq.group)) == list(
        range(eq.group.nunique())
    )  # first appearance
    assert (eq.group_size == eq.groupby("group").manipulation.transform("size")).all()
    assert np.isclose(eq.drop_duplicates("group").weight.sum(), 1.0) and np.allclose(eq.weight, eq.group_size / 48)
    by_group = eq.groupby("group").manipulation.agg(set)
    assert by_group[0] == BASELINE_CLASS
    assert REDUCE_CLASS in by_group.tolist()
    for f in (2, 3, 5):
        assert {f"skew_true_{f}", f"shuffle_and_skewed_{f}"} in by_group.tolist()
    for f in (2, 5):
        assert {f"random_{f}", f"shuffle_and_random_{f}"} in by_group.tolist()
    assert eq.group.nunique() == 30
    assert eq.set_index("manipulation").loc["skew_true_3", "counts"] == "true 3 | others 1 1 1 1 1 1 1 1 1"
    classes = equivalence_classes(eq)
    assert len(classes) == 30 and classes.group_size.sum() == 48 and np.isclose(classes.weight.sum(), 1.0)
    assert classes.loc[0, "weight"] == pytest.approx(11 / 48)
    # random scaling can draw another manipulation's pattern: for query 3, random_2 is skew_non_true_k3_x2
    g3 = (
        suite_equivalence(None, X, cand[4], cand, REFERENCE_INVARIANCES, seed=0, query_id=3)
        .set_index("manipulation")
        .group
    )
    assert g3["random_2"] == g3["skew_non_true_k3_x2"] and g3.nunique() == 29
    # a subset of the suite: weights are shares of that subset
    sub = suite_equivalence(["baseline", "uniform_2", "skew_true_2"], X, cand[4], cand, REFERENCE_INVARIANCES)
    assert sub.group.tolist() == [0, 0, 1] and sub.weight.tolist() == pytest.approx([2 / 3, 2 / 3, 1 / 3])


def test_binary_classes_depend_on_the_query():
    eqs = [suite_equivalence(None, X, 0, np.array([0, 1]), REFERENCE_INVARIANCES, 0, q) for q in range(40)]
    sizes = {e.group.nunique() for e in eqs}
    assert min(sizes) >= 19 and max(sizes) <= 24 and len(sizes) > 1
    for e in eqs:
        g = e.set_index("manipulation").group
        for f in (2, 3, 5):  # k is capped at the single incorrect candidate
            assert g[f"skew_non_true_k1_x{f}"] == g[f"skew_non_true_k2_x{f}"] == g[f"skew_non_true_k3_x{f}"]
    # random scaling with equal counts is the baseline for some queries, not for others
    joins = [e.set_index("manipulation").group["random_2"] == 0 for e in eqs]
    assert any(joins) and not all(joins)


def test_no_invariances_gives_nearly_48_classes():
    cand = np.arange(10) * 1.5
    eq = suite_equivalence(None, X, cand[4], cand, NO_INVARIANCES, 0, 3)
    assert 45 <= eq.group.nunique() <= 47
    g = eq.set_index("manipulation").group
    assert g["mixed_true_5_non_true_5"] == g["uniform_5"]  # bit-identical contexts under the default reading
    assert g["baseline"] != g["uniform_2"] and g["shuffle_random"] != g["baseline"]


def test_effective_sizes_over_queries():
    classes = np.arange(5)
    qs = [ProbeQuery(q, X + q, q % 5, q % 2 == 0, classes) for q in range(6)]
    per_query = effective_sizes(qs, invariances=REFERENCE_INVARIANCES)
    assert per_query.query_id.tolist() == list(range(6)) and (per_query.n_candidates == 5).all()
    summary = suite_effective_size(qs, invariances=REFERENCE_INVARIANCES)
    assert summary["suite_size"] == 48 and summary["n_queries"] == 6
    assert summary["min"] <= summary["median"] <= summary["max"] < 48
    assert summary["min"] == per_query.n_contexts.min() and summary["baseline_weight"] == pytest.approx(11 / 48)
    assert suite_effective_size(qs, invariances=NO_INVARIANCES)["median"] > summary["max"]
    with pytest.raises(ValueError, match="no queries"):
        effective_sizes([], invariances=REFERENCE_INVARIANCES)


# -- brute force with the real reference LTM -------------------------------------------------------------------
#: table, queries, bounds on the distinct contexts per query that the suite's structure allows
#: (2 classes: 19 fixed + 5 random-scaling ones that may join; 3 classes: 22 + 5; 10 candidates: 25 + 5)
BRUTE_FORCE = [("breast_cancer", 3, 19, 24), ("iris", 2, 22, 27), ("diabetes", 3, 25, 30)]


@pytest.mark.parametrize("name, n, lo, hi", BRUTE_FORCE)
def test_reference_ltm_gives_one_output_per_class(reference, name, n, lo, hi):
    qs, task, center, scale = table_queries(name, n)
    inv = model_invariances(reference)
    for q in qs:
        eq = suite_equivalence(None, q.x, q.y, q.candidates, inv, 0, q.query_id)
        p, loss = predictions(reference, q, None, task, center, scale)
        g = eq.group.to_numpy()
        same = [(i, j) for i, j in itertools.combinations(range(48), 2) if g[i] == g[j]]
        assert same and max(np.abs(p[i] - p[j]).max() for i, j in same) <= PROB_ATOL
        assert max(abs(loss[i] - loss[j]) for i, j in same) <= LOSS_ATOL
        diff = [np.abs(p[i] - p[j]).max() for i, j in itertools.combinations(range(48), 2) if g[i] != g[j]]
        assert max(diff) > DIFFERENT and np.mean(np.array(diff) > PROB_ATOL) > 0.95
        # the weights carry S(q): mean over the 48 = weighted mean over one representative per class
        reps = eq.drop_duplicates("group")
        assert loss.mean() == pytest.approx(float((reps.weight * loss[reps.index]).sum()), abs=LOSS_ATOL)
        # manipulations the canonical form separates really differ (the check above could fail)
        pos = {m: i for i, m in enumerate(eq.manipulation)}
        assert np.abs(p[pos["skew_true_2"]] - p[pos["skew_non_true_k1_x2"]]).max() > DIFFERENT
        assert np.abs(p[pos["baseline"]] - p[pos["skew_true_2"]]).max() > DIFFERENT
        assert lo <= eq.group.nunique() <= hi


def test_reference_ltm_no_invariances_classes_are_bit_identical(reference):
    qs, task, center, scale = table_queries("diabetes", 1)
    q = qs[0]
    eq = suite_equivalence(None, q.x, q.y, q.candidates, NO_INVARIANCES, 0, q.query_id)
    assert eq.group.nunique() >= 45
    tasks, _ = build_probe_tasks([q], None, target=QueryTarget(task, center, scale))
    with torch.no_grad():
        p = [
            reference.predict([t])[0].probabilities()[0] for t in tasks
        ]  # one at a time: the same input, the same bits
    for _, members in eq.groupby("group").groups.items():
        assert all(np.array_equal(p[members[0]], p[i]) for i in members)


# -- mixed skewing: the alternative reading --------------------------------------------------------------------
def test_mixed_skewing_k_family_and_alternative_suite():
    fam = mixed_skewing_k(1)
    assert len(fam) == 7 and {m.category for m in fam} == {"mixed_skewing"}
    assert [m.name for m in fam][-1] == "mixed_true_5_non_true_k1_x5" and not {m.name for m in fam} & set(MANIPULATIONS)
    suite = alternative_suite()
    assert len(suite) == 48 and category_counts(suite) == category_counts()
    assert [m.name for m in resolve_manipulations(suite)] == [m.name for m in suite]
    assert [m.category for m in suite] == [m.category for m in MANIPULATIONS.values()]
    assert MANIPULATIONS["mixed_true_5_non_true_5"].steps[0].key == "mixed_true_5_non_true_5"  # default untouched
    ctx = mc_context(X, 2, np.arange(5))
    out = fam[3].apply(ctx, 0, 7)  # (3, 5)
    c = Counter(out.context_y.tolist())
    assert (
        fam[3].name == "mixed_true_3_non_true_k1_x5"
        and c[2] == 3
        and sorted(c[w] for w in (0, 1, 3, 4)) == [1, 1, 1, 5]
    )
    picked = Counter(get_manipulation("skew_non_true_k1_x5").apply(ctx, 0, 7).context_y.tolist())
    assert [w for w in (0, 1, 3, 4) if c[w] == 5] == [
        w for w in (0, 1, 3, 4) if picked[w] == 5
    ]  # same incorrect target
    three = Counter(mixed_skewing_k(3)[6].apply(ctx, 0, 7).context_y.tolist())
    assert three[2] == 5 and sorted(three[w] for w in (0, 1, 3, 4)) == [1, 5, 5, 5]
    # binary: both readings give the same contexts
    binary = mc_context(X, 1, np.array([0, 1]))
    for alt, default in zip(fam, (m for m in MANIPULATIONS.values() if m.category == "mixed_skewing"), strict=True):
        a, d = alt.apply(binary, 0, 4), default.apply(binary, 0, 4)
        assert np.array_equal(a.context_y, d.context_y) and np.array_equal(a.context_x, d.context_x)
    with pytest.raises(ValueError, match="k"):
        mixed_skewing_k(0)


def test_alternative_mixed_skewing_is_not_uniform_scaling_for_the_model(reference):
    cand = np.arange(10) * 1.5
    default = suite_equivalence(None, X, cand[4], cand, REFERENCE_INVARIANCES, 0, 0).set_index("manipulation").group
    alt = (
        suite_equivalence(alternative_suite(), X, cand[4], cand, REFERENCE_INVARIANCES, 0, 0)
        .set_index("manipulation")
        .group
    )
    assert (
        default["mixed_true_5_non_true_5"] == default["uniform_5"]
        and alt["mixed_true_5_non_true_k1_x5"] != alt["uniform_5"]
    )
    assert alt.nunique() == default.nunique() + 1 == 31
    qs, task, _, _ = table_queries("iris", 1)  # 3 classes: the readings differ
    q = qs[0]
    names = ["uniform_5", "mixed_true_5_non_true_5", mixed_skewing_k(1)[6]]
    p, _ = predictions(reference, q, names, task, None, None)
    assert np.abs(p[0] - p[1]).max() <= PROB_ATOL and np.abs(p[0] - p[2]).max() > DIFFERENT
