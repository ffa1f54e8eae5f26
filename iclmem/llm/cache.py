"""On-disk cache of completions: a re-run never pays twice and an interrupted run resumes.

Key: ``(backend, model, prompt hash, decoding settings)``. One JSON file per request under
``$ICLMEM_CACHE/llm_completions/<backend>/<model>/<key[:2]>/<key>.json``, written atomically, so a run
killed mid-way leaves only whole entries. Failed requests are not cached (they are retried next run).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from iclmem.atomic import atomic_write_text
from iclmem.llm.chat import ChatBackend, ChatRequest, Completion


def cache_root() -> Path:
    """``$ICLMEM_CACHE`` or ``~/.cache/iclmem`` (outside the repository; nothing there is committed)."""
    env = os.environ.get("ICLMEM_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "iclmem"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_") or "_"


class CompletionCache:
    """Completions stored by :meth:`ChatRequest.key` for one ``(backend, model)``."""

    def __init__(self, backend: str, model: str, root: str | Path | None = None) -> None:
        self.folder = Path(root) if root is not None else cache_root() / "llm_completions"
        self.folder = self.folder / _slug(backend) / _slug(model)

    def path(self, request: ChatRequest) -> Path:
        key = request.key()
        return self.folder / key[:2] / f"{key}.json"

    def get(self, request: ChatRequest) -> Completion | None:
        path = self.path(request)
        try:
            data = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return Completion(data["text"], data.get("prompt_tokens"), data.get("completion_tokens"), cached=True)

    def put(self, request: ChatRequest, completion: Completion) -> None:
        if not completion.ok:
            return
        record = {
            "messages": request.message_dicts(),
            "decoding": asdict(request.decoding),
            "text": completion.text,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
        }
        atomic_write_text(self.path(request), json.dumps(record, ensure_ascii=False))


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    errors: int = 0


class CachedBackend:
    """A :class:`ChatBackend` that answers from the disk cache and sends only the misses to ``backend``."""

    def __init__(self, backend: ChatBackend, root: str | Path | None = None, chunk_size: int = 64) -> None:
        self.backend = backend
        self.cache = CompletionCache(backend.name, backend.model_id, root)
        self.stats = CacheStats()
        self.chunk_size = chunk_size

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def context_window(self) -> int | None:
        return self.backend.context_window

    def count_tokens(self, request: ChatRequest) -> int:
        return self.backend.count_tokens(request)

    def missing(self, requests: Sequence[ChatRequest]) -> list[ChatRequest]:
        """The requests that a run would send to the backend."""
        return [r for r in requests if self.cache.get(r) is None]

    def complete_batch(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out: list[Completion | None] = [self.cache.get(r) for r in requests]
        todo = [i for i, c in enumerate(out) if c is None]
        self.stats.hits += len(requests) - len(todo)
        self.stats.misses += len(todo)
        # chunks: each finished chunk is on disk before the next starts (resume after an interruption)
        for start in range(0, len(todo), self.chunk_size):
            idx = todo[start : start + self.chunk_size]
            for i, completion in zip(idx, self.backend.complete_batch([requests[i] for i in idx]), strict=True):
                self.cache.put(requests[i], completion)
                self.stats.errors += not completion.ok
                out[i] = completion
        return [c for c in out if c is not None]
