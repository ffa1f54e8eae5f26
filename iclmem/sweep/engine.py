"""Running a grid's tasks on Dask distributed (or in this process), with resume and a progress bar."""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..ltm import ReferenceLTM
from ..runtime.progress import Bar
from ..runtime.workers import worker_count
from ..store.keys import results_root
from ..training.grid import RunSpec
from .gridfile import Grid, SweepError
from .tasks import (
    SweepContext,
    _summary,
    bundled_summary,
    read_summary,
    reference_sha,
    run_task,
    spec_key,
    summary_dir,
    sweep_code_version,
    write_summary,
)

DEFAULT_TIMEOUT_S = 10.0


@dataclass
class SweepResult:
    """Summaries of every task of a grid, in grid order, and how this call got them."""

    grid: Grid
    summaries: list[dict]
    from_store: int = 0
    ran: int = 0
    wall_s: float = 0.0
    engine: str = "store"
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[dict]:
        return [s for s in self.summaries if s.get("status") == "error"]

    @property
    def missing(self) -> list[dict]:
        return [s for s in self.summaries if s.get("status") == "missing"]

    def rows(self) -> pd.DataFrame:
        """Every row of every ``ok`` task: one per (dataset, probing epoch), with the spec's columns."""
        frames = [
            pd.DataFrame(s["rows"]).assign(spec_key=s["key"])
            for s in self.summaries
            if s.get("status") == "ok" and s.get("rows")
        ]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def errors(self) -> pd.DataFrame:
        """One row per failed task: the spec and the error."""
        return pd.DataFrame([{**s["spec"], "error": s.get("error", "")} for s in self.failed])

    def report(self) -> str:
        lines = [
            f"grid {self.grid.name!r}: {len(self.summaries)} tasks; {self.from_store} from the store, {self.ran} ran "
            f"({self.engine}), {len(self.failed)} failed, {len(self.missing)} missing; {self.wall_s:.1f} s"
        ]
        for s in self.failed:
            lines.append(f"  FAILED {s['key']}: {s.get('error', '').splitlines()[0] if s.get('error') else ''}")
        return "\n".join(lines + [f"  {n}" for n in self.notes])


def connect(scheduler: str, timeout: float = DEFAULT_TIMEOUT_S):
    """A :class:`distributed.Client` on an existing scheduler; a clear error within ``timeout`` seconds if
    unreachable."""
    from distributed import Client

    try:
        return Client(scheduler, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SweepError(
            f"could not reach the Dask scheduler at {scheduler!r} within {timeout:g} s ({type(exc).__name__}: {exc}); "
            "check the address (e.g. tcp://host:8786) and that a scheduler runs there (`dask scheduler`)."
        ) from None


#: Dask's nannies start workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-environ``).
#: Any explicit trim threshold turns off glibc's dynamic mmap threshold, so every large tensor is a fresh
#: mmap: measured here, a sweep task ran 1.3-1.45x slower with it (benchmarks/sweep_scaling.py). Local
#: workers start without it; the thread limits of that setting (OMP/MKL/OpenBLAS = 1) are kept.
SLOW_WORKER_ENVIRON = ("MALLOC_TRIM_THRESHOLD_",)


def worker_environ() -> dict[str, Any]:
    """Dask's pre-spawn environment for workers, without :data:`SLOW_WORKER_ENVIRON`."""
    import dask

    return {
        k: v
        for k, v in (dask.config.get("distributed.nanny.pre-spawn-environ") or {}).items()
        if k not in SLOW_WORKER_ENVIRON
    }


def local_client(workers: int, processes: bool = True):
    """A Client on a fresh :class:`distributed.LocalCluster`: ``workers`` workers with one thread each,
    started with :func:`worker_environ` (the nannies read it once, so a restarted worker gets it too)."""
    import dask
    from distributed import Client, LocalCluster

    # worker-saturation 1.0: a one-thread worker holds one task at a time, so the largest tasks, submitted first
    # (:func:`_submit`), go to different workers (Dask's default 1.1 hands each worker two)
    with dask.config.set(
        {"distributed.nanny.pre-spawn-environ": worker_environ(), "distributed.scheduler.worker-saturation": 1.0}
    ):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    return Client(cluster, set_as_default=False)


def collect_sweep(
    grid: Grid, results_dir: str | Path | None = None, reference: ReferenceLTM | str | Path | None = None
) -> SweepResult:
    """The grid's summaries as they are in the store, computing nothing (absent tasks: status ``missing``)."""
    ref_sha, version = reference_sha(reference), sweep_code_version()
    summaries = []
    for spec in grid.specs:
        key = spec_key(spec, grid.probe, grid.sources, ref_sha, version)
        found = read_summary(summary_dir(grid.name, results_dir) / f"{key}.json") or bundled_summary(
            spec, grid.probe, grid.sources, ref_sha
        )
        summaries.append(found or {"status": "missing", "key": key, "spec": spec.to_dict()})
    return SweepResult(grid, summaries, from_store=sum(s["status"] != "missing" for s in summaries))


def sweep_workers(workers: int | None = None) -> int:
    """:func:`run_sweep`'s ``workers``: ``workers`` if given (0: this process), else ``$ICLMEM_WORKERS``.

    From the environment, 1 (or unset) means this process (0) and N > 1 a local cluster of N
    one-thread processes; ``make book`` sets 2, which runs notebook 05's sweep on both cores.
    """
    if workers is not None:
        return workers
    n = worker_count(None)
    return 0 if n == 1 else n


@dataclass(frozen=True)
class Cluster:
    """Where a sweep's tasks run: ``client`` (a Dask client) if given; else ``scheduler`` (an address, connected
    within ``timeout`` seconds); else a local cluster of ``workers`` processes (threads with ``processes=False``);
    ``workers=0`` runs the tasks in this process without Dask."""

    workers: int = 2
    processes: bool = True
    scheduler: str | None = None
    client: Any = None
    timeout: float = DEFAULT_TIMEOUT_S


def run_sweep(
    grid: Grid,
    *,
    results_dir: str | Path | None = None,
    cluster: Cluster = Cluster(),
    reference: ReferenceLTM | str | Path | None = None,
    carte_dir: str | None = None,
    progress: bool = True,
    threads: int = 1,
) -> SweepResult:
    """Run every task of ``grid`` whose summary is not ``ok`` yet, on ``cluster``; return all summaries.

    ``reference``: the M_ref to fine-tune from (a :class:`ReferenceLTM`, a checkpoint path, or None for the shipped
    one); ``threads``: torch threads per task. A progress bar counts tasks done out of the grid's total.
    """
    workers, scheduler, client, processes = cluster.workers, cluster.scheduler, cluster.client, cluster.processes
    started = time.perf_counter()
    root = results_root(results_dir).resolve()
    ref_sha = reference_sha(reference)
    version = sweep_code_version()
    keys = [spec_key(s, grid.probe, grid.sources, ref_sha, version) for s in grid.specs]
    summaries: dict[str, dict] = {}
    for spec, k in zip(grid.specs, keys, strict=True):
        found = read_summary(summary_dir(grid.name, root) / f"{k}.json")
        if not (found and found.get("status") == "ok"):
            found = bundled_summary(spec, grid.probe, grid.sources, ref_sha)  # a checked results bundle's
        if found and found.get("status") == "ok":
            summaries[k] = found
    todo = [(s, k) for s, k in zip(grid.specs, keys, strict=True) if k not in summaries]
    result = SweepResult(grid, [], from_store=len(summaries))
    context = SweepContext(grid.name, grid.probe, grid.sources, str(root), ref_sha, carte_dir, threads, version)
    if workers < 0:
        raise SweepError(f"workers must be >= 0 (0: in this process), got {workers}")
    in_process = client is None and scheduler is None and workers == 0
    own = bool(todo) and not in_process and client is None
    if own:  # connect before the progress bar: an unreachable scheduler fails here, within `timeout`
        client = connect(scheduler, cluster.timeout) if scheduler else local_client(workers, processes)
    bar = Bar(total=len(keys), initial=len(summaries), disable=not progress, desc=f"sweep {grid.name}", unit="task")
    try:
        if todo and in_process:
            result.engine = "in-process"
            for spec, key in todo:
                summaries[key] = run_task(spec, context, reference=reference, key=key)
                bar.update(1)
        elif todo:
            kind = "processes" if processes else "threads"
            result.engine = (
                (f"dask scheduler {scheduler}" if scheduler else f"dask local cluster of {workers} {kind}")
                if own
                else "dask client"
            )
            summaries.update(_submit(client, todo, reference, context, bar, grid, ref_sha))
    finally:
        bar.close()
        if own:
            local = None if scheduler else getattr(client, "cluster", None)
            client.close()
            if local is not None:
                local.close()
    result.ran = len(todo)
    result.summaries = [summaries[k] for k in keys]
    result.wall_s = time.perf_counter() - started
    return result


def _task(spec: RunSpec, reference: Any, key: str, context: SweepContext) -> dict:
    return run_task(spec, context, reference=reference, key=key)


def _submit(
    client: Any,
    todo: list[tuple[RunSpec, str]],
    reference: Any,
    context: SweepContext,
    bar: Any,
    grid: Grid,
    ref_sha: str,
) -> dict[str, dict]:
    from distributed import as_completed

    ref = reference
    if isinstance(reference, ReferenceLTM) and client.scheduler_info().get("workers"):
        ref = client.scatter(reference, broadcast=True, hash=False)  # one copy per worker, not one per task
    # Dask's own `key=` names the task; the summary's key goes in as `summary_key` (run_task's `key`)
    todo = sorted(todo, key=lambda t: -t[0].work)  # the largest tasks first: the last to finish is a small one
    futures = {
        client.submit(_task, spec, ref, key, context, key=f"iclmem-sweep-{key}", pure=False): (spec, key)
        for spec, key in todo
    }
    out = {}
    for future in as_completed(futures, loop=client.loop):
        spec, key = futures[future]
        try:
            out[key] = future.result()
        except Exception as exc:  # noqa: BLE001 - e.g. a worker died (KilledWorker): report it, keep going
            out[key] = _summary(
                "error",
                spec,
                key,
                grid.name,
                grid.probe,
                ref_sha,
                time.perf_counter(),
                error=f"{type(exc).__name__}: {exc}",
                traceback=traceback.format_exc(),
            )
            write_summary(summary_dir(grid.name, context.results_dir) / f"{key}.json", out[key])
        bar.update(1)
    return out


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "Cluster",
    "SweepResult",
    "collect_sweep",
    "connect",
    "local_client",
    "run_sweep",
    "sweep_workers",
]
