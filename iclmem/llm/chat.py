"""The one chat interface both backends implement: every LLM sits behind it.

A :class:`ChatRequest` is a list of chat messages plus :class:`Decoding` settings. Decoding is greedy
(temperature 0, as in the paper's Sec. 4 "we set the temperature to zero"); ``max_new_tokens`` bounds the
completion (the paper: 100 tokens for memorization, 10 for performance) and ``stop`` strings end it early.
Both backends apply the stop strings to the returned text themselves, so a server that ignores ``stop``
still returns the same text as the in-process backend.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol, runtime_checkable

Message = dict[str, str]


class LLMError(RuntimeError):
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
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature != 0.0:
            raise ValueError("only greedy decoding (temperature 0) is supported, as in the paper")
        object.__setattr__(self, "stop", tuple(self.stop))


@dataclass(frozen=True)
class ChatRequest:
    """Messages (``{"role": ..., "content": ...}``) and decoding settings."""

    messages: tuple[tuple[str, str], ...]
    decoding: Decoding = field(default_factory=Decoding)

    @classmethod
    def user(cls, content: str, decoding: Decoding | None = None) -> ChatRequest:
        """A single user message (the layout of all prompts of the paper's Fig. 1)."""
        return cls((("user", content),), decoding or Decoding())

    def message_dicts(self) -> list[Message]:
        return [{"role": r, "content": c} for r, c in self.messages]

    def prompt_hash(self) -> str:
        """sha256 of the messages (the decoding settings are a separate part of the cache key)."""
        return hashlib.sha256(json.dumps(self.messages, ensure_ascii=False).encode()).hexdigest()

    def key(self) -> str:
        """sha256 of messages and decoding settings."""
        payload = {"prompt": self.prompt_hash(), "decoding": asdict(self.decoding)}
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
        """Prompt tokens of ``request`` (exact in-process, an upper estimate for remote models)."""
        ...
