"""A run of the real OpenAI-compatible backend at concurrency 4, killed with SIGKILL mid-batch, loses no completion
it received and resumes sending only what was not answered (issue 28; the sequential case:
tests/llm/test_llm_cache_kill.py).

This process serves :class:`iclmem.llm.server.EchoServer` on loopback (so the base URL, part of the cache key,
stays the same across runs); a child process sends 12 requests through ``CachedBackend(OpenAIBackend())`` with
``ICLMEM_OPENAI_CONCURRENCY=4``. The server holds ``prompt 4`` until the test releases it, so the batch cannot end:
the 11 other completions arrive after it was sent, out of request order, and must be on disk while the batch still
waits (a backend that wrote them at the end of the batch would write none). Then SIGKILL; the rerun must send
``prompt 4`` alone and return all 12 in request order; a third run sends nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from killing import entries, kill_when

from iclmem.llm.cache import CompletionCache
from iclmem.llm.chat import ChatRequest, Decoding
from iclmem.llm.server import EchoServer, echo_reply

N, HELD = 12, "prompt 4"

SCRIPT = textwrap.dedent(f"""
    import json, os, sys

    from iclmem.llm.backends import OpenAIBackend
    from iclmem.llm.cache import CachedBackend
    from iclmem.llm.chat import ChatRequest, Decoding

    root, log, base_url = sys.argv[1], sys.argv[2], sys.argv[3]


    class Logged(OpenAIBackend):
        def _once(self, request):
            completion = super()._once(request)
            with open(log, "a") as f:  # one short line per write: whole lines survive a SIGKILL
                f.write(json.dumps({{"event": "received", "prompt": request.messages[-1][1]}}) + "\\n")
            return completion


    backend = Logged(model="echo", base_url=base_url, retries=0, timeout=120)
    assert backend.concurrency == 4, backend.concurrency
    requests = [ChatRequest.user(f"prompt {{i}}", Decoding(8)) for i in range({N})]
    out = CachedBackend(backend, root=root).complete_batch(requests)
    print(json.dumps([[c.text, c.cached] for c in out]))
""")


def _run(script: Path, root: Path, log: Path, base_url: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "OPENAI_API_KEY": "sk-local",
        "ICLMEM_OPENAI_CONCURRENCY": "4",
    }
    return subprocess.Popen(
        [sys.executable, str(script), str(root), str(log), base_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_sigkill_at_concurrency_4_loses_no_received_completion(tmp_path):
    script, root, log = tmp_path / "batch.py", tmp_path / "cache", tmp_path / "received.jsonl"
    script.write_text(SCRIPT)
    prompts = [f"prompt {i}" for i in range(N)]
    release = threading.Event()

    def answer(body):
        if body["messages"][-1]["content"] == HELD:
            release.wait(120)
        else:
            time.sleep(0.05)
        return echo_reply(body)

    with EchoServer(answer=answer) as server:
        cache = CompletionCache("openai", "echo", root, server.base_url)
        requests = [ChatRequest.user(p, Decoding(8)) for p in prompts]
        first = _run(script, root, log, server.base_url)
        kill_when(
            first,
            log,
            lambda log: (
                len(log) == N - 1 and all(cache.get(r) is not None for r in requests if r.messages[-1][1] != HELD)
            ),
            "every completion but the held one received and cached",
        )
        assert first.returncode == -signal.SIGKILL
        received = [e["prompt"] for e in entries(log)]
        assert sorted(received) == sorted(p for p in prompts if p != HELD)
        assert server.received.index(HELD) < server.received.index("prompt 11")  # sent early, overtaken by later ones
        assert [cache.get(r) is not None for r in requests] == [p != HELD for p in prompts]
        assert server.max_in_flight == 4
        release.set()

        sent_before = len(server.received)
        second = _run(script, root, log, server.base_url)
        out, err = second.communicate(timeout=120)
        assert second.returncode == 0, err
        assert json.loads(out) == [[p, p != HELD] for p in prompts]  # request order; only the held one is new
        assert server.received[sent_before:] == [HELD]

        third = _run(script, root, log, server.base_url)
        out3, err3 = third.communicate(timeout=120)
        assert third.returncode == 0, err3
        assert json.loads(out3) == [[p, True] for p in prompts] and len(server.received) == sent_before + 1
    records = sorted(root.rglob("*.json"))
    assert len(records) == N and all(json.loads(p.read_text())["key"] == p.stem for p in records)
