"""Independent runs and probes in parallel worker processes: ``$ICLMEM_WORKERS`` (Sec. 5's grid, Tab. 2).

The runs of a grid are independent (each its own copy of M_ref, its own seeds and store folder),
and so are their probes. On this 2-core machine probing scales poorly over threads (1.2x from 1
to 2 threads, ``benchmarks/roofline.py``), a fine-tuning step better (1.65x at 256 context + 512
query rows), so two processes of one thread each finish a grid sooner than one process of two
threads (``book/reproduce.md`` has the measurements; ``make book`` uses two). ``ICLMEM_WORKERS=N``
(default 1: in this process) runs N processes with ``max(1, cores // N)`` threads each. Results
are the same runs, through the same store; numbers equal an in-process run's to float32 summation
order (one thread sums in another order than two), as with ``$ICLMEM_THREADS``.

Workers are spawned (fresh interpreters), so a Python *script* that runs a grid with workers must
keep its top-level code under ``if __name__ == "__main__":`` (notebooks and ``iclmem run`` need
nothing).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed, wait
from contextlib import contextmanager
from typing import Any, TypeVar

from .progress import Bar
from .threads import positive_int_env

WORKERS_ENV = "ICLMEM_WORKERS"
T = TypeVar("T")


def worker_count(workers: int | None = None) -> int:
    """``workers`` if given, else ``$ICLMEM_WORKERS``, else 1 (everything in this process)."""
    if workers is None:
        workers = positive_int_env(WORKERS_ENV, "to run in this process", example=2) or 1
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}.")
    return workers


def _start_worker(threads: int) -> None:
    import torch

    # Ctrl-C and Jupyter's shutdown signal the whole process group: the parent stops its workers
    # itself (shutdown when its pool closes, terminate on an interrupt), so an idle worker prints nothing.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    os.environ["ICLMEM_THREADS"] = str(threads)  # what load_checkpoint applies in this process
    torch.set_num_threads(threads)


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` spawned processes with ``max(1, cores // workers)`` torch threads each.

    Starting one costs seconds (fresh interpreters importing torch and iclmem; measured by
    ``benchmarks/sweep_scaling.py``), so a caller with several rounds of calls (M_ref first, then
    every run) shares one pool between them.
    """
    threads = max(1, (os.cpu_count() or 1) // workers)
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch threads or locks inherited
    try:
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=_start_worker, initargs=(threads,)
        ) as pool:
            yield pool
    finally:
        pool = None
        gc.collect()  # release the pool's semaphores now: a Jupyter kernel may exit without finalizing them (a warning)


def in_workers(
    fn: Callable[..., T],
    calls: Sequence[tuple],
    workers: int,
    desc: str = "runs",
    progress: bool = False,
    pool: ProcessPoolExecutor | None = None,
) -> list[T]:
    """``[fn(*args) for args in calls]``, computed in ``workers`` spawned processes (in order of ``calls``).

    ``fn`` and its arguments must pickle (a module-level function; tables, specs and the reference
    model do). ``pool``: a :func:`worker_pool` to use (else one is started for these calls). An
    exception in a worker is raised here, after the calls already running finish; an interrupt
    (Ctrl-C) stops the workers at once.
    """
    if workers <= 1 or len(calls) <= 1:
        return [fn(*args) for args in Bar(calls, desc=desc, disable=not progress or not calls)]
    if pool is None:
        with worker_pool(min(workers, len(calls))) as own:
            return in_workers(fn, calls, workers, desc, progress, own)
    out: list[Any] = [None] * len(calls)
    futures = {pool.submit(fn, *args): i for i, args in enumerate(calls)}
    try:
        for future in Bar(as_completed(futures), total=len(futures), desc=desc, disable=not progress):
            out[futures[future]] = future.result()
    except KeyboardInterrupt:  # stop now: the running calls are lost (a run resumes from its last checkpoint)
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        for future in futures:
            future.cancel()
        wait(list(futures))
        raise
    return out


__all__ = ["WORKERS_ENV", "in_workers", "worker_count", "worker_pool"]
