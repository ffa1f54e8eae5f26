"""Grid files of a sweep (Sec. 5, Tab. 2; App. D): schema, validation, expansion into specs.

A grid file is YAML. Keys: ``name`` (required; the summaries go to ``results/sweep/<name>/``),
``description``; the axes ``datasets``, ``learning_rates``, ``query_sizes``, ``label_conditions``
(default ``[none]``), ``regimes`` (default ``[single_task_fixed]``); the scalars ``epochs``,
``seed``, ``context_size``; ``probe`` (how each run is probed); and ``parts``, a list of
mappings that override the axes and scalars, each expanded on its own (Tab. 2's grid and
App. D's regimes live in one file that way). Unknown keys, empty axes, unknown datasets or
regimes are errors that name the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from iclmem.user_errors import UserError

from ..data import dataset_names, normalize_label_condition, prepared_table
from ..data.dataset import Dataset
from ..probe.settings import ProbeSettings
from ..training.finetune import PROBE_EPOCHS, probe_epochs_up_to
from ..training.grid import JOINT_SEPARATOR, GridAxes, RunSpec, expand_grid
from ..training.regimes import MULTI_TASK_RANDOM, check_regime

AXES: tuple[str, ...] = ("datasets", "learning_rates", "query_sizes", "label_conditions", "regimes")
SCALARS: dict[str, Any] = {"epochs": 100, "seed": 0, "context_size": 512}
GRID_KEYS: tuple[str, ...] = ("name", "description", *AXES, *SCALARS, "probe", "parts")
PART_KEYS: tuple[str, ...] = ("name", "description", *AXES, *SCALARS)
PROBE_KEYS: tuple[str, ...] = ("n_candidates", "max_queries", "epochs", "seed", "n_boot", "manipulations")
DATASET_KEYS: tuple[str, ...] = ("name", "path", "target", "task")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class SweepError(UserError, ValueError):
    """Bad grid file or unreachable cluster: the message names the problem and the fix."""


@dataclass(frozen=True)
class DatasetSource:
    """A dataset of a grid: a name of :func:`iclmem.data.dataset_names`, or a CSV/parquet file with its target."""

    name: str
    path: str | None = None
    target: str | None = None
    task: str | None = None

    def load(self, carte_dir: str | None = None) -> Dataset:
        """The deduplicated table (cached per process)."""
        if self.path is None:
            return prepared_table(self.name, carte_dir)
        return prepared_table(self.path, target=self.target, task=self.task, name=self.name)


@dataclass(frozen=True)
class Grid:
    """A validated grid: its name (the summaries' folder), specs in order, dataset sources, probe settings."""

    name: str
    specs: tuple[RunSpec, ...]
    sources: dict[str, DatasetSource]
    probe: ProbeSettings = ProbeSettings()
    description: str = ""

    def frame(self) -> pd.DataFrame:
        """One row per task (spec)."""
        return pd.DataFrame([s.to_dict() for s in self.specs])


def _fail(where: str, message: str) -> SweepError:
    return SweepError(f"{where}: {message}")


def _check_keys(data: Mapping, valid: Sequence[str], where: str) -> None:
    unknown = [str(k) for k in data if k not in valid]
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(map(repr, unknown))}; valid keys: {', '.join(valid)}")


def _axis(values: Any, name: str, where: str) -> list:
    if values is None or (isinstance(values, list | tuple) and len(values) == 0):
        raise _fail(where, f"axis {name!r} is empty; give at least one value")
    return list(values) if isinstance(values, list | tuple) else [values]


def _number(value: Any, kind: type, name: str, where: str, minimum: float) -> Any:
    try:
        number = kind(value)
        if isinstance(value, bool) or (kind is int and float(value) != number):
            raise ValueError
    except (TypeError, ValueError):
        raise _fail(where, f"{name} must be {'an integer' if kind is int else 'a number'}, got {value!r}") from None
    if not number >= minimum:
        raise _fail(where, f"{name} must be >= {minimum:g}, got {value!r}")
    return number


def _source(entry: Any, where: str, base: Path) -> DatasetSource:
    if isinstance(entry, Mapping) and set(entry) == {"name"}:
        entry = entry["name"]
    if isinstance(entry, Mapping):
        _check_keys(entry, DATASET_KEYS, f"{where}: dataset {dict(entry)!r}")
        if not entry.get("path") or not entry.get("target"):
            raise _fail(
                where,
                f"a dataset given as a mapping is a file: {{path: data.csv, target: <column>}}, got {dict(entry)!r}",
            )
        path = Path(str(entry["path"])).expanduser()
        path = path if path.is_absolute() else (base / path)
        if not path.is_file():
            raise _fail(
                where,
                f"dataset file {str(path)!r} does not exist; check its path (relative paths start at the grid file's "
                "folder)",
            )
        name = str(entry.get("name") or re.sub(r"[^A-Za-z0-9_.-]+", "_", path.stem))
        if not _NAME.match(name):
            raise _fail(where, f"dataset name {name!r} may only contain letters, digits, '_', '.', '-'")
        return DatasetSource(name, str(path.resolve()), str(entry["target"]), entry.get("task"))
    name = str(entry)
    if name in dataset_names():
        return DatasetSource(name)
    raise _fail(
        where,
        f"unknown dataset {name!r}; valid names: {', '.join(dataset_names())}; "
        "or give a file as {path: data.csv, target: <column>}",
    )


def _probe_settings(data: Any, where: str) -> ProbeSettings:
    if data is None:
        return ProbeSettings()
    if not isinstance(data, Mapping):
        raise _fail(where, f"probe must be a mapping with keys {', '.join(PROBE_KEYS)}")
    _check_keys(data, PROBE_KEYS, f"{where}: probe")
    out: dict[str, Any] = {}
    if "n_candidates" in data:
        out["n_candidates"] = _number(data["n_candidates"], int, "probe.n_candidates", where, 2)
    if data.get("max_queries") is not None:
        out["max_queries"] = _number(data["max_queries"], int, "probe.max_queries", where, 1)
    if data.get("epochs") is not None:
        out["epochs"] = tuple(
            sorted({_number(e, int, "probe.epochs", where, 0) for e in _axis(data["epochs"], "probe.epochs", where)})
        )
    if "seed" in data:
        out["seed"] = _number(data["seed"], int, "probe.seed", where, 0)
    if "n_boot" in data:
        out["n_boot"] = _number(data["n_boot"], int, "probe.n_boot", where, 0)
    if data.get("manipulations") is not None:
        from ..probe import ProbeError, resolve_manipulations

        names = _axis(data["manipulations"], "probe.manipulations", where)
        try:
            out["manipulations"] = tuple(m.name for m in resolve_manipulations([str(n) for n in names]))
        except (ProbeError, KeyError, ValueError) as exc:
            raise _fail(where, f"probe.manipulations: {exc}") from None
    return ProbeSettings(**out)


def _part_specs(
    part: Mapping, defaults: Mapping, where: str, base: Path, sources: dict[str, DatasetSource]
) -> list[RunSpec]:
    merged = {**defaults, **part}
    for key in ("datasets", "learning_rates", "query_sizes"):
        if key not in merged:
            raise _fail(where, f"missing {key!r}; every grid needs datasets, learning_rates and query_sizes")
    merged = {"label_conditions": ["none"], "regimes": ["single_task_fixed"], **merged}
    axes = {k: _axis(merged[k], k, where) for k in AXES}
    names = []
    for entry in axes["datasets"]:
        src = _source(entry, where, base)
        if src.name in sources and sources[src.name] != src:
            raise _fail(where, f"dataset name {src.name!r} names two different sources; give them distinct names")
        if JOINT_SEPARATOR in src.name:
            raise _fail(where, f"dataset name {src.name!r} may not contain {JOINT_SEPARATOR!r}")
        sources[src.name] = src
        names.append(src.name)
    if len(set(names)) != len(names):
        raise _fail(where, f"datasets are listed twice: {names}")
    lrs = [_number(v, float, "learning_rates", where, 1e-300) for v in axes["learning_rates"]]
    qs = [_number(v, int, "query_sizes", where, 1) for v in axes["query_sizes"]]
    try:
        conditions = [normalize_label_condition(c) for c in axes["label_conditions"]]
        regimes = [check_regime(r) for r in axes["regimes"]]
    except ValueError as exc:
        raise _fail(where, str(exc)) from None
    if MULTI_TASK_RANDOM in regimes and conditions != ["none"]:
        raise _fail(
            where,
            "regime multi_task_random samples queries with their true labels (App. D): use label_conditions [none] "
            "for it (put it in its own part under parts:)",
        )
    epochs = _number(merged.get("epochs", SCALARS["epochs"]), int, "epochs", where, 0)
    seed = _number(merged.get("seed", SCALARS["seed"]), int, "seed", where, 0)
    context = _number(merged.get("context_size", SCALARS["context_size"]), int, "context_size", where, 1)
    return expand_grid(GridAxes(names, lrs, qs, conditions, regimes), epochs, seed, context)


def parse_grid(data: Any, where: str = "grid", base: str | Path = ".") -> Grid:
    """Validate a grid mapping (see :func:`load_grid`) and expand it into specs."""
    if not isinstance(data, Mapping):
        raise _fail(where, f"a grid file is a mapping with keys {', '.join(GRID_KEYS)}")
    _check_keys(data, GRID_KEYS, where)
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise _fail(
            where,
            f"name must be a word of letters, digits, '_', '.', '-' (it names results/sweep/<name>/), got {name!r}",
        )
    base = Path(base)
    probe = _probe_settings(data.get("probe"), where)
    defaults = {k: v for k, v in data.items() if k in PART_KEYS and k not in ("name", "description")}
    parts = data.get("parts")
    if parts is None:
        parts = [{}]
    elif not isinstance(parts, list) or not parts:
        raise _fail(where, "parts must be a non-empty list of mappings (each overrides the top-level axes)")
    sources: dict[str, DatasetSource] = {}
    specs: list[RunSpec] = []
    for i, part in enumerate(parts):
        label = f"{where}: parts[{i}]" if data.get("parts") is not None else where
        if not isinstance(part, Mapping):
            raise _fail(label, f"each part is a mapping with keys from {', '.join(PART_KEYS)}")
        _check_keys(part, PART_KEYS, label)
        specs += [s for s in _part_specs(part, defaults, label, base, sources) if s not in specs]
    if probe.epochs is not None:
        odd = [e for e in probe.epochs if e not in PROBE_EPOCHS]
        if odd:
            raise _fail(
                where,
                f"probe.epochs {odd} are not probing epochs; fine-tuning keeps the paper's {list(PROBE_EPOCHS)} (Tab. "
                "2)",
            )
        for spec in specs:
            if not probe.epochs_for(probe_epochs_up_to(spec.epochs)):
                raise _fail(
                    where,
                    f"probe.epochs {list(probe.epochs)} are all beyond epochs={spec.epochs}; raise epochs or add "
                    "earlier epochs",
                )
    return Grid(name, tuple(specs), sources, probe, str(data.get("description") or ""))


def load_grid(path: str | Path) -> Grid:
    """Read and validate a grid YAML file.

    Keys: ``name`` (required; summaries go to ``results/sweep/<name>/``), ``description``; the axes
    ``datasets`` (names of :func:`iclmem.data.dataset_names` or ``{path, target, task, name}``
    mappings; paths relative to the file), ``learning_rates``, ``query_sizes``, ``label_conditions``
    (default ``[none]``), ``regimes`` (default ``[single_task_fixed]``); the scalars ``epochs``,
    ``seed``, ``context_size``; ``probe`` (``n_candidates``, ``max_queries``, ``epochs``, ``seed``,
    ``n_boot``, ``manipulations``); and ``parts``, a list of mappings that override the axes and
    scalars, each expanded on its own (e.g. Tab. 2's grid and App. D's regimes in one file).
    Unknown keys, empty axes, unknown datasets or regimes are errors that name the fix.
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise SweepError(f"no grid file at {str(path)!r}; see grids/book.yaml for an example")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SweepError(f"{path}: not valid YAML ({exc}); fix the syntax (grids/book.yaml is an example)") from None
    return parse_grid(data, str(path), path.parent)


__all__ = [
    "AXES",
    "DATASET_KEYS",
    "GRID_KEYS",
    "PART_KEYS",
    "PROBE_KEYS",
    "SCALARS",
    "DatasetSource",
    "Grid",
    "SweepError",
    "load_grid",
    "parse_grid",
]
