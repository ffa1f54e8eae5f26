"""Probing killed with SIGKILL resumes: stored score frames are read, not recomputed, and equal a fresh run's (issue 17, Sec. 4.2).

A real subprocess fine-tunes a tiny run (kept epochs 0, 1, 2, 5) and probes it; each score frame it
stores is noted in a log. The first run hangs after its third stored frame (M_ref's, epoch 0's, which
reuses M_ref's scores, and epoch 1's) and is killed with SIGKILL there. The second run must score only the epochs
not yet stored (counted), and the scores of both runs together must equal, bitwise, those of an
uninterrupted run in a fresh folder; no temporary file may be left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd

SCRIPT = textwrap.dedent('''
    import json, os, sys, time

    import numpy as np, pandas as pd, torch

    import iclmem.probe.run as probe_run_module
    from iclmem.data import deduplicate, load_dataset, split_manifest
    from iclmem.finetune import FinetuneConfig, finetune, probe_epochs_up_to
    from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
    from iclmem.probe import probe_run

    results, log, hang = sys.argv[1], sys.argv[2], sys.argv[3] == "hang"
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120)})
    frame["target"] = (frame.a > 0).astype(int)
    path = os.path.join(os.path.dirname(os.path.abspath(results)), "table.csv")
    frame.to_csv(path, index=False)
    table = deduplicate(load_dataset(path, target="target", task="classification"))
    torch.manual_seed(0)
    reference = ReferenceLTM(TabularICLTransformer(LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16,
                                                             max_context=64)).eval(), checkpoint_sha256="tiny-kill-probe")
    manifest = split_manifest(table, query_size=10, seed=0, results_dir=results)
    run = finetune(manifest, table, FinetuneConfig(1e-2, epochs=5, context_size=20, probe_epochs=probe_epochs_up_to(5)),
                   reference, results, progress=False)

    def note(**entry):
        with open(log, "a") as f:
            f.write(json.dumps(entry) + "\\n")

    stored = 0
    cached = probe_run_module._cached
    def noted(path, compute):
        global stored
        existed = path.exists()
        out = cached(path, compute)
        if not existed:
            stored += 1
            note(stored=path.parent.name)
            if hang and stored == 3:
                time.sleep(600)  # killed here: three frames stored (ref, epochs 0 and 1), the others not
        return out
    probe_run_module._cached = noted
    scored = 0
    score_tasks = probe_run_module.score_tasks
    def counted(*args, **kwargs):
        global scored
        scored += 1
        return score_tasks(*args, **kwargs)
    probe_run_module.score_tasks = counted

    scores = probe_run(run, table, reference=reference, manipulations=["baseline", "skew_true_2", "distractor_1"],
                       progress=False)
    scores.to_parquet(f"{results}/all_scores.parquet")
    note(done=True, scored=scored)
''')


def _start(results: Path, log: Path, hang: bool = False) -> subprocess.Popen:
    results.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ICLMEM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(results), str(log), "hang" if hang else "run"], env=env)


def _entries(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _finish(results: Path, log: Path) -> dict:
    assert _start(results, log).wait(timeout=300) == 0
    return _entries(log)[-1]


def test_killed_probing_resumes_and_recomputes_nothing_it_stored(tmp_path: Path) -> None:
    killed, log = tmp_path / "killed", tmp_path / "killed.log"
    proc = _start(killed, log, hang=True)
    deadline = time.monotonic() + 240
    while sum("stored" in e for e in _entries(log)) < 3:
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "three score frames were never stored"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    resumed = _finish(killed, log)
    stored = [e["stored"] for e in _entries(log) if "stored" in e]
    assert len(stored) == len(set(stored)) == 5  # ref, epochs 0, 1, 2, 5: each stored once over both runs
    fresh = _finish(tmp_path / "fresh", tmp_path / "fresh.log")
    assert fresh["scored"] == 4  # ref, epochs 1, 2, 5 (epoch 0 is M_ref's frame)
    assert resumed["scored"] == 2  # only epochs 2 and 5 were scored again after the kill
    pd.testing.assert_frame_equal(pd.read_parquet(killed / "all_scores.parquet"), pd.read_parquet(tmp_path / "fresh" / "all_scores.parquet"))
    assert [p for p in killed.rglob("*") if ".tmp" in p.name] == []
