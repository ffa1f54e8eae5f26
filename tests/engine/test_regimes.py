"""Tests of the realistic training regimes of App. D (Tab. 12): multi-task fixed and random pairs."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest
import torch

import iclmem.training.finetune as ft
import iclmem.training.loop as training
from iclmem.data import deduplicate, load_dataset, split_manifest
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.probe import probe_run, summarize_run
from iclmem.probe.settings import ProbeSettings
from iclmem.training.finetune import FinetuneConfig
from iclmem.training.grid import GridAxes, RunSpec, expand_grid
from iclmem.training.regimes import RegimeError, check_regime, matched_member_sample, train_joint, training_pool

torch.set_num_threads(1)  # tiny models: one thread is fastest and shares the machine well

TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)
MANIPS = ["baseline", "shuffle_first", "distractor_1"]


@pytest.fixture(scope="module")
def reference() -> ReferenceLTM:
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny-regimes-model")


def _table(folder, task: str, n: int = 160, name: str | None = None):
    rng = np.random.default_rng(1 if task == "regression" else 0)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y", "z"], size=n)})
    frame["target"] = (
        (frame.a + rng.normal(size=n) > 0).astype(int) if task == "classification" else frame.a * 2 + rng.normal(size=n)
    )
    path = folder / f"{name or 'tiny_' + task}.csv"
    frame.to_csv(path, index=False)
    return deduplicate(load_dataset(str(path), target="target", task=task))


@pytest.fixture(scope="module")
def joint_setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("regimes")
    tables = [_table(tmp, "classification"), _table(tmp, "regression")]
    manifests = [split_manifest(t, query_size=30, seed=0, results_dir=tmp) for t in tables]
    return tables, manifests, tmp


def _log(run) -> list[dict]:
    return json.loads(gzip.decompress((run.path / "log.json.gz").read_bytes()))


CFG = FinetuneConfig(1e-3, epochs=3, probe_epochs=(0, 1, 3), context_size=30)


def test_multi_task_fixed_logs_one_step_per_dataset_per_epoch(joint_setup, reference):
    tables, manifests, tmp = joint_setup
    run = train_joint(manifests, tables, CFG, "multi_task_fixed", reference, tmp, progress=False)
    log = _log(run)
    assert len(log) == 3 * 2
    for epoch in (1, 2, 3):
        assert sorted(s["dataset"] for s in log if s["epoch"] == epoch) == sorted(run.datasets)
    for m in manifests:
        steps = [s for s in log if s["dataset"] == m.dataset]
        assert all(s["query_ids"] == m.members.tolist() for s in steps)  # fixed pairs: the same Q members every epoch
        assert len({tuple(s["context_ids"]) for s in steps}) == 1  # and the same context C'
        assert set(steps[0]["context_ids"]) <= set(m.context.tolist())
        seen = {i for s in steps for i in s["query_ids"] + s["context_ids"]}
        assert not seen & set(m.non_members.tolist())
        assert np.array_equal(run.members_logged[m.dataset], np.sort(m.members))
        view = run.view(m.dataset)
        assert np.array_equal(view.manifest.members, np.sort(m.members))
        assert view.metrics.epoch.tolist() == [0, 1, 3]
    assert sorted(run.metrics.groupby("dataset").size().tolist()) == [3, 3]
    mtime = (run.path / "metrics.csv").stat().st_mtime_ns
    again = train_joint(manifests, tables, CFG, "multi_task_fixed", reference, tmp, progress=False)  # from the store
    assert again.key == run.key and (again.path / "metrics.csv").stat().st_mtime_ns == mtime


def test_random_pairs_members_are_every_sampled_query(joint_setup, reference):
    tables, manifests, tmp = joint_setup
    run = train_joint(manifests, tables, CFG, "multi_task_random", reference, tmp, progress=False)
    log = _log(run)
    assert len(log) == 3 * 2
    counts = run.member_counts().set_index("dataset")
    for m, table in zip(manifests, tables, strict=True):
        steps = [s for s in log if s["dataset"] == m.dataset]
        sampled = np.unique(np.concatenate([s["query_ids"] for s in steps]))
        assert np.array_equal(run.members_logged[m.dataset], sampled)  # members = every row ever sampled as a query
        assert len(sampled) > m.query_size  # fresh queries each step: more members than Q
        assert counts.loc[m.dataset, "members_logged"] == len(sampled)
        assert len({tuple(s["query_ids"]) for s in steps}) == 3  # a fresh sample every step
        pool = set(training_pool(m).tolist())
        for s in steps:
            assert len(s["query_ids"]) == m.query_size and not set(s["query_ids"]) & set(s["context_ids"])
            assert set(s["query_ids"]) | set(s["context_ids"]) <= pool  # non-members are never sampled
        view = run.view(m.dataset)
        probed = view.manifest.members  # members of every probed M_theta: sampled in the first epoch
        first = next(s for s in steps if s["epoch"] == 1)
        assert set(probed.tolist()) <= set(first["query_ids"]) and 0.8 * m.query_size <= len(probed) <= len(
            m.non_members
        )
        assert np.array_equal(view.manifest.non_members, m.non_members)
        if table.task == "classification":  # per class: as many members as non-members, where the first epoch has them
            y = table.target.to_numpy()
            for label in np.unique(y[m.non_members]):
                available = int((y[first["query_ids"]] == label).sum())
                assert (y[probed] == label).sum() == min(available, (y[m.non_members] == label).sum())


def test_views_are_probed_like_single_task_runs(joint_setup, reference):
    tables, manifests, tmp = joint_setup
    run = train_joint(manifests, tables, CFG, "multi_task_random", reference, tmp, progress=False)
    keys = set()
    for table in tables:
        view = run.view(table.name)
        settings = ProbeSettings(max_queries=4, epochs=(0, 3), manipulations=MANIPS)
        scores = probe_run(view, table, reference, settings, results_dir=tmp, progress=False)
        assert set(scores[scores.is_member].query_id) <= set(run.members_logged[table.name].tolist())
        assert not set(scores[~scores.is_member].query_id) & set(run.members_logged[table.name].tolist())
        summary = summarize_run(scores, view, n_boot=10)
        assert summary.epoch.tolist() == [0, 3] and summary.auc_loss.iloc[0] == 0.5  # epoch 0 is M_ref
        keys.add(view.key)
    assert len(keys) == 2


def test_resume_after_interruption_matches_uninterrupted(joint_setup, reference, monkeypatch):
    tables, manifests, tmp = joint_setup
    cfg = FinetuneConfig(1e-3, epochs=4, probe_epochs=(0, 4), context_size=30)
    full = train_joint(manifests, tables, cfg, "multi_task_random", reference, tmp / "full", progress=False)
    original = training.atomic_torch_save  # the resumable state is written by training.TrainingState

    def crash_after_state(obj, path):
        original(obj, path)
        if path.name == "state.pt" and obj["epoch"] >= 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(training, "atomic_torch_save", crash_after_state)
    with pytest.raises(KeyboardInterrupt):
        train_joint(
            manifests, tables, cfg, "multi_task_random", reference, tmp / "resumed", progress=False, checkpoint_every=2
        )
    monkeypatch.setattr(training, "atomic_torch_save", original)
    resumed = train_joint(
        manifests, tables, cfg, "multi_task_random", reference, tmp / "resumed", progress=False, checkpoint_every=2
    )
    wf, wr = torch.load(full.weights_path(4)), torch.load(resumed.weights_path(4))
    assert all(torch.allclose(wf[k], wr[k], atol=1e-6) for k in wf)
    assert _log(full) == _log(resumed)


def test_bad_input(joint_setup, reference, tmp_path):
    tables, manifests, tmp = joint_setup
    with pytest.raises(RegimeError, match="unknown regime"):
        check_regime("multi_task_shuffled")
    assert check_regime("multi-task-random") == "multi_task_random"
    randomized = split_manifest(tables[0], query_size=30, seed=0, label_condition="members", results_dir=tmp)
    with pytest.raises(RegimeError, match="label_condition 'none'"):
        train_joint([randomized], tables[:1], CFG, "multi_task_random", reference, tmp_path, progress=False)
    with pytest.raises(RegimeError, match="unique"):
        train_joint(
            [manifests[0], manifests[0]],
            [tables[0], tables[0]],
            CFG,
            "multi_task_fixed",
            reference,
            tmp_path,
            progress=False,
        )
    run = train_joint(manifests, tables, CFG, "multi_task_fixed", reference, tmp, progress=False)
    with pytest.raises(RegimeError, match="not part of joint run"):
        run.view("spotify")


def test_matched_member_sample_follows_the_non_members():
    target = pd.Series(np.r_[np.zeros(60), np.ones(40)].astype(int))
    members, non_members = np.arange(0, 100, 2), np.array([1, 3, 5, 61, 63])
    sample = matched_member_sample(members, non_members, target, "classification", seed=0)
    assert sorted(target[sample]) == sorted(target[non_members]) and set(sample) <= set(members)
    reg = pd.Series(np.linspace(0, 1, 100))
    sample = matched_member_sample(members, non_members, reg, "regression", seed=0)
    assert len(sample) == 5 and set(sample) <= set(members)


def test_expand_grid_with_regimes():
    regimes = ["single_task_fixed", "multi_task_fixed", "multi_task_random"]
    specs = expand_grid(GridAxes(["a", "b"], [1e-4], [512], ["none"], regimes), 10)
    assert [s.regime for s in specs] == ["single_task_fixed"] * 2 + ["multi_task_fixed", "multi_task_random"]
    assert specs[2].dataset == "a+b" and specs[2].datasets == ["a", "b"] and specs[0].datasets == ["a"]
    assert RunSpec("a", 1e-4, 50).regime == "single_task_fixed"
    with pytest.raises(ValueError, match="empty"):
        expand_grid(GridAxes(["a"], [1e-4], [512], ["none"], []), 10)


# --- membership-neutral encoding (fidelity fix 1) and vanilla losses on the probed members (fix 4) ---


def _high_cardinality_table(folder, n: int = 240):
    """A table whose text column is nearly unique per row, with missing cells, like wine_pl's `name`."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "name": [f"wine {i}" for i in range(n)],
            "region": rng.choice(["p", "q", "r", None], size=n),
        }
    )
    frame.loc[rng.random(n) < 0.1, "a"] = np.nan
    frame["target"] = rng.normal(size=n) + np.nan_to_num(frame.a.to_numpy())
    path = folder / "names.csv"
    frame.to_csv(path, index=False)
    return deduplicate(load_dataset(str(path), target="target", task="regression"))


def _missing_rates(config: FinetuneConfig, regime: str, folder, reference) -> list[tuple[str, float, float, float]]:
    """Per encoded column: missing share among probed members, among non-members, and Fisher's exact p-value."""
    from iclmem.chapters.ch05_regimes.balance import missing_balance

    table = _high_cardinality_table(folder)
    manifest = split_manifest(table, query_size=40, seed=0, results_dir=folder)
    if regime == "single_task_fixed":
        run = ft.finetune(manifest, table, config, reference, folder, progress=False)
    else:
        other = _table(folder, "classification", name="companion")
        joint = train_joint(
            [manifest, split_manifest(other, query_size=30, seed=0, results_dir=folder)],
            [table, other],
            config,
            regime,
            reference,
            folder,
            progress=False,
        )
        run = joint.view(table.name)
    rows = missing_balance(ft.prepare_run_data(run.manifest, table, run.config))
    return [(r["column"], r["missing members"], r["missing non-members"], r["p"]) for r in rows]


@pytest.mark.parametrize("regime", ["single_task_fixed", "multi_task_fixed", "multi_task_random"])
def test_encoding_is_membership_neutral_in_every_regime(regime, tmp_path, reference):
    cfg = FinetuneConfig(1e-3, epochs=1, probe_epochs=(0, 1), context_size=30)
    for column, member_rate, non_member_rate, p in _missing_rates(cfg, regime, tmp_path, reference):
        assert p > 0.01, (
            f"{regime}: column {column!r} is missing for {member_rate:.0%} of members vs {non_member_rate:.0%} of "
            "non-members"
        )


def test_random_pairs_vanilla_losses_are_measured_on_the_probed_members(joint_setup, reference):
    tables, manifests, tmp = joint_setup
    run = train_joint(manifests, tables, CFG, "multi_task_random", reference, tmp, progress=False)
    for table in tables:
        view = run.view(table.name)
        assert not set(view.manifest.members.tolist()) & set(
            view.manifest.context.tolist()
        )  # no probed member in C' or its pool
        data = ft.prepare_run_data(view.manifest, table, run.config)
        for epoch in (0, 3):
            expected = ft.vanilla_scores(run.model(epoch, reference), data)
            row = view.metrics.set_index("epoch").loc[epoch]
            assert np.isclose(row.theta_loss_members, expected["loss_members"], rtol=1e-5)
            assert np.isclose(row.theta_loss_non_members, expected["loss_non_members"], rtol=1e-5)
        manifest_members = ft.prepare_run_data(
            manifests[[m.dataset for m in manifests].index(table.name)], table, run.config
        )
        if not np.array_equal(np.sort(manifest_members.member_ids), np.sort(data.member_ids)):
            wrong = ft.vanilla_scores(run.model(3, reference), manifest_members)["loss_members"]
            assert not np.isclose(view.metrics.set_index("epoch").loc[3].theta_loss_members, wrong, rtol=1e-6)
