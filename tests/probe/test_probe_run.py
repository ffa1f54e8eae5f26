"""Probing a fine-tuning run end to end: scores per epoch, store cache, per-epoch summary with outcome (Tab. 3, 10)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import iclmem.probe.run as probe_run_module
from iclmem.data import deduplicate, load_dataset, split_manifest
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.probe import ProbeError, probe_run, probe_scores, run_queries, summarize_run
from iclmem.probe.run import reference_owner
from iclmem.probe.scoring import QueryTarget
from iclmem.probe.settings import ProbeSettings
from iclmem.stats.outcomes import Outcome
from iclmem.training.finetune import FinetuneConfig, finetune, prepare_run_data

torch.set_num_threads(1)

TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=128)
MANIPS = [
    "baseline",
    "shuffle_first",
    "skew_true_3",
    "skew_non_true_k1_x2",
    "uniform_10",
    "shuffle_random_2_and_reduce",
    "distractor_1",
]


@pytest.fixture(scope="module")
def reference() -> ReferenceLTM:
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny-probe-model")


def _table(tmp_path, task: str, n: int = 140):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y", "z"], size=n)})
    frame["target"] = rng.integers(0, 3, n) if task == "classification" else (frame.a * 2 + rng.normal(size=n)).round(3)
    path = tmp_path / f"tiny_{task}.csv"
    frame.to_csv(path, index=False)
    return deduplicate(load_dataset(str(path), target="target", task=task))


@pytest.fixture(scope="module")
def cls_run(tmp_path_factory, reference):
    tmp = tmp_path_factory.mktemp("probe_cls")
    table = _table(tmp, "classification")
    manifest = split_manifest(table, query_size=16, seed=0, results_dir=tmp)
    run = finetune(
        manifest,
        table,
        FinetuneConfig(3e-2, epochs=3, probe_epochs=(0, 3), context_size=30),
        reference,
        tmp,
        progress=False,
    )
    return table, run, tmp


def test_probe_run_scores_every_query_and_epoch_and_caches(cls_run, reference, monkeypatch):
    table, run, tmp = cls_run
    scores = probe_run(run, table, reference, ProbeSettings(manipulations=MANIPS), progress=False)
    n_q = len(run.manifest.members) + len(run.manifest.non_members)
    assert set(map(tuple, scores[["model", "epoch"]].drop_duplicates().to_numpy().tolist())) == {
        ("ref", -1),
        ("theta", 0),
        ("theta", 3),
    }
    assert len(scores) == 3 * n_q * len(MANIPS)
    assert scores[scores.is_member].query_id.nunique() == len(run.manifest.members)
    assert set(scores[scores.is_member].query_id) == set(run.manifest.members.tolist())
    # epoch 0 is M_ref: identical scores (negative control)
    by = {k: g.sort_values(["query_id", "manipulation"]).reset_index(drop=True) for k, g in scores.groupby("epoch")}
    assert np.array_equal(by[0].loss.to_numpy(), by[-1].loss.to_numpy())
    assert not np.allclose(by[3].loss.to_numpy(), by[-1].loss.to_numpy())
    assert len(list((tmp / "probe").glob("*/scores.parquet"))) == 3
    # the contexts built once for all models score exactly as probe_scores scores each model alone
    data = prepare_run_data(run.manifest, table, run.config)
    alone = probe_scores(
        reference,
        run_queries(data, table, run),
        MANIPS,
        target=QueryTarget(data.task, data.target_center, data.target_scale),
        columns={"model": "ref", "epoch": -1},
    )
    pd.testing.assert_frame_equal(scores[scores.model == "ref"].reset_index(drop=True), alone)
    # a second call reads the store and computes nothing, not even the contexts
    monkeypatch.setattr(
        probe_run_module.ScoringBatches, "score", lambda *a, **k: pytest.fail("recomputed a cached score frame")
    )
    monkeypatch.setattr(
        probe_run_module, "prepare_run_data", lambda *a, **k: pytest.fail("built contexts nobody scores")
    )
    again = probe_run(run, table, reference, ProbeSettings(manipulations=MANIPS), progress=False)
    pd.testing.assert_frame_equal(again, scores)


def test_runs_of_one_reference_score_set_share_their_contexts(cls_run, reference, monkeypatch, tmp_path):
    """Two runs that differ in learning rate only have the same queries and contexts: in one process they are
    built once, and the second run's scores equal those it gets with nothing shared."""
    table, run, tmp = cls_run
    other = finetune(
        run.manifest,
        table,
        FinetuneConfig(1e-2, epochs=3, probe_epochs=(0, 3), context_size=30),
        reference,
        tmp,
        progress=False,
    )
    assert reference_owner(other) == reference_owner(run) and other.key != run.key
    built = []
    original = probe_run_module.build_probe_tasks
    monkeypatch.setattr(probe_run_module, "build_probe_tasks", lambda *a, **k: built.append(1) or original(*a, **k))
    probe_run_module._SUITES.clear()
    kwargs = {"reference": reference, "settings": ProbeSettings(manipulations=MANIPS), "progress": False}
    probe_run(run, table, results_dir=tmp_path / "shared", **kwargs)
    shared = probe_run(other, table, results_dir=tmp_path / "shared", **kwargs)
    assert len(built) == 1
    probe_run_module._SUITES.clear()
    alone = probe_run(other, table, results_dir=tmp_path / "alone", **kwargs)
    assert len(built) == 2
    pd.testing.assert_frame_equal(shared, alone)


def test_summarize_run_one_row_per_epoch_with_outcome(cls_run, reference):
    table, run, _ = cls_run
    scores = probe_run(run, table, reference, ProbeSettings(manipulations=MANIPS), progress=False)
    summary = summarize_run(scores, run, n_boot=50)
    assert summary.epoch.tolist() == [0, 3]
    first = summary.iloc[0]
    for metric in ("loss", "entropy", "confidence"):
        assert first[f"auc_{metric}"] == 0.5 and first[f"tpr1_{metric}"] == 0.0  # M_theta = M_ref: no signal
        assert first[f"auc_{metric}_lo"] == first[f"auc_{metric}_hi"] == 0.5
        assert 0 <= first[f"raw_auc_{metric}"] <= 1
    assert first.delta_lv_members == 0.0 and not first.collapsed
    assert set(summary.outcome) <= {o.value for o in Outcome}
    assert first.outcome != Outcome.MEMORIZATION.value  # AUC(Delta S) = 0.5 is not > 0.5
    assert {"mu_gap", "sigma_gap", "loss_ratio", "outcome_rule", "tpr10_loss_hi"} <= set(summary.columns)
    for metric in ("loss", "entropy", "confidence"):  # at epoch 0 the raw attack on S_theta is the one on S_ref
        assert (
            first[f"raw_tpr10_{metric}"] == first[f"ref_tpr10_{metric}"]
            and first[f"raw_auc_{metric}"] == first[f"ref_auc_{metric}"]
        )
    for metric in ("loss", "entropy"):  # the null-halves control: an AUC with its interval around it
        assert first[f"null_auc_{metric}_lo"] <= first[f"null_auc_{metric}"] <= first[f"null_auc_{metric}_hi"]
    assert "null_auc_confidence" not in summary.columns


def test_regression_run_and_max_queries(tmp_path, reference):
    table = _table(tmp_path, "regression")
    manifest = split_manifest(table, query_size=30, seed=0, results_dir=tmp_path)
    run = finetune(
        manifest,
        table,
        FinetuneConfig(1e-3, epochs=1, probe_epochs=(0, 1), context_size=30),
        reference,
        tmp_path,
        progress=False,
    )
    settings = ProbeSettings(n_candidates=6, max_queries=5, epochs=(1,), manipulations=MANIPS)
    scores = probe_run(run, table, reference, settings, progress=False)
    assert scores.groupby("model").query_id.nunique().to_dict() == {"ref": 10, "theta": 10}
    assert (scores.loss >= 0).all() and scores.confidence.between(0, 1).all()
    summary = summarize_run(scores, run, n_boot=20)
    assert summary.epoch.tolist() == [1]


def test_bad_arguments(cls_run, reference):
    table, run, _ = cls_run
    from iclmem.training.grid import RunSpec, probe_grid

    with pytest.raises(ProbeError, match=r"epochs \[7\] were kept by none of the runs \(kept: \[0, 3\]\)"):
        probe_grid(
            [RunSpec("tiny", 3e-2, 16, "none", 3, 0, 30)],
            [run],
            reference,
            ProbeSettings(epochs=(0, 7)),
            progress=False,
        )
    with pytest.raises(ProbeError, match="not kept"):
        probe_run(run, table, reference, ProbeSettings(epochs=(7,), manipulations=MANIPS), progress=False)
    other = ReferenceLTM(reference.network, checkpoint_sha256="another-model")
    with pytest.raises(ProbeError, match="same M_ref"):
        probe_run(run, table, other, ProbeSettings(manipulations=MANIPS), progress=False)
    with pytest.raises(ProbeError, match="M_ref rows"):
        summarize_run(pd.DataFrame({"model": ["theta"], "epoch": [1]}))


@pytest.mark.slow
def test_positive_control_memorizes_and_the_probe_verdict_is_computed(tmp_path):
    """The notebook-04 positive control (breast_cancer, 50 members with randomized labels, lr 1e-3, 250 epochs,
    64-row context, all 48 manipulations). Its premise must hold: the model memorized the members, which the
    plain calibrated loss attack on the training context shows. Whether the zero-information probe surfaces it
    is the control's verdict, computed from the same summary the notebook shows."""
    from iclmem.chapters.ch_a6_instrument.controls import positive_control
    from iclmem.chapters.ch_a6_instrument.instrument import vanilla_attack
    from iclmem.ltm import load_reference

    reference = load_reference()
    table = deduplicate(load_dataset("breast_cancer"))
    manifest = split_manifest(table, query_size=50, seed=0, label_condition="members", results_dir=tmp_path)
    run = finetune(
        manifest,
        table,
        FinetuneConfig(1e-3, epochs=250, probe_epochs=(0, 250), context_size=64),
        reference,
        tmp_path,
        progress=False,
    )
    premise = vanilla_attack(run, table, 250, reference)
    assert premise["lo"] > 0.6, premise  # memorized: members' vanilla loss fell far more than non-members'
    assert vanilla_attack(run, table, 0, reference)["auc"] == 0.5  # M_theta = M_ref at epoch 0
    summary = summarize_run(
        probe_run(run, table, reference, ProbeSettings(max_queries=50), progress=False), run, n_boot=200
    )
    verdict = positive_control(summary, 250)
    last = summary.set_index("epoch").loc[250]
    assert verdict["auc"] == last.auc_loss and verdict["passed"] == (last.auc_loss_lo > 0.5)
    assert last.n_members == last.n_non_members == 50
