"""``$ICLMEM_DEVICE``: the CPU by default, a GPU when asked for and present, a clear error otherwise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclmem.ltm import ICLTask, load_reference
from iclmem.runtime.device import DEVICE_ENV, DeviceError, compute_device


def test_cpu_by_default_and_auto_falls_back(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    assert compute_device() == torch.device("cpu")
    monkeypatch.setenv(DEVICE_ENV, "auto")
    assert compute_device().type == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setenv(DEVICE_ENV, " CPU ")
    assert compute_device() == torch.device("cpu")


@pytest.mark.parametrize("value", ["gpu", "cuda:x", "mps"])
def test_unknown_device_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv(DEVICE_ENV, value)
    with pytest.raises(DeviceError, match=r"is not a device.*use cpu, cuda, cuda:N or auto"):
        compute_device()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answer of a machine without a GPU")
def test_cuda_without_a_gpu_names_the_fix(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "cuda")
    with pytest.raises(DeviceError, match=r"no CUDA GPU.*unset it"):
        load_reference()


def test_cpu_model_keys_the_store_by_its_sha_alone(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    ref = load_reference()
    assert ref.device.type == "cpu" and ref.store_identity == ref.checkpoint_sha256
    rng = np.random.default_rng(0)
    task = ICLTask(rng.normal(size=(8, 3)), np.arange(8) % 2, rng.normal(size=(2, 3)), np.array([0, 1]))
    preds = ref.predict([task])[0]
    assert preds.log_probs.device.type == "cpu" and preds.probabilities().shape == (2, 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the device machine)")
def test_gpu_predictions_equal_cpu_within_float32(monkeypatch):
    rng = np.random.default_rng(0)
    task = ICLTask(rng.normal(size=(64, 6)), np.arange(64) % 3, rng.normal(size=(16, 6)), np.arange(16) % 3)
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    cpu = load_reference().predict([task])[0].probabilities()
    monkeypatch.setenv(DEVICE_ENV, "cuda")
    gpu_ref = load_reference()
    assert gpu_ref.store_identity.endswith("@cuda")
    assert np.allclose(gpu_ref.predict([task])[0].probabilities(), cpu, atol=1e-4)
