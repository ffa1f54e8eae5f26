"""What the SIGKILL tests share (tests/*/test_kill_*.py, tests/llm/test_llm_cache_kill.py): a child script's preamble
and
the process helpers (the LLM cache test brings its own child script and uses :func:`kill_when` and :func:`entries`).

The preamble gives the child ``results``, ``log`` and ``hang`` (from its arguments), a tiny table
and a tiny reference LTM (the same for every run, so runs in two folders share their keys) and
``note(**entry)``, which appends one JSON line to the log (whole lines survive a SIGKILL).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

#: The tiny table (written to ``table_csv``) and the tiny reference LTM (``checkpoint_sha256=reference_sha``) every
#: child script and :func:`tiny_store.inputs` build: the same on every run, so runs in two folders share their keys.
TINY_INPUTS = textwrap.dedent("""
    import numpy as np, pandas as pd, torch

    from iclmem.data import deduplicate, load_dataset
    from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120)})
    frame["target"] = (frame.a > 0).astype(int)
    frame.to_csv(table_csv, index=False)
    table = deduplicate(load_dataset(table_csv, target="target", task="classification"))
    torch.manual_seed(0)
    reference = ReferenceLTM(TabularICLTransformer(LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16,
                                                             max_context=64)).eval(), checkpoint_sha256=reference_sha)
""")

PREAMBLE = (
    textwrap.dedent("""
    import json, os, sys, time

    from iclmem.data import split_manifest

    results, log, hang = sys.argv[1], sys.argv[2], sys.argv[3] == "hang"
    table_csv = os.path.join(os.path.dirname(os.path.abspath(results)), "table.csv")  # one file for both runs: one key
    reference_sha = "tiny-kill"
""")
    + TINY_INPUTS
    + textwrap.dedent("""
    manifest = split_manifest(table, query_size=10, seed=0, results_dir=results)

    def note(**entry):
        with open(log, "a") as f:
            f.write(json.dumps(entry) + "\\n")
""")
)


def start(script: str, results: Path, log: Path, hang: bool = False) -> subprocess.Popen:
    """Run ``PREAMBLE + script`` in a child process writing into ``results`` and ``log``."""
    results.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ICLMEM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", PREAMBLE + script, str(results), str(log), "hang" if hang else "run"], env=env
    )


def kill_when(proc: subprocess.Popen, log: Path, reached: Callable[[list[dict]], bool], what: str) -> None:
    """SIGKILL the child as soon as its log says ``reached`` (within 240 s, before it ends on its own)."""
    deadline = time.monotonic() + 240
    while not reached(entries(log)):
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def entries(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def finish(script: str, results: Path, log: Path) -> dict:
    """Run the script to its end and return the last log entry."""
    assert start(script, results, log).wait(timeout=300) == 0
    return entries(log)[-1]
