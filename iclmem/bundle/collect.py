"""Making (or extending) a results bundle from a results store: a grid's finished tasks, without weights (issue 55).

:func:`make_bundle` copies, for every task of a grid whose summary is ``ok`` in the store: the task's summary
(``sweep``), its fine-tuning run's log, metrics and curve (``finetune``) and every model's probe scores
(``probe``), each under its input key (:func:`iclmem.store.keys.input_key`), each sealed with its completion record.
An item already in the bundle is never written again: a bundle only grows, and a store whose numbers differ for
an item the bundle holds is reported, not copied. Each item is written to a temporary folder and renamed; the
manifest is written last. A joint run of App. D's regimes (``multitask``) is bundled with every dataset's view.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from ..data import SplitManifest, prepared_table
from ..ltm import ReferenceLTM
from ..probe.effects import GROUPS, group_ranks, manipulation_aucs
from ..probe.null import run_null
from ..probe.run import probe_params, reference_owner, reference_owner_of
from ..store.imports import PACKAGE_ROOT
from ..store.integrity import seal as seal_record
from ..store.integrity import served
from ..store.keys import canonical_json, content_key, input_key, results_root
from ..sweep.gridfile import Grid
from ..sweep.tasks import read_summary, reference_sha, spec_input_key, summary_dir, task_reference
from ..training.grid import RunSpec
from ..training.regimes import MULTI_TASK, SINGLE_TASK_FIXED, _load, joint_input_key
from .effect_codec import encode_aucs, encode_ranks
from .layout import ITEMS, KINDS, MANIFEST, Bundle, BundleError, item_entry, read_bundle, write_manifest
from .null_codec import NullSettings, null_input_key
from .null_codec import encode as encode_null
from .sampling import last_recomputable_epoch, witness_ids, witness_key
from .scores import encode, encode_witness


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10, cwd=PACKAGE_ROOT
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _processor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict:
    """The machine a bundle was made on (what its manifest says)."""
    return {"platform": platform.platform(), "processor": _processor(), "cpus": os.cpu_count()}


class _Writer:
    """Items written into ``root``: each to a temporary folder, sealed, renamed; entries kept for the manifest."""

    def __init__(self, root: Path, items: dict[str, dict]) -> None:
        self.root, self.items, self.added = root, dict(items), 0

    def add(self, kind: str, key: str, fill: Callable[[Path], None], meta: dict | None = None) -> None:
        if f"{kind}/{key}" in self.items:
            return
        final = self.root / ITEMS / kind / key
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="partial-", dir=self.root))  # no dot: a folder artifact's name
        try:
            fill(tmp)
            seal_record(tmp, f"iclmem.bundle:{kind}", "")
            if final.exists():
                shutil.rmtree(final)  # left by an interrupted make, never listed in the manifest
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.items[f"{kind}/{key}"] = item_entry(kind, key, final, meta)
        self.added += 1


def _scores(source: Path) -> Callable[[Path], None]:
    """A probe-score item: its params.json as stored, its scores as :func:`iclmem.bundle.scores.encode` keeps them."""

    def fill(folder: Path) -> None:
        shutil.copyfile(source / "params.json", folder / "params.json")
        (folder / "scores.parquet").write_bytes(encode(pd.read_parquet(source / "scores.parquet")))

    return fill


def _witness(found: dict[str, Path], queries: set[int]) -> Callable[[Path], None]:
    """A witness item: the run's models' scores of ``queries`` only, in one file
    (:func:`iclmem.bundle.scores.encode_witness`)."""

    def fill(folder: Path) -> None:
        frames = {}
        for which, source in found.items():
            frame = pd.read_parquet(source / "scores.parquet")
            frames[which] = frame[frame.query_id.isin(queries)].reset_index(drop=True)
        (folder / "scores.parquet").write_bytes(encode_witness(frames))

    return fill


def _effects(found: dict[str, Path], epochs: list[int]) -> Callable[[Path], None]:
    """An effects item: the run's group rank sums and per-manipulation AUCs at ``epochs`` (:mod:`.effect_codec`)."""

    def fill(folder: Path) -> None:
        scores = pd.concat([pd.read_parquet(path / "scores.parquet") for path in found.values()], ignore_index=True)
        (folder / "ranks.parquet").write_bytes(encode_ranks({e: group_ranks(scores, e) for e in epochs}))
        (folder / "aucs.parquet").write_bytes(encode_aucs(manipulation_aucs(scores, epochs=epochs)))

    return fill


def _null(found: dict[str, Path], epochs: list[int], null: NullSettings) -> Callable[[Path], None]:
    """A null item: :func:`iclmem.probe.null.run_null` of the run's stored scores, as :mod:`.null_codec` keeps it."""

    def fill(folder: Path) -> None:
        scores = pd.concat([pd.read_parquet(path / "scores.parquet") for path in found.values()], ignore_index=True)
        rows = run_null(scores, epochs, null.n_perm, null.seed, null.n_boot)
        ref = scores[scores.model == "ref"].drop_duplicates("query_id")
        n_members = int(ref.is_member.astype(bool).sum())
        (folder / "null.parquet").write_bytes(encode_null(rows, n_members, len(ref) - n_members))

    return fill


def _copy(files: tuple[str, ...], source: Path) -> Callable[[Path], None]:
    def fill(folder: Path) -> None:
        for name in files:
            shutil.copyfile(source / name, folder / name)

    return fill


def _probe_index(store: Path) -> dict[tuple, Path]:
    """Every finished probe-score folder of the store by (whose, model, parameters): read from its params.json, so
    that scores computed by an earlier code version are found (their store key holds that version)."""
    index = {}
    for folder in sorted((store / "probe").glob("*/")):
        try:
            params = json.loads((folder / "params.json").read_text())
        except (OSError, ValueError):
            continue
        whose, model = params.pop("run", None), params.pop("model", None)
        if served(folder, store):
            index[(whose, model, canonical_json(params))] = folder
    return index


def _stored_run(store: Path, run_key: str, reference: ReferenceLTM) -> tuple[Path, str, SplitManifest]:
    """A finished run of the store, its input key (:func:`iclmem.training.finetune.run_input_key`) and its split
    manifest, from its run.json (whatever code version made it)."""
    folder = store / "finetune" / run_key
    if not served(folder, store):
        raise BundleError(f"the run finetune/{run_key} is not finished in the store {store}: run the sweep again")
    stored = json.loads((folder / "run.json").read_text())
    if stored["reference_sha256"] != reference.checkpoint_sha256:
        raise BundleError(f"the run finetune/{run_key} was fine-tuned from another reference than the bundle's")
    manifest = SplitManifest.from_dict(stored["manifest"])
    return folder, input_key(manifest.identity(), stored["config"], reference.store_identity), manifest


@dataclass(frozen=True)
class _Probed:
    """One probed run of a task: its dataset, whose scores it is in the store and in the bundle, M_ref's owner, and
    its split (whose members and non-members were probed)."""

    dataset: str
    store_key: str
    bundle_key: str
    ref_owner: str
    manifest: SplitManifest


@dataclass(frozen=True)
class Contents:
    """What a bundle keeps of each probed run: every probe score (``scores="full"``), or only the scores a check
    probes again (``"witness"``); and, with ``null_permutations`` > 0, its membership null at that many permutations
    (with the grid's probe seed and bootstrap resamples, as the notebooks draw it)."""

    scores: str = "full"
    null_permutations: int = 0

    def __post_init__(self) -> None:
        if self.scores not in ("full", "witness"):
            raise BundleError(f"scores={self.scores!r}: a bundle keeps every score ('full') or a check's ('witness')")
        if self.null_permutations < 0:
            raise BundleError(f"null_permutations={self.null_permutations}: give 0 (no null) or more")


def _single(store: Path, summary: dict, reference: ReferenceLTM, writer: _Writer) -> tuple[list[_Probed], str, str]:
    spec = RunSpec(**summary["spec"])
    store_key = summary["rows"][0]["run_key"]
    folder, run_key, manifest = _stored_run(store, store_key, reference)
    writer.add("finetune", run_key, _copy(KINDS["finetune"], folder), {"dataset": spec.dataset})
    owner = reference_owner_of(manifest, spec.config())
    return [_Probed(spec.dataset, store_key, run_key, owner, manifest)], manifest.task, run_key


def _joint(
    store: Path, summary: dict, reference: ReferenceLTM, writer: _Writer, grid: Grid
) -> tuple[list[_Probed], str, str]:
    """A joint run of the store (App. D), found by its views' keys, and each dataset's view."""
    views = {r["dataset"]: r["run_key"] for r in summary["rows"]}
    found = [
        f
        for f in sorted((store / "multitask").glob("*/"))
        if all(content_key(f.name, d) == k for d, k in views.items())
    ]
    if not found or not served(found[0], store):
        raise BundleError(f"the joint run of {summary['spec']} is not finished in the store {store}")
    folder, spec = found[0], RunSpec(**summary["spec"])
    stored = json.loads((folder / "run.json").read_text())
    manifests = [SplitManifest.from_dict(m) for m in stored["manifests"]]
    config = spec.config().checked(reference.cfg.max_context)
    if canonical_json(asdict(config)) != canonical_json(stored["config"]):
        raise BundleError(f"the joint run {folder.name} was made with another configuration than {spec}")
    tables = {m.dataset: grid.sources[m.dataset].load() if m.dataset in grid.sources else m.dataset for m in manifests}
    tables = {d: t if not isinstance(t, str) else prepared_table(t) for d, t in tables.items()}
    ikey = joint_input_key(stored["regime"], manifests, config, reference)
    run = _load(folder, folder.name, stored["regime"], {m.dataset: m for m in manifests}, tables, config, ikey)
    writer.add("multitask", ikey, _copy(KINDS["multitask"], folder), {"datasets": run.datasets})
    probed = [
        _Probed(d, v.key, v.input_key, reference_owner(v), v.manifest)
        for d, v in ((d, run.view(d)) for d in run.datasets)
    ]
    kinds = {m.task for m in manifests}
    return probed, kinds.pop() if len(kinds) == 1 else "mixed", ikey


def _bundle_scores(
    writer: _Writer, view: _Probed, epochs: list[int], found: dict[str, Path], grid: Grid, contents: Contents,
    reference: ReferenceLTM, last: int | None,
) -> None:  # fmt: skip
    """One probed run's score items (``probe`` or ``witness``, per model: witnesses up to ``last``, the last epoch a
    check may draw, :func:`iclmem.bundle.recheck.last_recomputable_epoch`) and, if asked, its ``null`` item."""
    p = grid.probe
    params = probe_params(p.n_candidates, p.manipulations, p.seed, p.max_queries)
    witness = witness_ids(view.manifest, p.seed, p.max_queries) if contents.scores == "witness" else None
    if witness is None:
        for which, source in found.items():
            owner = view.ref_owner if which == "ref" else view.bundle_key
            meta = {"run": view.bundle_key, "model": which, "dataset": view.dataset}
            writer.add("probe", input_key(owner, which, params, reference.store_identity), _scores(source), meta)
    else:  # the models a check may draw: no other machine can recompute a chaotic run's later epochs
        drawn = {w: s for w, s in found.items() if w == "ref" or int(w.split("-", 1)[1]) <= (last or 10**9)}
        meta = {"run": view.bundle_key, "models": list(drawn), "dataset": view.dataset}
        key = witness_key(view.bundle_key, params, reference.store_identity)
        writer.add("witness", key, _witness(drawn, witness), meta)
    fine = [e for e in epochs if e > 0]
    if witness is not None and fine:
        key = input_key(view.bundle_key, "effects", params, fine, "loss", list(GROUPS), reference.store_identity)
        meta = {"run": view.bundle_key, "dataset": view.dataset, "epochs": fine, "metric": "loss"}
        writer.add("effects", key, _effects(found, fine), meta)
    if contents.null_permutations and fine:
        null = NullSettings(contents.null_permutations, p.seed, p.n_boot)
        key = null_input_key(view.bundle_key, params, fine, null, reference.store_identity)
        meta = {"run": view.bundle_key, "dataset": view.dataset, "epochs": fine, **asdict(null)}
        writer.add("null", key, _null(found, fine, null), meta)


def _bundle_task(
    writer: _Writer, grid: Grid, summary: dict, reference: ReferenceLTM, store: Path, index: dict, contents: Contents
) -> None:
    """One task's items, from what the store holds: its run, every model's scores at its probed epochs (or their
    witnesses, and the null), its summary."""

    spec = RunSpec(**summary["spec"])
    if spec.regime == SINGLE_TASK_FIXED:
        probed, kind, run_key = _single(store, summary, reference, writer)
    else:
        probed, kind, run_key = _joint(store, summary, reference, writer, grid)
    p = grid.probe
    params = probe_params(p.n_candidates, p.manipulations, p.seed, p.max_queries)
    epochs = sorted({int(r["epoch"]) for r in summary["rows"]})
    for view in probed:
        found = {}
        for which in ["ref", *(f"theta-{e}" for e in epochs)]:
            source = index.get((view.ref_owner if which == "ref" else view.store_key, which, canonical_json(params)))
            if source is None:
                raise BundleError(f"the {which} scores of {spec} ({view.dataset}) are not in the store {store}")
            found[which] = source
        last = last_recomputable_epoch(spec.learning_rate, spec.regime in MULTI_TASK)
        _bundle_scores(writer, view, epochs, found, grid, contents, reference, last)

    def fill(folder: Path) -> None:
        (folder / "summary.json").write_text(json.dumps(summary, separators=(",", ":"), default=str))

    meta = {"spec": spec.to_dict(), "run": run_key, "task": kind, "epochs": epochs, "wall_s": summary["wall_s"]}
    writer.add("sweep", spec_input_key(spec, p, grid.sources, summary["reference_sha256"]), fill, meta)


def _finished(grid: Grid, store: Path, ref_sha: str) -> dict[str, dict]:
    """The grid's ``ok`` summaries in the store by the task's input key, whatever code version wrote them."""
    wanted = {spec_input_key(s, grid.probe, grid.sources, ref_sha): s for s in grid.specs}
    out = {}
    for path in sorted(summary_dir(grid.name, store).glob("*.json")):
        if path.name.endswith(".complete.json"):
            continue
        summary = read_summary(path)
        if not summary or summary.get("status") != "ok":
            continue
        key = spec_input_key(RunSpec(**summary["spec"]), grid.probe, grid.sources, summary["reference_sha256"])
        if key in wanted:
            out[key] = summary
    return out


def make_bundle(
    grid: Grid,
    out: str | Path,
    *,
    results_dir: str | Path | None = None,
    reference: ReferenceLTM | str | Path | None = None,
    command: str = "",
    grid_file: str | Path | None = None,
    contents: Contents = Contents(),
) -> tuple[Bundle, dict]:
    """Copy ``grid``'s finished tasks from the store into the bundle at ``out`` (made if absent), each probed run as
    ``contents`` says.

    Returns the bundle and a report: tasks bundled now, already there, pending (not finished in the store). The
    manifest records the command, the code's git commit, the machine, the date and the CPU-hours the bundled tasks
    took (their summaries' wall times, one thread each).
    """
    out, store = Path(out), results_root(results_dir).resolve()
    old = read_bundle(out).manifest if (out / MANIFEST).is_file() else {}
    writer = _Writer(out, old.get("items", {}))
    ref = task_reference(reference)
    ref_sha = reference_sha(ref)
    finished, index = _finished(grid, store, ref_sha), _probe_index(store)
    report = {"bundled": 0, "already": 0, "pending": 0}
    for spec in grid.specs:
        key = spec_input_key(spec, grid.probe, grid.sources, ref_sha)
        if f"sweep/{key}" in writer.items:
            report["already"] += 1
        elif key not in finished:
            report["pending"] += 1
        else:
            _bundle_task(writer, grid, finished[key], ref, store, index, contents)
            report["bundled"] += 1
    tasks = [e for e in writer.items.values() if e["kind"] == "sweep"]
    body = {
        "name": old.get("name", out.name),
        "grid": {"name": grid.name, "file": str(grid_file or ""), "tasks": len(grid.specs), "strata": _strata(grid)},
        "sources": {k: asdict(v) for k, v in grid.sources.items()},
        "probe": asdict(grid.probe),
        "contents": _contents(old, contents),
        "reference_sha256": ref_sha,
        "made": [*old.get("made", []), _made_entry(command, report)],
        "tasks_bundled": len(tasks),
        "cpu_seconds": round(sum(float(e.get("wall_s") or 0) for e in tasks), 3),
        "cpu_hours": round(sum(float(e.get("wall_s") or 0) for e in tasks) / 3600, 3),
        "items": writer.items,
    }
    return write_manifest(out, body), report


def stratum(spec: RunSpec) -> str:
    """A task's stratum for a bundle's size projection: its Q and regime (the two that set its items' sizes)."""
    return f"Q{spec.query_size} {spec.regime}"


def _strata(grid: Grid) -> dict[str, int]:
    """The grid's tasks per :func:`stratum`."""
    return {k: int(v) for k, v in pd.Series([stratum(s) for s in grid.specs]).value_counts().sort_index().items()}


def _contents(old: dict, contents: Contents) -> dict:
    """The bundle's :class:`Contents`; a :class:`BundleError` when it was made with other contents (a bundle keeps
    one kind of item per probed run)."""
    before = old.get("contents", asdict(Contents()) if old.get("items") else None)
    if before is not None and before != asdict(contents):
        raise BundleError(
            f"the bundle was made with {before}, not {asdict(contents)}: make it with the same --scores and "
            "--null-permutations, or into a new folder"
        )
    return asdict(contents)


def _made_entry(command: str, report: dict) -> dict:
    return {
        "command": command,
        "code_commit": _git_commit(),
        "machine": machine(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **report,
    }


__all__ = ["Contents", "machine", "make_bundle", "stratum"]
