"""TabICL and TabPFN v2 behind the LTM interface: equivalence, preprocessing, fine-tuning, probing, bad inputs (issue
15).

No real weights exist here: each package's real architecture is built from its own config class
at a tiny size with random weights (:mod:`iclmem.adapters.tiny`), saved to a file and loaded
through ``model_path``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from iclmem.adapters import AdapterCheckpointError, load_model, parse_model
from iclmem.adapters.tiny import write_tiny_checkpoint
from iclmem.data import deduplicate, load_dataset, split_manifest
from iclmem.ltm import ICLTask, LTMInputError
from iclmem.probe import probe_run, summarize_run
from iclmem.probe.manipulations import resolve_manipulations
from iclmem.probe.settings import ProbeSettings
from iclmem.training.finetune import FinetuneConfig, finetune
from iclmem.training.loop import read_log

torch.set_num_threads(1)
KINDS = ("tabicl", "tabpfn")


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """Tiny random checkpoints: ``ckpt[(kind, regression)]`` is the file's path."""
    tmp = tmp_path_factory.mktemp("ltm_ckpt")
    return {
        (k, r): write_tiny_checkpoint(k, tmp / f"{k}_{'reg' if r else 'cls'}.ckpt", seed=1, regression=r)
        for k in KINDS
        for r in (False, True)
    }


def _cls_task(rng, n_ctx=40, n_q=7, f=5, k=3) -> ICLTask:
    return ICLTask(
        rng.normal(size=(n_ctx, f)), rng.integers(0, k, n_ctx), rng.normal(size=(n_q, f)), rng.integers(0, k, n_q)
    )


def _mc_task(x: np.ndarray, labels=(0, 1, 2), true=1) -> ICLTask:
    """A zero-information multiple-choice context: one copy of the query per label (Sec. 4.2)."""
    return ICLTask(np.repeat(x[None], len(labels), 0), np.asarray(labels), x[None], np.asarray([true]))


# --- equivalence with the packages' own inference paths ---------------------------------------


def test_tabicl_equals_the_package_classifier_on_the_same_weights(ckpt):
    """TabICLClassifier with one member, no normalization/shuffles/clipping, temperature 1, float32 (no autocast):
    its only remaining step, a standard scaler fitted on the context, is the identity on a context already standardized
    on its own rows; then the adapter's class probabilities equal the package's to float32 rounding (measured: at most
    4e-7
    over 10 random problems of 20-200 rows, 2-11 features, 2-7 classes)."""
    from tabicl import TabICLClassifier

    rng = np.random.default_rng(0)
    t = _cls_task(rng)
    cx = (t.context_x - t.context_x.mean(0)) / t.context_x.std(0)
    clf = TabICLClassifier(
        model_path=ckpt[("tabicl", False)],
        allow_auto_download=False,
        n_estimators=1,
        norm_methods="none",
        feat_shuffle_method="none",
        class_shuffle_method="none",
        outlier_threshold=1e6,
        softmax_temperature=1.0,
        use_amp=False,
        device="cpu",
        kv_cache=False,
        random_state=0,
    )
    theirs = clf.fit(cx, t.context_y).predict_proba(t.query_x)
    ours = load_model(f"tabicl:{ckpt[('tabicl', False)]}").predict([ICLTask(cx, t.context_y, t.query_x, t.query_y)])[0]
    assert np.abs(ours.probabilities() - theirs).max() < 1e-5
    assert (
        np.abs(theirs - theirs[0]).max() > 1e-3
    )  # the queries get different predictions: the comparison is not vacuous


def test_tabpfn_equals_the_package_classifier_on_the_same_weights(ckpt):
    """TabPFNClassifier with one member, the 'none' transform, no shifts/fingerprint/outlier removal, temperature 1,
    float32 equals the adapter's ``preprocessing="context"`` (the module's own forward) to 1e-6 (measured 6e-8); the
    default ``"dataset"`` path equals it when the context-fitted steps are identities: features scaled beforehand
    with TabPFN's own scaler fitted on the context, no constant column (1e-5; measured 2e-7)."""
    from tabpfn import TabPFNClassifier
    from tabpfn.preprocessing.configs import PreprocessorConfig
    from tabpfn.preprocessing.torch.torch_standard_scaler import TorchStandardScaler

    rng = np.random.default_rng(1)
    t = _cls_task(rng)
    path = ckpt[("tabpfn", False)]
    config = dict(
        PREPROCESS_TRANSFORMS=[PreprocessorConfig("none", categorical_name="numeric", append_original=False)],
        FEATURE_SHIFT_METHOD=None,
        CLASS_SHIFT_METHOD=None,
        FINGERPRINT_FEATURE=False,
        OUTLIER_REMOVAL_STD=None,
        POLYNOMIAL_FEATURES="no",
        SUBSAMPLE_SAMPLES=None,
    )
    clf = TabPFNClassifier(
        model_path=path,
        n_estimators=1,
        softmax_temperature=1.0,
        device="cpu",
        inference_precision=torch.float32,
        inference_config=config,
        random_state=0,
        fit_mode="low_memory",
    )
    theirs = clf.fit(t.context_x, t.context_y).predict_proba(t.query_x)
    naive = load_model(f"tabpfn:{path}", preprocessing="context").predict([t])[0]
    assert np.abs(naive.probabilities() - theirs).max() < 1e-6
    assert np.abs(theirs - theirs[0]).max() > 1e-3
    scaler = TorchStandardScaler()
    stats = scaler.fit(torch.as_tensor(t.context_x, dtype=torch.float32))
    cx, qx = (
        scaler.transform(torch.as_tensor(a, dtype=torch.float32), fitted_cache=stats).numpy()
        for a in (t.context_x, t.query_x)
    )
    scaled = ICLTask(cx, t.context_y, qx, t.query_y)
    dataset = load_model(f"tabpfn:{path}").predict([scaled])[0]
    own = load_model(f"tabpfn:{path}", preprocessing="context").predict([scaled])[0]
    assert np.abs(dataset.probabilities() - own.probabilities()).max() < 1e-5


# --- the zero-information context meets each model's preprocessing ----------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_query_features_reach_the_model_only_with_dataset_preprocessing(ckpt, kind):
    """A multiple-choice context is |Y| copies of x_q: with the context-fitted steps ('context') every query gets the
    same
    prediction (the features never reach the model), with 'dataset' (the default) the predictions depend on x_q."""
    rng = np.random.default_rng(2)
    xs = rng.normal(size=(4, 6))
    tasks = [_mc_task(x) for x in xs]
    for mode, differs in (("dataset", True), ("context", False)):
        model = load_model(f"{kind}:{ckpt[(kind, False)]}", preprocessing=mode)
        probs = np.concatenate([p.probabilities() for p in model.predict(tasks)])
        spread = np.abs(probs - probs[0]).max()
        assert (spread > 1e-3) if differs else (spread < 1e-5), (mode, spread)


def test_tabpfn_forward_removes_every_feature_of_a_multiple_choice_context():
    """Why: TabPFN's own constant-feature mask (``_constant_feature_mask``, fitted over all rows) flags all of them."""
    from tabpfn.architectures import tabpfn_v2

    x = torch.as_tensor(np.repeat(np.random.default_rng(3).normal(size=(1, 6)), 4, 0), dtype=torch.float32)[
        :, None
    ]  # 3 ctx + query
    grouped, _ = tabpfn_v2._pad_and_reshape_feature_groups(x, 2)
    assert not tabpfn_v2._constant_feature_mask(grouped).any()


@pytest.mark.parametrize("kind", KINDS)
def test_permutation_ensemble_is_an_option_and_deterministic(ckpt, kind):
    rng = np.random.default_rng(4)
    t = _cls_task(rng)
    one = load_model(f"{kind}:{ckpt[(kind, False)]}").predict([t])[0].probabilities()
    ens = [
        load_model(f"{kind}:{ckpt[(kind, False)]}", n_permutations=3, seed=5).predict([t])[0].probabilities()
        for _ in range(2)
    ]
    assert np.array_equal(ens[0], ens[1])
    assert np.abs(ens[0] - one).max() > 1e-4
    np.testing.assert_allclose(ens[0].sum(-1), 1.0, atol=1e-5)


# --- outputs: the rule of each model's own distribution ------------------------------------------


def test_tabpfn_regression_scores_come_from_its_bar_distribution(ckpt):
    rng = np.random.default_rng(5)
    t = ICLTask(
        rng.normal(size=(30, 4)),
        rng.normal(size=30),
        rng.normal(size=(5, 4)),
        np.array([-9.0, -0.3, 0.0, 0.7, 9.0]),
        "regression",
        0.0,
        1.0,
    )
    model = load_model(f"tabpfn:{ckpt[('tabpfn', True)]}")
    p = model.predict([t])[0]
    borders = model.borders
    assert p.log_probs.shape == (5, len(borders) - 1)
    bucket = torch.as_tensor(
        [
            0,
            int(np.searchsorted(borders.numpy(), -0.3) - 1),
            int(np.searchsorted(borders.numpy(), 0.0, "right") - 1),
            int(np.searchsorted(borders.numpy(), 0.7) - 1),
            len(borders) - 2,
        ]
    )  # outside: the outer buckets
    expect = -p.log_probs.gather(1, bucket[:, None]).squeeze(1)
    torch.testing.assert_close(p.loss(), expect)
    torch.testing.assert_close(p.target_confidence(), (-expect).exp())
    assert (p.entropy() > 0).all() and (p.entropy() <= np.log(len(borders) - 1) + 1e-5).all()


def test_tabpfn_regression_equals_the_package_regressor_on_the_same_weights(ckpt):
    """TabPFNRegressor (one member, no transforms of X or y, temperature 1, float32) standardizes y with the context's
    mean
    and std; with those as the task's target statistics the adapter's bucket probabilities equal its "full" output's
    (1e-6; measured 2e-8). iclmem's probing uses dataset-level statistics instead (Sec. 4.2,
    :mod:`iclmem.ltm.encoding`)."""
    from tabpfn import TabPFNRegressor
    from tabpfn.preprocessing.configs import PreprocessorConfig

    path = ckpt[("tabpfn", True)]
    rng = np.random.default_rng(11)
    cx, cy, qx = rng.normal(size=(40, 5)), rng.normal(size=40) * 3 + 1, rng.normal(size=(6, 5))
    config = dict(
        PREPROCESS_TRANSFORMS=[PreprocessorConfig("none", categorical_name="numeric", append_original=False)],
        FEATURE_SHIFT_METHOD=None,
        CLASS_SHIFT_METHOD=None,
        FINGERPRINT_FEATURE=False,
        OUTLIER_REMOVAL_STD=None,
        POLYNOMIAL_FEATURES="no",
        SUBSAMPLE_SAMPLES=None,
        REGRESSION_Y_PREPROCESS_TRANSFORMS=(None,),
    )
    reg = TabPFNRegressor(
        model_path=path,
        n_estimators=1,
        softmax_temperature=1.0,
        device="cpu",
        inference_precision=torch.float32,
        inference_config=config,
        random_state=0,
        fit_mode="low_memory",
    ).fit(cx, cy)
    theirs = torch.softmax(reg.predict(qx, output_type="full")["logits"].float(), -1)
    task = ICLTask(cx, cy, qx, None, "regression", reg.y_train_mean_, reg.y_train_std_)
    ours = load_model(f"tabpfn:{path}", preprocessing="context").predict([task])[0].log_probs.exp()
    assert (ours - theirs).abs().max() < 1e-6 and (theirs - theirs[0]).abs().max() > 1e-4


def test_tabicl_regression_scores_come_from_its_quantile_distribution(ckpt):
    rng = np.random.default_rng(6)
    t = ICLTask(
        rng.normal(size=(30, 4)),
        rng.normal(size=30),
        rng.normal(size=(5, 4)),
        rng.normal(size=5),
        "regression",
        0.0,
        1.0,
    )
    model = load_model(f"tabicl:{ckpt[('tabicl', True)]}")
    p = model.predict([t], grad=True)[0]
    assert p.log_probs.shape == (5, model.cfg.n_bins)
    torch.testing.assert_close(p.log_probs.exp().sum(-1), torch.ones(5))
    p.loss().mean().backward()  # differentiable through TabICL's own CDF: fine-tunable
    assert any(q.grad is not None and q.grad.abs().sum() > 0 for q in model.trainable_parameters())
    # the mass of a bin is the difference of TabICL's own CDF at its edges
    net = model.network
    net.train()
    with torch.no_grad():
        x = torch.as_tensor(np.concatenate([t.context_x, t.query_x]), dtype=torch.float32)[None]
        q = net._train_forward(x, torch.as_tensor(t.context_y, dtype=torch.float32)[None])
        edges = torch.linspace(-model.cfg.bin_bound, model.cfg.bin_bound, model.cfg.n_bins + 1)
        f = net.quantile_dist(q).cdf(edges[[5, 6]].expand(1, 5, 2))[0]
    torch.testing.assert_close(p.log_probs[:, 5].exp().detach(), f[:, 1] - f[:, 0], atol=1e-5, rtol=1e-4)


def test_tabicl_forward_gives_the_package_regressors_quantiles(ckpt):
    """TabICLRegressor (one member, no normalization/shuffles/clipping, float32) standardizes y with the context's mean
    and
    std; the quantile distribution of the adapter's forward (TabICL's own ``QuantileDistribution``, whose CDF the
    adapter
    puts on its grid: previous test) has the regressor's quantiles at TabICL's levels (1e-4 in y units; measured
    5e-6)."""
    from tabicl import TabICLRegressor

    path = ckpt[("tabicl", True)]
    rng = np.random.default_rng(12)
    cx = rng.normal(size=(40, 5))
    cx, cy, qx = (cx - cx.mean(0)) / cx.std(0), rng.normal(size=40) * 3 + 1, rng.normal(size=(6, 5)).clip(-2, 2)
    reg = TabICLRegressor(
        model_path=path,
        allow_auto_download=False,
        n_estimators=1,
        norm_methods="none",
        feat_shuffle_method="none",
        outlier_threshold=1e6,
        use_amp=False,
        device="cpu",
        kv_cache=False,
        random_state=0,
    ).fit(cx, cy)
    model = load_model(f"tabicl:{path}")
    alphas = model.network.quantile_dist.alpha_levels
    theirs = reg.predict(qx, output_type="quantiles", alphas=alphas.tolist())
    mu, sd = float(reg.y_scaler_.mean_[0]), float(reg.y_scaler_.scale_[0])
    model.network.train()
    with torch.no_grad():
        x = torch.as_tensor(np.concatenate([cx, qx]), dtype=torch.float32)[None]
        q = model.network._train_forward(x, torch.as_tensor((cy - mu) / sd, dtype=torch.float32)[None])[0]
        ours = model.network.quantile_dist(q).icdf(alphas.expand(len(qx), -1)).numpy() * sd + mu
    assert np.abs(ours - theirs).max() < 1e-4


# --- fine-tuning and probing through iclmem's own loop -------------------------------------------


def _table(tmp_path, n: int = 120):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y", "z"], size=n)})
    frame["target"] = rng.integers(0, 3, n)
    path = tmp_path / "tiny.csv"
    frame.to_csv(path, index=False)
    return deduplicate(load_dataset(str(path), target="target", task="classification"))


@pytest.mark.parametrize("kind", KINDS)
def test_finetuning_lowers_the_loss_and_logs_the_members(tmp_path, ckpt, kind):
    table = _table(tmp_path)
    manifest = split_manifest(table, query_size=12, seed=0, results_dir=tmp_path)
    model = load_model(f"{kind}:{ckpt[(kind, False)]}")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    run = finetune(
        manifest,
        table,
        FinetuneConfig(1e-2, epochs=8, probe_epochs=(0, 8), context_size=30),
        model,
        tmp_path,
        progress=False,
    )
    curve = run.curve.train_loss.to_numpy()
    assert curve[-1] < curve[0] - 0.05, curve
    m = run.metrics.set_index("epoch")
    assert m.loc[8, "train_loss"] < m.loc[0, "train_loss"]
    assert np.array_equal(np.unique([i for s in read_log(run.path) for i in s["query_ids"]]), np.sort(manifest.members))
    assert np.array_equal(run.members_logged, np.sort(manifest.members))
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # M_ref is untouched
    theta = run.model(8, model)
    assert type(theta) is type(model) and not torch.equal(
        next(iter(theta.state_dict().values())), next(iter(before.values()))
    )


@pytest.mark.parametrize("kind", KINDS)
def test_probing_with_all_48_manipulations_and_calibration_end_to_end(tmp_path, ckpt, kind):
    table = _table(tmp_path)
    manifest = split_manifest(table, query_size=12, seed=0, results_dir=tmp_path)
    model = load_model(f"{kind}:{ckpt[(kind, False)]}")
    run = finetune(
        manifest,
        table,
        FinetuneConfig(3e-2, epochs=3, probe_epochs=(0, 3), context_size=30),
        model,
        tmp_path,
        progress=False,
    )
    scores = probe_run(run, table, model, ProbeSettings(max_queries=3), progress=False)
    assert scores.manipulation.nunique() == len(resolve_manipulations(None)) == 48
    assert len(scores) == 3 * 6 * 48 and scores[["loss", "entropy", "confidence"]].notna().all().all()
    by = {e: g.sort_values(["query_id", "manipulation"]).loss.to_numpy() for e, g in scores.groupby("epoch")}
    assert np.array_equal(by[0], by[-1]) and not np.allclose(
        by[3], by[-1]
    )  # epoch 0 is M_ref; fine-tuning moved the scores
    summary = summarize_run(scores, run, n_boot=20)  # calibrated against the untuned copy: Delta S = S_theta - S_ref
    assert summary.epoch.tolist() == [0, 3]
    assert summary.iloc[0].auc_loss == 0.5 and 0 <= summary.iloc[1].auc_loss <= 1


def test_store_keys_differ_by_model_and_preprocessing(ckpt):
    ids = {
        load_model(f"{k}:{ckpt[(k, False)]}", preprocessing=m).store_identity
        for k in KINDS
        for m in ("dataset", "context")
    }
    assert len(ids) == 4


# --- bad inputs: clear errors ------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_missing_corrupt_and_foreign_checkpoints(tmp_path, ckpt, kind):
    with pytest.raises(AdapterCheckpointError, match="never downloads.*Hugging Face"):
        load_model(f"{kind}:{tmp_path / 'absent.ckpt'}")
    bad = tmp_path / "corrupt.ckpt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(AdapterCheckpointError, match="corrupt"):
        load_model(f"{kind}:{bad}")
    other = "tabpfn" if kind == "tabicl" else "tabicl"
    with pytest.raises(
        AdapterCheckpointError, match=f"is a {'TabPFN' if kind == 'tabicl' else 'TabICL'} checkpoint.*model={other}:"
    ):
        load_model(f"{kind}:{ckpt[(other, False)]}")


@pytest.mark.parametrize("kind", KINDS)
def test_more_classes_or_features_than_the_model_takes(ckpt, kind):
    rng = np.random.default_rng(7)
    model = load_model(f"{kind}:{ckpt[(kind, False)]}")
    with pytest.raises(LTMInputError, match="11 classes, more than the model's 10"):
        model.predict([ICLTask(rng.normal(size=(22, 3)), np.arange(22) % 11, rng.normal(size=(1, 3)))])
    f = model.cfg.max_features + 1
    with pytest.raises(LTMInputError, match=f"{f} features exceed the model's {f - 1}"):
        model.predict([ICLTask(rng.normal(size=(4, f)), np.arange(4) % 2, rng.normal(size=(1, f)))])
    with pytest.raises(LTMInputError, match="classifier|classification"):
        model.predict(
            [ICLTask(rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(1, 3)), task="regression")]
        )


def test_model_parameter_forms():
    assert parse_model("reference") == ("reference", None)
    assert parse_model("tabpfn:/x/y.ckpt") == ("tabpfn", "/x/y.ckpt")
    for bad in ("tabpfn", "tabicl:", "xgboost:/a", "ref"):
        with pytest.raises(LTMInputError, match="'reference', 'reference-v1', 'tabicl:PATH' or 'tabpfn:PATH'"):
            parse_model(bad)
    with pytest.raises(LTMInputError, match="preprocessing must be one of"):
        load_model("tabpfn:/nowhere", preprocessing="none")


def test_a_home_relative_path_is_expanded(ckpt, monkeypatch):
    """`-p model tabpfn:~/weights/x.ckpt`: the shell does not expand this ~, the loader does."""
    path = ckpt[("tabpfn", False)]
    monkeypatch.setenv("HOME", str(path.parent))
    assert load_model(f"tabpfn:~/{path.name}").model_path == str(path)


def test_the_sweep_takes_a_model_spec(ckpt):
    """Notebook 05 passes ``model`` to the sweep as a string (it travels to Dask workers) and each task loads it."""
    from iclmem.sweep.tasks import reference_sha, task_reference

    spec = f"tabpfn:{ckpt[('tabpfn', False)]}"
    assert reference_sha(spec) == load_model(spec).store_identity != reference_sha(None)
    assert type(task_reference(spec)).__name__ == "TabPFNLTM"


@pytest.mark.parametrize("kind", KINDS)
def test_the_naive_probe_is_blind_to_the_query_under_39_of_48_manipulations(ckpt, kind):
    """With the context-fitted steps, every manipulation whose context rows all carry x_q (39 of the 48; the others add
    random rows or distractor columns) scores queries of one label identically; with 'dataset' none is blind."""
    from iclmem.adapters.visibility import query_visibility

    naive = query_visibility(load_model(f"{kind}:{ckpt[(kind, False)]}", preprocessing="context"))
    switched = query_visibility(load_model(f"{kind}:{ckpt[(kind, False)]}"))
    assert len(naive) == len(switched) == 48
    adds = ("distractor", "random", "shuffle_and_random", "shuffle_random")
    # every manipulation that neither adds rows/columns nor masks columns is blind; a masked column (feature
    # reduction keeps the other columns' positions, issue 42) sits at a position drawn per query, so a model that
    # reads missing cells may score queries apart by where the mask is, not by x_q
    plain = [m for m in naive.manipulation if not m.startswith(adds) and "reduc" not in m]
    assert naive.set_index("manipulation").blind[plain].all()
    assert len(plain) <= int(naive.blind.sum()) <= 39
    assert all(n.startswith(adds) or "reduc" in n for n in naive[~naive.blind].manipulation)
    assert not switched.blind.any() and switched.spread.min() > 1e-2


@pytest.mark.parametrize("kind", KINDS)
def test_regression_fine_tuning_and_probing_end_to_end(tmp_path, ckpt, kind):
    """A regressor checkpoint on a regression table: the loss falls, every manipulation is scored with finite scores."""
    rng = np.random.default_rng(8)
    n = 120
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y"], size=n)})
    frame["target"] = (2 * frame.a + rng.normal(size=n)).round(3)
    frame.to_csv(tmp_path / "reg.csv", index=False)
    table = deduplicate(load_dataset(str(tmp_path / "reg.csv"), target="target", task="regression"))
    manifest = split_manifest(table, query_size=30, seed=0, results_dir=tmp_path)
    model = load_model(f"{kind}:{ckpt[(kind, True)]}")
    run = finetune(
        manifest,
        table,
        FinetuneConfig(1e-3, epochs=8, probe_epochs=(0, 8), context_size=30),
        model,
        tmp_path,
        progress=False,
    )
    assert run.curve.train_loss.iloc[-1] < run.curve.train_loss.iloc[0] - 0.05
    scores = probe_run(run, table, model, ProbeSettings(n_candidates=6, max_queries=2), progress=False)
    assert scores.manipulation.nunique() == 48
    assert (scores.loss >= 0).all() and scores.confidence.between(0, 1).all() and np.isfinite(scores.entropy).all()


@pytest.mark.parametrize(
    "kind,mode,duplication",
    [
        ("tabpfn", "dataset", True),
        ("tabpfn", "context", False),
        ("tabicl", "dataset", False),
        ("tabicl", "context", False),
    ],
)
def test_declared_invariances_hold_and_the_undeclared_one_does_not(ckpt, kind, mode, duplication):
    """Which manipulations are duplicates is per model (notebook 03): each adapter declares what it is exactly
    invariant to."""
    from iclmem.probe.invariances import model_invariances

    rng = np.random.default_rng(9)
    t = _cls_task(rng, n_ctx=12, n_q=4)
    perm = rng.permutation(12)
    model = load_model(f"{kind}:{ckpt[(kind, False)]}", preprocessing=mode)
    declared = model_invariances(model)
    assert declared.row_order and declared.uniform_duplication == duplication
    base, permuted, tripled = (
        p.probabilities()
        for p in model.predict(
            [
                t,
                ICLTask(t.context_x[perm], t.context_y[perm], t.query_x),
                ICLTask(np.repeat(t.context_x, 3, 0), np.repeat(t.context_y, 3), t.query_x),
            ]
        )
    )
    assert np.abs(base - permuted).max() < 1e-5
    assert (np.abs(base - tripled).max() < 1e-5) == duplication


@pytest.mark.parametrize("kind", KINDS)
def test_merging_declared_duplicates_scores_as_scoring_every_context(ckpt, kind):
    """On the 48 manipulations, scoring each distinct context once (declared invariances) equals scoring all of them."""
    from iclmem.adapters.visibility import visibility_queries
    from iclmem.probe.scoring import Batching, build_probe_tasks, score_tasks

    model = load_model(f"{kind}:{ckpt[(kind, False)]}")
    tasks, _ = build_probe_tasks(
        visibility_queries(2), max_context=model.cfg.max_context, max_features=model.cfg.max_features
    )
    merged, every = score_tasks(model, tasks), score_tasks(model, tasks, Batching(distinct=False))
    assert np.abs(merged - every).max() < 1e-4


@pytest.mark.parametrize("kind", KINDS)
def test_nothing_touches_the_network(ckpt, kind, monkeypatch):
    """Loading, predicting and a gradient step open no connection (the adapters never call the packages'
    downloaders)."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    model = load_model(f"{kind}:{ckpt[(kind, False)]}")
    model.predict([_cls_task(np.random.default_rng(10))], grad=True)[0].loss().mean().backward()


@pytest.mark.parametrize("kind", KINDS)
def test_saved_weights_load_back_and_in_the_package(tmp_path, ckpt, kind):
    """``save`` writes the package's own format: iclmem loads it back to the same predictions, and so does the
    package."""
    rng = np.random.default_rng(13)
    t = _cls_task(rng)
    model = load_model(f"{kind}:{ckpt[(kind, False)]}")
    theta = model.clone()
    opt = torch.optim.AdamW(theta.trainable_parameters(), lr=1e-2)
    for _ in range(3):
        loss = theta.predict([t], grad=True)[0].loss().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    path = theta.save(tmp_path / f"{kind}_theta.ckpt")
    again = load_model(f"{kind}:{path}")
    mine, back = theta.predict([t])[0].probabilities(), again.predict([t])[0].probabilities()
    assert np.array_equal(mine, back) and np.abs(mine - model.predict([t])[0].probabilities()).max() > 1e-3
    if kind == "tabpfn":  # the package's classifier reads the file: same probabilities as the module's own forward
        from tabpfn import TabPFNClassifier
        from tabpfn.preprocessing.configs import PreprocessorConfig

        config = dict(
            PREPROCESS_TRANSFORMS=[PreprocessorConfig("none", categorical_name="numeric", append_original=False)],
            FEATURE_SHIFT_METHOD=None,
            CLASS_SHIFT_METHOD=None,
            FINGERPRINT_FEATURE=False,
            OUTLIER_REMOVAL_STD=None,
            POLYNOMIAL_FEATURES="no",
            SUBSAMPLE_SAMPLES=None,
        )
        clf = TabPFNClassifier(
            model_path=path,
            n_estimators=1,
            softmax_temperature=1.0,
            device="cpu",
            inference_precision=torch.float32,
            inference_config=config,
            random_state=0,
            fit_mode="low_memory",
        )
        theirs = clf.fit(t.context_x, t.context_y).predict_proba(t.query_x)
        assert (
            np.abs(load_model(f"tabpfn:{path}", preprocessing="context").predict([t])[0].probabilities() - theirs).max()
            < 1e-6
        )
    else:  # on a context standardized on its own rows (the wrapper's scaler is then the identity, see above)
        from tabicl import TabICLClassifier

        cx = (t.context_x - t.context_x.mean(0)) / t.context_x.std(0)
        clf = TabICLClassifier(
            model_path=path,
            allow_auto_download=False,
            n_estimators=1,
            norm_methods="none",
            feat_shuffle_method="none",
            class_shuffle_method="none",
            outlier_threshold=1e6,
            softmax_temperature=1.0,
            use_amp=False,
            device="cpu",
            kv_cache=False,
            random_state=0,
        )
        theirs = clf.fit(cx, t.context_y).predict_proba(t.query_x)
        assert np.abs(again.predict([ICLTask(cx, t.context_y, t.query_x)])[0].probabilities() - theirs).max() < 1e-5


def _fine_tune_outside(model, x, y, ctx, members, steps: int, lr: float):
    """What a user does with their own code: AdamW steps on (context, member queries); iclmem only sees the result."""
    from iclmem.ltm import ICLTask as Task

    theta = model.clone()
    opt = torch.optim.AdamW(theta.trainable_parameters(), lr=lr)
    task = Task(x[ctx], y[ctx], x[members], y[members])
    for _ in range(steps):
        loss = theta.predict([task], grad=True)[0].loss().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return theta


def test_audit_a_checkpoint_fine_tuned_outside_iclmem(tmp_path, ckpt):
    from iclmem.ltm import TableEncoder, subsample_features
    from iclmem.probe.audit import AuditRows, audit_fine_tuned

    table = _table(tmp_path)
    encoder = TableEncoder().fit(table.features)
    x = encoder.transform(table.features)[:, subsample_features(len(encoder.columns), 30, 0)]
    y = table.target.to_numpy()
    order = np.random.default_rng(14).permutation(len(y))
    members, non_members, ctx = order[:12], order[12:24], order[24:54]
    reference = load_model(f"tabpfn:{ckpt[('tabpfn', False)]}")
    path = _fine_tune_outside(reference, x, y, ctx, members, steps=60, lr=3e-3).save(
        tmp_path / "my_finetuned_tabpfn.ckpt"
    )
    rows, twenty = AuditRows(table, members, non_members), ProbeSettings(n_boot=20)
    summary, scores = audit_fine_tuned(load_model(f"tabpfn:{path}"), reference, rows, twenty)
    control, _ = audit_fine_tuned(reference, reference, rows, twenty)
    assert control["auc_loss"] == 0.5  # M_theta = M_ref: no signal by construction
    assert summary["auc_loss"] > 0.65, summary[
        "auc_loss"
    ]  # 60 steps on 12 members (random labels): members stand out (0.76)
    assert set(scores.model) == {"theta", "ref"} and scores.manipulation.nunique() == 48 and summary["n_members"] == 12


@pytest.mark.parametrize(
    "members,non_members,message",
    [
        ([], [1], "at least one member"),
        ([1, 2], [2, 3], "both members and non-members"),
        ([1], [10_000], "outside the table's"),
    ],
)
def test_audit_rows_are_checked(tmp_path, members, non_members, message):
    from iclmem.probe import ProbeError
    from iclmem.probe.audit import AuditRows, audit_queries

    with pytest.raises(ProbeError, match=message):
        audit_queries(AuditRows(_table(tmp_path), members, non_members))


def test_auditing_a_controlled_runs_checkpoint_reproduces_the_chain(tmp_path, ckpt):
    """audit_fine_tuned on M_theta of a controlled run, with the run's members, gives the chain's own summary (same
    queries,
    encoding, candidates and manipulations): the external audit and notebooks 02-04 measure the same thing."""
    from iclmem.probe.audit import AuditRows, audit_fine_tuned

    table = _table(tmp_path)
    manifest = split_manifest(table, query_size=12, seed=0, results_dir=tmp_path)
    model = load_model(f"tabpfn:{ckpt[('tabpfn', False)]}")
    run = finetune(
        manifest,
        table,
        FinetuneConfig(3e-2, epochs=2, probe_epochs=(0, 2), context_size=30),
        model,
        tmp_path,
        progress=False,
    )
    chain = summarize_run(
        probe_run(run, table, model, ProbeSettings(max_queries=5, epochs=(2,)), progress=False), run, n_boot=20
    )
    chain = chain.set_index("epoch").loc[2]
    rows = AuditRows(table, manifest.members, manifest.non_members)
    external, _ = audit_fine_tuned(run.model(2, model), model, rows, ProbeSettings(max_queries=5, n_boot=20))
    for key in ("auc_loss", "auc_loss_lo", "auc_entropy", "tpr10_loss", "raw_auc_loss", "mu_gap", "null_auc_loss"):
        assert external[key] == pytest.approx(chain[key], abs=1e-9), key


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_predicts_each_task_as_alone(ckpt, kind):
    """Tasks of one shape but different class counts, and of different shapes, in one predict call: each as if alone."""
    rng = np.random.default_rng(15)
    tasks = [_cls_task(rng, k=2), _cls_task(rng, k=3), _cls_task(rng, n_ctx=25, k=3), _cls_task(rng, k=2)]
    model = load_model(f"{kind}:{ckpt[(kind, False)]}")
    together = model.predict(tasks)
    for t, p in zip(tasks, together, strict=True):
        alone = model.predict([t])[0].probabilities()
        assert p.probabilities().shape == (7, len(t.classes()))
        np.testing.assert_allclose(p.probabilities().sum(-1), 1.0, atol=1e-5)
        assert np.abs(p.probabilities() - alone).max() < 1e-5
