"""The ``iclmem`` command line.

Each subcommand is two functions: ``add_<name>(subparsers)`` declares its arguments and sets
``func=cmd_<name>``; ``cmd_<name>(args) -> int`` does the work. To add one (e.g. ``sweep``),
write both and append ``add_<name>`` to :data:`SUBCOMMANDS`. Heavy imports happen inside the
``cmd_`` functions so that ``iclmem --help`` stays fast.

User errors (:class:`iclmem.book.execute.UsageError`, and any other :class:`iclmem.user_errors.UserError` such as a
full or read-only store) print a message and exit with status 2, without a traceback; a failing notebook exits
with status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from iclmem.book.build import BookBuildError
from iclmem.book.execute import NotebookExecutionError, UsageError
from iclmem.bundle.command import add_bundle
from iclmem.user_errors import UserError

Subparsers = Any  # argparse's private _SubParsersAction


def _parameter_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        default=[],
        help="set a notebook parameter; VALUE is read as YAML (64, 0.5, true, '[1, 2]')",
    )
    parser.add_argument("-f", "--parameters-file", type=Path, metavar="PARAMS.yaml", help="YAML mapping of parameters")


def _results_arg(parser: argparse.ArgumentParser, help: str = "") -> None:
    """``--results STORE``: the results store a command reads or writes (``help`` says which, default last)."""
    default = "default: $ICLMEM_RESULTS, else results/"
    parser.add_argument("--results", type=Path, metavar="STORE", help=help or f"the results store ({default})")


# --- run ----------------------------------------------------------------------------------------


def add_run(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("run", help="execute a notebook with checked parameters (papermill)")
    p.add_argument("notebook", type=Path, help="jupytext notebook, e.g. notebooks/01_split_validation.py")
    _parameter_args(p)
    p.add_argument("-o", "--output", type=Path, help="executed notebook (default: _build/runs/<stem>.ipynb)")
    p.add_argument("--no-progress", action="store_true", help="hide papermill's progress bar")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from iclmem.book.execute import (
        SHARED_DEFAULTS,
        notebook_parameters,
        parse_cli_parameters,
        project_parameter_names,
        project_root,
        read_notebook,
        read_parameters_file,
        read_shared_defaults,
        run_notebook,
        shared_defaults_of,
        shared_file_values,
        with_shared_defaults,
    )
    from iclmem.book.own_book import own_table_controls

    declared = notebook_parameters(read_notebook(args.notebook))
    file_values: dict[str, Any] = {}
    if args.parameters_file:
        known = project_parameter_names(project_root(args.notebook.resolve().parent))
        file_values, skipped = shared_file_values(
            declared, read_parameters_file(args.parameters_file), known, str(args.parameters_file)
        )
        if skipped:
            print(f"{args.parameters_file}: not parameters of {args.notebook.name}, skipped: {', '.join(skipped)}")
    values = parse_cli_parameters(declared, [tuple(p) for p in args.parameter], file_values)
    values = {**own_table_controls(declared, values), **values}  # your table's controls run on it (notebook 04)
    shared = read_shared_defaults(project_root(args.notebook.resolve().parent) / SHARED_DEFAULTS)
    values = with_shared_defaults(declared, shared_defaults_of(shared, args.notebook.stem), values)  # -p and -f win
    out = run_notebook(args.notebook, values, args.output, progress=not args.no_progress)
    print(f"executed notebook: {out}")
    return 0


# --- params -------------------------------------------------------------------------------------


def add_params(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("params", help="list a notebook's parameters with their types, defaults and ranges")
    p.add_argument("notebook", type=Path)
    p.set_defaults(func=cmd_params)


def cmd_params(args: argparse.Namespace) -> int:
    from iclmem.book.execute import format_parameters_table, notebook_parameters, read_notebook
    from iclmem.book.parameter_rules import RULES

    ranges = {name: rule.describe() for name, rule in RULES.items()}  # from book/parameters.yaml
    print(format_parameters_table(notebook_parameters(read_notebook(args.notebook)), ranges))
    return 0


# --- book ---------------------------------------------------------------------------------------


def add_book(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("book", help="execute the notebooks of _toc.yml (cached) and build the html book")
    p.add_argument(
        "--root",
        type=Path,
        help="project folder with _config.yml and _toc.yml (default: the one at or above this folder, else the "
        "checkout the iclmem package was installed from)",
    )
    p.add_argument(
        "--build-dir", type=Path, help="build folder (default: <root>/_build); html lands in <build-dir>/html"
    )
    p.add_argument(
        "-p",
        "--parameter",
        nargs=3,
        action="append",
        default=[],
        metavar=("NOTEBOOK", "NAME", "VALUE"),
        help="override a parameter of one notebook (NOTEBOOK: its stem or toc name)",
    )
    p.add_argument(
        "-f", "--parameters-file", type=Path, metavar="PARAMS.yaml", help="YAML mapping: notebook -> {name: value}"
    )
    p.add_argument("--force", action="store_true", help="re-execute every notebook, ignoring the cache")
    p.add_argument("--strict", action="store_true", help="turn Sphinx warnings into errors")
    p.add_argument("--no-html", action="store_true", help="execute and stage the notebooks, but do not render")
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="execute up to N lanes of book/lanes.yaml at once, one torch thread each (default: 1, one notebook at a "
        "time; make book: 2)",
    )
    p.add_argument(
        "--chapters",
        help="a book of your own table: these chapters only (tabular = 01-04, regimes = 05, or notebook "
        "stems, comma-separated), executed on the flat parameters file -f, into --out",
    )
    p.add_argument(
        "--grid",
        type=Path,
        metavar="GRID.yaml",
        help="render from a sweep's store: chapters 02-05 and the scorecard (or --chapters) with this grid file's "
        "parameters, reading --results (default: $ICLMEM_RESULTS or results/), into --out (default: "
        "_build/<grid name>)",
    )
    p.add_argument(
        "--out",
        type=Path,
        help="with --chapters or --grid: the build folder (default: _build/<table or grid name> of the project, or of "
        "this folder when run outside the project)",
    )
    _results_arg(p, "with --chapters: its results store (default: <out>/results); with --grid: the sweep's store")
    p.add_argument(
        "--recompute",
        action="store_true",
        help="serve no results bundle: compute everything the book reads (bundles are otherwise checked, then served)",
    )
    p.set_defaults(func=cmd_book)


def cmd_book(args: argparse.Namespace) -> int:
    from iclmem.book.build import BuildOptions, build_book, notebook_pages, resolve_notebook_key
    from iclmem.book.execute import (
        book_root,
        notebook_parameters,
        parse_cli_value,
        read_notebook,
        read_parameters_file,
    )

    root = args.root.resolve() if args.root else book_root()
    if args.chapters:
        return _own_book(args, root)
    _bundles_for_build(args.recompute)
    if args.grid:
        return _grid_book(args, root)
    if args.out or args.results:
        raise UsageError(
            "--out and --results belong to a book of your own table (add --chapters, e.g. --chapters tabular) or of a "
            "sweep's store (add --grid GRID.yaml)."
        )
    pages = notebook_pages(root)
    overrides: dict[str, dict[str, Any]] = {}
    if args.parameters_file:
        for key, values in read_parameters_file(args.parameters_file).items():
            if not isinstance(values, dict):
                raise UsageError(
                    f"{args.parameters_file}: {key!r} must map to a mapping of parameters (e.g. {key}: {{query_sizes: "
                    f"[64]}}), got {values!r}"
                )
            overrides.setdefault(resolve_notebook_key(pages, key), {}).update(values)
    for key, name, raw in args.parameter:
        page = resolve_notebook_key(pages, key)
        declared = notebook_parameters(read_notebook(pages[page].source))
        default = declared[name].default if name in declared else None
        overrides.setdefault(page, {})[name] = parse_cli_value(raw, default)
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give at least 1 (1 executes the notebooks one after another)")
    options = BuildOptions(force=args.force, render_html=not args.no_html, strict=args.strict, jobs=args.jobs)
    result = build_book(root, args.build_dir, overrides, options)
    return _report_build(result, args.no_html)


def _bundles_for_build(recompute: bool, grid: str | None = None, why: str = "--recompute") -> None:
    """``recompute`` (``--recompute``, or ``why`` else): no bundle served (the notebooks' kernels inherit
    ``ICLMEM_BUNDLE=off``); else each bundle in use (a sweep's: those of its ``grid``) is checked on this machine first
    (:func:`iclmem.bundle.command.ensure_checked`), one line each."""
    import os

    from iclmem.bundle.command import ensure_checked
    from iclmem.bundle.serve import ENV

    if recompute:
        os.environ[ENV] = "off"
        print(f"results bundles: none served ({why}): the book computes everything")
        return
    for line in ensure_checked(grid=grid):
        print(line)


def _report_build(result: Any, no_html: bool) -> int:
    """Print what a book build executed, took from its cache and where the html is."""
    print(f"executed: {', '.join(result.executed) or 'nothing'}; from cache: {', '.join(result.cached) or 'nothing'}")
    print(f"wall time:\n{result.timing()}")
    if not no_html:
        print(f"book: {result.html}")
    return 0


def _default_build(root: Path, name: str) -> Path:
    """The build folder of a book of your own table or grid without ``--out``: ``_build/<name>`` of the project when
    run inside it, else of the folder the command runs in (the project may be a checkout elsewhere)."""
    here = Path.cwd().resolve()
    base = root if here == root or root in here.parents else here
    return base / "_build" / name


def _own_book(args: argparse.Namespace, root: Path) -> int:
    from iclmem.book.build import BuildOptions
    from iclmem.book.execute import read_parameters_file
    from iclmem.book.own_book import build_own_book

    if args.parameter:
        raise UsageError(
            "with --chapters, give the parameters in the flat file -f (one mapping shared by every chapter), not -p."
        )
    values = read_parameters_file(args.parameters_file) if args.parameters_file else {}
    if any(isinstance(v, dict) for v in values.values()):
        raise UsageError(
            f"{args.parameters_file}: with --chapters the file is one flat mapping of parameters (data_path: ..., "
            "target: ...), shared by every chapter; per-notebook sections are for the main book."
        )
    name = Path(str(values["data_path"])).stem if values.get("data_path") else "own_tables"
    # a bundle holds the project's tables, never yours: a book of your table checks none (minutes) and serves none
    own_table = bool(values.get("data_path"))
    why = "a book of your own table computes it" if own_table and not args.recompute else "--recompute"
    _bundles_for_build(args.recompute or own_table, why=why)
    out = args.out or _default_build(root, name)
    result = build_own_book(
        root,
        values,
        [c.strip() for c in args.chapters.split(",") if c.strip()],
        out,
        args.results,
        options=BuildOptions(force=args.force, render_html=not args.no_html),
    )
    return _report_build(result, args.no_html)


def _grid_book(args: argparse.Namespace, root: Path) -> int:
    """``iclmem book --grid GRID.yaml``: the chapters that read the grid's runs, rendered from the sweep's store."""
    from iclmem.book.build import BuildOptions
    from iclmem.book.execute import read_parameters_file
    from iclmem.book.own_book import build_own_book
    from iclmem.store.keys import results_root
    from iclmem.sweep import SweepError, load_grid
    from iclmem.sweep.book_values import GRID_CHAPTERS, grid_book_values

    if args.parameter:
        raise UsageError("with --grid, the grid file gives the parameters; add others in the flat file -f, not -p.")
    try:
        grid = load_grid(args.grid)
        values = grid_book_values(grid, args.grid)
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    extra = read_parameters_file(args.parameters_file) if args.parameters_file else {}
    clash = sorted(k for k in extra if k in values and extra[k] != values[k])
    if clash:
        raise UsageError(
            f"{args.parameters_file}: {', '.join(clash)} differ from the grid file's; the notebooks find the sweep's "
            "runs only with the grid's values: leave them out of -f"
        )
    chapters = [c.strip() for c in args.chapters.split(",") if c.strip()] if args.chapters else list(GRID_CHAPTERS)
    out = args.out or _default_build(root, grid.name)
    store = results_root(args.results).resolve()
    print(f"rendering {', '.join(chapters)} from the store {store} (grid {grid.name!r}: {len(grid.specs)} tasks)")
    options = BuildOptions(force=args.force, render_html=not args.no_html)
    result = build_own_book(root, {**extra, **values}, chapters, out, store, options=options)
    return _report_build(result, args.no_html)


# --- pretrain -----------------------------------------------------------------------------------


def add_pretrain(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("pretrain", help="pretrain the reference LTM on the synthetic prior (resumable)")
    p.add_argument("--config", type=Path, required=True, help="YAML config, e.g. configs/pretrain_reference.yaml")
    p.add_argument(
        "--export",
        action="store_true",
        help="when done, write the weights, model card and loss curve into iclmem/ltm/weights/ (the shipped reference)",
    )
    p.set_defaults(func=cmd_pretrain)


def cmd_pretrain(args: argparse.Namespace) -> int:
    if not args.config.is_file():
        raise UsageError(
            f"no such config: {args.config}; check the path (e.g. --config configs/pretrain_reference.yaml)"
        )
    from iclmem.ltm.pretrain import PretrainConfig, pretrain

    try:
        config = PretrainConfig.from_yaml(args.config)
    except (TypeError, ValueError) as exc:  # unknown keys or bad values of the YAML file: the user's input
        raise UsageError(f"{args.config}: {exc}; see configs/pretrain_reference.yaml for every key") from None
    out = pretrain(config)
    print(f"pretrained: {out}")
    if args.export:
        from iclmem.ltm.reference import export_checkpoint

        weights = export_checkpoint(out, {"config_file": str(args.config)})
        print(f"exported the reference LTM: {weights}")
    return 0


# --- sweep --------------------------------------------------------------------------------------


def add_sweep(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("sweep", help="run a grid of fine-tune-and-probe runs as tasks on Dask (resumable)")
    p.add_argument("grid", type=Path, help="grid file, e.g. grids/book.yaml or grids/paper.yaml")
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="existing Dask scheduler, e.g. tcp://host:8786 (default: a local cluster)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=2,
        help="local cluster workers, one process and one thread each; 0 runs in this process (default: 2)",
    )
    p.add_argument(
        "--threads", action="store_true", help="local cluster workers as threads of this process instead of processes"
    )
    p.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for --scheduler before giving up (default: 10)"
    )
    _results_arg(p, "the results store, shared by all workers (default: $ICLMEM_RESULTS, else results/)")
    p.add_argument(
        "--reference",
        type=Path,
        metavar="CKPT.pt",
        help="reference LTM checkpoint to fine-tune from (default: the shipped one)",
    )
    p.add_argument(
        "--model",
        metavar="SPEC",
        default="reference",
        help="M_ref of every task: reference (default) | tabicl:PATH | tabpfn:PATH "
        "(a local checkpoint, see 'Audit your own model')",
    )
    p.add_argument("--carte-dir", help="folder of the paper's CARTE tables (default: $ICLMEM_CARTE_DIR)")
    p.add_argument("--list", action="store_true", help="list the grid's tasks and their status; run nothing")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args: argparse.Namespace) -> int:
    from iclmem.sweep import SweepError, collect_sweep, load_grid, run_sweep
    from iclmem.sweep.engine import Cluster

    try:
        grid = load_grid(args.grid)
        if args.workers < 0:
            raise SweepError(f"--workers must be >= 0 (0 runs the tasks in this process), got {args.workers}")
        if args.reference is not None and not args.reference.is_file():
            raise SweepError(
                f"no checkpoint at {args.reference}; pass a .pt file written by `iclmem pretrain`, or leave out "
                "--reference "
                "for the shipped reference LTM"
            )
        reference = _sweep_model(args.model, args.reference)
        _bundles_for_build(recompute=False, grid=grid.name)  # its checked bundle's tasks count as done: it resumes
        if args.list:
            found = collect_sweep(grid, args.results, reference)
            for s in found.summaries:
                print(f"{s['status']:8s} {s['key']}")
            print(found.report())
            return 0
        cluster = Cluster(args.workers, not args.threads, args.scheduler, timeout=args.timeout)
        result = run_sweep(
            grid,
            results_dir=args.results,
            cluster=cluster,
            reference=reference,
            carte_dir=args.carte_dir,
            progress=not args.no_progress,
        )
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    print(result.report())
    return 1 if result.failed else 0


def _sweep_model(model: str, reference: Path | None) -> str | Path | None:
    """What run_sweep takes as ``reference``: the --reference checkpoint, or the --model spec (checked here,
    before any worker starts)."""
    from iclmem.adapters import parse_model
    from iclmem.ltm.interface import LTMInputError
    from iclmem.sweep import SweepError

    try:
        kind, path = parse_model(model)
    except LTMInputError as exc:
        raise SweepError(f"--model: {exc}") from None
    if kind == "reference" and path is None:
        return reference
    if reference is not None:
        raise SweepError(
            f"--reference and --model {model} both name M_ref; keep one (--reference is a checkpoint of the shipped "
            "architecture)."
        )
    if kind == "reference":  # an earlier shipped version: its weights file, as --reference takes it
        from iclmem.ltm.reference import reference_files

        return reference_files(path)[0]
    if not Path(path).expanduser().is_file():
        raise SweepError(
            f"--model {model}: no checkpoint at {path}; the weights come only from a local file (see 'Audit your own "
            "model')."
        )
    return model


# --- store --------------------------------------------------------------------------------------


def add_store(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("store", help="check the results store (verify) or free what no current key reaches (gc)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    verify = actions.add_parser(
        "verify",
        help="check every artifact against its completion record (sha256 of each file); list damaged and incomplete",
    )
    _results_arg(verify)
    verify.add_argument("--repair", action="store_true", help="move damaged and incomplete artifacts to quarantine/")
    verify.set_defaults(func=cmd_store_verify)
    gc = actions.add_parser(
        "gc",
        help="delete what no current key reaches: artifacts whose recorded code version is not the current one of "
        "their producing module, incomplete ones, quarantine/ and dead writers' locks (a dry run unless --yes)",
    )
    _results_arg(gc)
    gc.add_argument("--yes", action="store_true", help="delete (without it: only list what would go, with sizes)")
    gc.set_defaults(func=cmd_store_gc)


def cmd_store_verify(args: argparse.Namespace) -> int:
    """Exit status 0 when every artifact matches its record (or all bad ones were repaired), else 1."""
    from iclmem.bundle.command import verify_bundle
    from iclmem.bundle.layout import BundleError, read_bundle
    from iclmem.bundle.serve import bundle_roots
    from iclmem.store.keys import results_root
    from iclmem.store.tools import format_verified, verify_store

    found = verify_store(args.results, repair=args.repair)
    print(format_verified(found, results_root(args.results)))
    intact = True
    for root in bundle_roots():  # the results bundles are read-only: checked, never repaired (git restores them)
        try:
            bundle = read_bundle(root)
        except BundleError as err:
            print(f"bundle {root.name}: {err}", file=sys.stderr)
            intact = False
            continue
        bad = verify_bundle(bundle)
        print(f"bundle {bundle.name}: {len(bundle.items) - len(bad)} of {len(bundle.items)} items intact")
        for line in bad:
            print(f"  damaged {line} (restore it: git checkout -- {root})", file=sys.stderr)
        intact &= not bad
    return 0 if intact and (not found.problems or len(found.moved) == len(found.problems)) else 1


def cmd_store_gc(args: argparse.Namespace) -> int:
    from iclmem.store.keys import results_root
    from iclmem.store.tools import format_plan, gc_plan, remove

    plan = gc_plan(args.results)
    if args.yes:
        remove(plan)
    print(format_plan(plan, results_root(args.results), dry_run=not args.yes))
    return 0


# --- tables -------------------------------------------------------------------------------------


def add_tables(subparsers: Subparsers) -> None:
    p = subparsers.add_parser(
        "tables",
        help="list the suite of real tables (name, task, rows after deduplication, features, classes, source)",
    )
    p.add_argument("--card", metavar="NAME", help="print every field of one table's card instead")
    p.add_argument(
        "--validate",
        action="store_true",
        help="load, deduplicate, split (Q of the rule) and validate every table, as notebook 01 does; exit 1 if any "
        "fails",
    )
    p.set_defaults(func=cmd_tables)


def cmd_tables(args: argparse.Namespace) -> int:
    """The suite of :mod:`iclmem.data.suite`: one line per table; a card; or the split validation of every table."""
    from iclmem.data.suite import CARD_FIELDS, suite_card, suite_listing, suite_names, validate_suite

    if args.card:
        if args.card not in suite_names():
            raise UsageError(f"{args.card!r} is not a suite table; `iclmem tables` lists them")
        card = suite_card(args.card).to_dict()
        width = max(len(f) for f in CARD_FIELDS)
        print("\n".join(f"{f:<{width}}  {card[f]}" for f in CARD_FIELDS))
        return 0
    if not args.validate:
        print(suite_listing())
        return 0
    frame = validate_suite()
    for row in frame.itertuples(index=False):
        if row.ok:
            print(f"{row.table}: ok, {row.statistic} at most {row.max_statistic:.4f} ({row.seconds:.2f} s)")
        else:
            print(row.error)
    failed = int((~frame["ok"]).sum())
    print(f"{len(frame) - failed} of {len(frame)} tables split and pass; {failed} failed")
    return 1 if failed else 0


# --- audit --------------------------------------------------------------------------------------

#: ``iclmem audit``'s flags that take a value: (flag, the AuditConfig key, type, metavar, help)
_AUDIT_VALUES: tuple[tuple[str, str, type, str, str], ...] = (
    ("--model", "model", str, "SPEC", "the fine-tuned model: tabpfn:PATH | tabicl:PATH | reference:PATH | reference"),
    ("--base", "base", str, "SPEC", "the pretrained checkpoint it was fine-tuned from (same architecture)"),
    ("--members", "members", str, "FILE", "CSV/parquet of the rows the model was fine-tuned on"),
    ("--non-members", "non_members", str, "FILE", "CSV/parquet of rows of the same table it never saw"),
    ("--table", "table", str, "FILE", "the full table the model was fine-tuned from (else the AUC is a lower bound)"),
    ("--target", "target", str, "COLUMN", "the target column (in both files)"),
    ("--task", "task", str, "TASK", "classification | regression (default: inferred from the target)"),
    ("--out", "out", str, "DIR", "folder for audit.html and audit.json (default: audit_report)"),
    ("--drop", "drop", str, "COLS", "comma-separated columns to leave out of the audit (e.g. row ids)"),
    ("--missing-target", "missing_target", str, "HOW", "rows without a target: error (default) | drop"),
    ("--max-queries", "max_queries", int, "N", "members and non-members probed at most, each (default: 1000)"),
    ("--n-boot", "n_boot", int, "N", "bootstrap resamples of every interval (default: 1000)"),
    ("--permutations", "n_permutations", int, "N", "membership permutations of the rule's null (default: 100)"),
    ("--top-k", "top_k", int, "K", "members listed as rows at risk (default: 10)"),
    ("--seed", "seed", int, "N", "seed of every draw (default: 0)"),
)
#: ``iclmem audit``'s switches: (flag, the AuditConfig key, help)
_AUDIT_SWITCHES: tuple[tuple[str, str, str], ...] = (
    ("--control", "control", "positive control: fine-tune a copy of the base on half the non-members and probe it"),
    ("--show-rows", "show_rows", "put the contents of the rows at risk into the report"),
    ("--match", "match", "audit a matched subsample (members and non-members whose baseline propensity overlaps)"),
)


def add_audit(subparsers: Subparsers) -> None:
    p = subparsers.add_parser(
        "audit",
        help="audit a fine-tuned model for memorization of its training rows: split check, verdict, null rate, power",
        description="Exit status: 0 no detectable memorization at the stated power, 1 detected, 2 bad input, 3 the "
        "model-free baseline separates the files (memorization cannot be told from distribution shift).",
    )
    p.add_argument("--config", type=Path, metavar="AUDIT.yaml", help="the settings as a YAML mapping (flags win)")
    for flag, key, _, metavar, text in _AUDIT_VALUES:  # read as text: AuditConfig checks and converts (one line)
        p.add_argument(flag, dest=key, metavar=metavar, default=None, help=text)
    for flag, key, text in _AUDIT_SWITCHES:
        p.add_argument(flag, dest=key, action="store_const", const=True, default=None, help=text)
    p.add_argument("--no-progress", action="store_true", help="hide the progress line")
    p.set_defaults(func=cmd_audit)

    def one_line(message: str) -> None:  # argparse's own errors as one line too (a pipeline reads stderr)
        print(f"iclmem audit: error: {message}; see iclmem audit --help", file=sys.stderr)
        raise SystemExit(2)

    p.error = one_line  # type: ignore[method-assign]


def cmd_audit(args: argparse.Namespace) -> int:
    """Exit status 0 (not detected), 1 (detected), 3 (the files are separable without the model); 2: bad input."""
    from iclmem.probe.audit.audit_run import run_audit
    from iclmem.probe.audit.inputs import AuditConfig, AuditInputError, read_config_file

    values = read_config_file(args.config) if args.config else {}
    keys = [key for _, key, *_ in _AUDIT_VALUES] + [key for _, key, _ in _AUDIT_SWITCHES]
    values.update({k: getattr(args, k) for k in keys if getattr(args, k) is not None})
    source = f"{args.config} and the command line" if args.config else "the command line"
    try:
        config = AuditConfig.from_values(values, source)
        outcome = run_audit(config, progress=not args.no_progress)
    except UserError as exc:  # one line, whatever part of the engine found it
        raise AuditInputError(" ".join(str(exc).split())) from None
    print(outcome.summary)
    return outcome.status


# --- entry point --------------------------------------------------------------------------------

SUBCOMMANDS: list[Callable[[Subparsers], None]] = [
    add_run,
    add_params,
    add_book,
    add_pretrain,
    add_sweep,
    add_store,
    add_tables,
    add_audit,
    add_bundle,
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="iclmem", description="Probing memorization in in-context learning: notebooks, book, models."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "audit":  # a pipeline gating on the audit reads one line
        print(
            f"iclmem audit: error: unrecognized arguments: {' '.join(extra)}; see iclmem audit --help", file=sys.stderr
        )
        return 2
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")  # what parse_args says
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"iclmem {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except NotebookExecutionError as exc:
        print(f"iclmem {args.command}: notebook failed: {exc}", file=sys.stderr)
        return 1
    except BookBuildError as exc:
        print(f"iclmem {args.command}: {exc}", file=sys.stderr)
        return 1
    except UserError as exc:  # e.g. a full or read-only store (iclmem.store.errors.StoreError)
        print(f"iclmem {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
