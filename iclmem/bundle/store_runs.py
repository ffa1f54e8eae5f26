"""A results bundle of a whole results store: every finished fine-tuning run and model's probe scores (issue 55).

The default book fine-tunes and probes its own runs (notebooks 02-04's controlled grid, appendix A6's controls,
chapter 05's regimes, chapter 07's DP runs): a fresh 2-core build spends most of its time there.
:func:`collect_store` copies what a finished book build left in its store into a bundle, each item under its input key
(:func:`iclmem.store.keys.input_key`), so that the next fresh build reads them where the engine looks them up
(:func:`iclmem.training.finetune.finetune`, :func:`iclmem.probe.run.probe_run`):

- ``finetune/<run>``: the run's log, metrics and curve, and its ``run.json.gz`` (its split and configuration, what
  a check needs to train it again); never its weights;
- ``multitask/<run>``: App. D's joint runs (chapter 05's) without weights;
- ``probe/<scores>``: one model's probe scores (a joint run's views' too, and P3's shuffled-label control's), as
  :func:`iclmem.bundle.scores.encode` keeps them;
- ``theta_outputs/<outputs>``: M_theta's outputs on tasks of a reading's own (:mod:`iclmem.probe.theta_outputs`:
  chapter 07's utility, A6's context attack, held-out quality and ladder), so that no served run is fine-tuned again;
- ``completions/<folder>``: chapter 06's LLM completions of one model (:mod:`iclmem.bundle.completions`).

Each single-task run's entry names the probe parameters and epochs it was scored at, which is what a check draws
(:mod:`iclmem.bundle.run_check`). A run fine-tuned from another reference than the bundle's is left out, and said
so.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict
from pathlib import Path

from ..data import SplitManifest
from ..llm.cache import record_sha256
from ..ltm import ReferenceLTM
from ..probe.run import reference_owner, reference_owner_of
from ..probe.theta_outputs import KIND, bundle_key
from ..store.integrity import served
from ..store.keys import canonical_json, input_key, results_root
from ..sweep.gridfile import DatasetSource
from ..sweep.tasks import task_reference
from ..training.finetune import FinetuneConfig
from ..training.privacy import PrivacyConfig
from ..training.regimes import _load, joint_input_key
from .collect import _copy, _made_entry, _scores, _Writer
from .completions import FINE_TUNED_MARK, completions_fill, folder_key
from .layout import KINDS, MANIFEST, Bundle, BundleError, read_bundle, write_manifest

#: What marks a bundle made by :func:`collect_store` (its manifest's ``source``).
STORE_SOURCE = "store"
RUN_FILE = "run.json.gz"


def config_from_dict(data: dict) -> FinetuneConfig:
    """A run's :class:`~iclmem.training.finetune.FinetuneConfig` from its ``run.json`` (``asdict`` of it)."""
    privacy = data.get("privacy")
    fields = {**data, "probe_epochs": tuple(data["probe_epochs"])}
    config = FinetuneConfig(**{**fields, "privacy": PrivacyConfig(**privacy) if privacy else None})
    if canonical_json(asdict(config)) != canonical_json(data):
        raise BundleError(f"a run's configuration does not read back as it was written: {data}")
    return config


class _StoreRun:
    """One finished run of the store: its folder, split, configuration and input key."""

    def __init__(self, folder: Path, stored: dict, reference: ReferenceLTM) -> None:
        self.folder, self.stored = folder, stored
        self.manifest = SplitManifest.from_dict(stored["manifest"])
        self.config = config_from_dict(stored["config"])
        self.input_key = input_key(self.manifest.identity(), stored["config"], reference.store_identity)

    def meta(self, probe: dict, epochs: list[int]) -> dict:
        """The run's manifest entry: what a check stratifies on, and the scores it may compare."""
        return {
            "source": STORE_SOURCE,
            "dataset": self.manifest.dataset,
            "task": self.manifest.task,
            "query_size": self.manifest.query_size,
            "learning_rate": self.config.learning_rate,
            "regime": "dp" if self.config.privacy is not None else "single_task_fixed",
            "probe": probe,
            "epochs": epochs,
        }


def _finished(store: Path, kind: str, reference: ReferenceLTM, report: dict) -> Iterator[tuple[Path, dict]]:
    """(folder, run.json) of every finished run of ``kind`` (``finetune``, ``multitask``) in the store fine-tuned
    from ``reference``; the others are counted in ``report["other_reference"]``."""
    for folder in sorted((store / kind).glob("*/")):
        if not served(folder, store):
            continue
        stored = json.loads((folder / "run.json").read_text())
        if stored.get("reference_sha256") != reference.checkpoint_sha256:
            report["other_reference"] += 1
            continue
        yield folder, stored


def _runs(store: Path, reference: ReferenceLTM, report: dict) -> dict[str, _StoreRun]:
    """The store's finished single-task runs by store key (fine-tuned from ``reference``)."""
    return {f.name: _StoreRun(f, stored, reference) for f, stored in _finished(store, "finetune", reference, report)}


def _scored(store: Path) -> list[tuple[Path, str, str, dict]]:
    """Every finished probe-score folder: (folder, whose, model, probe parameters)."""
    out = []
    for folder in sorted((store / "probe").glob("*/")):
        if not served(folder, store):
            continue
        params = json.loads((folder / "params.json").read_text())
        out.append((folder, params.pop("run"), params.pop("model"), params))
    return out


def _run_files(folder: Path) -> Callable[[Path], None]:
    def fill(target: Path) -> None:
        for name in KINDS["finetune"]:
            shutil.copyfile(folder / name, target / name)
        (target / RUN_FILE).write_bytes(gzip.compress((folder / "run.json").read_bytes(), mtime=0))

    return fill


def _draw_probe(scored: dict[str, dict[str, set[int]]], ref_probes: set[str]) -> tuple[dict, list[int]]:
    """The probe parameters a check draws a run under: those it was scored at the most epochs with (and M_ref)."""
    options = [  # the probe's own scores (a control's, e.g. P3's shuffled labels, are not what a check probes)
        (len(epochs), key) for key, epochs in scored.items() if key in ref_probes and "manipulations" in json.loads(key)
    ]
    if not options:
        return {}, []
    _, key = max(options)
    return json.loads(key), sorted(scored[key])


def _joint_views(
    store: Path, reference: ReferenceLTM, sources: Mapping[str, DatasetSource], writer: _Writer, report: dict,
    owners: tuple[dict[str, tuple[str, str]], dict[str, str]],
) -> None:  # fmt: skip
    """App. D's joint runs of the store (chapter 05's): each run's item, and its views' owners of probe scores added
    to ``owners`` (a view's store key -> its input key and dataset; M_ref's owner -> dataset). A check does not draw
    them: a design's bundle draws the regimes (:mod:`iclmem.bundle.recheck`)."""
    theta_owner, ref_owner = owners
    for folder, stored in _finished(store, "multitask", reference, report):
        manifests = {m.dataset: m for m in (SplitManifest.from_dict(d) for d in stored["manifests"])}
        config = config_from_dict(stored["config"])
        tables = {d: (sources[d] if d in sources else DatasetSource(d)).load() for d in manifests}
        ikey = joint_input_key(stored["regime"], list(manifests.values()), config, reference)
        run = _load(folder, folder.name, stored["regime"], manifests, tables, config, ikey)
        writer.add("multitask", ikey, _copy(KINDS["multitask"], folder), {"datasets": run.datasets, "source": "store"})
        report["joint_runs"] += 1
        for dataset in run.datasets:
            view = run.view(dataset)
            theta_owner[view.key] = (view.input_key, dataset)
            ref_owner[reference_owner(view)] = dataset


def _outputs(
    store: Path, reference: ReferenceLTM, writer: _Writer, report: dict, theta_owner: dict[str, tuple[str, str]]
) -> None:
    """M_theta's outputs on tasks of a reading's own (:mod:`iclmem.probe.theta_outputs`), each under its run's input
    key, the model, what was asked and the tasks' digest."""
    for folder in sorted((store / KIND).glob("*/")):
        if not served(folder, store):
            continue
        params = json.loads((folder / "params.json").read_text())
        owner, dataset = theta_owner.get(params["run"], ("", None))
        if dataset is None:
            report["unowned_scores"] += 1
            continue
        key = bundle_key(owner, params["model"], params["asked"], params["tasks"], reference)
        meta = {"run": owner, "model": params["model"], "asked": params["asked"], "dataset": dataset}
        writer.add(KIND, key, _copy(("outputs.npz", "params.json"), folder), meta)
        report["outputs"] += 1


def collect_store(
    out: str | Path, *, results_dir: str | Path | None = None, reference: ReferenceLTM | str | Path | None = None,
    command: str = "", sources: Mapping[str, DatasetSource] | None = None, completions: Path | None = None,
    executed: Path | None = None,
) -> tuple[Bundle, dict]:  # fmt: skip
    """Copy every finished run and probe score of the store into the bundle at ``out`` (made if absent, else
    extended: an item already there is never written again). Returns the bundle and a report of the items added.

    ``sources``: where a check loads a table that is not one of the project's by name (a CSV's path, target and
    task); the project's tables (:func:`iclmem.data.prepared_table`) need none. ``completions``: a completion cache
    (``$ICLMEM_CACHE/llm_completions``) whose records chapter 06 read, kept per model folder
    (:mod:`iclmem.bundle.completions`). ``executed``: the executed notebooks of the build that filled the store
    (``_build/executed``): the CPU seconds their records hold are what the bundle's contents cost."""
    out, store = Path(out), results_root(results_dir).resolve()
    old = read_bundle(out).manifest if (out / MANIFEST).is_file() else {}
    if old and old.get("source") != STORE_SOURCE:
        raise BundleError(f"{out} is a design's bundle (iclmem bundle make): collect a store into another folder")
    ref = task_reference(reference)
    report = {
        "runs": 0,
        "joint_runs": 0,
        "scores": 0,
        "other_reference": 0,
        "unowned_scores": 0,
        "outputs": 0,
        "completions": 0,
    }
    runs = _runs(store, ref, report)
    writer = _Writer(out, old.get("items", {}))
    theta_owner = {k: (r.input_key, r.manifest.dataset) for k, r in runs.items()}
    ref_owner = {_ref_owner(r): r.manifest.dataset for r in runs.values()}
    _joint_views(store, ref, sources or {}, writer, report, (theta_owner, ref_owner))
    theta: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    ref_probes: dict[str, set[str]] = defaultdict(set)
    for folder, whose, model, params in _scored(store):
        owner, dataset = (whose, ref_owner.get(whose)) if model == "ref" else theta_owner.get(whose, ("", None))
        if dataset is None:
            report["unowned_scores"] += 1  # a run of another reference
            continue
        meta = {"run": owner, "model": model, "dataset": dataset}
        writer.add("probe", input_key(owner, model, params, ref.store_identity), _scores(folder), meta)
        report["scores"] += 1
        if model == "ref":
            ref_probes[whose].add(canonical_json(params))
        else:
            theta[owner][canonical_json(params)].add(int(model.split("-", 1)[1]))
    _outputs(store, ref, writer, report, theta_owner)
    for run in runs.values():
        probe, epochs = _draw_probe(theta[run.input_key], ref_probes[_ref_owner(run)])
        writer.add("finetune", run.input_key, _run_files(run.folder), run.meta(probe, epochs))
        report["runs"] += 1
    for relative, records in model_folders(completions).items() if completions else ():
        meta = {"folder": relative, "records": len(records), "recomputable": _recomputable(relative)}
        writer.add("completions", folder_key(relative), completions_fill(records), meta)
        report["completions"] += len(records)
    body = {
        "name": old.get("name", out.name),
        "source": STORE_SOURCE,
        "probe": {},
        "sources": {**old.get("sources", {}), **{k: asdict(v) for k, v in (sources or {}).items()}},
        "reference_sha256": ref.store_identity,
        "made": [*old.get("made", []), _made_entry(command, report)],
        "items": writer.items,
        **_cost(executed, old),
    }
    return write_manifest(out, body), report


def _valid(record: dict) -> bool:
    """A completion record that matches the sha256 it holds of its own content (as the cache reads one)."""
    body = {k: v for k, v in record.items() if k != "sha256"}
    return isinstance(record.get("text"), str) and record.get("sha256") == record_sha256(body)


def model_folders(cache: Path) -> dict[str, list[dict]]:
    """The completion cache's valid records by model folder (``<backend>/<endpoint>/<model>``)."""
    out: dict[str, list[dict]] = {}
    for path in sorted(cache.glob("*/*/*/*/*.json")):
        relative = str(path.parent.parent.relative_to(cache))
        if relative.startswith("quarantine"):
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if _valid(record):
            out.setdefault(relative, []).append(record)
    return out


def _cost(executed: Path | None, old: dict) -> dict:
    """The CPU seconds and hours of the build whose store the bundle holds, from its executed notebooks' records
    (:class:`iclmem.book.build.NotebookRun` writes each notebook's ``cpu_s``), and which notebooks; else as before."""
    if executed is None:
        return {k: old[k] for k in ("cpu_seconds", "cpu_hours", "cpu_notebooks") if k in old}
    records = {p.name.split(".")[0]: json.loads(p.read_text()) for p in sorted(executed.rglob("*.ipynb.cache.json"))}
    # a notebook already recorded keeps the CPU of the first collected build that executed it (a later build of an
    # extended bundle read some of its results instead of computing them)
    seconds = {**{name: float(r.get("cpu_s") or 0.0) for name, r in records.items()}, **old.get("cpu_notebooks", {})}
    total = sum(seconds.values())
    return {"cpu_seconds": round(total, 1), "cpu_hours": round(total / 3600, 3), "cpu_notebooks": seconds}


def _recomputable(relative: str) -> bool:
    """A check may decode the folder's completions again: the in-process base model's (not a fine-tuned copy's)."""
    return relative.startswith("inprocess/local/") and FINE_TUNED_MARK not in relative


def _ref_owner(run: _StoreRun) -> str:
    """Whose M_ref scores the run's are (:func:`iclmem.probe.run.reference_owner_of`)."""
    return reference_owner_of(run.manifest, run.config)


__all__ = ["RUN_FILE", "STORE_SOURCE", "collect_store", "config_from_dict", "model_folders"]
