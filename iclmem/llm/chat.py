"""The one chat interface both backends implement: every LLM sits behind it.

A :class:`ChatRequest` is a list of chat messages plus :class:`Decoding` settings. Decoding is greedy
(temperature 0, as in the paper's Sec. 4 "we set the temperature to zero"); ``max_new_tokens`` bounds the
completion (the paper: 100 tokens for memorization, 10 for performance) and ``stop`` strings end it early.
Both backends apply the stop strings to the returned text themselves, so a server that ignores ``stop``
still returns the same text as the in-process backend.

``ChatRequest.repeat`` numbers the repeated runs of one prompt (the paper reports performance as the mean of
3 runs): the backends ignore it, the cache keys on it, so every repeat is a request of its own. Backends may
also implement ``complete_iter`` (see :class:`StreamingBackend`), yielding each completion as it is ready,
so that :class:`~iclmem.llm.cache.CachedBackend` writes it to disk before the next one is paid for; a
backend that serves several endpoints states its ``base_url`` (part of the cache key; ``None`` in-process).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol, runtime_checkable

from iclmem.user_errors import UserError

Message = dict[str, str]


class LLMError(UserError, RuntimeError):
    """Base class of the errors of :mod:`iclmem.llm`."""


class MissingAPIKeyError(LLMError):
    """An environment variable the OpenAI-compatible backend needs is not set."""


class ContextOverflowError(LLMError):
    """A prompt plus its completion budget does not fit the model's context window (never truncated)."""


@dataclass(frozen=True)
class Decoding:
    """Greedy decoding settings; part of every cache key."""

    max_new_tokens: int = 32
    stop: tuple[str, ...] = ("\n",)
    temperature: float = 0.0

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(
                f"max_new_tokens must be >= 1, got {self.max_new_tokens}; give the completion at least one token"
            )
        if self.temperature != 0.0:
            raise ValueError(
                f"temperature {self.temperature:g}: only greedy decoding (temperature 0) is supported, as in the "
                "paper; "
                "leave temperature at 0"
            )
        object.__setattr__(self, "stop", tuple(self.stop))


@dataclass(frozen=True)
class ChatRequest:
    """Messages (``{"role": ..., "content": ...}``), decoding settings and the repeat index (0, 1, ...)."""

    messages: tuple[tuple[str, str], ...]
    decoding: Decoding = field(default_factory=Decoding)
    repeat: int = 0

    def __post_init__(self) -> None:
        if self.repeat < 0:
            raise ValueError(f"repeat must be >= 0, got {self.repeat}; repeats are numbered 0, 1, ...")

    @classmethod
    def user(cls, content: str, decoding: Decoding | None = None, repeat: int = 0) -> ChatRequest:
        """A single user message (the layout of all prompts of the paper's Fig. 1)."""
        return cls((("user", content),), decoding or Decoding(), repeat)

    def message_dicts(self) -> list[Message]:
        return [{"role": r, "content": c} for r, c in self.messages]

    def prompt_hash(self) -> str:
        """sha256 of the messages (the decoding settings are a separate part of the cache key)."""
        return hashlib.sha256(json.dumps(self.messages, ensure_ascii=False).encode()).hexdigest()

    def key(self) -> str:
        """sha256 of messages, decoding settings and repeat index (the request's part of the cache key, which
        :func:`iclmem.llm.cache.completion_key` completes with backend, base URL and model)."""
        payload = {"prompt": self.prompt_hash(), "decoding": asdict(self.decoding), "repeat": self.repeat}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@dataclass
class Completion:
    """The text a backend returned for one request, or the error that prevented it."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def apply_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` at the first stop string; returns ``(text, stopped)``."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


@runtime_checkable
class ChatBackend(Protocol):
    """What the replication needs from a model: greedy chat completions and token counts."""

    name: str
    model_id: str
    context_window: int | None

    def complete_batch(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Complete every request (errors are reported per request, not raised)."""
        ...

    def count_tokens(self, request: ChatRequest) -> int:
        """Prompt tokens of ``request`` (exact in-process and where a server tokenizes, else a lower estimate)."""
        ...


@runtime_checkable
class StreamingBackend(ChatBackend, Protocol):
    """A backend that hands over each completion as soon as it is ready (both backends of the project)."""

    def complete_iter(self, requests: Sequence[ChatRequest]) -> Iterator[tuple[int, Completion]]:
        """Yield ``(index into requests, completion)`` once per request, as each is ready (any order)."""
        ...
