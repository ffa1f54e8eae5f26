"""What ``iclmem audit`` reads, checked before anything is probed (Sec. 4.1 "Data Pre-Processing", Sec. 4.2, App. A.4).

* :class:`AuditConfig`: the command's settings, from its flags or from a YAML file with the same keys
  (``--config audit.yaml``; a flag given on the command line wins over the file).
* :func:`read_audit_files`: the members file (the rows the model was fine-tuned on) and the non-members file (rows
  it never saw), CSV or parquet, checked against each other: neither empty, the target in both, the same columns.
* :func:`read_audit_inputs`: those two and, with ``--table``, the full table the model was fine-tuned from
  (:func:`read_full_table`, :func:`table_columns`): the files' columns, in the table's order and read with the
  table's column types.
* :func:`load_audit_models`: the fine-tuned model and its base, named as the ``model`` parameter elsewhere
  (``reference``, ``reference-v1``, ``tabicl:PATH``, ``tabpfn:PATH``) or ``reference:PATH``, a checkpoint of the
  reference architecture such as :meth:`iclmem.ltm.ReferenceLTM.save` writes (``run.model(epoch).save(path)`` for
  a controlled run's M_theta); both of one architecture, the model a fine-tuned copy of the base.

Every mistake is an :class:`AuditInputError`: one line that names the problem and the fix, and exit status 2.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ...user_errors import UserError

#: Fewest rows each file must keep after deduplication for the audit to run: the cross-validated model-free
#: baseline needs 5 per fold of 2 classes, and below it the smallest detectable AUC is near 1 (:mod:`.verdict`).
MIN_ROWS = 10
#: The model families whose checkpoints can be a fine-tuned model and its base.
FAMILIES: tuple[str, ...] = ("reference", "tabicl", "tabpfn")


class AuditInputError(UserError, ValueError):
    """A bad input of ``iclmem audit`` (settings, files, models): one line naming the problem and the fix."""


@dataclass(frozen=True)
class AuditConfig:
    """The settings of one audit; every field is a flag (``--non-members`` for ``non_members``) and a key of the
    YAML file of ``--config``. The control's recipe is stated in :mod:`iclmem.probe.audit.positive_control`."""

    model: str = ""
    base: str = ""
    members: str = ""
    non_members: str = ""
    #: the full table the model was fine-tuned from (members, non-members and any other rows); empty: the two files
    table: str = ""
    target: str = ""
    task: str = ""  # classification | regression; empty: inferred from the target
    out: str = "audit_report"
    control: bool = False
    show_rows: bool = False
    match: bool = False
    drop: tuple[str, ...] = ()
    missing_target: str = "error"  # error | drop
    max_queries: int = 1000  # members and non-members probed at most (each)
    n_boot: int = 1000
    n_permutations: int = 100
    top_k: int = 10
    seed: int = 0
    preprocessing: str = "dataset"
    control_learning_rate: float = 1e-3
    control_epochs: int = 50
    control_context_size: int = 64
    control_max_members: int = 100
    #: where the settings came from, for messages (not a setting)
    source: str = field(default="the command line", compare=False)

    @classmethod
    def keys(cls) -> list[str]:
        """The settings' names (the YAML keys)."""
        return [f.name for f in dataclasses.fields(cls) if f.name != "source"]

    @classmethod
    def from_values(cls, values: dict[str, Any], source: str = "the command line") -> AuditConfig:
        """A config from ``{key: value}``; unknown keys and values of the wrong type are one-line errors."""
        unknown = sorted(set(values) - set(cls.keys()))
        if unknown:
            raise AuditInputError(
                f"{source}: unknown setting(s) {', '.join(map(repr, unknown))}; the settings are: "
                f"{', '.join(cls.keys())}"
            )
        defaults = cls()
        typed: dict[str, Any] = {}
        for key, value in values.items():
            typed[key] = _typed(key, value, getattr(defaults, key), source)
        return cls(**typed, source=source).checked()

    def checked(self) -> AuditConfig:
        """Raise unless the required settings are given and every number lies in its range."""
        missing = [k for k in ("model", "base", "members", "non_members", "target") if not getattr(self, k)]
        if missing:
            flags = ", ".join("--" + k.replace("_", "-") for k in missing)
            raise AuditInputError(
                f"{self.source}: give {flags} (or the key(s) {', '.join(missing)} in the --config file); e.g. "
                "iclmem audit --model tabpfn:ft.ckpt --base tabpfn:base.ckpt --members train.csv --non-members "
                "holdout.csv --target y"
            )
        if self.task not in ("", "classification", "regression"):
            raise AuditInputError(f"{self.source}: task must be classification or regression, got {self.task!r}")
        if self.missing_target not in ("error", "drop"):
            raise AuditInputError(f"{self.source}: missing_target must be error or drop, got {self.missing_target!r}")
        for key, low in (("max_queries", MIN_ROWS), ("n_boot", 10), ("n_permutations", 20), ("top_k", 1)):
            if getattr(self, key) < low:
                raise AuditInputError(f"{self.source}: {key} must be at least {low}, got {getattr(self, key)}")
        if self.control_epochs < 1 or self.control_context_size < 1 or self.control_max_members < MIN_ROWS:
            raise AuditInputError(
                f"{self.source}: control_epochs and control_context_size must be at least 1 and control_max_members "
                f"at least {MIN_ROWS}"
            )
        if not self.control_learning_rate > 0:
            raise AuditInputError(f"{self.source}: control_learning_rate must be positive")
        return self


def _typed(key: str, value: Any, default: Any, source: str) -> Any:
    """``value`` as the type of ``default`` (a list of names for ``drop``); a one-line error otherwise."""
    if isinstance(default, tuple):
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
    elif isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():  # a flag's text
            return int(value)
    elif isinstance(default, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        with contextlib.suppress(ValueError):
            if isinstance(value, str):
                return float(value)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    kind = "a list of column names" if isinstance(default, tuple) else type(default).__name__
    raise AuditInputError(f"{source}: {key} must be {kind}, got {value!r}")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The mapping of an audit's YAML file (``--config``)."""
    import yaml

    path = Path(path).expanduser()
    if not path.is_file():
        raise AuditInputError(f"no such config file: {path}; check the path, or give the settings as flags")
    try:
        values = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "a syntax error"
        raise AuditInputError(f"{path} is not valid YAML ({first}); fix the syntax") from None
    if not isinstance(values, dict):
        raise AuditInputError(f"{path} must hold a mapping (one `key: value` per line), got {type(values).__name__}")
    return {str(k).replace("-", "_"): v for k, v in values.items()}


def _read_one(path: Path, role: str, rows: str = "") -> pd.DataFrame:
    """One file of the audit, read as :func:`iclmem.data.sources.read_table` reads a table; an empty file is an
    error that says so (``rows``: whose rows the file should hold, for the message; the ``role``'s by default)."""
    from ...data.sources import read_table

    rows = rows or f"the {role}' rows"
    if path.is_file() and not path.read_bytes().strip():
        raise AuditInputError(f"the {role} file {path} is empty; pass the file that holds {rows}")
    try:
        frame = read_table(path)
    except UserError as exc:
        raise AuditInputError(f"the {role} file: {exc}") from None
    if frame.empty:
        raise AuditInputError(f"the {role} file {path} has no rows (only a header); pass the file that holds {rows}")
    return frame


def read_audit_files(config: AuditConfig, table_columns: Sequence[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(members, non_members)`` as read, the ``drop`` columns left out; the files' columns checked against each
    other and against the target (module docstring). ``table_columns``: those of ``--table``, which ``drop`` may
    name too."""
    m_path, n_path = Path(config.members).expanduser(), Path(config.non_members).expanduser()
    members, non_members = _read_one(m_path, "members"), _read_one(n_path, "non-members")
    m_cols, n_cols = [str(c) for c in members.columns], [str(c) for c in non_members.columns]
    members.columns, non_members.columns = m_cols, n_cols
    target = config.target
    if target not in m_cols and target not in n_cols:
        raise AuditInputError(
            f"unknown column: no target column {target!r} in either file; the columns are: {', '.join(m_cols)}; "
            "set --target to one of them"
        )
    for name, cols, other in ((m_path.name, m_cols, n_path.name), (n_path.name, n_cols, m_path.name)):
        if target not in cols:
            raise AuditInputError(
                f"the target {target!r} is a column of {other} but not of {name}; both files need it: add the "
                f"column to {name} (the model's labels for its rows)"
            )
    unknown = [c for c in config.drop if c not in m_cols and c not in n_cols and c not in table_columns]
    if unknown:
        raise AuditInputError(
            f"unknown column(s) {', '.join(map(repr, unknown))} in --drop: neither file"
            f"{' nor the table' if table_columns else ''} has them; the columns are: "
            f"{', '.join(m_cols)}"
        )
    if target in config.drop:
        raise AuditInputError(f"--drop names the target {target!r}; the audit needs it: leave it out of --drop")
    only_m = [c for c in m_cols if c not in n_cols and c not in config.drop]
    only_n = [c for c in n_cols if c not in m_cols and c not in config.drop]
    if only_m or only_n:
        parts = [f"{m_path.name} has {', '.join(map(repr, only_m))} that {n_path.name} lacks"] if only_m else []
        parts += [f"{n_path.name} has {', '.join(map(repr, only_n))} that {m_path.name} lacks"] if only_n else []
        raise AuditInputError(
            f"the files' columns differ: {'; '.join(parts)}; give both files the same columns, or leave the extra "
            "ones out with --drop"
        )
    keep = [c for c in m_cols if c not in config.drop]
    if keep == [target]:
        raise AuditInputError(
            "the files hold no feature column besides the target; the probe needs the rows' features: keep them "
            "(check --drop)"
        )
    return members[keep], non_members[keep]


def read_full_table(config: AuditConfig) -> pd.DataFrame:
    """The full table of ``--table`` as read (its columns' names as text)."""
    path = Path(config.table).expanduser()
    frame = _read_one(path, "table", "every row the model was fine-tuned from, members and non-members among them")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def table_columns(config: AuditConfig, frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The full table without the ``drop`` columns; it must have the files' ``columns`` (the target among them), no
    more and no fewer: the model read the table's columns, and the files' rows are looked up in it."""
    path = Path(config.table).expanduser()
    cols = [c for c in frame.columns if c not in config.drop]
    lacks, extra = [c for c in columns if c not in cols], [c for c in cols if c not in columns]
    if lacks or extra:
        parts = [f"lacks {', '.join(map(repr, lacks))} that the files have"] if lacks else []
        parts += [f"has {', '.join(map(repr, extra))} that the files lack"] if extra else []
        raise AuditInputError(
            f"the table file {path.name} {' and '.join(parts)}; pass as --table the full table the model was "
            "fine-tuned from, with the files' columns (leave extra ones out with --drop)"
        )
    return frame[cols]


def _as_the_table_reads(frame: pd.DataFrame, path: Path, table: pd.DataFrame, role: str) -> pd.DataFrame:
    """A file's columns in the table's order and with the table's column types: a CSV file is read again with them
    (a column the table reads as text, e.g. a vintage that is "NV" in some rows, is then text in the file too, even
    where the file's rows hold only numbers), a parquet file's columns are cast."""
    types = {c: table[c].dtype for c in table.columns}
    try:
        if path.suffix.lower() == ".csv":
            frame = pd.read_csv(path, dtype=types)
            frame.columns = [str(c) for c in frame.columns]
        return frame[list(table.columns)].astype(types)
    except (ValueError, TypeError) as exc:
        why = " ".join(str(exc).split())[:200]
        raise AuditInputError(
            f"the {role} file {path.name} does not read as the table does ({why}); write the files from the table's "
            "own rows, with the same values"
        ) from None


def read_audit_inputs(config: AuditConfig) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """``(members, non_members, table)``: the two files of :func:`read_audit_files` and, with ``--table``, the full
    table (:func:`read_full_table`) with the files read as it reads (its columns' order and types); ``table`` is
    None without ``--table``."""
    if not config.table:
        return *read_audit_files(config), None
    table = read_full_table(config)
    members, non_members = read_audit_files(config, list(table.columns))
    table = table_columns(config, table, [str(c) for c in members.columns])
    members = _as_the_table_reads(members, Path(config.members).expanduser(), table, "members")
    non_members = _as_the_table_reads(non_members, Path(config.non_members).expanduser(), table, "non-members")
    return members, non_members, table


def model_family(spec: str) -> tuple[str, str | None]:
    """``(family, path)`` of a model spec: ``reference:PATH`` is the reference architecture from a file, every
    other form is :func:`iclmem.adapters.parse_model`'s (``path`` None or a version for the shipped reference)."""
    from ...adapters import parse_model
    from ...ltm.interface import LTMInputError

    spec = str(spec).strip()
    if spec.startswith("reference:"):
        path = spec.removeprefix("reference:")
        if not path:
            raise AuditInputError("reference:PATH needs a PATH: a checkpoint file of the reference architecture")
        return "reference-file", path
    try:
        return parse_model(spec)
    except LTMInputError as exc:
        raise AuditInputError(f"{exc} For a fine-tuned reference LTM: reference:PATH.".replace("\n", " ")) from None


def load_audit_model(spec: str, *, preprocessing: str = "dataset", seed: int = 0):  # noqa: ANN201 - an LTM
    """The model a spec names (:func:`model_family`), loaded offline; a missing or foreign file is one line."""
    from ...adapters import load_model
    from ...ltm.reference import load_checkpoint

    kind, path = model_family(spec)
    if kind == "reference-file":
        file = Path(str(path)).expanduser()
        if not file.is_file():
            raise AuditInputError(f"{spec}: no checkpoint at {file}; check the path")
        try:
            return load_checkpoint(file)
        except UserError as exc:
            why = " ".join(str(exc.__cause__ or exc).split())
            raise AuditInputError(
                f"{spec}: {file} is not a checkpoint of the reference architecture ({why}); pass one that "
                "ReferenceLTM.save wrote (a controlled run's M_theta: run.model(epoch).save(path)), or name its "
                "architecture: tabpfn:PATH or tabicl:PATH"
            ) from None
    try:
        return load_model(spec, preprocessing=preprocessing, seed=seed)
    except UserError as exc:
        first = " ".join(str(exc).split())
        raise AuditInputError(f"{spec}: {first}") from None


def _family(spec: str) -> str:
    kind = model_family(spec)[0]
    return "reference" if kind == "reference-file" else kind


def load_audit_models(config: AuditConfig) -> tuple[Any, Any]:
    """``(model, base)``: both loaded, of one family, and of one architecture (the same parameter names and
    shapes: a fine-tuned checkpoint is a copy of its base with other weights)."""
    fm, fb = _family(config.model), _family(config.base)
    if fm != fb:
        raise AuditInputError(
            f"--model is a {fm} checkpoint but --base a {fb} one; the base is the pretrained checkpoint the model "
            f"was fine-tuned from, of the same architecture (e.g. --base {fm}:PATH)"
        )
    theta = load_audit_model(config.model, preprocessing=config.preprocessing, seed=config.seed)
    base = load_audit_model(config.base, preprocessing=config.preprocessing, seed=config.seed)
    a = {k: tuple(v.shape) for k, v in theta.state_dict().items()}
    b = {k: tuple(v.shape) for k, v in base.state_dict().items()}
    if a != b:
        differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        raise AuditInputError(
            f"{config.model} has another architecture than {config.base} ({len(differ)} weights differ in name or "
            f"shape, e.g. {differ[0]!r}); pass as --base the checkpoint the model was fine-tuned from"
        )
    return theta, base


def check_model_takes(model: Any, spec: str, task: str, n_classes: int) -> None:
    """Raise unless ``model`` predicts this task: a classification head with at least ``n_classes`` classes, or a
    regression head (a bar or quantile distribution)."""
    cfg = model.cfg
    if task == "classification" and getattr(cfg, "max_classes", 0) < n_classes:
        raise AuditInputError(
            f"{spec} predicts at most {getattr(cfg, 'max_classes', 0)} classes but the target has {n_classes}; "
            "audit a classifier checkpoint that takes them, or pass --task regression for a numeric target"
        )
    if task == "regression" and not getattr(cfg, "n_bins", 0):
        raise AuditInputError(
            f"{spec} is a classifier checkpoint and the target is numeric (regression); audit the regressor "
            "checkpoint, or pass --task classification"
        )


__all__ = [
    "FAMILIES",
    "MIN_ROWS",
    "AuditConfig",
    "AuditInputError",
    "check_model_takes",
    "load_audit_model",
    "load_audit_models",
    "model_family",
    "read_audit_files",
    "read_audit_inputs",
    "read_config_file",
    "read_full_table",
    "table_columns",
]
