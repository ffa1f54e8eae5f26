"""``$ICLMEM_WORKERS``: a grid's runs in worker processes give the runs of the in-process loop (Sec. 5, Tab. 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from iclmem.data import deduplicate, load_dataset
from iclmem.grid import expand_grid, run_grid
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.workers import WORKERS_ENV, worker_count


def test_worker_count_from_the_argument_or_the_environment(monkeypatch):
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert worker_count() == 1 and worker_count(3) == 3
    monkeypatch.setenv(WORKERS_ENV, "2")
    assert worker_count() == 2
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(WORKERS_ENV, bad)
        with pytest.raises(ValueError, match=f"{WORKERS_ENV}=.* is not a positive integer"):
            worker_count()


def test_runs_in_two_workers_equal_the_in_process_runs(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=100), "b": rng.normal(size=100)})
    frame["target"] = (frame.a > 0).astype(int)
    frame.to_csv(tmp_path / "toy.csv", index=False)
    tables = {"toy": deduplicate(load_dataset(str(tmp_path / "toy.csv"), target="target", task="classification"))}
    torch.manual_seed(0)
    reference = ReferenceLTM(TabularICLTransformer(LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)).eval(),
                             checkpoint_sha256="tiny-workers")
    specs = expand_grid(["toy"], [1e-3, 1e-2], [10], ["none"], epochs=3, seed=0, context_size=16)
    torch.set_num_threads(1)  # the workers' thread count on this machine (2 cores / 2 workers): same summation order
    here = run_grid(specs, reference, tmp_path / "here", progress=False, tables=tables, workers=1)
    there = run_grid(specs, reference, tmp_path / "there", progress=False, tables=tables, workers=2)
    assert [r.key for r in here] == [r.key for r in there]
    assert all((tmp_path / "there" / "finetune" / r.key / "metrics.csv").is_file() for r in there)  # the workers wrote them
    for a, b in zip(here, there, strict=True):
        pd.testing.assert_frame_equal(a.metrics, b.metrics, check_exact=False, atol=1e-6)
