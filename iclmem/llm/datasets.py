"""Datasets of the LLM replication: the paper's WNLI, RTE, TREC and DBpedia, and CARTE tables as text.

Paper Sec. 4 "Data": WNLI and RTE (natural language inference, an instance is a sentence pair) and TREC
and DBpedia (classification, an instance is one text). They load through Hugging Face ``datasets``
(from the local cache when ``HF_HUB_OFFLINE=1``; from a local copy of the Hub repositories when
``ICLMEM_HF_DATASETS_DIR`` is set) or from a local CSV / JSON(L) / parquet file with the same columns. TREC's Hub
repository holds a loading script, which current ``datasets`` no longer runs: it is read from the Hub's parquet
conversion of it (branch ``refs/convert/parquet``). Offline by default the companion uses rows of the CARTE tables
shipped in the ``carte_ai`` package, serialized as text (``"Name is X. Winery is Y. ..."``) with a categorical column as
label: nothing needs a download, and fine-tuning can control which rows the model has seen.

An instance is what the paper replicates: the sentence pair (WNLI, RTE), the question (TREC), the title and
abstract of a Wikipedia article (DBpedia: "each entry in the dataset includes the title and abstract of a
Wikipedia article", App. B), joined into one text (:func:`join_text`).

Instances and demonstrations are disjoint samples, evenly distributed over labels (200 each in the paper,
Sec. 4 "Data" and "Demonstrations"); smaller k use a nested subset of the demonstration pool, in a random
order fixed per k (Sec. 3.5). Where a dataset names a key entity (:attr:`DatasetSpec.key_entity`: the winery of a
wine, the shared sentence 1 of WNLI, Sec. 5), the instances are drawn one per key entity and the demonstrations
from other key entities, so members, non-members and demonstrations never share one (a demonstration, or the
fine-tuning set, holding the winery to replicate would hand the model the answer).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from iclmem.llm.chat import LLMError

Kind = Literal["nli", "text"]


class UnknownLLMDatasetError(LLMError, KeyError):
    """A dataset name that is not in :data:`DATASETS`."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class DatasetUnavailableError(LLMError):
    """A dataset that cannot be read (not in the offline cache, missing file, missing columns)."""


class SamplingError(LLMError, ValueError):
    """Not enough rows (per label) for the requested instances and demonstrations, or k too large."""


@dataclass(frozen=True)
class DatasetSpec:
    """How to read one dataset and how to talk about it in prompts."""

    name: str
    title: str  # the name used in the instruction, e.g. "WNLI"
    kind: Kind
    fields: tuple[str, ...]  # nli: (sentence 1, sentence 2); text: columns joined into one text (join_text)
    label_field: str
    label_names: dict[Any, str]  # stored value -> label name used in prompts
    task: str  # the standard k-shot ICL instruction (performance, Sec. 3.4)
    hf_path: str | None = None
    hf_config: str | None = None
    hf_revision: str | None = None  # a Hub branch in a form current ``datasets`` reads (TREC: its parquet conversion)
    carte_file: str | None = None
    serialize: Literal["plain", "carte"] = "plain"
    paper: bool = False  # a dataset of the paper: its numbers are quoted in the notebook
    #: Column of the instance's key entity (the main content of the segment to replicate): instances sharing one
    #: never fall in different pools (members, non-members, demonstrations). None: every instance stands alone.
    key_entity: str | None = None

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(self.label_names.values()))


DATASETS: dict[str, DatasetSpec] = {
    s.name: s
    for s in [
        DatasetSpec(
            "wnli",
            "WNLI",
            "nli",
            ("sentence1", "sentence2"),
            "label",
            {0: "not_entailment", 1: "entailment"},
            "Decide whether Sentence 1 entails Sentence 2.",
            "nyu-mll/glue",
            "wnli",
            paper=True,
            key_entity="sentence1",
        ),  # WNLI pairs share sentence 1 with different labels (Sec. 5)
        DatasetSpec(
            "rte",
            "RTE",
            "nli",
            ("sentence1", "sentence2"),
            "label",
            {0: "entailment", 1: "not_entailment"},
            "Decide whether Sentence 1 entails Sentence 2.",
            "nyu-mll/glue",
            "rte",
            paper=True,
            key_entity="sentence1",
        ),
        DatasetSpec(
            "trec",
            "TREC",
            "text",
            ("text",),
            "coarse_label",
            {0: "abbreviation", 1: "entity", 2: "description", 3: "human", 4: "location", 5: "numeric"},
            "Classify each question by the type of its answer.",
            "CogComp/trec",
            hf_revision="refs/convert/parquet",
            paper=True,
        ),
        DatasetSpec(
            "dbpedia",
            "DBpedia",
            "text",
            ("title", "content"),
            "label",
            dict(
                enumerate(
                    [
                        "company",
                        "educational institution",
                        "artist",
                        "athlete",
                        "office holder",
                        "mean of transportation",
                        "building",
                        "natural place",
                        "village",
                        "animal",
                        "plant",
                        "album",
                        "film",
                        "written work",
                    ]
                )
            ),
            "Classify each Wikipedia abstract by the type of its subject.",
            "fancyzhx/dbpedia_14",
            paper=True,
        ),
        DatasetSpec(
            "wine_vivino",
            "Vivino wine prices",
            "text",
            ("Name", "Region", "Rating", "Winery"),
            "Wine_Type",
            {"red": "red", "white": "white", "sparkling": "sparkling", "rose": "rose"},
            "Classify each wine by its type.",
            carte_file="wine_vivino_price.parquet",
            serialize="carte",
            key_entity="Winery",
        ),
        DatasetSpec(
            "wine_dot_com",
            "wine.com prices",
            "text",
            ("Names", "Region", "Grapes", "ABV"),
            "wine_type",
            {"Red Wine": "red", "White Wine": "white", "Sparkling & Champagne": "sparkling", "Pink and Rosé": "rose"},
            "Classify each wine by its type.",
            carte_file="wine_dot_com_prices.parquet",
            serialize="carte",
        ),
    ]
}


@dataclass(frozen=True)
class Instance:
    """One labelled dataset instance; ``parts`` is (sentence 1, sentence 2) for NLI, (text,) otherwise."""

    id: str
    label: str
    parts: tuple[str, ...]
    group: str | None = None  # the key entity (DatasetSpec.key_entity) of its row; None: the instance stands alone

    @property
    def group_key(self) -> str:
        """What the split keeps in one pool: the key entity, or the instance itself when it has none."""
        return f"entity:{self.group}" if self.group is not None else f"id:{self.id}"

    @property
    def text(self) -> str:
        return " ".join(self.parts)


@dataclass(frozen=True)
class LoadedDataset:
    """The usable instances of one split, and how many rows were dropped on the way."""

    spec: DatasetSpec
    split: str
    instances: tuple[Instance, ...]
    n_rows: int
    n_dropped_empty: int = 0
    n_dropped_duplicate: int = 0
    n_dropped_label: int = 0
    source: str = ""

    def label_counts(self) -> dict[str, int]:
        return pd.Series([i.label for i in self.instances]).value_counts().to_dict()


def get_spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownLLMDatasetError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}") from None


def carte_data_dir() -> Path:
    """Folder of the parquet tables shipped by ``carte_ai`` (located without importing the package)."""
    spec = importlib.util.find_spec("carte_ai")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetUnavailableError("the carte_ai package (which ships the CARTE tables) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _format_value(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.4g}"
    text = " ".join(str(value).split())
    return text or None


def serialize_row(row: pd.Series | dict[str, Any], columns: Sequence[str]) -> str:
    """``"Name is X. Winery is Y."``: one sentence per non-missing column, in ``columns`` order."""
    parts = []
    for col in columns:
        value = _format_value(row[col])
        if value is not None:
            parts.append(f"{col.replace('_', ' ')} is {value}.")
    return " ".join(parts)


def join_text(parts: Sequence[str]) -> str:
    """The fields of a text instance as one text: DBpedia's title and abstract become ``"Title. Abstract"`` (a full stop
    closes a field that does not end with one of ``.!?:;``, so the title reads as a sentence of its own)."""
    out = [p if i == len(parts) - 1 or p.endswith((".", "!", "?", ":", ";")) else f"{p}." for i, p in enumerate(parts)]
    return " ".join(out)


def _read_file(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise DatasetUnavailableError(f"data file {path} does not exist; check the path given as data_files")
    suffix = "".join(path.suffixes[-1:]).lower()
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix in (".json", ".jsonl"):
        return pd.read_json(path, lines=suffix == ".jsonl")
    if suffix == ".parquet":
        return pd.read_parquet(path)
    raise DatasetUnavailableError(f"unsupported data file {path}: use .csv, .json, .jsonl or .parquet")


ENV_HF_DIR = "ICLMEM_HF_DATASETS_DIR"


def hf_local_dir(spec: DatasetSpec) -> Path | None:
    """``$ICLMEM_HF_DATASETS_DIR/<owner>/<name>`` when that variable is set: a local copy of the dataset's Hub
    repository (its ``README.md`` with the ``configs`` block and its parquet files, as ``huggingface-cli download
    --repo-type dataset`` or a ``git clone`` of the Hub repo leaves it; for TREC, of its ``refs/convert/parquet``
    branch)."""
    root = os.environ.get(ENV_HF_DIR, "").strip()
    return Path(root).expanduser() / spec.hf_path if root and spec.hf_path else None


def _read_hf(spec: DatasetSpec, split: str) -> pd.DataFrame:
    """One split through ``datasets.load_dataset``: from the local copy (:func:`hf_local_dir`) when
    ``ICLMEM_HF_DATASETS_DIR`` is set, else from the Hub (``HF_HUB_OFFLINE=1``: from the local Hugging Face cache
    only)."""
    try:
        import datasets
    except ImportError as e:
        raise DatasetUnavailableError("loading paper datasets needs `datasets`: pip install 'iclmem[llm]'") from e
    local = hf_local_dir(spec)
    if local is not None and not local.is_dir():
        raise DatasetUnavailableError(
            f"{ENV_HF_DIR} is set but {local} is not a folder; put a copy of the Hub "
            "repository "
            f"{spec.hf_path} there, or unset {ENV_HF_DIR} to read from the Hub"
        )
    source = str(local) if local is not None else spec.hf_path
    revision = None if local is not None else spec.hf_revision
    try:
        ds = datasets.load_dataset(source, spec.hf_config, split=split, revision=revision)
    except Exception as e:  # noqa: BLE001 - offline misses surface as several exception types
        offline = os.environ.get("HF_HUB_OFFLINE") == "1" and local is None
        hint = (
            (
                " HF_HUB_OFFLINE=1 is set and the dataset is not in the local Hugging Face cache: unset it "
                "(or set 0) to "
                f"download, point {ENV_HF_DIR} at a local copy, or pass data_files=PATH"
            )
            if offline
            else ""
        )
        raise DatasetUnavailableError(f"cannot load {source}/{spec.hf_config or ''} split {split!r}: {e}.{hint}") from e
    return ds.to_pandas()


def load_dataset(name: str, split: str = "train", data_files: str | Path | None = None) -> LoadedDataset:
    """Load one dataset split as :class:`Instance` rows.

    ``data_files``: a local file with the Hugging Face columns (``sentence1``, ``sentence2``, ``label`` for
    WNLI/RTE; ``text``, ``coarse_label`` for TREC; ``title``, ``content``, ``label`` for DBpedia); labels may be the
    integer codes or the label names. Rows with an empty part (or a text of fewer than two whitespace
    tokens, which cannot be split into two segments), an unknown label, or a duplicate text are dropped
    and counted.
    """
    spec = get_spec(name)
    if data_files is not None:
        frame, source = _read_file(Path(data_files)), str(data_files)
    elif spec.carte_file is not None:
        path = carte_data_dir() / spec.carte_file
        frame, source = _read_file(path), str(path)
    elif spec.hf_path is not None:
        frame, source = _read_hf(spec, split), f"hf:{spec.hf_path}/{spec.hf_config or ''}:{split}"
    else:  # pragma: no cover - every registry entry has a source
        raise DatasetUnavailableError(f"dataset {name!r} has no source")
    needed = (*spec.fields, spec.label_field, *([spec.key_entity] if spec.key_entity else []))
    missing = [c for c in dict.fromkeys(needed) if c not in frame.columns]
    if missing:
        raise DatasetUnavailableError(
            f"{source} lacks the columns {missing} of dataset {name!r} "
            f"(has {list(frame.columns)}); "
            "rename its columns to these or choose the dataset the file holds"
        )

    names = {**{str(k): v for k, v in spec.label_names.items()}, **{v: v for v in spec.label_names.values()}}
    instances: list[Instance] = []
    seen: set[str] = set()
    n_empty = n_dup = n_label = 0
    for pos, row in enumerate(frame.to_dict("records")):
        raw = row[spec.label_field]
        label = names.get(str(int(raw)) if isinstance(raw, (int, np.integer, float)) and not pd.isna(raw) else str(raw))
        if label is None:
            n_label += 1
            continue
        if spec.serialize == "carte":
            parts: tuple[str, ...] = (serialize_row(row, spec.fields),)
        else:
            parts = tuple(" ".join(str(row[f]).split()) if not pd.isna(row[f]) else "" for f in spec.fields)
            if spec.kind == "text" and all(parts):
                parts = (join_text(parts),)
        if any(not p for p in parts) or (spec.kind == "text" and len(parts[0].split()) < 2):
            n_empty += 1
            continue
        text = " ".join(parts)
        if text in seen:
            n_dup += 1
            continue
        seen.add(text)
        group = _format_value(row[spec.key_entity]) if spec.key_entity else None
        instances.append(Instance(f"{name}:{split}:{row.get('idx', pos)}", label, parts, group))
    return LoadedDataset(spec, split, tuple(instances), len(frame), n_empty, n_dup, n_label, source)


# -- sampling ----------------------------------------------------------------------------------------------
def stable_int(text: str) -> int:
    """A 64-bit integer from ``text`` that does not change between Python runs (unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _quotas(labels: Sequence[str], n: int, rng: np.random.Generator) -> dict[str, int]:
    base, extra = divmod(n, len(labels))
    lucky = set(rng.choice(len(labels), size=extra, replace=False).tolist()) if extra else set()
    return {lab: base + (i in lucky) for i, lab in enumerate(labels)}


@dataclass(frozen=True)
class Sample:
    """Instances to replicate and the demonstration pool: disjoint, each evenly distributed over labels.

    ``demonstrations`` is ordered round-robin over labels, so every prefix (every smaller k) stays
    balanced; ``members`` holds the ids of the instances used for fine-tuning (empty without it).
    """

    instances: tuple[Instance, ...]
    demonstrations: tuple[Instance, ...]
    seed: int
    members: frozenset[str] = field(default_factory=frozenset)

    def is_member(self, instance: Instance) -> bool:
        return instance.id in self.members


def sample_instances(data: LoadedDataset, n_instances: int, n_demonstrations: int, seed: int = 0) -> Sample:
    """Draw ``n_instances`` and ``n_demonstrations`` disjoint rows, evenly distributed over labels (Sec. 4 "Data").

    Split by key entity (:attr:`Instance.group_key`): every instance comes from a key entity of its own and every
    demonstration from a key entity no instance has, so however :func:`assign_members` later divides the instances,
    members, non-members and demonstrations share none. Labels are filled rarest first (fewest key entities): for
    each, the unused key entities holding a row of it are taken in a seeded random order, the first ones give the
    instances and the next ones the demonstrations, one row of that label (drawn at random) each. Without key
    entities every row is its own, and this is a plain draw without replacement per label. Same seed, same split.
    """
    if n_instances < 1:
        raise SamplingError(f"n_instances must be >= 1, got {n_instances}")
    if n_demonstrations < 0:
        raise SamplingError(f"n_demonstrations must be >= 0, got {n_demonstrations}")
    rng = np.random.default_rng([seed, stable_int(data.spec.name)])
    by_group: dict[str, dict[str, list[Instance]]] = {}  # key entity -> label -> rows, in data order
    for inst in data.instances:
        by_group.setdefault(inst.group_key, {}).setdefault(inst.label, []).append(inst)
    labels = [lab for lab in data.spec.labels if any(lab in g for g in by_group.values())]
    if not labels:
        raise SamplingError(f"dataset {data.spec.name!r} has no usable instances")
    q_inst, q_demo = _quotas(labels, n_instances, rng), _quotas(labels, n_demonstrations, rng)
    order = sorted(by_group)
    rank = {key: int(r) for key, r in zip(order, rng.permutation(len(order)), strict=True)}  # seeded order of entities
    holders = {lab: sorted((k for k in order if lab in by_group[k]), key=rank.__getitem__) for lab in labels}
    used: set[str] = set()
    instances: list[Instance] = []
    demos: dict[str, list[Instance]] = {}
    for lab in sorted(labels, key=lambda lab: len(holders[lab])):  # rarest label first; stable: spec order on ties
        need = q_inst[lab] + q_demo[lab]
        free = [k for k in holders[lab] if k not in used][:need]
        if len(free) < need:
            what = "key entities" if data.spec.key_entity else "rows"
            raise SamplingError(
                f"label {lab!r} of {data.spec.name!r} has {len(free)} {what} left for {q_inst[lab]} instances + "
                f"{q_demo[lab]} demonstrations (one per {'key entity' if data.spec.key_entity else 'row'})"
            )
        used.update(free)
        picked = [rows[int(rng.integers(len(rows)))] for rows in (by_group[k][lab] for k in free)]
        instances += picked[: q_inst[lab]]
        demos[lab] = picked[q_inst[lab] :]
    shuffled = [instances[i] for i in rng.permutation(len(instances))]
    label_order = [labels[i] for i in rng.permutation(len(labels))]
    pool: list[Instance] = []
    for j in range(max((len(v) for v in demos.values()), default=0)):
        pool += [demos[lab][j] for lab in label_order if j < len(demos.get(lab, ()))]
    return Sample(tuple(shuffled), tuple(pool), seed)


def demonstrations_for_k(sample: Sample, k: int) -> list[Instance]:
    """The first ``k`` of the pool, in a random order fixed per ``k`` (same for memorization and performance)."""
    if k < 0:
        raise SamplingError(f"k must be >= 0, got {k}")
    if k > len(sample.demonstrations):
        raise SamplingError(
            f"k={k} is larger than the demonstration pool ({len(sample.demonstrations)} demonstrations)"
        )
    chosen = list(sample.demonstrations[:k])
    perm = np.random.default_rng([sample.seed, k, 7919]).permutation(k)
    return [chosen[i] for i in perm]


def assign_members(sample: Sample, fraction: float, seed: int | None = None) -> Sample:
    """Mark ``round(fraction * n)`` instances, stratified by label, as members (the fine-tuning set).

    The instances of :func:`sample_instances` have one key entity each, so members and non-members share none;
    a sample whose instances share a key entity is refused (it would put one entity on both sides).
    """
    if not 0.0 <= fraction <= 1.0:
        raise SamplingError(f"member_fraction must be in [0, 1], got {fraction}")
    keys = [i.group_key for i in sample.instances]
    if len(set(keys)) < len(keys):
        raise SamplingError(
            "instances share a key entity, which would fall on both sides of the member split; draw "
            "them with sample_instances (one instance per key entity)"
        )
    rng = np.random.default_rng([sample.seed if seed is None else seed, 104729])
    members: set[str] = set()
    labels = list(dict.fromkeys(i.label for i in sample.instances))
    target = round(fraction * len(sample.instances))
    # largest-remainder allocation of the member count over labels
    counts = {lab: sum(i.label == lab for i in sample.instances) for lab in labels}
    exact = {lab: fraction * c for lab, c in counts.items()}
    alloc = {lab: int(math.floor(v)) for lab, v in exact.items()}
    for lab in sorted(labels, key=lambda lab: exact[lab] - alloc[lab], reverse=True)[: target - sum(alloc.values())]:
        alloc[lab] += 1
    for lab in labels:
        rows = [i for i in sample.instances if i.label == lab]
        for j in rng.choice(len(rows), size=alloc[lab], replace=False):
            members.add(rows[j].id)
    return Sample(sample.instances, sample.demonstrations, sample.seed, frozenset(members))
