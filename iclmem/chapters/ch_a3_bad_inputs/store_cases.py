"""Appendix A3 (no paper section; issue 41): what the results store does with a damaged file, a truncated file, two
writers of one key, a full disk and a read-only store, each case run on a tiny store while the page is built.

A store case is not a user's mistake: nothing the user typed is wrong, the disk or another process is. What the
package must do is stated per case and measured when it runs (:class:`StoreAnswer`): a damaged or truncated file is
never served (set aside to ``quarantine/`` with one line naming it, then computed again to the same numbers); of two
processes on one run, one computes and the other waits for it and reads its result; a full disk stops the write with
one line naming the store and the space needed, leaving no partial file; a read-only store serves what it holds and
names what it would have to compute. The full disk and the read-only mount are simulated in this process
(:mod:`iclmem.store.faults`); ``tests/store/test_store_disks.py`` makes them on a real tmpfs and a read-only bind mount
where it may, through ``iclmem run``.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from iclmem.chapters.ch_a3_bad_inputs.kit import tiny_config, tiny_manifest, tiny_reference, tiny_table
from iclmem.probe.settings import ProbeSettings

#: The seed of the byte a case damages.
DAMAGE_SEED = 0


@dataclass(frozen=True)
class StoreAnswer:
    """What a store case gave: the ``message`` the user read (stderr, or the error), what the package ``did``
    (as measured), and ``ok``: whether that is what the case documents."""

    message: str
    did: str
    ok: bool


@dataclass(frozen=True)
class StoreCase:
    """One thing that happens to a store: what, through which entry point, what the package must do, and a
    regular expression the message must match."""

    case: str  # short id, unique
    happened: str  # what happened to the store, one sentence
    entry: str  # the entry point that answers
    run: Callable[[Path], StoreAnswer]  # does it in the given (empty) folder
    expected: str  # what the package must do
    says: str  # regex the message must match


def _run(folder: Path, lr: float = 1e-3, load_only: bool = False):
    """The tiny fine-tuning run of ``folder`` (store ``folder/results``): computed, or served from the store."""
    from iclmem.training.finetune import finetune

    table = tiny_table(folder)
    manifest = tiny_manifest(folder, table)
    config = tiny_config(learning_rate=lr)
    return finetune(
        manifest, table, config, tiny_reference(), folder / "results", progress=False, load_only=load_only
    ), table


def _stderr(call: Callable[[], object]) -> tuple[object, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        out = call()
    return out, err.getvalue().strip()


def _files(store: Path) -> dict[str, int]:
    return {str(p.relative_to(store)): p.stat().st_size for p in sorted(store.rglob("*")) if p.is_file()}


def _quarantined(store: Path) -> int:
    q = store / "quarantine"
    return len(list(q.iterdir())) if q.is_dir() else 0


def _damaged_scores(folder: Path) -> StoreAnswer:
    from iclmem.probe import probe_run

    run, table = _run(folder)

    def probe():
        return probe_run(
            run,
            table,
            tiny_reference(),
            ProbeSettings(max_queries=4, manipulations=("baseline",)),
            results_dir=folder / "results",
            progress=False,
        )

    before = probe()
    scores = sorted((folder / "results" / "probe").glob("*/scores.parquet"))[-1]
    data = bytearray(scores.read_bytes())
    rng = np.random.default_rng(DAMAGE_SEED)
    data[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
    scores.write_bytes(bytes(data))
    after, line = _stderr(probe)
    same = after.equals(before)
    return StoreAnswer(
        line,
        f"set aside ({_quarantined(folder / 'results')} in quarantine/) and computed again: "
        f"{'the same' if same else 'other'} {len(after)} scores",
        same and _quarantined(folder / "results") == 1,
    )


def _truncated_weights(folder: Path) -> StoreAnswer:
    run, _ = _run(folder)
    weights = run.path / "weights_epoch0001.pt"
    size = weights.stat().st_size
    weights.write_bytes(weights.read_bytes()[: size // 2])
    (again, _), line = _stderr(lambda: _run(folder))
    same = again.metrics.equals(run.metrics) and (again.path / weights.name).stat().st_size == size
    return StoreAnswer(
        line,
        f"the run set aside and fine-tuned again: {'the same' if same else 'other'} metrics, weights "
        f"{size} bytes again",
        same and _quarantined(folder / "results") == 1,
    )


TWO_WRITERS = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    import iclmem.training.finetune  # torch and the engine before the barrier: after it only the run itself races
    from iclmem.chapters.ch_a3_bad_inputs.store_cases import _run

    folder, barrier, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    (barrier / name).touch()  # both start the run at the same moment
    while len(os.listdir(barrier)) < 2:
        time.sleep(0.01)
    run, _ = _run(folder)
    print("METRICS", run.metrics.to_csv().replace(chr(10), "|"))
""")


def _two_writers(folder: Path) -> StoreAnswer:
    import iclmem

    barrier = folder / "barrier"
    barrier.mkdir()
    tiny_manifest(folder, tiny_table(folder))  # the split first: the two processes share it, and only the run
    package = str(Path(iclmem.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([package, os.environ.get("PYTHONPATH", "")]),
        "ICLMEM_THREADS": "1",
    }
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", TWO_WRITERS, str(folder), str(barrier), name],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in ("a", "b")
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    seconds = time.perf_counter() - started
    waited = [err for _, err in outs if "waiting for" in err]
    metrics = {line for out, _ in outs for line in out.splitlines() if line.startswith("METRICS")}
    runs = list((folder / "results" / "finetune").iterdir())
    ok = all(p.returncode == 0 for p in procs) and len(waited) == 1 and len(metrics) == 1 and len(runs) == 1
    line = next((ln for ln in waited[0].splitlines() if "waiting for" in ln), "") if waited else ""
    return StoreAnswer(
        line.replace(str(folder.resolve()), "<folder>").replace(str(folder), "<folder>"),
        f"{2 - len(waited)} process computed the run, {len(waited)} waited and read it; "
        f"{'the same metrics' if len(metrics) == 1 else 'different metrics'} in both ({seconds:.0f} s in all)",
        ok,
    )


def _full_disk(folder: Path) -> StoreAnswer:
    from iclmem.chapters.ch_a3_bad_inputs.kit import tiny_environ
    from iclmem.store.errors import StoreFullError
    from iclmem.store.faults import faulty_store

    store = folder / "results"
    tiny_manifest(folder, tiny_table(folder))
    limit = sum(_files(store).values()) + 80 * 1024  # the first kept weights fit, the second do not
    with tiny_environ(ICLMEM_RESULTS=str(store)), faulty_store(store, "full", limit):
        try:
            _run(folder)
            message = ""
        except StoreFullError as exc:
            message = str(exc)
    left = _files(store)
    partial = [n for n in left if n.endswith(".tmp") or "weights_epoch0001" in n]
    return StoreAnswer(
        message,
        f"StoreFullError (iclmem run: exit status 2); {len(partial)} partial or temporary files left, "
        f"{sum(n.endswith('.pt') for n in left)} kept weights stay for the next run",
        bool(message) and not partial,
    )


def _read_only(folder: Path) -> StoreAnswer:
    from iclmem.chapters.ch_a3_bad_inputs.kit import tiny_environ
    from iclmem.store.errors import StoreReadOnlyError
    from iclmem.store.faults import faulty_store

    store = folder / "results"
    built, _ = _run(folder)
    files = _files(store)
    with tiny_environ(ICLMEM_RESULTS=str(store)), faulty_store(store, "read-only"):
        served, _ = _run(folder)
        try:
            _run(folder, lr=1e-2)
            message = ""
        except StoreReadOnlyError as exc:
            message = str(exc)
    same = served.metrics.equals(built.metrics)
    unchanged = _files(store) == files
    return StoreAnswer(
        message,
        f"the stored run served ({'the same' if same else 'other'} metrics); the run at lr 1e-2 not computed: "
        f"StoreReadOnlyError (iclmem run: exit status 2); {'nothing' if unchanged else 'something'} written",
        same and unchanged and bool(message),
    )


def _store_cases() -> list[StoreCase]:
    return [
        StoreCase(
            "store-damaged-file",
            "One bit of a probe's stored scores.parquet flipped (a disk error, a bad copy).",
            "iclmem.probe.probe_run",
            _damaged_scores,
            "never served: set aside to quarantine/ with one line, computed again",
            r"iclmem store: damaged .*scores\.parquet.*moved to .*quarantine.*computing it again",
        ),
        StoreCase(
            "store-truncated-file",
            "A run's kept weights file was cut to half its size (a copy that stopped).",
            "iclmem.training.finetune.finetune",
            _truncated_weights,
            "never served: set aside to quarantine/ with one line, fine-tuned again",
            r"iclmem store: damaged .*weights_epoch0001\.pt: \d+ bytes, the record says \d+.*quarantine",
        ),
        StoreCase(
            "store-two-writers",
            "Two processes started the same fine-tuning run at the same moment (two terminals, two lanes).",
            "iclmem.training.finetune.finetune (2 processes)",
            _two_writers,
            "one computes, the other waits for it (one line says for whom) and reads its result",
            r"iclmem store: waiting for .* pid \d+, which computes the fine-tuning run finetune/",
        ),
        StoreCase(
            "store-full-disk",
            "The store's disk filled up while a run was writing its second kept weights.",
            "iclmem.training.finetune.finetune",
            _full_disk,
            "one line naming the store and the space needed; no partial file",
            r"no space left in the store .*weights_epoch0001\.pt needs [\d.]+ KiB.*nothing partial was left",
        ),
        StoreCase(
            "store-read-only",
            "The store is a read-only mount (a pre-computed store handed to a class or a reviewer).",
            "iclmem.training.finetune.finetune",
            _read_only,
            "serves what it holds; names what it would have to compute",
            r"is read-only.*Would have to compute: the fine-tuning run finetune/.*lr=0\.01\)",
        ),
    ]


STORE_CASES: list[StoreCase] = _store_cases()


def store_catalogue(cases: list[StoreCase] = STORE_CASES, only: tuple[str, ...] | list[str] = ()) -> pd.DataFrame:
    """Run every store case (or those in ``only``), each in a fresh temporary folder; one row per case: case, what
    happened, entry point, what the package must do, what the user read (the folder as ``<folder>``), what it did
    (measured), and whether that is what the case documents."""
    import re
    import tempfile

    rows = []
    for case in cases:
        if only and case.case not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="iclmem-store-case-") as tmp:
            answer = case.run(Path(tmp))
            shown = answer.message.replace(str(Path(tmp).resolve()), "<folder>").replace(tmp, "<folder>")
        rows.append(
            {
                "case": case.case,
                "what happened": case.happened,
                "entry point": case.entry,
                "the store must": case.expected,
                "what you read": shown,
                "what it did": answer.did,
                "as documented": answer.ok and bool(re.search(case.says, answer.message, re.S)),
            }
        )
    return pd.DataFrame(rows)


__all__ = ["STORE_CASES", "StoreAnswer", "StoreCase", "store_catalogue"]
