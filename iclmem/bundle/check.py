"""Checking a results bundle on this machine: draw a stratified sample, recompute it, accept or reject (issue 55).

The draws are a design's tasks at a probed epoch (:mod:`iclmem.bundle.recheck`) or a store's runs and chapter 06's
completions (:mod:`iclmem.bundle.run_check`). **Sample.** One draw from every stratum (task kind x Q x regime x
trained or not) first, then draws uniformly at random without replacement from the rest, with a seed. A change that
moves the numbers of a share ``f`` of the draws goes unseen by ``n`` draws with probability at most ``(1 - f)^n``
(:func:`detection_probability`).

A check writes its record (:func:`iclmem.bundle.serve.check_path`): the draws, how far each landed, the seed, the
verdict. ``accepted`` lets the engine serve the bundle; ``rejected`` names the draw that disagreed and by how much,
and the build computes instead.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..ltm import ReferenceLTM
from ..runtime.workers import in_workers, worker_count
from ..store.atomic import atomic_write_text
from ..sweep.tasks import task_reference
from . import serve
from .collect import machine
from .layout import Bundle
from .recheck import TOLERANCE, Draw, Landing, Tolerance, recompute_task, sweep_draws
from .run_check import recompute, store_draws

#: Draws of a check by default: with 29 draws a change that moves a tenth of the bundle is seen with
#: probability 1 - 0.9^29 = 95.3%.
DEFAULT_DRAWS = 29


def all_draws(bundle: Bundle) -> list[Draw]:
    """Every draw the bundle offers: its store's runs and completions, then its design's tasks."""
    return store_draws(bundle) + sweep_draws(bundle)


#: The torch threads a draw is recomputed on: the bundles' runs were computed on one (a sweep's tasks, the book's
#: workers and lanes), and a run near collapse amplifies the drift between thread counts far past the tolerance
#: (measured 2026-12-08: a Q = 512 run at lr 1e-3, epoch 100, recomputed in-process on two threads, 637x).
CHECK_THREADS = 1


def _recompute(draw: Draw, root: str, sources: dict, probe: dict, tol: Tolerance, reference: ReferenceLTM) -> Landing:
    """One draw recomputed here, as its source says, on :data:`CHECK_THREADS` torch threads (restored after)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(CHECK_THREADS)
    try:
        if draw.source == "sweep":
            return recompute_task(draw, root, sources, probe, tol, reference)
        return recompute(draw, root, tol, reference)
    finally:
        torch.set_num_threads(before)


def sample_draws(bundle: Bundle, n: int = DEFAULT_DRAWS, seed: int = 0) -> list[Draw]:
    """One draw per stratum (:attr:`Draw.stratum`; all of them, even past ``n``), then uniformly at random without
    replacement up to ``n`` among the runs' draws.

    Chapter 06's completions are one stratum with one draw: a bundle keeps them as one item per model, their keys
    already hold every input of a request (a prompt built otherwise is asked again), and one long prompt decoded on
    one thread costs a minute, so that 1,574 completions drawn at random beside 150 runs' epochs would spend the
    check on them."""
    rng = np.random.default_rng(seed)
    draws = all_draws(bundle)
    by_stratum: dict[tuple, list[int]] = defaultdict(list)
    for i, d in enumerate(draws):
        by_stratum[d.stratum].append(i)
    chosen = [int(rng.choice(idx)) for _, idx in sorted(by_stratum.items())]
    rest = np.array([i for i, d in enumerate(draws) if i not in set(chosen) and d.kind != "completion"], dtype=int)
    extra = max(0, min(n - len(chosen), len(rest)))
    chosen += [int(i) for i in rng.choice(rest, size=extra, replace=False)] if extra else []
    return [draws[i] for i in sorted(chosen)]


def detection_probability(n: int, share: float = 0.1) -> float:
    """The probability that ``n`` draws include one of a changed share ``share`` of the bundle (at least)."""
    return 1.0 - (1.0 - share) ** n


@dataclass
class CheckReport:
    """A check of one bundle on this machine: what was drawn, how far each landed, the verdict."""

    bundle: str
    digest: str
    engine: str
    seed: int
    tolerance: Tolerance
    landings: list[Landing]
    seconds: float = 0.0
    threads: int = 1

    @property
    def verdict(self) -> str:
        return "accepted" if self.landings and all(x.within for x in self.landings) else "rejected"

    def disagreements(self) -> list[str]:
        """One line per draw that landed outside the tolerance."""
        return [f"{x.draw.task} epoch {x.draw.epoch}: {x.worst()}" for x in self.landings if not x.within]

    def to_dict(self) -> dict:
        return {
            "bundle": self.bundle,
            "digest": self.digest,
            "engine_version": self.engine,
            "seed": self.seed,
            "draws": len(self.landings),
            "detection_probability_share_0.1": detection_probability(len(self.landings)),
            "tolerance": asdict(self.tolerance),
            "verdict": self.verdict,
            "disagreements": self.disagreements(),
            "landings": [
                {**asdict(x.draw), "excess": x.excess, "max_abs": x.max_abs, "seconds": x.seconds, "problem": x.problem}
                for x in self.landings
            ],
            "seconds": round(self.seconds, 1),
            "threads": self.threads,
            "machine": machine(),
        }


def draw_cost(draw: Draw) -> float:
    """A draw's CPU cost relative to the others, roughly (epochs trained, queries probed, a DP step's per-member
    gradients; a completion is one short decode): the check starts the longest first, so no worker waits for one at
    the end."""
    if draw.kind == "completion":
        return 0.1
    return (1 + draw.epoch) * (1 + draw.query_size / 64) * (25 if draw.regime == "dp" else 1)


def check_bundles(
    bundles: Sequence[Bundle],
    *,
    n: int = DEFAULT_DRAWS,
    seed: int = 0,
    workers: int | None = None,
    reference: ReferenceLTM | str | Path | None = None,
    progress: bool = True,
    write: bool = True,
) -> list[CheckReport]:
    """Recompute ``n`` draws of each bundle here, all of them in one pool of ``workers`` processes (the longest
    first, :func:`draw_cost`), and compare each with its bundle; write each bundle's check record (unless ``write``
    is False) that lets the engine serve it, or keeps it from doing so. Each report's seconds are the whole check's.
    Every draw is judged by the stated tolerance (:data:`TOLERANCE`, :mod:`iclmem.bundle.recheck`)."""
    started, tolerance = time.perf_counter(), TOLERANCE
    ref = task_reference(reference)
    calls, owner = [], []
    for i, bundle in enumerate(bundles):
        probe, sources = bundle.manifest.get("probe", {}), bundle.manifest.get("sources", {})
        for draw in sample_draws(bundle, n, seed):
            calls.append((draw, str(bundle.root), sources, probe, tolerance, ref))
            owner.append(i)
    order = sorted(range(len(calls)), key=lambda c: -draw_cost(calls[c][0]))
    names = ", ".join(b.name for b in bundles)
    done = in_workers(_recompute, [calls[c] for c in order], worker_count(workers), f"recomputing {names}", progress)
    landings: list[Landing | None] = [None] * len(calls)
    for position, c in enumerate(order):
        landings[c] = done[position]
    reports = []
    for i, bundle in enumerate(bundles):
        mine = [x for x, o in zip(landings, owner, strict=True) if o == i and x is not None]
        report = CheckReport(bundle.name, bundle.digest, serve.engine_version(), seed, tolerance, mine)
        report.seconds = time.perf_counter() - started
        report.threads = CHECK_THREADS
        if write:
            path = serve.check_path(bundle)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(report.to_dict(), indent=1) + "\n")
        reports.append(report)
    serve.reset()
    return reports


def check_bundle(bundle: Bundle, **settings) -> CheckReport:
    """:func:`check_bundles` of one bundle (the same keyword arguments)."""
    return check_bundles([bundle], **settings)[0]


__all__ = [
    "DEFAULT_DRAWS",
    "CheckReport",
    "all_draws",
    "check_bundle",
    "check_bundles",
    "draw_cost",
    "detection_probability",
    "sample_draws",
]
