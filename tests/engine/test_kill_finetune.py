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
import textwrap
from pathlib import Path

import torch
from killing import entries, finish, kill_when, start

SCRIPT = textwrap.dedent("""
    import iclmem.training.loop as training
    from iclmem.training.finetune import FinetuneConfig, finetune, probe_epochs_up_to

    save = training.TrainingState.save
    def noted_save(self, path, epoch):
        save(self, path, epoch)
        note(saved=epoch)
        if hang and epoch == 15:
            time.sleep(600)  # killed here: the state of epoch 15 is on disk, the run is mid-way
    training.TrainingState.save = noted_save
    start_state = training.TrainingState.start
    def noted_start(*args, **kwargs):
        state = start_state(*args, **kwargs)
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

    config = FinetuneConfig(1e-2, epochs=40, context_size=20, probe_epochs=probe_epochs_up_to(40))
    run = finetune(manifest, table, config, reference, results, progress=False, checkpoint_every=5)
    note(done=True, steps=steps, run=str(run.path))
""")

PROBE_EPOCHS_KEPT_BEFORE_THE_KILL = (0, 1, 2, 5, 10)


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
    proc = start(SCRIPT, killed, log, hang=True)
    kill_when(proc, log, lambda log: any(e.get("saved") == 15 for e in log), "saving epoch 15")
    saved = max(e["saved"] for e in entries(log) if "saved" in e)
    assert saved == 15  # killed mid-run

    resumed = finish(SCRIPT, killed, log)
    restarts = [e["started_at"] for e in entries(log) if "started_at" in e]
    assert restarts == [0, saved]  # the second run started from the saved state
    assert resumed["steps"] == 40 - saved  # and trained only the epochs after it (one step per epoch)

    fresh = finish(SCRIPT, tmp_path / "fresh", tmp_path / "fresh.log")
    assert fresh["steps"] == 40
    run_killed, run_fresh = Path(resumed["run"]), Path(fresh["run"])
    assert run_killed.name == run_fresh.name  # same content key
    assert _digests(run_killed) == _digests(run_fresh)  # weights of every kept epoch, log, curve, metrics: bitwise
    assert not (run_killed / "state.pt").exists()
    assert [p for p in killed.rglob("*") if ".tmp" in p.name] == []  # nothing half-written left behind
    assert {f"weights_epoch{e:04d}.pt" for e in PROBE_EPOCHS_KEPT_BEFORE_THE_KILL} <= set(_digests(run_killed))
