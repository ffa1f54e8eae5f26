"""The tiny sweep and its bundle that the bundle tests share (issue 55): fixtures the test modules import (a
conftest.py here would shadow ``tests/conftest.py`` for the tests that import from it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from iclmem.bundle.collect import make_bundle
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.sweep import load_grid, run_sweep
from iclmem.sweep.engine import Cluster

TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=128)
PROBE = {"max_queries": 4, "n_boot": 10}  # all 48 manipulations, as notebooks 03-04 probe


def _csv(folder: Path, name: str, task: str, n: int = 160) -> dict:
    rng = np.random.default_rng(len(name))
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y"], size=n)})
    noise = rng.normal(size=n)
    frame["target"] = (frame.a + noise > 0).astype(int) if task == "classification" else frame.a * 2 + noise
    frame.to_csv(folder / f"{name}.csv", index=False)
    return {"path": str(folder / f"{name}.csv"), "target": "target", "task": task}


@pytest.fixture(scope="package")
def reference() -> ReferenceLTM:
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny-bundle-model")


@pytest.fixture(scope="package")
def made(tmp_path_factory: pytest.TempPathFactory, reference: ReferenceLTM) -> dict:
    """A three-task sweep (a classification and a regression table, and App. D's joint run of both; epochs 0-2
    probed) and its bundle."""
    tmp = tmp_path_factory.mktemp("bundle")
    grid = {
        "name": "tiny",
        "datasets": [_csv(tmp, "cls", "classification"), _csv(tmp, "reg", "regression")],
        "learning_rates": [1e-2],
        "query_sizes": [30],
        "regimes": ["single_task_fixed", "multi_task_fixed"],
        "epochs": 2,
        "context_size": 30,
        "probe": PROBE,
    }
    (tmp / "tiny.yaml").write_text(yaml.safe_dump(grid))
    loaded = load_grid(tmp / "tiny.yaml")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ICLMEM_BUNDLE", "off")
        run_sweep(loaded, results_dir=tmp / "store", cluster=Cluster(0), reference=reference, progress=False)
    bundle, report = make_bundle(loaded, tmp / "bundle", results_dir=tmp / "store", reference=reference, command="t")
    return {"tmp": tmp, "grid": loaded, "bundle": bundle, "report": report}


def move_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """One number of the engine changed for the test: the fine-tuning step size, 1.5 times the configured one."""
    import iclmem.training.loop as training

    original = training.TrainingState.start.__func__

    def faster(cls, ref, learning_rate, weight_decay, state_path):
        return original(cls, ref, learning_rate * 1.5, weight_decay, state_path)

    monkeypatch.setattr(training.TrainingState, "start", classmethod(faster))
