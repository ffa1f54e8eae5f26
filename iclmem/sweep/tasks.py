"""One sweep task: fine-tune + probe + summarize one spec, its summary file in the store.

The summary ``<results>/sweep/<grid name>/<spec key>.json`` is written atomically when the task
ends: status ``ok`` with one row per (dataset, probing epoch), or ``error`` with the exception and
its traceback; its completion record ``<spec key>.json.complete.json`` follows (the file's sha256,
:mod:`iclmem.store.integrity`), and a summary is read only when it matches it.
The spec key hashes the spec, the probe settings, the dataset sources, the
reference checkpoint's sha256 and the version of the code that computes the rows.
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from ..bundle.serve import lookup
from ..data.dataset import Dataset
from ..ltm import ReferenceLTM, load_checkpoint, load_reference
from ..probe.settings import ProbeSettings
from ..store.atomic import atomic_write_text
from ..store.integrity import seal, served
from ..store.keys import code_version, content_key, input_key, results_root
from ..training.finetune import FinetuneRun
from ..training.grid import RunSpec, probe_views, run_spec
from ..training.regimes import JointRun
from .gridfile import DatasetSource, SweepError


def _is_model_spec(reference: object) -> bool:
    """A ``model`` parameter naming another architecture (``tabicl:PATH``, ``tabpfn:PATH``; :mod:`iclmem.adapters`)."""
    return isinstance(reference, str) and reference.startswith(("tabicl:", "tabpfn:"))


def reference_sha(reference: ReferenceLTM | str | Path | None) -> str:
    """The reference checkpoint as store keys read it (without loading it): sha256, plus ``@cuda`` on a GPU.

    A loaded model (the reference or an adapter) gives its ``store_identity``; a ``tabicl:PATH`` /
    ``tabpfn:PATH`` spec is loaded for it (cheap next to a task).
    """
    if hasattr(reference, "store_identity"):
        return reference.store_identity
    if _is_model_spec(reference):
        from ..adapters import load_model

        return load_model(reference).store_identity
    from ..ltm.reference import REFERENCE_WEIGHTS, sha256_file
    from ..runtime.device import compute_device, store_identity

    return store_identity(
        sha256_file(Path(reference) if reference is not None else REFERENCE_WEIGHTS), compute_device()
    )


def sweep_code_version() -> str:
    """The version of the code that computes a task's rows (part of every spec key)."""
    return code_version(__name__)


def spec_key(
    spec: RunSpec, probe: ProbeSettings, sources: Mapping[str, DatasetSource], ref_sha: str, version: str | None = None
) -> str:
    """A readable, content-addressed name for one task's summary file.

    ``version`` defaults to :func:`sweep_code_version`; a sweep computes it once and gives every
    task its key, so that all summaries of one sweep agree even while the code is being edited.
    """
    digest = content_key(*_task_inputs(spec, probe, sources, ref_sha), version or sweep_code_version(), length=12)
    return f"{_readable(spec)}-{digest}"


def _task_inputs(spec: RunSpec, probe: ProbeSettings, sources: Mapping[str, DatasetSource], ref_sha: str) -> tuple:
    return spec.to_dict(), asdict(probe), [asdict(sources[d]) if d in sources else d for d in spec.datasets], ref_sha


def _readable(spec: RunSpec) -> str:
    data = spec.dataset if len(spec.datasets) == 1 else f"{len(spec.datasets)}datasets"
    lr = f"{spec.learning_rate:g}".replace(".", "p")  # no dot in a key: the store reads a suffix as a file's
    return f"{spec.regime}-{data}-lr{lr}-Q{spec.query_size}-{spec.label_condition}"


def spec_input_key(spec: RunSpec, probe: ProbeSettings, sources: Mapping[str, DatasetSource], ref_sha: str) -> str:
    """The task's name in a results bundle: :func:`spec_key` without the code version
    (:func:`iclmem.store.keys.input_key`)."""
    return f"{_readable(spec)}-{input_key(*_task_inputs(spec, probe, sources, ref_sha), length=12)}"


def bundled_summary(
    spec: RunSpec, probe: ProbeSettings, sources: Mapping[str, DatasetSource], ref_sha: str
) -> dict | None:
    """The task's ``ok`` summary from a checked results bundle (:mod:`iclmem.bundle`), or None."""
    folder = lookup("sweep", spec_input_key(spec, probe, sources, ref_sha))
    if folder is None:
        return None
    summary = json.loads((folder / "summary.json").read_text())
    return summary if summary.get("status") == "ok" else None


def summary_dir(grid_name: str, results_dir: str | Path | None = None) -> Path:
    return results_root(results_dir) / "sweep" / grid_name


def summary_store(path: Path) -> Path:
    """The results store of a summary ``<results>/sweep/<grid name>/<key>.json``."""
    return Path(path).parents[2]


def read_summary(path: Path) -> dict | None:
    """A task's summary, or None when it is missing, has no completion record, or does not match its record (a
    damaged one is moved to ``<results>/quarantine/`` with one line naming it; the task is run again)."""
    if not served(path, summary_store(path)):
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_summary(path: Path, summary: dict) -> None:
    """Write a task's summary atomically, then its completion record (sha256 of the file,
    :mod:`iclmem.store.integrity`)."""
    atomic_write_text(path, json.dumps(summary, indent=1, default=str))
    seal(path, __name__, sweep_code_version())


@lru_cache(maxsize=4)
def _reference_from(path: str | None) -> ReferenceLTM:
    if _is_model_spec(path):
        from ..adapters import load_model

        return load_model(path)
    return load_reference() if path is None else load_checkpoint(Path(path))


def task_reference(reference: ReferenceLTM | str | Path | None) -> ReferenceLTM:
    """The M_ref a sweep task fine-tunes from: a loaded model as it is, else the shipped reference, a path or a
    tabicl:/tabpfn: spec."""
    if hasattr(reference, "predict"):  # a loaded model: the reference or an adapter
        return reference
    return _reference_from(None if reference is None else str(reference))


def probe_summary(
    run: FinetuneRun | JointRun,
    tables: Mapping[str, Dataset],
    probe: ProbeSettings,
    reference: ReferenceLTM,
    results_dir: str | Path | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Probe every dataset of a run and summarize per epoch (one row per dataset and probing epoch)."""
    frames = []
    settings = replace(probe, manipulations=probe.manipulations or None)  # a grid file's [] means all 48
    for view, summary, _ in probe_views(run, tables, reference, settings, results_dir, progress):
        summary.insert(0, "dataset", view.manifest.dataset)
        summary["members_logged"] = len(view.members_logged)
        summary["run_key"] = view.key
        frames.append(summary)
    return pd.concat(frames, ignore_index=True)


def _summary(
    status: str,
    spec: RunSpec,
    key: str,
    grid_name: str,
    probe: ProbeSettings,
    ref_sha: str,
    started: float,
    **extra: Any,
) -> dict:
    return {
        "status": status,
        "key": key,
        "grid": grid_name,
        "spec": spec.to_dict(),
        "probe": asdict(probe),
        "reference_sha256": ref_sha,
        "wall_s": round(time.perf_counter() - started, 3),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }


@dataclass(frozen=True)
class SweepContext:
    """What every task of one sweep shares: the grid's name and probe settings, its tables' sources, the results
    store, M_ref's sha256 (None: read from the reference), the folder of the paper's CARTE tables, the torch
    threads of a task, and the code version the sweep keyed its tasks with (None: this process's; a worker whose
    code differs refuses the task, so that a summary never names code that did not compute it)."""

    grid_name: str
    probe: ProbeSettings
    sources: Mapping[str, DatasetSource]
    results_dir: str | Path
    ref_sha: str | None = None
    carte_dir: str | None = None
    threads: int = 1
    version: str | None = None


def run_task(
    spec: RunSpec,
    context: SweepContext,
    *,
    reference: ReferenceLTM | str | Path | None = None,
    key: str | None = None,
) -> dict:
    """One sweep task: fine-tune + probe + summarize one spec, and write its summary file atomically.

    Returns the summary (``status`` ``ok`` with ``rows``, or ``error`` with ``error`` and
    ``traceback``); an exception inside the task is caught and reported, never raised. A spec
    whose summary already says ``ok`` is not recomputed.
    """
    import torch

    grid_name, probe, sources, results_dir = context.grid_name, context.probe, context.sources, context.results_dir
    ref_sha, carte_dir, threads = context.ref_sha, context.carte_dir, context.threads

    torch.set_num_threads(threads)
    started = time.perf_counter()
    ref_sha = ref_sha or reference_sha(reference)
    key = key or spec_key(spec, probe, sources, ref_sha)
    path = summary_dir(grid_name, results_dir) / f"{key}.json"
    done = read_summary(path)
    if done and done.get("status") == "ok":
        return done
    try:
        here = sweep_code_version()
        if context.version is not None and context.version != here:
            raise SweepError(
                f"the code changed under the running sweep (it keyed its tasks with code version {context.version}, "
                f"this worker runs {here}, e.g. a worker restarted after an edit): restart `iclmem sweep`; its "
                "finished tasks are kept"
            )
        ref = task_reference(reference)
        tables = {d: (sources[d] if d in sources else DatasetSource(d)).load(carte_dir) for d in spec.datasets}
        run = run_spec(spec, ref, results_dir, False, carte_dir, tables)
        rows = probe_summary(run, {t.name: t for t in tables.values()}, probe, ref, results_dir)
        for k, v in spec.to_dict().items():
            if k != "dataset":
                rows[k] = v
        out = _summary(
            "ok",
            spec,
            key,
            grid_name,
            probe,
            ref_sha,
            started,
            run_key=run.key,
            rows=json.loads(rows.to_json(orient="records")),
        )
    except Exception as exc:  # noqa: BLE001 - every failure is reported in the summary, the sweep goes on
        out = _summary(
            "error",
            spec,
            key,
            grid_name,
            probe,
            ref_sha,
            started,
            error=f"{type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(),
        )
    write_summary(path, out)
    return out


__all__ = [
    "SweepContext",
    "probe_summary",
    "read_summary",
    "reference_sha",
    "run_task",
    "spec_key",
    "summary_dir",
    "write_summary",
    "task_reference",
    "sweep_code_version",
]
