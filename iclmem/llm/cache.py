"""On-disk cache of completions: a re-run never pays twice and a killed run resumes where it stopped.

**Key.** sha256 of ``(backend, base URL, model, messages, decoding settings, repeat index)``
(:func:`completion_key`). The base URL enters as :func:`endpoint` writes it (scheme, host, port and path;
no ``user:password@``, query or fragment), so two servers that serve one model name keep apart, and the
API key (read from the environment by the backend) never enters a key or a record. The repeat index
(:attr:`ChatRequest.repeat`) makes each of the paper's repeated performance runs a completion of its own.

**Layout.** One small JSON file per completion,
``$ICLMEM_CACHE/llm_completions/<backend>/<endpoint>/<model>/<key[:2]>/<key>.json`` (``<endpoint>`` is
``local`` for the in-process backend, else host, port and path, e.g. ``127.0.0.1_8000_v1``). A record holds
every field of its key, the key itself and the completion. Why files and not an append-only JSONL: a file is
written whole to a uniquely named temporary file and then renamed (:func:`iclmem.store.atomic.atomic_write_text`),
so a reader sees the complete record or none, two threads or processes may fill one cache at once (the
last rename of a key wins, and both wrote the same completion), and there is no log whose torn last line
must be repaired.

**Each completion is written as it arrives.** :class:`CachedBackend` takes every completion from the
backend's ``complete_iter`` (both backends of the project hand each one over as soon as it is ready: the
in-process one per decoding batch, the OpenAI-compatible one per response, in arrival order with up to
``ICLMEM_OPENAI_CONCURRENCY`` requests in flight) and writes it before it asks for the next, so a run killed
by any signal, SIGKILL included, loses at most the requests in flight. The results come back in request
order whatever the arrival order. A backend without ``complete_iter`` gets ``chunk_size`` requests per call
(default 1). On resume only the missing keys are sent; a key asked for twice in one batch is sent once.

**Reading.** A record counts only if it parses, matches the sha256 it holds of its own content, and every key
field equals the request's; anything else is a miss and is requested again. A file that is there but does not
parse or match (torn by a machine crash, which renaming does not protect against without an fsync, or
changed by a disk error or a bad copy) is moved to ``$ICLMEM_CACHE/llm_completions/quarantine/`` with one line on stderr
(:func:`iclmem.store.integrity.quarantine`); a leftover ``.<key>.json.*.tmp`` of a killed write is never read. Failed
requests are not cached (they are retried next run). Records of the first layout
(``llm_completions/<backend>/<model>/``, keyed by messages and decoding only) are not read: delete those
folders; their completions are computed again once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from iclmem.llm.chat import ChatBackend, ChatRequest, Completion, LLMError
from iclmem.store.atomic import atomic_write_text
from iclmem.store.errors import DamagedArtifactError
from iclmem.store.integrity import quarantine

#: Version of the key and record format (part of every key). 3: each record holds the sha256 of its content.
FORMAT = 3


def cache_root() -> Path:
    """``$ICLMEM_CACHE`` or ``~/.cache/iclmem`` (outside the repository; nothing there is committed)."""
    env = os.environ.get("ICLMEM_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "iclmem"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_") or "_"


def endpoint(base_url: str | None) -> str | None:
    """The base URL as keys and records hold it: lower-case scheme and host, port, path without a trailing
    slash; credentials, query and fragment dropped. ``None`` for a backend without a server."""
    if not base_url or not base_url.strip():
        return None
    parts = urlsplit(base_url.strip())
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))


def _identity(backend: str, base_url: str | None, model: str, request: ChatRequest) -> dict[str, Any]:
    """The key fields of ``request`` as they are stored (JSON types: tuples become lists)."""
    fields = {
        "format": FORMAT,
        "backend": backend,
        "base_url": endpoint(base_url),
        "model": model,
        "messages": request.message_dicts(),
        "decoding": asdict(request.decoding),
        "repeat": request.repeat,
    }
    return json.loads(json.dumps(fields, ensure_ascii=False))


def _digest(fields: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def record_sha256(body: dict[str, Any]) -> str:
    """The sha256 a record holds of the rest of its content (canonical JSON)."""
    return _digest(body)


def completion_key(backend: str, base_url: str | None, model: str, request: ChatRequest) -> str:
    """sha256 over backend, base URL (:func:`endpoint`), model, messages, decoding settings and repeat index."""
    return _digest(_identity(backend, base_url, model, request))


class CompletionCache:
    """Completions of one ``(backend, base URL, model)``, one atomically written file per key."""

    def __init__(self, backend: str, model: str, root: str | Path | None = None, base_url: str | None = None) -> None:
        root = Path(root) if root is not None else cache_root() / "llm_completions"
        self.root = root
        self.backend, self.model, self.base_url = backend, model, endpoint(base_url)
        place = "local" if self.base_url is None else _slug(self.base_url.split("://", 1)[-1])
        self.folder = root / _slug(backend) / place / _slug(model)

    def identity(self, request: ChatRequest) -> dict[str, Any]:
        return _identity(self.backend, self.base_url, self.model, request)

    def key(self, request: ChatRequest) -> str:
        return _digest(self.identity(request))

    def path(self, request: ChatRequest) -> Path:
        key = self.key(request)
        return self.folder / key[:2] / f"{key}.json"

    def _load(self, path: Path) -> dict[str, Any] | None:
        """The record at ``path`` if it is whole and matches its own sha256; a damaged one (torn, a flipped
        bit) is moved to ``<root>/quarantine/`` with one line on stderr, and counts as a miss."""
        try:
            raw = path.read_bytes()
        except OSError:  # missing
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            body = {k: v for k, v in data.items() if k != "sha256"}
            ok = isinstance(data.get("text"), str) and data.get("sha256") == record_sha256(body)
        except (ValueError, AttributeError):
            ok = False
        if ok:
            return data
        with contextlib.suppress(
            DamagedArtifactError
        ):  # a read-only cache serves what it holds; a damaged record is a miss
            dest = quarantine(path, "content differs from its sha256", self.root)
            print(f"iclmem cache: damaged completion {path}; moved to {dest}, requesting it again", file=sys.stderr)
        return None

    def get(self, request: ChatRequest) -> Completion | None:
        """The cached completion of ``request``; else one a checked results bundle holds (:mod:`iclmem.bundle`)."""
        fields = self.identity(request)
        key = _digest(fields)
        data = self._load(self.folder / key[:2] / f"{key}.json")
        if data is None:
            from iclmem.bundle.completions import bundled_record

            data = bundled_record(str(self.folder.relative_to(self.root)), key)
            body = {k: v for k, v in (data or {}).items() if k != "sha256"}
            if data is not None and not (isinstance(data.get("text"), str) and data.get("sha256") == _digest(body)):
                data = None  # not the record it claims to be: computed again
        if data is None or data.get("key") != key or any(data.get(f) != v for f, v in fields.items()):
            return None
        return Completion(data["text"], data.get("prompt_tokens"), data.get("completion_tokens"), cached=True)

    def put(self, request: ChatRequest, completion: Completion) -> None:
        """Write the record of a successful completion (failed ones are not cached); atomic, and safe to call
        from several threads or processes at once (each write has its own temporary file)."""
        if not completion.ok:
            return
        fields = self.identity(request)
        key = _digest(fields)
        record = {
            **fields,
            "key": key,
            "text": completion.text,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
        }
        record["sha256"] = record_sha256(record)
        atomic_write_text(self.folder / key[:2] / f"{key}.json", json.dumps(record, ensure_ascii=False))


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    errors: int = 0


class CachedBackend:
    """A :class:`ChatBackend` that answers from the disk cache and sends only the misses to ``backend``,
    writing each completion as it arrives. ``chunk_size``: requests per call to a backend without
    ``complete_iter`` (each chunk is on disk before the next is sent)."""

    def __init__(self, backend: ChatBackend, root: str | Path | None = None, chunk_size: int = 1) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        self.backend = backend
        self.cache = CompletionCache(backend.name, backend.model_id, root, getattr(backend, "base_url", None))
        self.stats = CacheStats()
        self.chunk_size = chunk_size

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def base_url(self) -> str | None:
        return self.cache.base_url

    @property
    def context_window(self) -> int | None:
        return self.backend.context_window

    def count_tokens(self, request: ChatRequest) -> int:
        return self.backend.count_tokens(request)

    def missing(self, requests: Sequence[ChatRequest]) -> list[ChatRequest]:
        """The requests that a run would send to the backend (one per key, in order)."""
        seen: set[str] = set()
        out = []
        for r in requests:
            key = self.cache.key(r)
            if key not in seen and self.cache.get(r) is None:
                out.append(r)
            seen.add(key)
        return out

    def _send(self, requests: list[ChatRequest]) -> Iterator[tuple[int, Completion]]:
        stream = getattr(self.backend, "complete_iter", None)
        if callable(stream):
            yield from stream(requests)
            return
        for start in range(0, len(requests), self.chunk_size):
            chunk = requests[start : start + self.chunk_size]
            completions = self.backend.complete_batch(chunk)
            if len(completions) != len(chunk):
                raise LLMError(f"{self.name} backend returned {len(completions)} completions for {len(chunk)} requests")
            yield from enumerate(completions, start)

    def complete_batch(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out: list[Completion | None] = [self.cache.get(r) for r in requests]
        first: dict[str, int] = {}  # key -> the first request with it among the misses
        same: dict[int, list[int]] = {}  # that request -> later requests with the same key
        for i, c in enumerate(out):
            if c is None:
                key = self.cache.key(requests[i])
                if key in first:
                    same[first[key]].append(i)
                else:
                    first[key], same[i] = i, []
        todo = list(same)
        self.stats.hits += len(requests) - len(todo)
        self.stats.misses += len(todo)
        for j, completion in self._send([requests[i] for i in todo]):
            i = todo[j]
            self.cache.put(requests[i], completion)  # on disk before the next completion is asked for
            self.stats.errors += not completion.ok
            for t in (i, *same[i]):
                out[t] = completion
        lost = [i for i, c in enumerate(out) if c is None]
        if lost:
            raise LLMError(f"{self.name} backend returned no completion for {len(lost)} of {len(todo)} requests")
        return [c for c in out if c is not None]
