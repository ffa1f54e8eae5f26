"""``iclmem bundle``: make a results bundle from a sweep's store (or collect a whole store), check it on this machine,
verify its files (issue 55).

``iclmem book`` runs :func:`ensure_checked` before it executes a notebook: each bundle in use is checked once per
machine and code version (a recomputed sample, :mod:`iclmem.bundle.check`); ``iclmem book --recompute`` serves
none and computes everything.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_bundle(subparsers: Any) -> None:
    p = subparsers.add_parser("bundle", help="make, check or verify a results bundle (a design's results, read-only)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    make = actions.add_parser("make", help="copy a grid's finished tasks from a results store into a bundle")
    make.add_argument("grid", type=Path, metavar="GRID.yaml")
    make.add_argument("--out", type=Path, required=True, metavar="FOLDER", help="the bundle (made, or extended)")
    make.add_argument("--results", type=Path, metavar="STORE", help="the sweep's store (default: $ICLMEM_RESULTS)")
    make.add_argument(
        "--scores", choices=("full", "witness"), default="full",
        help="keep every probe score (default), or only those a check probes again (a design too large for its scores)",
    )  # fmt: skip
    make.add_argument(
        "--null-permutations", type=int, default=0, metavar="N",
        help="also keep each probed run's membership null at N permutations (the notebooks draw 1000; default 0: none)",
    )  # fmt: skip
    make.set_defaults(func=cmd_bundle_make)
    collect = actions.add_parser(
        "collect", help="copy every finished run and probe score of a results store (a book build's) into a bundle"
    )
    collect.add_argument("--out", type=Path, required=True, metavar="FOLDER", help="the bundle (made, or extended)")
    collect.add_argument("--results", type=Path, metavar="STORE", help="the store (default: $ICLMEM_RESULTS)")
    collect.add_argument(
        "--completions", type=Path, metavar="FOLDER",
        help="also chapter 06's completion cache (e.g. ~/.cache/iclmem/llm_completions)",
    )  # fmt: skip
    collect.add_argument(
        "--executed", type=Path, metavar="FOLDER",
        help="the build's executed notebooks (_build/executed): their CPU seconds are recorded as the bundle's cost",
    )  # fmt: skip
    collect.set_defaults(func=cmd_bundle_collect)
    check = actions.add_parser("check", help="recompute a random sample of each bundle here; accept or reject it")
    _bundle_arg(check)
    check.add_argument("--draws", type=int, default=None, metavar="N", help="draws to recompute (default: 29)")
    check.add_argument("--seed", type=int, default=0, help="the seed of the draw (default: 0)")
    check.add_argument("--workers", type=int, default=None, metavar="N", help="processes (default: $ICLMEM_WORKERS)")
    check.set_defaults(func=cmd_bundle_check)
    verify = actions.add_parser("verify", help="check every file of each bundle against its checksums")
    _bundle_arg(verify)
    verify.set_defaults(func=cmd_bundle_verify)


def _bundle_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bundle", type=Path, metavar="FOLDER", help="a bundle or a folder of bundles (default: $ICLMEM_BUNDLE, else "
        "bundle/)"
    )  # fmt: skip


def _bundles(folder: Path | None) -> list:
    from .layout import BundleError, read_bundle
    from .serve import bundle_roots

    roots = bundle_roots(str(folder)) if folder else bundle_roots()
    if not roots:
        raise BundleError(
            f"no bundle at {folder or 'bundle/'}: give a folder with BUNDLE.json, or a folder of them (--bundle)"
        )
    return [read_bundle(r) for r in roots]


def cmd_bundle_make(args: argparse.Namespace) -> int:
    from iclmem.sweep import load_grid

    from .collect import Contents, make_bundle

    grid = load_grid(args.grid)
    contents = Contents(args.scores, args.null_permutations)
    command = (
        f"iclmem bundle make {args.grid} --out {args.out}"
        + (f" --results {args.results}" if args.results else "")
        + (f" --scores {args.scores}" if args.scores != "full" else "")
        + (f" --null-permutations {args.null_permutations}" if args.null_permutations else "")
    )
    bundle, report = make_bundle(
        grid, args.out, results_dir=args.results, command=command, grid_file=args.grid, contents=contents
    )
    print(
        f"bundle {bundle.name}: {report['bundled']} tasks added, {report['already']} already there, "
        f"{report['pending']} not finished in the store; "
        f"{bundle.manifest['tasks_bundled']} of {len(grid.specs)} tasks bundled "
        f"({bundle.manifest['cpu_hours']} CPU-hours)"
    )
    return 0


def cmd_bundle_collect(args: argparse.Namespace) -> int:
    from .store_runs import collect_store

    command = f"iclmem bundle collect --out {args.out}" + (f" --results {args.results}" if args.results else "")
    command += f" --completions {args.completions}" if args.completions else ""
    command += f" --executed {args.executed}" if args.executed else ""
    bundle, report = collect_store(
        args.out, results_dir=args.results, command=command, completions=args.completions, executed=args.executed
    )
    print(
        f"bundle {bundle.name}: {report['runs']} runs, {report['joint_runs']} joint runs, {report['scores']} probe "
        f"scores, {report['outputs']} M_theta outputs and {report['completions']} completions read; "
        f"{len(bundle.items)} items in the bundle; left out: {report['other_reference']} runs of another reference, "
        f"{report['unowned_scores']} scores of no run in the store"
    )
    return 0


def format_report(report: Any) -> str:
    """The lines a check prints: its verdict, draws, seed, detection probability, and each disagreement."""
    from .check import detection_probability

    n = len(report.landings)
    lines = [
        f"bundle {report.bundle}: {report.verdict} ({n} draws recomputed, seed {report.seed}, "
        f"{report.seconds:.0f} s; a change moving a tenth of the bundle is caught with probability "
        f"{detection_probability(n):.1%})"
    ]
    return "\n".join(lines + [f"  disagrees: {line}" for line in report.disagreements()])


def cmd_bundle_check(args: argparse.Namespace) -> int:
    from .check import DEFAULT_DRAWS, check_bundles

    ok = True
    for report in check_bundles(
        _bundles(args.bundle), n=args.draws or DEFAULT_DRAWS, seed=args.seed, workers=args.workers
    ):
        print(format_report(report))
        ok &= report.verdict == "accepted"
    return 0 if ok else 1


def verify_bundle(bundle: Any) -> list[str]:
    """One line per item of ``bundle`` whose files do not match their record (or the manifest)."""
    from iclmem.store.integrity import inspect, read_record

    bad = []
    for name, entry in sorted(bundle.items.items()):
        folder = bundle.item_dir(entry["kind"], entry["key"])
        check = inspect(folder, verify=False)
        if check.state != "ok":
            bad.append(f"{name}: {check.state} ({check.detail})")
        elif (read_record(folder) or {}).get("digest") != entry.get("record_digest"):
            bad.append(f"{name}: its completion record is not the one the manifest names")
    return bad


def cmd_bundle_verify(args: argparse.Namespace) -> int:
    ok = True
    for bundle in _bundles(args.bundle):
        bad = verify_bundle(bundle)
        print(f"bundle {bundle.name}: {len(bundle.items) - len(bad)} of {len(bundle.items)} items intact")
        for line in bad:
            print(f"  damaged {line}", file=sys.stderr)
        ok &= not bad
    return 0 if ok else 1


def ensure_checked(progress: bool = True, grid: str | None = None) -> list[str]:
    """Check every complete bundle in use that has no check record for this machine and code (``iclmem book``'s first
    step; their draws together, in one pool); one line per bundle: served, rejected and why, or not read yet (a
    design whose sweep is still running). With ``grid`` (``iclmem sweep``'s first step) only the bundles of that
    grid, finished or not: a sweep resumes from its own checked bundle."""
    from .check import check_bundles
    from .layout import BundleError, read_bundle
    from .serve import bundle_roots, read_check, reset

    lines, unchecked, in_use = [], [], []
    for root in bundle_roots():
        try:
            bundle = read_bundle(root)
        except BundleError as err:
            lines.append(f"bundle {root.name}: not served: {err}")
            continue
        done, tasks = bundle.manifest.get("tasks_bundled", 0), bundle.manifest.get("grid", {}).get("tasks", 0)
        if grid is not None and bundle.manifest.get("grid", {}).get("name") != grid:
            continue
        if grid is None and done < tasks:
            lines.append(
                f"bundle {bundle.name}: {done} of {tasks} tasks, a design still running (`iclmem sweep` resumes from "
                "it, after its own check); the book does not read it yet"
            )
            continue
        in_use.append(bundle)
        record = read_check(bundle)
        if record is None:
            unchecked.append(bundle)
        else:
            lines.append(
                f"bundle {bundle.name}: {record['verdict']} (checked under this code: {record['draws']} draws)"
            )
    lines += [format_report(report) for report in (check_bundles(unchecked, progress=progress) if unchecked else [])]
    lines += [
        f"bundle {b.name}: not served; this build computes its results"
        for b in in_use
        if (read_check(b) or {}).get("verdict") != "accepted"
    ]
    reset()
    return lines


__all__ = ["add_bundle", "ensure_checked", "format_report", "verify_bundle"]
