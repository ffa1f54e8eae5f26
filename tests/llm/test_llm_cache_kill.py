"""A run killed with SIGKILL mid-batch resumes and makes no request twice (issue 16).

A real subprocess runs one batch of 12 completions through :class:`iclmem.llm.cache.CachedBackend` against a
slow backend that logs every request it starts and finishes to a file. The backend hangs on its 5th request;
the test kills the process with SIGKILL then (4 completions returned and paid for, one in flight), plants a
torn record and a record of another request where two missing completions belong, and runs the batch again.
The rerun must return all 12 completions, send exactly the 8 the first run did not finish, read neither planted
record, and leave 12 whole records; a third run sends nothing. Both ways the cache talks to a backend are
covered: ``complete_iter`` (each completion handed over as it is ready) and plain ``complete_batch``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from killing import entries, kill_when

from iclmem.llm.cache import CompletionCache
from iclmem.llm.chat import ChatRequest, Decoding

N = 12
HANG_AT = 5  # the first run hangs on its 5th request: 4 are done and cached when it is killed
BACKEND, MODEL, BASE_URL = "slow", "toy/slow", "http://127.0.0.1:9/v1"

SCRIPT = textwrap.dedent(f"""
    import json, os, sys, time

    from iclmem.llm.cache import CachedBackend
    from iclmem.llm.chat import ChatRequest, Completion, Decoding

    root, log, mode, hang_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


    def note(event, prompt):
        with open(log, "a") as f:  # one short line per write, flushed on close: whole lines survive a SIGKILL
            f.write(json.dumps({{"event": event, "prompt": prompt, "pid": os.getpid()}}) + "\\n")


    class Slow:
        name, model_id, context_window, base_url = {BACKEND!r}, {MODEL!r}, None, {BASE_URL!r}

        def __init__(self):
            self.started = 0

        def count_tokens(self, request):
            return len(request.messages[-1][1].split())

        def one(self, request):
            prompt = request.messages[-1][1]
            note("start", prompt)
            self.started += 1
            time.sleep(600 if self.started == hang_at else 0.05)  # a paid request takes a while
            note("done", prompt)
            return Completion(prompt.upper(), 3, 2)

        def complete_batch(self, requests):
            return [self.one(r) for r in requests]


    class Streaming(Slow):
        def complete_iter(self, requests):
            for i, r in enumerate(requests):
                yield i, self.one(r)


    backend = Streaming() if mode == "stream" else Slow()
    requests = [ChatRequest.user(f"prompt {{i}}", Decoding(8)) for i in range({N})]
    out = CachedBackend(backend, root=root).complete_batch(requests)
    print(json.dumps([[c.text, c.cached] for c in out]))
""")


def _run(script: Path, root: Path, log: Path, mode: str, hang_at: int) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen(
        [sys.executable, str(script), str(root), str(log), mode, str(hang_at)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.parametrize("mode", ["stream", "chunks"])
@pytest.mark.slow
def test_sigkilled_batch_resumes_and_sends_no_request_twice(tmp_path, mode):
    script, root, log = tmp_path / "batch.py", tmp_path / "cache", tmp_path / "requests.jsonl"
    script.write_text(SCRIPT)
    prompts = [f"prompt {i}" for i in range(N)]

    first = _run(script, root, log, mode, HANG_AT)
    kill_when(
        first,
        log,
        lambda log: sum(e["event"] == "start" for e in log) >= HANG_AT,  # mid-batch, the 5th in flight
        "the first run's 5th request",
    )
    assert first.returncode == -signal.SIGKILL
    killed = entries(log)
    assert [e["prompt"] for e in killed if e["event"] == "done"] == prompts[: HANG_AT - 1]

    cache = CompletionCache(BACKEND, MODEL, root, BASE_URL)
    requests = [ChatRequest.user(p, Decoding(8)) for p in prompts]
    assert [cache.get(r) is not None for r in requests] == [i < HANG_AT - 1 for i in range(N)]
    torn, foreign = cache.path(requests[HANG_AT]), cache.path(requests[HANG_AT + 1])
    torn.parent.mkdir(parents=True, exist_ok=True)
    torn.write_text('{"text": "PARTIAL')  # a record cut short
    foreign.parent.mkdir(parents=True, exist_ok=True)
    foreign.write_text(json.dumps({"text": "NOT THIS ONE"}))  # parses, but is no record of this request
    (torn.parent / f".{torn.name}.x1y2z3.tmp").write_text('{"text": "LEFTOVER')  # a killed write's temporary file

    second = _run(script, root, log, mode, 0)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert json.loads(out) == [
        [p.upper(), i < HANG_AT - 1] for i, p in enumerate(prompts)
    ]  # all, planted records unread
    rerun = entries(log)[len(killed) :]
    assert [e["prompt"] for e in rerun if e["event"] == "start"] == prompts[HANG_AT - 1 :]  # only what was not done
    done = [e["prompt"] for e in entries(log) if e["event"] == "done"]
    assert sorted(done) == sorted(prompts) and len(done) == len(set(done)) == N  # no completed request sent twice
    started = [e["prompt"] for e in entries(log) if e["event"] == "start"]
    assert [p for p in prompts if started.count(p) > 1] == [prompts[HANG_AT - 1]]  # only the one in flight at the kill

    records = sorted(p for p in root.rglob("*.json") if "quarantine" not in p.parts)
    assert len(list((root / "quarantine").rglob("*.json"))) == 2  # the planted records, set aside (issue 41)
    assert len(records) == N and all(json.loads(p.read_text())["key"] == p.stem for p in records)

    third = _run(script, root, log, mode, 0)
    out3, err3 = third.communicate(timeout=120)
    assert third.returncode == 0, err3
    assert json.loads(out3) == [[p.upper(), True] for p in prompts] and len(entries(log)) == len(killed) + len(rerun)
