"""Controlled ground truth: fine-tuning on the members moves their completions toward their references (a tiny run)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclmem.llm.backends import InProcessBackend
from iclmem.llm.finetune import LLMFinetuneConfig, finetune
from iclmem.llm.judges import OfflineJudge, rouge_l
from iclmem.llm.replication import ReplicationConfig, build_experiment, finetune_log, finetuned_backend


@pytest.fixture(scope="module")
def base() -> InProcessBackend:
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    return InProcessBackend(batch_size=8)


@pytest.mark.slow
def test_finetuning_moves_member_completions_toward_their_references(base, monkeypatch, tmp_path):
    exp = build_experiment(
        ReplicationConfig(
            n_instances=8,
            n_demonstrations=10,
            ks=(0, 10),
            settings=("pairs_labels",),
            max_new_tokens=16,
            member_fraction=0.5,
            seed=1,
        )
    )
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path))  # the fine-tuning log goes here (the model was converted before)
    reqs = exp.memorization_requests("pairs_labels", 10)
    refs = [exp.pairs[i.id].second for i in exp.instances]
    member = np.array([exp.sample.is_member(i) for i in exp.instances])
    assert member.sum() == 4

    before = [c.text.strip() for c in base.complete_batch(reqs)]
    tuned = finetuned_backend(base, exp, LLMFinetuneConfig(epochs=8, lr=3e-4, seed=0))
    assert tuned.model_id.startswith(base.model_id + "+ft") and not tuned.model_loaded  # built on first use
    after = [c.text.strip() for c in tuned.complete_batch(reqs)]
    log = finetune_log(tuned)
    assert log is not None and log["n_texts"] == 4 and log["epoch_losses"][-1] < log["epoch_losses"][0] / 2

    judge = OfflineJudge()

    def rate(texts, mask):
        return np.mean([m in ("exact", "near-exact") for m in np.array(judge.judge_many(refs, texts))[mask]])

    overlap_after = np.array([rouge_l(r, t) for r, t in zip(refs, after, strict=True)])
    overlap_before = np.array([rouge_l(r, t) for r, t in zip(refs, before, strict=True)])
    # The members' completions move toward their references, and further than the non-members'. With 4 members
    # the judge's exact / near-exact count is too coarse to require a rise: on the machine CI used before it rose,
    # on the 2026-12-03 machine it stays 0 of 4 while their ROUGE-L rises from about 0.35 to 0.74 (float kernels
    # differ between CPUs, and greedy decoding amplifies the difference). It must not fall, and stays at least the
    # non-members'.
    assert overlap_after[member].mean() > overlap_before[member].mean() + 0.1
    assert overlap_after[member].mean() > overlap_after[~member].mean()
    assert rate(after, member) >= rate(before, member)
    assert rate(after, member) >= rate(after, ~member)


def test_finetune_leaves_the_base_model_untouched_and_refuses_bad_input(base):
    before = {k: v.clone() for k, v in list(base.model.state_dict().items())[:3]}
    res = finetune(
        base.model, base.tokenizer, ["Name is A. Winery is B."], LLMFinetuneConfig(epochs=1, batch_size=1), "m"
    )
    assert all(torch.equal(before[k], v) for k, v in list(base.model.state_dict().items())[:3])
    assert res.model is not base.model and len(res.epoch_losses) == 1 and res.model_id.startswith("m+ft")
    with pytest.raises(ValueError, match="at least one"):
        finetune(base.model, base.tokenizer, [], LLMFinetuneConfig(), "m")
    assert (
        LLMFinetuneConfig().tag(["a", "b"])
        == LLMFinetuneConfig().tag(["b", "a"])
        != LLMFinetuneConfig(lr=1e-3).tag(["a", "b"])
    )
