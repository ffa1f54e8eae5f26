"""Lanes of a book build: chapters that share no results execute at the same time (``iclmem book --jobs N``).

A build executes its notebooks one after another by default. On a machine of a few cores that
leaves cores idle: notebooks 04-07 run one torch process whose two threads reach about 1.2x one
thread's speed (``benchmarks/results/roofline.json``), and the LLM chapter (06) shares nothing with
the tabular chapters (its model, its data, its caches are its own). ``book/lanes.yaml`` names such
groups, *lanes*:

.. code-block:: yaml

    lanes:
      llm: [06_llm_kshot_replication]

A notebook the file does not list runs in the lane ``main``. Each lane executes its notebooks in
the build's order; with ``--jobs 2`` (``make book``'s default) two lanes execute at once, each in
its own process: ``main`` and the file's first lane start, and each further lane starts, in the
file's order, when a lane has ended. Reader pages (the scorecard) run after every lane. A chapter
that reads another's results must follow it in the same lane. Two lanes should share no results: a
result that both compute at once is computed twice (to the same bytes, as every write is atomic).

**Threads.** While lanes run side by side, every kernel gets ``ICLMEM_THREADS=1`` (unless the
variable is set): two torch processes of two threads on two cores wait on each other
(``book/reproduce.md``). The thread count is fixed for the whole build, never adapted to how many
lanes are still running, so a chapter's numbers do not depend on which lane finished first. Progress
lines of the lanes, which share the terminal, are written as plain lines (``ICLMEM_PROGRESS_LINES``).

**Failures.** When a notebook fails, its lane stops, the others finish the notebook they are running
and start no other, and the first failure is raised.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import yaml

from iclmem.book.execute import UsageError
from iclmem.runtime.progress import LINES_ENV
from iclmem.runtime.threads import THREADS_ENV

#: The lanes of a book, relative to its root.
LANES_FILE = "book/lanes.yaml"
#: The lane of every notebook the lanes file does not list.
MAIN_LANE = "main"


def read_lanes(root: Path, notebooks: Sequence[str]) -> dict[str, list[str]]:
    """The lanes of ``<root>/book/lanes.yaml``: ``lane -> its notebooks`` (toc names, in ``notebooks``' order).

    :data:`MAIN_LANE` comes first and holds every notebook the file does not list; the file's lanes
    follow in its order, which is the order in which lanes start when there are more lanes than
    jobs. Entries name notebooks by stem (``06_llm_kshot_replication``) or toc name; an entry that is
    not a notebook of the toc, or a notebook listed in two lanes, is a :class:`UsageError`.
    """
    path = root / LANES_FILE
    data: Any = {}
    if path.is_file():
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise UsageError(f"{path} is not valid YAML: {exc}") from exc
    lanes = data.get("lanes", {}) if isinstance(data, dict) else None
    if not isinstance(lanes, dict) or not all(isinstance(v, list) for v in lanes.values()):
        raise UsageError(f"{path}: expected 'lanes:' mapping each lane to a list of notebooks, e.g. llm: [06_llm]")
    by_stem = {Path(name).name: name for name in notebooks}
    placed: dict[str, str] = {}
    for lane, entries in lanes.items():
        for entry in entries:
            name = by_stem.get(str(entry), str(entry) if str(entry) in notebooks else None)
            if name is None:
                raise UsageError(
                    f"{path}: lane {lane!r} lists {entry!r}, which is not a notebook of _toc.yml; "
                    f"notebooks: {', '.join(by_stem)}"
                )
            if name in placed and placed[name] != lane:
                raise UsageError(f"{path}: {entry!r} is in two lanes ({placed[name]!r} and {lane!r}); keep one")
            placed[name] = str(lane)
    order = [MAIN_LANE, *(str(lane) for lane in lanes if str(lane) != MAIN_LANE)]
    return {lane: [n for n in notebooks if placed.get(n, MAIN_LANE) == lane] for lane in order}


def group_by_lane(names: Sequence[str], lanes: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """``names`` split into ``lanes`` (in their order), each in the order of ``names``; empty lanes left out."""
    groups = [[n for n in names if n in set(members)] for members in lanes.values()]
    unplaced = [n for n in names if not any(n in g for g in groups)]
    if unplaced:
        raise ValueError(f"notebooks in no lane: {unplaced}")
    return [g for g in groups if g]


_STOP: Any = None  # the pool's stop event, in a lane's process


def _start_lane(stop: Any, env: Mapping[str, str]) -> None:
    global _STOP
    _STOP = stop
    os.environ.update(env)


def _run_lane(names: Sequence[str], run_one: Callable[[str], float]) -> dict[str, float]:
    """Wall seconds per notebook of ``names``, executed in order with ``run_one`` (in a lane's process), until one
    fails or another lane failed."""
    seconds: dict[str, float] = {}
    for name in names:
        if _STOP is not None and _STOP.is_set():
            break
        try:
            seconds[name] = run_one(name)
        except BaseException:
            if _STOP is not None:
                _STOP.set()
            raise
    return seconds


def lane_environment() -> dict[str, str]:
    """The environment of lanes that run side by side: one torch thread each (unless set), plain progress lines."""
    env = {LINES_ENV: "1"}
    if not os.environ.get(THREADS_ENV, "").strip():
        env[THREADS_ENV] = "1"
    return env


def run_lanes(lanes: Sequence[Sequence[str]], run_one: Callable[[str], float], jobs: int = 1) -> dict[str, float]:
    """Execute every lane's notebooks with ``run_one`` (a picklable callable: notebook name -> wall seconds).

    ``jobs`` <= 1, or a single lane: one after another in this process. Otherwise up to ``jobs`` lanes at
    once, each in a process of its own (spawned) with :func:`lane_environment`; returns wall seconds per
    executed notebook, and raises the first failure after the other lanes stopped.
    """
    if jobs < 1:
        raise UsageError(f"jobs={jobs}: give at least 1 (1 executes the notebooks one after another)")
    lanes = [list(lane) for lane in lanes if lane]
    if jobs == 1 or len(lanes) <= 1:
        return {name: run_one(name) for lane in lanes for name in lane}
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    seconds: dict[str, float] = {}
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(lanes)),
        mp_context=context,
        initializer=_start_lane,
        initargs=(stop, lane_environment()),
    ) as pool:
        futures = [pool.submit(_run_lane, lane, run_one) for lane in lanes]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = next((f for f in done if f.exception() is not None), None)
        if failed is not None:
            stop.set()
            print("a notebook failed: the other lanes finish their current notebook and stop", flush=True)
        wait(futures)
    if failed is not None:
        raise failed.exception()
    for future in futures:
        seconds.update(future.result())
    return seconds


__all__ = [
    "LANES_FILE",
    "MAIN_LANE",
    "group_by_lane",
    "lane_environment",
    "read_lanes",
    "run_lanes",
]
