"""Chapter 06's completions in a results bundle (issue 55): the LLM's answers the book read, served to its cache.

A completion is already named by its inputs alone: the sha256 of backend, endpoint, model, messages, decoding and
repeat (:func:`iclmem.llm.cache.completion_key`). A bundle keeps one item per model folder of the completion cache
(``completions/<input key of the folder>``: every record of it in one ``completions.jsonl.gz``), and
:class:`iclmem.llm.cache.CompletionCache` reads a record it lacks from there, each record checked against its own
sha256 and key fields as a cached one is. Nothing is written into the bundle.

A check (:mod:`iclmem.bundle.run_check`) recomputes drawn completions of the in-process base model (SmolLM2) and
compares their text exactly (greedy decoding): one stratum, one draw (:func:`iclmem.bundle.check.sample_draws`).
A fine-tuned model's completions are not drawn: a draw would fine-tune the LLM again, longer than the rest of a
check; the page says so.
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
    """The record ``key`` of cache folder ``relative`` from a checked bundle in use (its item's files intact), if one
    holds it; the cache checks the record itself as it checks its own files
    (:class:`iclmem.llm.cache.CompletionCache`)."""
    folder = serve.lookup("completions", folder_key(relative))
    return None if folder is None else _records(str(folder / FILE)).get(key)


def bundled_records(bundle: Bundle, item: str) -> dict[str, dict]:
    """Every record of completion item ``item`` of ``bundle``, by key."""
    return _records(str(bundle.item_dir("completions", item) / FILE))


def completion_draws(bundle: Bundle) -> list[tuple[str, str]]:
    """(item key, record key) of every completion a check may recompute: the in-process base model's."""
    out = []
    for entry in bundle.items.values():
        if entry["kind"] == "completions" and entry.get("recomputable"):
            out += [(entry["key"], k) for k in sorted(bundled_records(bundle, entry["key"]))]
    return out


__all__ = [
    "FILE",
    "bundled_record",
    "bundled_records",
    "completion_draws",
    "completions_fill",
    "folder_key",
]
