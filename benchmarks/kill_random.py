"""Benchmark: SIGKILL a tiny real book (notebooks 01 and 02) at random instants, resume, compare.

Builds the tiny book of ``tests/random_kills.py`` once without a kill (its wall time is the span
the instants are drawn from), then for each of ``--instants`` seeded instants builds it afresh,
SIGKILLs ``iclmem book`` and its kernel there, runs the same command again and compares the build
folder, the results store and the cache with the uninterrupted build's (what is ignored: the
module docstring of ``tests/random_kills.py``). ``tests/book/test_kill_random.py`` runs the same check
at 3 instants. Writes ``benchmarks/results/kill_random.json``.

    python benchmarks/kill_random.py [--instants 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from random_kills import (  # noqa: E402  (tests/ is not a package)
    CHAPTERS,
    IGNORED,
    PARAMETERS,
    TIMESTAMPED_STORE_FILES,
    TinyBook,
    baseline,
    instants,
    kill_at,
)

from iclmem.store.atomic import atomic_write_text  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instants", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "kill_random.json"))
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kill_random_") as tmp:
        book = TinyBook.create(Path(tmp))
        reference = baseline(book)
        print(f"uninterrupted build: {reference.seconds:.1f} s, {len(reference.files)} files", flush=True)
        trials = []
        for number, instant in enumerate(instants(args.instants, reference.seconds, args.seed), 1):
            trial = kill_at(book, instant, reference)
            trials.append(trial)
            print(
                f"[{number}/{args.instants}] kill at {trial.instant_s:5.1f} s: {trial.landed}; resume "
                f"{trial.resume_s:.1f} s ({trial.resume_summary}); equal: {trial.equal}; "
                f"temporary files left: {len(trial.temporary_left)}",
                flush=True,
            )
            for name in trial.differing_files + trial.differing_glue:
                print(f"    differs: {name}", flush=True)
    landed = collections.Counter(t.landed for t in trials)
    result = {
        "chapters": list(CHAPTERS),
        "parameters": PARAMETERS,
        "seed": args.seed,
        "instants": args.instants,
        "baseline_s": round(reference.seconds, 1),
        "files_compared": len(reference.files),
        "all_equal": all(t.equal for t in trials),
        "unequal": sum(not t.equal for t in trials),
        "temporary_files_left": sum(len(t.temporary_left) for t in trials),
        "landed": dict(sorted(landed.items())),
        "ignored": IGNORED,
        "timestamped_store_files": list(TIMESTAMPED_STORE_FILES),
        "total_s": round(time.monotonic() - started, 1),
        "rows": [t.record() for t in trials],
    }
    atomic_write_text(Path(args.out), json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
