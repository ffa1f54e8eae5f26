"""The OpenAI-compatible backend sends up to ``ICLMEM_OPENAI_CONCURRENCY`` requests at once (issue 28): a bounded
window, completions cached as they arrive and returned in request order, ``Retry-After`` honoured by the whole
window, an optional pace per minute, and the API key in no error. Against :class:`iclmem.llm.server.EchoServer`,
a real HTTP server on loopback. (A SIGKILL mid-batch at concurrency 4: tests/llm/test_llm_cache_kill_concurrent.py.)"""

from __future__ import annotations

import threading
import time
from email.utils import formatdate

import pytest

from iclmem.llm.backends import OpenAIBackend
from iclmem.llm.cache import CachedBackend, CompletionCache
from iclmem.llm.chat import ChatRequest, Completion
from iclmem.llm.pacing import Pacer, concurrency_from_env, retry_after_seconds, rpm_from_env
from iclmem.llm.server import EchoServer, echo_reply


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("ICLMEM_OPENAI_CONCURRENCY", raising=False)
    monkeypatch.delenv("ICLMEM_OPENAI_RPM", raising=False)


def _prompt(body: dict) -> str:
    return body["messages"][-1]["content"]


@pytest.mark.parametrize("value", ["abc", "0", "-3", "2.5", " "])
def test_a_bad_concurrency_names_the_variable_and_the_fix(monkeypatch, value):
    monkeypatch.setenv("ICLMEM_OPENAI_CONCURRENCY", value)
    if not value.strip():  # set but blank: the default
        assert concurrency_from_env() == 8 and OpenAIBackend(model="m").concurrency == 8
        return
    with pytest.raises(ValueError, match=r"ICLMEM_OPENAI_CONCURRENCY=.* is not a positive integer; set ICLMEM_OPENAI_"):
        OpenAIBackend(model="m")


def test_concurrency_and_pace_come_from_the_environment(monkeypatch):
    assert OpenAIBackend(model="m").concurrency == 8  # the default
    monkeypatch.setenv("ICLMEM_OPENAI_CONCURRENCY", " 3 ")
    assert OpenAIBackend(model="m").concurrency == 3 and OpenAIBackend(model="m", concurrency=5).concurrency == 5
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIBackend(model="m", concurrency=0)
    assert rpm_from_env() is None and OpenAIBackend(model="m").pacer.interval == 0
    monkeypatch.setenv("ICLMEM_OPENAI_RPM", "120")
    assert rpm_from_env() == 120 and OpenAIBackend(model="m").pacer.interval == 0.5
    monkeypatch.setenv("ICLMEM_OPENAI_RPM", "fast")
    with pytest.raises(ValueError, match="ICLMEM_OPENAI_RPM='fast' is not a positive integer"):
        OpenAIBackend(model="m")


def test_the_window_is_bounded_and_results_come_back_in_request_order():
    requests = [ChatRequest.user(f"prompt {i}") for i in range(10)]
    for concurrency in (1, 3):
        with EchoServer(delay=0.05) as server:
            backend = OpenAIBackend(model="m", base_url=server.base_url, concurrency=concurrency, retries=0)
            out = backend.complete_batch(requests)
        assert [c.text for c in out] == [f"prompt {i}" for i in range(10)] and all(c.ok for c in out)
        assert server.max_in_flight == concurrency and backend.calls == len(server.received) == 10


def test_out_of_order_completions_are_cached_at_once_and_returned_in_order(tmp_path):
    """Four requests in flight together; the server answers them in the order 3, 1, 2, 0, each only once the one
    before is on disk, so every record must be written while the batch still waits for the others."""
    release = {f"prompt {i}": threading.Event() for i in range(4)}

    def answer(body):
        assert release[_prompt(body)].wait(30)
        return echo_reply(body)

    requests = [ChatRequest.user(p) for p in release]
    seen: list[tuple[str, list[bool]]] = []

    with EchoServer(answer=answer) as server:
        cache = CompletionCache("openai", "m", tmp_path, server.base_url)

        def answer_out_of_order():
            deadline = time.monotonic() + 30
            while server.in_flight < 4 and time.monotonic() < deadline:  # all four sent before any answer
                time.sleep(0.01)
            seen.append(("sent", [server.in_flight == 4] + [cache.get(r) is not None for r in requests]))
            for i in (3, 1, 2, 0):
                release[f"prompt {i}"].set()
                while cache.get(requests[i]) is None and time.monotonic() < deadline:
                    time.sleep(0.005)
                seen.append((f"prompt {i}", [cache.get(r) is not None for r in requests]))

        releaser = threading.Thread(target=answer_out_of_order, daemon=True)
        releaser.start()
        backend = OpenAIBackend(model="m", base_url=server.base_url, concurrency=4, retries=0)
        cached = CachedBackend(backend, root=tmp_path)
        out = cached.complete_batch(requests)
        releaser.join(30)
    assert seen == [
        ("sent", [True, False, False, False, False]),
        ("prompt 3", [False, False, False, True]),
        ("prompt 1", [False, True, False, True]),
        ("prompt 2", [False, True, True, True]),
        ("prompt 0", [True, True, True, True]),
    ]
    assert [c.text for c in out] == list(release) and not any(c.cached for c in out)
    again = CachedBackend(OpenAIBackend(model="m", base_url=server.base_url, concurrency=4), root=tmp_path)
    assert [c.text for c in again.complete_batch(requests)] == list(release) and again.backend.calls == 0


def _refuse_first(headers: dict[str, str], log: list[tuple[str, float]], slow: dict[str, float] | None = None):
    """A server answer that refuses each prompt's first attempt with HTTP 429 and ``headers``."""

    def answer(body):
        prompt = _prompt(body)
        first = all(p != prompt for p, _ in log)
        log.append((prompt, time.monotonic()))
        if first and prompt == "refused":
            return 429, headers, {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}}
        time.sleep((slow or {}).get(prompt, 0))
        return echo_reply(body)

    return answer


@pytest.mark.parametrize("kind", ["seconds", "http-date"])
@pytest.mark.slow
def test_retry_after_is_honoured_by_the_whole_window(kind):
    """``refused`` gets 429 and Retry-After; ``slow`` keeps the second slot busy past the 429; ``later`` is sent
    after it: it must wait for the Retry-After too, though its own request was never refused."""
    retry_after = "1" if kind == "seconds" else formatdate(time.time() + 3, usegmt=True)  # 2 to 3 s away
    log: list[tuple[str, float]] = []
    with EchoServer(answer=_refuse_first({"Retry-After": retry_after}, log, slow={"slow": 0.3})) as server:
        backend = OpenAIBackend(model="m", base_url=server.base_url, concurrency=2, retries=2, backoff=0.01)
        out = backend.complete_batch([ChatRequest.user(p) for p in ("refused", "slow", "later")])
    assert [c.text for c in out] == ["refused", "slow", "later"]
    times = {p: [t for q, t in log if q == p] for p in ("refused", "slow", "later")}
    assert [len(t) for t in times.values()] == [2, 1, 1]  # one retry, no retry by the openai client on top
    assert times["refused"][1] - times["refused"][0] >= 0.95  # not the 0.01 s backoff
    assert times["later"][0] - times["refused"][0] >= 0.95  # the window waited with it


def test_retries_end_and_the_api_key_is_in_no_error(monkeypatch):
    secret = "sk-secret-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)

    def unauthorized(body):
        return 401, {}, {"error": {"message": f"Incorrect API key provided: {secret}", "type": "invalid_request_error"}}

    with EchoServer(answer=unauthorized) as server:
        backend = OpenAIBackend(model="m", base_url=server.base_url, retries=3)
        (refused,) = backend.complete_batch([ChatRequest.user("a")])
    assert "HTTP 401" in refused.error and secret not in refused.error and "***" in refused.error
    assert len(server.received) == 1  # 401 is not retried

    def rate_limited(body):
        return 429, {"Retry-After": "0"}, {"error": {"message": "Rate limit reached", "type": "requests"}}

    with EchoServer(answer=rate_limited) as server:
        sleeps: list[float] = []
        backend = OpenAIBackend(model="m", base_url=server.base_url, retries=2, backoff=0.01, sleep=sleeps.append)
        (failed,) = backend.complete_batch([ChatRequest.user("refused")])
    assert failed.error is not None and "failed after 3 attempts" in failed.error and "RateLimitError" in failed.error
    assert len(server.received) == 3 and sleeps == [0.01, 0.02]  # Retry-After 0: the backoff alone


def test_retry_after_is_read_in_seconds_milliseconds_and_http_dates():
    now = 1_700_000_000.0
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25  # OpenAI's finer header first
    assert retry_after_seconds({"Retry-After": formatdate(now + 10, usegmt=True)}, now=lambda: now) == 10.0
    assert retry_after_seconds({"Retry-After": formatdate(now - 10, usegmt=True)}, now=lambda: now) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None and retry_after_seconds(None) is None
    assert retry_after_seconds({"retry-after-ms": "x", "Retry-After": "2"}) == 2.0


def test_pacer_spaces_request_starts_and_holds_everyone():
    clock = [0.0]

    def sleep(seconds):
        clock[0] += seconds

    pacer = Pacer(rpm=120, clock=lambda: clock[0], sleep=sleep)
    assert [pacer.wait() for _ in range(3)] == [0.0, 0.5, 0.5]  # 120 per minute: one start every 0.5 s
    pacer.hold(2.0)
    assert pacer.wait() == 2.0 and clock[0] == 3.0
    free = Pacer(clock=lambda: clock[0], sleep=sleep)
    assert [free.wait() for _ in range(3)] == [0.0] * 3
    free.hold(1.0)
    free.hold(0.5)  # a shorter hold does not shorten the first
    assert free.wait() == 1.0


def test_cache_writes_from_many_threads_are_whole(tmp_path):
    cache = CompletionCache("openai", "m", tmp_path, "http://127.0.0.1:1/v1")
    requests = [ChatRequest.user(f"prompt {i % 5}") for i in range(40)]  # each key written by 8 threads
    barrier = threading.Barrier(8)

    def write(part):
        barrier.wait()
        for r in part:
            cache.put(r, Completion(r.messages[-1][1].upper(), 3, 2))

    threads = [threading.Thread(target=write, args=(requests[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert len(files) == 5 and not [p for p in files if p.name.endswith(".tmp")]
    assert [cache.get(ChatRequest.user(f"prompt {i}")).text for i in range(5)] == [f"PROMPT {i}" for i in range(5)]
