"""A fine-tuning run killed with SIGKILL resumes to the uninterrupted run's weights, bitwise (issue 17, Sec. 4.1).

A real subprocess fine-tunes a tiny model (40 epochs, state saved every 5) and notes each saved state
in a log. The test kills it with SIGKILL once the state of epoch 15 is on disk (mid-run: the weights
of its probing epochs 0, 1, 2, 5 and 10 kept), then runs the same command again. The second run
must start from the saved state (it trains only the epochs after it: counted), end with the weights,
ground-truth log and metrics of an uninterrupted run in a fresh folder, byte for byte (the gzipped
log by its content), and leave no state file or temporary file behind.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import torch

SCRIPT = textwrap.dedent('''
    import json, os, sys, time

    import numpy as np, pandas as pd, torch

    import iclmem.training as training
    from iclmem.data import deduplicate, load_dataset, split_manifest
    from iclmem.finetune import FinetuneConfig, finetune, probe_epochs_up_to
    from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer

    results, log, hang = sys.argv[1], sys.argv[2], sys.argv[3] == "hang"
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120)})
    frame["target"] = (frame.a > 0).astype(int)
    path = os.path.join(os.path.dirname(os.path.abspath(results)), "table.csv")  # one file for both runs: one run key
    frame.to_csv(path, index=False)
    table = deduplicate(load_dataset(path, target="target", task="classification"))
    torch.manual_seed(0)
    reference = ReferenceLTM(TabularICLTransformer(LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16,
                                                             max_context=64)).eval(), checkpoint_sha256="tiny-kill")

    def note(**entry):
        with open(log, "a") as f:
            f.write(json.dumps(entry) + "\\n")

    save = training.TrainingState.save
    def noted_save(self, path, epoch):
        save(self, path, epoch)
        note(saved=epoch)
        if hang and epoch == 15:
            time.sleep(600)  # killed here: the state of epoch 15 is on disk, the run is mid-way
    training.TrainingState.save = noted_save
    start = training.TrainingState.start
    def noted_start(*args, **kwargs):
        state = start(*args, **kwargs)
        note(started_at=state.epoch)
        return state
    training.TrainingState.start = staticmethod(noted_start)
    steps = 0
    predict = ReferenceLTM.predict
    def counted(self, tasks, grad=False):
        global steps
        if grad:
            steps += 1
        return predict(self, tasks, grad)
    ReferenceLTM.predict = counted

    manifest = split_manifest(table, query_size=10, seed=0, results_dir=results)
    run = finetune(manifest, table, FinetuneConfig(1e-2, epochs=40, context_size=20, probe_epochs=probe_epochs_up_to(40)), reference, results,
                   progress=False, checkpoint_every=5)
    note(done=True, steps=steps, run=str(run.path))
''')

PROBE_EPOCHS_KEPT_BEFORE_THE_KILL = (0, 1, 2, 5, 10)


def _start(results: Path, log: Path, hang: bool = False) -> subprocess.Popen:
    results.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ICLMEM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(results), str(log), "hang" if hang else "run"], env=env)


def _entries(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _finish(results: Path, log: Path) -> dict:
    proc = _start(results, log)
    assert proc.wait(timeout=300) == 0
    return _entries(log)[-1]


def _digests(run: Path) -> dict[str, str]:
    """sha256 of every file of a run, by content: the gzipped log decompressed (gzip stamps the time it was
    written), weights as the bytes of each tensor (a torch archive names its records after the temporary file)."""
    def content(p: Path) -> bytes:
        if p.suffix == ".gz":
            return gzip.decompress(p.read_bytes())
        if p.suffix == ".pt":
            state = torch.load(p, weights_only=True)
            return b"".join(k.encode() + state[k].numpy().tobytes() for k in sorted(state))
        return p.read_bytes()

    return {p.name: hashlib.sha256(content(p)).hexdigest() for p in sorted(run.iterdir()) if p.is_file()}


def test_killed_finetuning_resumes_to_the_uninterrupted_weights(tmp_path: Path) -> None:
    killed, log = tmp_path / "killed", tmp_path / "killed.log"
    proc = _start(killed, log, hang=True)
    deadline = time.monotonic() + 240
    while not any(e.get("saved") == 15 for e in _entries(log)):
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "epoch 15 was never saved"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    saved = max(e["saved"] for e in _entries(log) if "saved" in e)
    assert saved == 15  # killed mid-run

    resumed = _finish(killed, log)
    restarts = [e["started_at"] for e in _entries(log) if "started_at" in e]
    assert restarts == [0, saved]  # the second run started from the saved state
    assert resumed["steps"] == 40 - saved  # and trained only the epochs after it (one step per epoch)

    fresh = _finish(tmp_path / "fresh", tmp_path / "fresh.log")
    assert fresh["steps"] == 40
    run_killed, run_fresh = Path(resumed["run"]), Path(fresh["run"])
    assert run_killed.name == run_fresh.name  # same content key
    assert _digests(run_killed) == _digests(run_fresh)  # weights of every kept epoch, log, curve, metrics: bitwise
    assert not (run_killed / "state.pt").exists()
    assert [p for p in killed.rglob("*") if ".tmp" in p.name] == []  # nothing half-written left behind
    assert {f"weights_epoch{e:04d}.pt" for e in PROBE_EPOCHS_KEPT_BEFORE_THE_KILL} <= set(_digests(run_killed))
