"""Disk cache of completions: a re-run makes no backend call, the key covers backend, base URL, model, messages,
decoding and repeat, each completion is on disk as it arrives, a torn record is a miss, errors are not cached.
(A run killed with SIGKILL: tests/llm/test_llm_cache_kill.py.)"""

from __future__ import annotations

import json

import pytest

from iclmem.llm.cache import CachedBackend, CompletionCache, completion_key, endpoint
from iclmem.llm.chat import ChatRequest, Completion, Decoding, LLMError


class CountingBackend:
    """Answers with the reversed prompt and counts the requests it receives (the cache is under test)."""

    name, model_id, context_window = "counting", "toy/model:1", None

    def __init__(
        self, fail_on: set[str] | None = None, interrupt_after: int | None = None, base_url: str | None = None
    ) -> None:
        self.calls = 0
        self.batches: list[int] = []
        self.base_url = base_url
        self.fail_on = fail_on or set()
        self.interrupt_after = interrupt_after

    def count_tokens(self, request: ChatRequest) -> int:
        return len(request.messages[-1][1].split())

    def complete_batch(self, requests):
        self.batches.append(len(requests))
        out = []
        for r in requests:
            if self.interrupt_after is not None and self.calls >= self.interrupt_after:
                raise KeyboardInterrupt
            self.calls += 1
            text = r.messages[-1][1]
            out.append(Completion("", error="boom") if text in self.fail_on else Completion(text[::-1], 3, 2))
        return out


def reqs(n: int, max_new: int = 8) -> list[ChatRequest]:
    return [ChatRequest.user(f"prompt {i}", Decoding(max_new)) for i in range(n)]


def test_rerun_makes_no_backend_call(tmp_path):
    first = CachedBackend(CountingBackend(), root=tmp_path)
    out1 = first.complete_batch(reqs(5))
    assert first.backend.calls == 5 and not any(c.cached for c in out1)
    second = CachedBackend(CountingBackend(), root=tmp_path)
    out2 = second.complete_batch(reqs(5))
    assert second.backend.calls == 0 and all(c.cached for c in out2)
    assert [c.text for c in out2] == [c.text for c in out1] == [f"prompt {i}"[::-1] for i in range(5)]
    assert second.stats.hits == 5 and second.stats.misses == 0


def test_key_includes_backend_model_prompt_and_decoding(tmp_path):
    cache = CachedBackend(CountingBackend(), root=tmp_path)
    cache.complete_batch(reqs(2))
    assert cache.missing(reqs(2, max_new=9)) == reqs(2, max_new=9)  # other decoding settings: misses
    assert cache.missing([ChatRequest.user("prompt 7")]) != []
    other_model = CountingBackend()
    other_model.model_id = "toy/other"
    assert CachedBackend(other_model, root=tmp_path).missing(reqs(2)) == reqs(2)
    stored = json.loads(cache.cache.path(reqs(1)[0]).read_text())
    assert stored["messages"] == [{"role": "user", "content": "prompt 0"}] and stored["decoding"]["max_new_tokens"] == 8
    assert "toy_model_1" in str(cache.cache.folder)  # a safe folder name for any model id


def test_key_differs_by_base_url_and_repeat(tmp_path):
    server_a = CachedBackend(CountingBackend(base_url="http://127.0.0.1:8000/v1"), root=tmp_path)
    server_a.complete_batch(reqs(2))
    server_b = CachedBackend(CountingBackend(base_url="http://127.0.0.1:8001/v1"), root=tmp_path)
    assert server_b.missing(reqs(2)) == reqs(2)  # same backend, model and prompts, another server: misses
    assert CachedBackend(CountingBackend(), root=tmp_path).missing(reqs(2)) == reqs(2)  # no server at all
    same_server = CachedBackend(CountingBackend(base_url="HTTP://127.0.0.1:8000/v1/"), root=tmp_path)
    assert same_server.missing(reqs(2)) == []  # one server however its URL is spelled
    again = [ChatRequest.user(f"prompt {i}", Decoding(8), repeat=1) for i in range(2)]
    assert server_a.missing(again) == again  # repeat 1 is a request of its own
    server_a.complete_batch(again)
    assert server_a.backend.calls == 4 and server_a.missing(again + reqs(2)) == []
    base = dict(backend="counting", model="m", request=reqs(1)[0])
    keys = {
        completion_key(base_url=None, **base),
        completion_key(base_url="http://a/v1", **base),
        completion_key(base_url="http://b/v1", **base),
        completion_key(base_url=None, backend="other", model="m", request=reqs(1)[0]),
        completion_key(
            base_url=None, backend="counting", model="m", request=ChatRequest.user("prompt 0", Decoding(8), repeat=2)
        ),
    }
    assert len(keys) == 5
    record = json.loads(server_a.cache.path(again[0]).read_text())
    assert record["base_url"] == "http://127.0.0.1:8000/v1" and record["repeat"] == 1
    assert record["backend"] == "counting"
    assert record["key"] == server_a.cache.path(again[0]).stem and "127.0.0.1_8000_v1" in str(server_a.cache.folder)
    with pytest.raises(ValueError, match="repeat"):
        ChatRequest.user("x", repeat=-1)


def test_base_url_credentials_and_query_never_enter_key_or_record(tmp_path):
    assert endpoint("https://user:s3cret@Example.COM:8443/v1/?api_key=s3cret#x") == "https://example.com:8443/v1"
    assert endpoint(None) is None and endpoint("") is None
    cached = CachedBackend(CountingBackend(base_url="https://user:s3cret@example.com/v1?key=s3cret"), root=tmp_path)
    cached.complete_batch(reqs(1))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and not any("s3cret" in p.read_text() or "s3cret" in str(p) for p in files)
    assert CachedBackend(CountingBackend(base_url="https://example.com/v1"), root=tmp_path).missing(reqs(1)) == []


def test_each_completion_is_on_disk_before_the_next_request(tmp_path):
    cache = CompletionCache("counting", "toy/model:1", tmp_path)
    requests = reqs(4)

    class Watching(CountingBackend):
        def complete_batch(self, batch):
            assert [cache.get(r) is not None for r in requests] == [i < self.calls for i in range(4)]
            return super().complete_batch(batch)

    cached = CachedBackend(Watching(), root=tmp_path)
    cached.complete_batch(requests)
    assert cached.backend.batches == [1, 1, 1, 1]  # a backend without complete_iter: one request per call

    class Streaming(CountingBackend):
        def complete_iter(self, batch):
            for i, r in enumerate(batch):
                yield i, super().complete_batch([r])[0]
                assert cache.get(r) is not None  # written before the backend is asked for the next one

    streamed = CachedBackend(Streaming(), root=tmp_path)
    streamed.complete_batch(reqs(6))
    assert streamed.backend.calls == 2 and streamed.backend.batches == [1, 1]  # only the misses, one at a time


def test_interrupted_run_resumes(tmp_path):
    broken = CachedBackend(CountingBackend(interrupt_after=4), root=tmp_path, chunk_size=2)
    with pytest.raises(KeyboardInterrupt):
        broken.complete_batch(reqs(7))
    resumed = CachedBackend(CountingBackend(), root=tmp_path, chunk_size=2)
    assert len(resumed.missing(reqs(7))) == 3  # the two finished chunks were kept
    resumed.complete_batch(reqs(7))
    assert resumed.backend.calls == 3
    one_by_one = CachedBackend(CountingBackend(interrupt_after=3), root=tmp_path / "single")
    with pytest.raises(KeyboardInterrupt):
        one_by_one.complete_batch(reqs(7))
    assert len(CachedBackend(CountingBackend(), root=tmp_path / "single").missing(reqs(7))) == 4  # every answer kept


def test_duplicate_requests_in_a_batch_are_sent_once(tmp_path):
    cached = CachedBackend(CountingBackend(), root=tmp_path)
    batch = reqs(2) + reqs(2)
    assert cached.missing(batch) == reqs(2)
    out = cached.complete_batch(batch)
    assert cached.backend.calls == 2 and [c.text for c in out] == [c.text for c in out[:2]] * 2


def test_torn_or_foreign_record_is_a_miss(tmp_path):
    cached = CachedBackend(CountingBackend(), root=tmp_path)
    cached.complete_batch(reqs(3))
    torn, foreign = cached.cache.path(reqs(3)[0]), cached.cache.path(reqs(3)[1])
    torn.write_text(torn.read_text()[:25])  # what a machine crash could leave
    record = json.loads(foreign.read_text())
    foreign.write_text(json.dumps({**record, "messages": [{"role": "user", "content": "something else"}]}))
    (torn.parent / f".{torn.name}.abc123.tmp").write_text('{"text": "partial')  # a killed write's leftover
    again = CachedBackend(CountingBackend(), root=tmp_path)
    assert again.missing(reqs(3)) == reqs(3)[:2]
    out = again.complete_batch(reqs(3))
    assert again.backend.calls == 2 and [c.text for c in out] == [f"prompt {i}"[::-1] for i in range(3)]
    assert json.loads(torn.read_text())["text"] == "0 tpmorp"  # rewritten whole


def test_records_of_the_first_layout_are_not_read(tmp_path):
    """The first layout (``<backend>/<model>/``, keyed by messages and decoding) is no longer read (CHANGELOG)."""
    import hashlib
    from dataclasses import asdict

    r = reqs(1)[0]
    old_key = hashlib.sha256(
        json.dumps({"prompt": r.prompt_hash(), "decoding": asdict(r.decoding)}, sort_keys=True).encode()
    ).hexdigest()
    old = tmp_path / "counting" / "toy_model_1" / old_key[:2] / f"{old_key}.json"
    old.parent.mkdir(parents=True)
    old.write_text(
        json.dumps(
            {
                "messages": r.message_dicts(),
                "decoding": asdict(r.decoding),
                "text": "from before",
                "prompt_tokens": 3,
                "completion_tokens": 2,
            }
        )
    )
    local = CachedBackend(CountingBackend(), root=tmp_path)
    assert local.missing([r]) == [r]
    out = local.complete_batch([r])
    assert local.backend.calls == 1 and out[0].text == "prompt 0"[::-1] and not out[0].cached
    assert json.loads(old.read_text())["text"] == "from before"  # left alone, neither read nor rewritten


def test_a_backend_that_drops_completions_is_an_error(tmp_path):
    class Dropping(CountingBackend):
        def complete_batch(self, requests):
            return []

    with pytest.raises(LLMError, match="returned 0 completions"):
        CachedBackend(Dropping(), root=tmp_path).complete_batch(reqs(1))


def test_errors_are_reported_and_not_cached(tmp_path):
    flaky = CachedBackend(CountingBackend(fail_on={"prompt 1"}), root=tmp_path)
    out = flaky.complete_batch(reqs(3))
    assert [c.ok for c in out] == [True, False, True] and out[1].error == "boom" and flaky.stats.errors == 1
    assert CompletionCache("counting", "toy/model:1", tmp_path).get(reqs(3)[1]) is None
    again = CachedBackend(CountingBackend(), root=tmp_path)
    again.complete_batch(reqs(3))
    assert again.backend.calls == 1  # only the failed request is sent again


def test_decoding_is_greedy_only():
    with pytest.raises(ValueError, match="greedy"):
        Decoding(temperature=0.7)
    with pytest.raises(ValueError, match="max_new_tokens"):
        Decoding(max_new_tokens=0)
