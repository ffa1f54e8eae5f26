"""Tests of DP-SGD fine-tuning (iclmem.training.privacy; IclMem Sec. 6's mitigation, chapter 7)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from iclmem.data import deduplicate, load_dataset, split_manifest
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.training.finetune import FinetuneConfig, finetune, prepare_run_data, run_key
from iclmem.training.privacy import (
    DPStep,
    PrivacyConfig,
    PrivacyError,
    clip_factors,
    epsilon,
    per_sample_gradients,
    per_sample_norms,
    private_backward,
)

torch.set_num_threads(1)

TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)


@pytest.fixture(scope="module")
def reference() -> ReferenceLTM:
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny-test-model")


@pytest.fixture()
def setup(tmp_path):
    rng = np.random.default_rng(0)
    n = 160
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y", "z"], size=n)})
    frame["target"] = (frame.a + rng.normal(size=n) > 0).astype(int)
    frame.to_csv(tmp_path / "tiny.csv", index=False)
    table = deduplicate(load_dataset(str(tmp_path / "tiny.csv"), target="target", task="classification"))
    return table, split_manifest(table, query_size=12, seed=0, results_dir=tmp_path), tmp_path


def _task(setup, reference):
    table, manifest, _ = setup
    data = prepare_run_data(manifest, table, FinetuneConfig(1e-3, epochs=2, probe_epochs=(0, 2), context_size=30))
    return data.task_for(data.member_x, data.member_y)


def _flat_grad(model: ReferenceLTM) -> torch.Tensor:
    return torch.cat(
        [(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in model.trainable_parameters()]
    )


def test_per_sample_gradients_equal_one_query_tasks(setup, reference):
    """Member i's gradient is that of the task "C' plus query i" (query rows are never keys)."""
    task = _task(setup, reference)
    model = reference.clone()
    grads = per_sample_gradients(model, task)
    names = [n for n, p in model.network.named_parameters() if p.requires_grad]
    for i in (0, 5, len(task.query_x) - 1):
        model.network.zero_grad()
        one = type(task)(task.context_x, task.context_y, task.query_x[i : i + 1], task.query_y[i : i + 1], task.task)
        model.predict([one], grad=True)[0].loss().sum().backward()
        ours = torch.cat([grads[n][i].flatten() for n in names])
        assert torch.allclose(ours, _flat_grad(model), atol=1e-5, rtol=1e-4)


def test_chunked_per_sample_gradients_equal_unchunked_and_losses_equal_the_plain_forward(setup, reference):
    """vmap's chunk size changes the speed only; the losses of the same pass are those of the plain forward."""
    task = _task(setup, reference)
    model = reference.clone()
    whole, losses = per_sample_gradients(model, task, chunk_size=None, with_losses=True)
    chunked = per_sample_gradients(model, task, chunk_size=5)
    for name, g in whole.items():
        assert torch.allclose(g, chunked[name], atol=1e-6, rtol=1e-5)
    with torch.no_grad():
        plain = model.predict([task])[0].loss()
    assert torch.allclose(losses, torch.as_tensor(plain, dtype=losses.dtype), atol=1e-5, rtol=1e-5)


def test_clipped_norms_at_most_c_and_the_step_gradient_is_their_mean(setup, reference):
    task = _task(setup, reference)
    model = reference.clone()
    grads = per_sample_gradients(model, task)
    norms = per_sample_norms(grads)
    c = float(norms.median())  # half the members are clipped, half are not
    factors = clip_factors(norms, c)
    clipped = {n: g * factors.view(-1, *([1] * (g.dim() - 1))) for n, g in grads.items()}
    assert bool((per_sample_norms(clipped) <= c * (1 + 1e-5)).all())
    assert int((factors < 1).sum()) >= len(factors) // 2 - 1
    model.network.zero_grad()
    private_backward(model, task, DPStep(c, 0.0), epoch=1)
    expected = torch.cat(
        [clipped[n].mean(dim=0).flatten() for n, p in model.network.named_parameters() if p.requires_grad]
    )
    assert torch.allclose(_flat_grad(model), expected, atol=1e-6, rtol=1e-4)


def test_noise_has_the_dp_sgd_scale_and_is_seeded(setup, reference):
    task = _task(setup, reference)
    model = reference.clone()
    private_backward(model, task, DPStep(1.0, 0.0), epoch=3)
    clean = _flat_grad(model)
    noisy = []
    for _ in range(2):
        model.network.zero_grad()
        private_backward(model, task, DPStep(1.0, 5.0, seed=7), epoch=3)
        noisy.append(_flat_grad(model))
    assert torch.equal(noisy[0], noisy[1])  # the same step draws the same noise (a resumed run is the same run)
    std = float((noisy[0] - clean).std())
    assert std == pytest.approx(5.0 * 1.0 / len(task.query_x), rel=0.1)


def test_accountant_matches_opacus(setup):
    from opacus.accountants import RDPAccountant
    from opacus.accountants.utils import get_noise_multiplier

    acc = RDPAccountant()
    for _ in range(40):
        acc.step(noise_multiplier=1.3, sample_rate=0.2)
    assert epsilon(1.3, 0.2, 40, delta=1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    sigma = PrivacyConfig(target_epsilon=4.0).sigma(steps=20)
    assert sigma == pytest.approx(
        get_noise_multiplier(target_epsilon=4.0, target_delta=1e-5, sample_rate=1.0, steps=20, accountant="rdp")
    )
    assert epsilon(sigma, 1.0, 20) <= 4.0
    assert epsilon(0.0, 1.0, 20) == float("inf")
    assert epsilon(2 * sigma, 1.0, 20) < epsilon(sigma, 1.0, 20)


def test_no_noise_no_clipping_run_equals_the_plain_run_bitwise(setup, reference):
    table, manifest, tmp = setup
    plain = FinetuneConfig(1e-2, epochs=3, probe_epochs=(0, 3), context_size=30)
    noop = FinetuneConfig(
        1e-2,
        epochs=3,
        probe_epochs=(0, 3),
        context_size=30,
        privacy=PrivacyConfig(noise_multiplier=0.0, max_grad_norm=None),
    )
    a = finetune(manifest, table, plain, reference, tmp, progress=False)
    b = finetune(manifest, table, noop, reference, tmp, progress=False)
    assert a.key != b.key  # the privacy config is part of the run key
    for name, w in torch.load(a.weights_path(3), weights_only=True).items():
        assert torch.equal(w, torch.load(b.weights_path(3), weights_only=True)[name]), name
    clipped = FinetuneConfig(
        1e-2, epochs=3, probe_epochs=(0, 3), context_size=30, privacy=PrivacyConfig(noise_multiplier=0.0)
    )
    c = finetune(
        manifest, table, clipped, reference, tmp, progress=False
    )  # clipping alone changes the run: the test can fail
    assert not torch.equal(
        torch.load(a.weights_path(3), weights_only=True)["blocks.0.qkv_feat.weight"],
        torch.load(c.weights_path(3), weights_only=True)["blocks.0.qkv_feat.weight"],
    )
    assert run_key(manifest, plain, reference) == a.key


def test_bad_privacy_settings_name_the_fix():
    with pytest.raises(PrivacyError, match="exactly one"):
        PrivacyConfig().checked()
    with pytest.raises(PrivacyError, match="max_grad_norm"):
        PrivacyConfig(target_epsilon=1.0, max_grad_norm=None).checked()
    with pytest.raises(PrivacyError, match="accountant"):
        PrivacyConfig(noise_multiplier=1.0, accountant="moments").checked()
