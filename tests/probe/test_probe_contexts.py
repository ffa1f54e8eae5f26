"""Multiple-choice contexts (Sec. 4.2) and the 48 manipulations (App. A.3, Tab. 7)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from iclmem.probe import (
    CATEGORIES,
    MANIPULATIONS,
    ProbeError,
    category_counts,
    classification_candidates,
    compose,
    get_manipulation,
    manipulation_names,
    mc_context,
    regression_candidates,
    resolve_manipulations,
)
from iclmem.probe.manipulations import reduce_step

torch.set_num_threads(1)

X = np.array([0.5, -1.0, 2.0, 0.0], dtype=np.float32)
CLASSES = np.array([0, 1, 2, 3, 4])


def base(y_q: int = 2, classes: np.ndarray = CLASSES):
    return mc_context(X, y_q, classes)


def counts(ctx) -> Counter:
    return Counter(ctx.context_y.tolist())


# -- multiple-choice contexts -------------------------------------------------------------------------
def test_mc_context_has_one_copy_of_the_query_per_candidate():
    ctx = base()
    assert ctx.n_rows == 5 and counts(ctx) == Counter({c: 1 for c in range(5)})
    assert np.array_equal(ctx.context_x, np.repeat(X[None], 5, axis=0))
    assert np.array_equal(ctx.query_x, X[None]) and ctx.query_y.tolist() == [2]
    assert ctx.true_rows().sum() == 1 and ctx.context_y[ctx.true_rows()][0] == 2


def test_mc_context_bad_input():
    with pytest.raises(ProbeError, match="at least 2 candidates"):
        mc_context(X, 1, [1])
    with pytest.raises(ProbeError, match="not among the candidates"):
        mc_context(X, 7, CLASSES)
    with pytest.raises(ProbeError, match="distinct"):
        mc_context(X, 1, [1, 1, 2])
    with pytest.raises(ProbeError, match="at least 2"):
        classification_candidates(["a", "a"])


def test_regression_candidates_deterministic_distinct_from_pool():
    pool = np.array([1.0, 1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.5, 9.0, 10.0, 11.0, 12.0])
    a = regression_candidates(5.0, pool, n_candidates=6, seed=3, query_id=11)
    assert np.array_equal(a, regression_candidates(5.0, pool, n_candidates=6, seed=3, query_id=11))
    assert len(a) == 6 and len(np.unique(a)) == 6 and 5.0 in a
    assert set(a) <= set(pool) | {5.0}
    assert np.all(np.diff(a) > 0)  # sorted
    others = {tuple(regression_candidates(5.0, pool, 6, seed=3, query_id=q)) for q in range(12)}
    assert len(others) > 1  # depends on the query id
    assert 99.0 in regression_candidates(99.0, pool, 4)  # y_q need not be in the pool
    with pytest.raises(ProbeError, match="distinct values"):
        regression_candidates(5.0, pool, n_candidates=20)
    with pytest.raises(ProbeError, match="at least 2"):
        regression_candidates(5.0, pool, n_candidates=1)


def test_regression_candidates_follow_the_empirical_distribution():
    pool = np.array([0.0] * 90 + list(range(1, 11)), dtype=float)  # 0.0 is 90% of the pool
    hits = sum(0.0 in regression_candidates(50.0, pool, 2, seed=0, query_id=q) for q in range(200))
    assert hits > 150  # uniform over distinct values would give ~18


# -- the registry ---------------------------------------------------------------------------------------
def test_48_unique_names_and_tab7_counts():
    assert len(MANIPULATIONS) == 48 == len(set(MANIPULATIONS))
    assert len(CATEGORIES) == 11
    assert category_counts() == {k: n for k, (_, n) in CATEGORIES.items()}
    assert sum(n for _, n in CATEGORIES.values()) == 48
    for name in ("baseline", "mixed_true_5_non_true_5", "shuffle_and_skewed_2"):  # names the paper uses
        assert name in MANIPULATIONS
    assert all(m.category in CATEGORIES for m in MANIPULATIONS.values())
    assert manipulation_names("three_way") == [n for n in MANIPULATIONS if n.endswith("_and_reduce")]


def test_unknown_names_and_duplicates_are_errors():
    with pytest.raises(ProbeError, match="valid names: baseline, shuffle_random"):
        get_manipulation("shuffle_middle")
    with pytest.raises(ProbeError, match="twice"):
        resolve_manipulations(["baseline", "baseline"])
    with pytest.raises(ProbeError, match="unknown category"):
        manipulation_names("nope")
    assert [m.name for m in resolve_manipulations("uniform_2")] == ["uniform_2"]


def test_every_manipulation_keeps_all_candidates_and_the_query_label():
    for m in MANIPULATIONS.values():
        out = m.apply(base(), seed=0, query_id=4)
        assert set(out.context_y.tolist()) == set(CLASSES.tolist()), m.name
        assert out.query_y.tolist() == [2] and out.context_x.shape[1] == out.query_x.shape[1], m.name
        again = m.apply(base(), seed=0, query_id=4)
        assert np.array_equal(out.context_y, again.context_y), m.name
        assert np.array_equal(out.context_x, again.context_x, equal_nan=True), m.name  # masked columns are NaN


# -- effects of single manipulations ----------------------------------------------------------------------
def test_baseline_is_identity():
    ctx = base()
    out = get_manipulation("baseline").apply(ctx)
    assert np.array_equal(out.context_x, ctx.context_x) and np.array_equal(out.context_y, ctx.context_y)


def test_positional_shuffling_moves_the_true_row():
    ctx = base(y_q=2)
    first = get_manipulation("shuffle_first").apply(ctx).context_y.tolist()
    last = get_manipulation("shuffle_last").apply(ctx).context_y.tolist()
    assert first == [2, 0, 1, 3, 4] and last == [0, 1, 3, 4, 2]
    positions = {get_manipulation("shuffle_random").apply(ctx, 0, q).context_y.tolist().index(2) for q in range(40)}
    assert len(positions) >= 4  # a random position, varying with the query


def test_feature_reduction_masks_the_same_two_columns_of_context_and_query_and_keeps_positions():
    """Column identity: the dropped columns become missing cells at their own positions, the others do not move."""
    ctx = base()
    out = get_manipulation("feature_reduction_2").apply(ctx, seed=0, query_id=1)
    assert out.context_x.shape == (5, 4) and out.query_x.shape == (1, 4)
    dropped = np.isnan(out.query_x[0])
    assert dropped.sum() == 2 and np.array_equal(np.isnan(out.context_x), np.repeat(dropped[None], 5, axis=0))
    assert np.array_equal(out.query_x[0, ~dropped], np.asarray(X, dtype=np.float32)[~dropped])  # kept, in place
    two = mc_context(X[:2], 1, CLASSES)  # F = 2: one column is kept
    assert np.isnan(get_manipulation("feature_reduction_2").apply(two).query_x).sum() == 1
    deleted = reduce_step(2, keep_positions=False)(ctx, 0, 1)  # the old deletion: the same columns, shifted
    assert deleted.context_x.shape == (5, 2) and deleted.query_x.shape == (1, 2)
    assert np.array_equal(deleted.query_x[0], out.query_x[0, ~dropped])


def test_distractors_add_noise_columns_to_context_and_query():
    for n in (1, 2):
        out = get_manipulation(f"distractor_{n}").apply(base(), seed=0, query_id=3)
        assert out.context_x.shape == (5, 4 + n) and out.query_x.shape == (1, 4 + n)
        assert np.array_equal(out.context_x[:, :4], base().context_x)
        noise = np.concatenate([out.context_x[:, 4:], out.query_x[:, 4:]]).ravel()
        assert len(np.unique(noise)) == len(noise)  # fresh N(0,1) draws per row


@pytest.mark.parametrize("f", [2, 5, 10])
def test_uniform_scaling(f):
    assert counts(get_manipulation(f"uniform_{f}").apply(base())) == Counter({c: f for c in range(5)})


@pytest.mark.parametrize("f", [2, 5, 10])
def test_random_scaling_counts_lie_in_1_to_factor(f):
    seen = set()
    for q in range(20):
        c = counts(get_manipulation(f"random_{f}").apply(base(), 0, q))
        assert set(c) == set(range(5)) and all(1 <= v <= f for v in c.values())
        seen |= set(c.values())
    assert len(seen) > 1


@pytest.mark.parametrize("f", [2, 3, 5])
def test_skew_true_replicates_the_true_row(f):
    c = counts(get_manipulation(f"skew_true_{f}").apply(base(y_q=3)))
    assert c[3] == f and all(c[k] == 1 for k in (0, 1, 2, 4))


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("f", [2, 3, 5])
def test_skew_incorrect_replicates_k_wrong_candidates(k, f):
    c = counts(get_manipulation(f"skew_non_true_k{k}_x{f}").apply(base(y_q=3), 0, 7))
    assert c[3] == 1
    assert sorted(c[w] for w in (0, 1, 2, 4)) == [1] * (4 - k) + [f] * k
    binary = counts(get_manipulation(f"skew_non_true_k{k}_x{f}").apply(mc_context(X, 0, [0, 1])))
    assert binary == Counter({0: 1, 1: f})  # k is capped at the number of incorrect candidates


def test_mixed_skewing_and_the_paper_name():
    c = counts(get_manipulation("mixed_true_3_non_true_5").apply(base(y_q=0)))
    assert c[0] == 3 and all(c[k] == 5 for k in range(1, 5))
    same = get_manipulation("mixed_true_5_non_true_5").apply(base())
    assert counts(same) == counts(get_manipulation("uniform_5").apply(base()))


def test_combinations_compose_distribution_features_and_position():
    out = get_manipulation("shuffle_and_skewed_2").apply(base(y_q=1), 0, 5)
    assert counts(out) == Counter({0: 1, 1: 2, 2: 1, 3: 1, 4: 1})
    out3 = get_manipulation("shuffle_skewed_5_and_reduce").apply(base(y_q=1), 0, 5)
    assert counts(out3)[1] == 5 and out3.n_features == 4 and np.isnan(out3.query_x).sum() == 2
    # the shared reduce step drops the same columns as feature_reduction_2 for this query
    single = get_manipulation("feature_reduction_2").apply(base(y_q=1), 0, 5)
    assert np.array_equal(single.query_x, out3.query_x, equal_nan=True)
    # composition runs the shuffle last whatever the order given
    m = compose(get_manipulation("shuffle_first"), get_manipulation("skew_true_3"), name="x")
    assert [s.key for s in m.steps] == ["skew_true_3", "shuffle_first"]
    assert m.apply(base(y_q=4)).context_y.tolist() == [4, 4, 4, 0, 1, 2, 3]


def test_context_and_feature_limits_are_guarded():
    big = mc_context(X, 0, np.arange(60))
    with pytest.raises(ProbeError, match="600 rows, more than the model's 512"):
        get_manipulation("uniform_10").apply(big)
    wide = mc_context(np.zeros(32, dtype=np.float32), 0, CLASSES)
    with pytest.raises(ProbeError, match="more than the model's 32"):
        get_manipulation("distractor_1").apply(wide)
    assert get_manipulation("uniform_10").apply(base()).n_rows == 50  # 5 candidates x 10 fits
