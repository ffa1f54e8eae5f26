"""Chapter 06's completions in a results bundle (issue 55): the LLM's answers the book read, served to its cache.

A completion is already named by its inputs alone: the sha256 of backend, endpoint, model, messages, decoding and
repeat (:func:`iclmem.llm.cache.completion_key`). A bundle keeps one item per model folder of the completion cache
(``completions/<input key of the folder>``: every record of it in one ``completions.jsonl.gz``), and
:class:`iclmem.llm.cache.CompletionCache` reads a record it lacks from there, each record checked against its own
sha256 and key fields as a cached one is. Nothing is written into the bundle.

A check (:mod:`iclmem.bundle.recheck`) recomputes drawn completions of the in-process base model (SmolLM2) and
compares their text exactly (greedy decoding). A fine-tuned model's completions are not drawn: a draw would
fine-tune the LLM again, longer than the rest of a check; the page says so.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ..store.keys import input_key
from . import serve
from .layout import Bundle

FILE = "completions.jsonl.gz"
#: A model folder's name carries this when the model was fine-tuned here (:mod:`iclmem.llm.finetune`).
FINE_TUNED_MARK = "+ft"


def folder_key(relative: str) -> str:
    """The input key of a completion-cache folder ``<backend>/<endpoint>/<model>`` (its path under the cache)."""
    return input_key("llm_completions", relative)


def _valid(record: dict) -> bool:
    from ..llm.cache import record_sha256

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


def completions_fill(records: list[dict]) -> Callable[[Path], None]:
    """An item's ``completions.jsonl.gz``: one record per line, by key (the same bytes for the same records)."""

    def fill(folder: Path) -> None:
        lines = [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in sorted(records, key=lambda r: r["key"])]
        (folder / FILE).write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))

    return fill


@lru_cache(maxsize=16)
def _records(path: str) -> dict[str, dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return {r["key"]: r for r in map(json.loads, handle)}


def bundled_record(relative: str, key: str) -> dict | None:
    """The record ``key`` of cache folder ``relative`` from a checked bundle in use, if one holds it whole."""
    folder = serve.lookup("completions", folder_key(relative))
    if folder is None:
        return None
    record = _records(str(folder / FILE)).get(key)
    return record if record is not None and _valid(record) else None


def completion_draws(bundle: Bundle) -> list[tuple[str, str]]:
    """(item key, record key) of every completion a check may recompute: the in-process base model's."""
    out = []
    for entry in bundle.items.values():
        if entry["kind"] == "completions" and entry.get("recomputable"):
            records = _records(str(bundle.item_dir("completions", entry["key"]) / FILE))
            out += [(entry["key"], k) for k in sorted(records)]
    return out


@lru_cache(maxsize=1)
def _generator():
    from ..llm.pipeline import make_generator

    return make_generator("inprocess", batch_size=1)


def recompute_completion(bundle: Bundle, item: str, key: str) -> str:
    """The drawn completion decoded again by the in-process model: a problem, or '' when its text is the bundle's,
    exactly."""
    from ..llm.chat import ChatRequest, Decoding

    record = _records(str(bundle.item_dir("completions", item) / FILE))[key]
    decoding = record["decoding"]
    request = ChatRequest(
        tuple((m["role"], m["content"]) for m in record["messages"]),
        Decoding(decoding["max_new_tokens"], tuple(decoding["stop"]), decoding["temperature"]),
        record["repeat"],
    )
    [done] = _generator().complete_batch([request])
    return "" if done.text == record["text"] else f"completion text {done.text!r}, bundled {record['text']!r}"


__all__ = [
    "FILE",
    "bundled_record",
    "completion_draws",
    "completions_fill",
    "folder_key",
    "model_folders",
    "recompute_completion",
]
