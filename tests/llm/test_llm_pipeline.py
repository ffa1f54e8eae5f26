"""The replication run as one engine object (iclmem.llm.pipeline): what differs by backend is decided there."""

from __future__ import annotations

import os

import pytest
from test_llm_replication import EchoBackend

from iclmem.llm.pipeline import (
    BASE,
    finetune_config,
    ground_truth_possible,
    member_share,
    prepare_environment,
    prepare_replication,
)
from iclmem.llm.replication import ReplicationConfig, build_experiment


def test_only_the_in_process_model_with_epochs_has_ground_truth():
    assert ground_truth_possible("inprocess", 8) and not ground_truth_possible("inprocess", 0)
    assert not ground_truth_possible("openai", 8)
    assert member_share("openai", 8, 0.5) == 0.0 and member_share("inprocess", 8, 0.5) == 0.5
    assert finetune_config("openai", 8, 2e-4, 0) is None and finetune_config("inprocess", 8, 2e-4, 3).seed == 3


def test_prepare_environment_reads_the_local_cache_only_in_process(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    prepare_environment("openai")
    assert "HF_HUB_OFFLINE" not in os.environ
    prepare_environment("inprocess")
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_a_run_without_fine_tuning_is_the_members_only_reading(monkeypatch, tmp_path):
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path))
    monkeypatch.delenv("ICLMEM_JUDGE_MODEL", raising=False)
    exp = build_experiment(
        ReplicationConfig(n_instances=4, n_demonstrations=8, ks=(0, 4), settings=("full",), member_fraction=0.0)
    )
    rep = prepare_replication(exp, EchoBackend(), [0, 4], None, "offline", 2)
    assert list(rep.models) == [BASE] and not rep.has_ground_truth and rep.focus_model == BASE
    assert rep.rates_by == ("model", "setting", "k") and rep.models_text() == "one model (echo)"
    assert rep.llm_judge.backend is rep.base  # no judge model of its own: the base model judges
    assert len(rep.plan.table) > 0 and rep.ks_run == [0, 4]  # planned before any request
    mem, perf = rep.complete(progress=False)
    assert len(mem) == 4 * 2 and len(perf) == 4 * 2 and set(mem["model"]) == {BASE}
    assert "no membership ground truth" in rep.finetune_text()
    with pytest.raises(KeyError):
        rep.models["fine-tuned"]
