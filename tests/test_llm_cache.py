"""Disk cache of completions: a re-run makes no backend call, an interrupted run resumes, errors are not cached."""

from __future__ import annotations

import json

import pytest

from iclmem.llm.cache import CachedBackend, CompletionCache
from iclmem.llm.chat import ChatRequest, Completion, Decoding


class CountingBackend:
    """Answers with the reversed prompt and counts the requests it receives (the cache is under test)."""

    name, model_id, context_window = "counting", "toy/model:1", None

    def __init__(self, fail_on: set[str] | None = None, interrupt_after: int | None = None) -> None:
        self.calls = 0
        self.fail_on = fail_on or set()
        self.interrupt_after = interrupt_after

    def count_tokens(self, request: ChatRequest) -> int:
        return len(request.messages[-1][1].split())

    def complete_batch(self, requests):
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


def test_interrupted_run_resumes(tmp_path):
    broken = CachedBackend(CountingBackend(interrupt_after=4), root=tmp_path, chunk_size=2)
    with pytest.raises(KeyboardInterrupt):
        broken.complete_batch(reqs(7))
    resumed = CachedBackend(CountingBackend(), root=tmp_path, chunk_size=2)
    assert len(resumed.missing(reqs(7))) == 3  # the two finished chunks were kept
    resumed.complete_batch(reqs(7))
    assert resumed.backend.calls == 3


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
