"""Probing killed with SIGKILL resumes: stored score frames are read, not recomputed, and equal a fresh run's (issue 17,
Sec. 4.2).

A real subprocess fine-tunes a tiny run (kept epochs 0, 1, 2, 5) and probes it; each score frame it
stores is noted in a log. The first run hangs after its third stored frame (M_ref's, epoch 0's, which
reuses M_ref's scores, and epoch 1's) and is killed with SIGKILL there. The second run must score only the epochs
not yet stored (counted), and the scores of both runs together must equal, bitwise, those of an
uninterrupted run in a fresh folder; no temporary file may be left.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
from killing import entries, finish, kill_when, start

SCRIPT = textwrap.dedent("""
    import iclmem.probe.run as probe_run_module
    from iclmem.training.finetune import FinetuneConfig, finetune, probe_epochs_up_to
    from iclmem.probe import probe_run
    from iclmem.probe.settings import ProbeSettings

    run = finetune(manifest, table, FinetuneConfig(1e-2, epochs=5, context_size=20, probe_epochs=probe_epochs_up_to(5)),
                   reference, results, progress=False)

    stored = 0
    cached = probe_run_module._cached
    def noted(path, compute, params=None, bundle_key=""):
        global stored
        existed = path.exists()
        out = cached(path, compute, params, bundle_key)
        if not existed:
            stored += 1
            note(stored=path.parent.name)
            if hang and stored == 3:
                time.sleep(600)  # killed here: three frames stored (ref, epochs 0 and 1), the others not
        return out
    probe_run_module._cached = noted
    scored = 0
    score = probe_run_module.ScoringBatches.score
    def counted(self, *args, **kwargs):  # one call per model scored
        global scored
        scored += 1
        return score(self, *args, **kwargs)
    probe_run_module.ScoringBatches.score = counted

    settings = ProbeSettings(manipulations=("baseline", "skew_true_2", "distractor_1"))
    scores = probe_run(run, table, reference, settings, progress=False)
    scores.to_parquet(f"{results}/all_scores.parquet")
    note(done=True, scored=scored)
""")


def test_killed_probing_resumes_and_recomputes_nothing_it_stored(tmp_path: Path) -> None:
    killed, log = tmp_path / "killed", tmp_path / "killed.log"
    proc = start(SCRIPT, killed, log, hang=True)
    kill_when(proc, log, lambda log: sum("stored" in e for e in log) >= 3, "storing three score frames")

    resumed = finish(SCRIPT, killed, log)
    stored = [e["stored"] for e in entries(log) if "stored" in e]
    assert len(stored) == len(set(stored)) == 5  # ref, epochs 0, 1, 2, 5: each stored once over both runs
    fresh = finish(SCRIPT, tmp_path / "fresh", tmp_path / "fresh.log")
    assert fresh["scored"] == 4  # ref, epochs 1, 2, 5 (epoch 0 is M_ref's frame)
    assert resumed["scored"] == 2  # only epochs 2 and 5 were scored again after the kill
    pd.testing.assert_frame_equal(
        pd.read_parquet(killed / "all_scores.parquet"), pd.read_parquet(tmp_path / "fresh" / "all_scores.parquet")
    )
    assert [p for p in killed.rglob("*") if ".tmp" in p.name] == []
