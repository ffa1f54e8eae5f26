"""Independent runs in parallel worker processes: ``$ICLMEM_WORKERS`` (Sec. 5's grid, Tab. 2).

The runs of a grid are independent (each its own copy of M_ref, its own seeds and store folder).
On this 2-core machine a fine-tuning step scales poorly over threads (1.3x from 1 to 2 threads at
256 context + 512 query rows, ``benchmarks/roofline.py``), so two processes of one thread each
finish a grid sooner than one process of two threads. ``ICLMEM_WORKERS=N`` (default 1: in this
process) runs N processes with ``max(1, cores // N)`` threads each. Results are the same runs,
through the same store; numbers equal an in-process run's to float32 summation order (one thread
sums in another order than two), as with ``$ICLMEM_THREADS``.

Workers are spawned (fresh interpreters), so a Python *script* that runs a grid with workers must
keep its top-level code under ``if __name__ == "__main__":`` (notebooks and ``iclmem run`` need
nothing).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed, wait
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

    os.environ["ICLMEM_THREADS"] = str(threads)  # what load_checkpoint applies in this process
    torch.set_num_threads(threads)


_POOLS: dict[int, ProcessPoolExecutor] = {}


def _pool(workers: int) -> ProcessPoolExecutor:
    """This process's pool of ``workers`` spawned workers, started once and reused by every later call.

    A pool costs about 5 s to start here (a fresh interpreter importing torch and iclmem); a
    notebook that loads its runs, then probes M_ref, then probes the runs starts it once.
    """
    pool = _POOLS.get(workers)
    if pool is None or getattr(pool, "_broken", False):
        threads = max(1, (os.cpu_count() or 1) // workers)
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch threads or locks inherited
        pool = _POOLS[workers] = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker,
                                                     initargs=(threads,))
    return pool


@atexit.register
def shutdown_pools() -> None:
    """Stop every worker pool of this process (at exit, or to free the workers' memory)."""
    while _POOLS:
        _POOLS.popitem()[1].shutdown(wait=True, cancel_futures=True)


def in_workers(fn: Callable[..., T], calls: Sequence[tuple], workers: int, desc: str = "runs", progress: bool = False) -> list[T]:
    """``[fn(*args) for args in calls]``, computed in ``workers`` spawned processes (in order of ``calls``).

    ``fn`` and its arguments must pickle (a module-level function; tables, specs and the reference
    model do). An exception in a worker is raised here, after the calls already running finish.
    The workers stay up for the next call (:func:`shutdown_pools` stops them).
    """
    if workers <= 1 or len(calls) <= 1:
        return [fn(*args) for args in Bar(calls, desc=desc, disable=not progress)]
    out: list[Any] = [None] * len(calls)
    pool = _pool(workers)
    futures = {pool.submit(fn, *args): i for i, args in enumerate(calls)}
    try:
        for future in Bar(as_completed(futures), total=len(futures), desc=desc, disable=not progress):
            out[futures[future]] = future.result()
    except BaseException:
        for future in futures:
            future.cancel()
        wait(list(futures))
        raise
    return out


__all__ = ["WORKERS_ENV", "in_workers", "shutdown_pools", "worker_count"]
