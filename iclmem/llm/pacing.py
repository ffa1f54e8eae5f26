"""How the OpenAI-compatible backend spaces its requests: the window of requests in flight, an optional pace per
minute, and the wait a server asks for with ``Retry-After``.

The paper's GPT-4 runs (Sec. 4, "Model": completions, classification repeated three times, and the judge) come to
about 36,000 requests (:mod:`iclmem.llm.plan`); sent one after the other they take most of a day, so
:class:`~iclmem.llm.backends.OpenAIBackend` keeps up to ``ICLMEM_OPENAI_CONCURRENCY`` requests in flight (default
8). A rate-limited server answers HTTP 429 (or 503) with ``Retry-After``; :class:`Pacer` then holds back *every*
request of the window until that time, not only the one refused, and spaces request starts at most
``ICLMEM_OPENAI_RPM`` per minute when that variable is set.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime

ENV_CONCURRENCY = "ICLMEM_OPENAI_CONCURRENCY"
ENV_RPM = "ICLMEM_OPENAI_RPM"
DEFAULT_CONCURRENCY = 8


def positive_int(value: object, name: str, meaning: str, example: int) -> int:
    """``value`` as an integer >= 1, or a ``ValueError`` that names ``name`` and says how to fix it."""
    text = str(value).strip()
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1 or isinstance(value, bool):
        raise ValueError(
            f"{name}={text!r} is not a positive integer; set {name} to {meaning} (e.g. {example}), "
            f"or unset it for the default"
        )
    return number


def concurrency_from_env(environ: Mapping[str, str] | None = None) -> int:
    """``ICLMEM_OPENAI_CONCURRENCY``: requests kept in flight at once (default 8; 1 sends them one by one)."""
    value = (os.environ if environ is None else environ).get(ENV_CONCURRENCY, "").strip()
    if not value:
        return DEFAULT_CONCURRENCY
    return positive_int(value, ENV_CONCURRENCY, "the number of requests to keep in flight", DEFAULT_CONCURRENCY)


def rpm_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """``ICLMEM_OPENAI_RPM``: at most this many request starts per minute (unset: no pace)."""
    value = (os.environ if environ is None else environ).get(ENV_RPM, "").strip()
    return positive_int(value, ENV_RPM, "the requests per minute your API tier allows", 500) if value else None


def retry_after_seconds(headers: Mapping[str, str] | None, now: Callable[[], float] = time.time) -> float | None:
    """The wait a response asks for: ``retry-after-ms`` (OpenAI's), else ``Retry-After`` in seconds or as an HTTP
    date (RFC 9110 Sec. 10.2.3); ``None`` when there is none or it cannot be read. Never negative."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        if "retry-after-ms" in lower:
            return max(0.0, float(lower["retry-after-ms"]) / 1000)
    except ValueError:
        pass
    value = lower.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


class Pacer:
    """Shared by the threads of one backend: :meth:`wait` before each attempt blocks until the server's last
    ``Retry-After`` has passed (:meth:`hold`) and, with ``rpm``, until this attempt's slot (60/rpm seconds after
    the previous one). Slots are reserved under a lock and slept outside it, so waits overlap rather than add up."""

    def __init__(
        self,
        rpm: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = 60.0 / rpm if rpm else 0.0
        self.clock, self.sleep = clock, sleep
        self._lock = threading.Lock()
        self._next_slot = float("-inf")
        self._hold_until = float("-inf")

    def hold(self, seconds: float) -> None:
        """No attempt of any thread starts within ``seconds`` from now (a later hold never shortens an earlier)."""
        with self._lock:
            self._hold_until = max(self._hold_until, self.clock() + seconds)

    def wait(self) -> float:
        """Block until this attempt may start; returns the seconds waited."""
        with self._lock:
            now = self.clock()
            start = max(now, self._hold_until, self._next_slot)
            if self.interval:
                self._next_slot = start + self.interval
        delay = start - now
        if delay > 0:
            self.sleep(delay)
        return max(0.0, delay)


__all__ = [
    "DEFAULT_CONCURRENCY",
    "ENV_CONCURRENCY",
    "ENV_RPM",
    "Pacer",
    "concurrency_from_env",
    "positive_int",
    "retry_after_seconds",
    "rpm_from_env",
]
