"""Backends: in-process greedy decoding with and without the shared-prefix KV cache, context overflow, the
OpenAI-compatible backend's bad inputs (missing key, a server that does not answer), each completion handed over
as it is ready (``complete_iter``), and the base URL in the cache key with no API key in any record."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import torch

import iclmem.llm.replication as replication
from iclmem.llm.backends import DEFAULT_BASE_URL, InProcessBackend, OpenAIBackend, make_backend
from iclmem.llm.cache import CachedBackend
from iclmem.llm.chat import (
    ChatRequest,
    Completion,
    ContextOverflowError,
    Decoding,
    MissingAPIKeyError,
    StreamingBackend,
    apply_stop,
)
from iclmem.llm.replication import (
    ReplicationConfig,
    build_experiment,
    context_fit,
    largest_fitting_k,
    runnable_ks,
    window_capacity,
)


def _send_json(handler, status: int, body: bytes) -> None:
    """Answer an ``http.server`` request with a JSON ``body``."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture(scope="module")
def backend() -> InProcessBackend:
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    return InProcessBackend(batch_size=4)


@pytest.fixture(scope="module")
def exp():
    return build_experiment(ReplicationConfig(n_instances=4, n_demonstrations=6, ks=(0, 6), max_new_tokens=10, seed=1))


@pytest.mark.slow
def test_prefix_cached_and_uncached_greedy_text_identical(backend, exp):
    reqs = exp.memorization_requests("pairs_labels", 6)
    backend.prefix_cache, backend.batch_size, backend.prefill_tokens = False, 1, 0
    plain = [c.text for c in backend.complete_batch(reqs)]
    uncached_prefill = backend.prefill_tokens
    backend.prefix_cache, backend.batch_size, backend.prefill_tokens = True, 4, 0
    cached = backend.complete_batch(reqs)
    assert [c.text for c in cached] == plain
    assert any(plain)  # something was generated
    assert backend.prefill_tokens < uncached_prefill / 2  # the shared prefix was computed once
    backend.batch_size = 1  # one row at a time through the stored prefix (cropped back after each)
    assert [c.text for c in backend.complete_batch(reqs[:2])] == plain[:2]
    assert backend.model_loaded and cached[0].prompt_tokens == backend.count_tokens(reqs[0])


def test_context_overflow_is_reported_never_truncated(backend, exp, monkeypatch):
    long = ChatRequest.user("word " * 9000, Decoding(4))
    ok = exp.memorization_requests("full", 0)[0]
    out = backend.complete_batch([ok, long])
    assert out[0].ok and not out[1].ok and "exceeds the context window of 8192" in out[1].error
    with pytest.raises(ContextOverflowError):
        backend.check_fits(8190, 4)
    fit = context_fit(backend, exp)
    assert list(fit["fits"]) == [True, True] and runnable_ks(fit) == [0, 6]
    window = int(fit["longest_prompt_tokens"].mean()) + exp.config.max_new_tokens  # k=0 fits, k=6 does not
    small = InProcessBackend(
        model=backend.model, tokenizer=backend.tokenizer, model_id="small-window", context_window=window
    )
    fit_small = context_fit(small, exp)
    assert not fit_small["fits"].iloc[-1] and runnable_ks(fit_small) == [0]
    k = largest_fitting_k(small, exp)

    def fits(j: int) -> bool:
        return bool(context_fit(small, exp, [j])["fits"].iloc[0])

    assert 0 <= k < 6 and fits(k) and not fits(k + 1)
    assert k == max(j for j in range(7) if fits(j))  # brute force over every k
    counted, tried = [], []
    count, requests_at = small.count_tokens, replication._requests_at
    monkeypatch.setattr(small, "count_tokens", lambda r: counted.append(r) or count(r))
    monkeypatch.setattr(replication, "_requests_at", lambda e, j: tried.append(j) or requests_at(e, j))
    assert largest_fitting_k(small, exp) == k
    # a failing k stops at its first prompt too long
    assert len(tried) >= 2 and len(counted) < len(tried) * len(requests_at(exp, 0))
    capacity, probed = window_capacity(small, exp, pool=12)
    assert probed == 12 and 0 < capacity < 12
    assert window_capacity(backend, exp, pool=12) == (12, 12)  # 8192 tokens hold the whole probe pool


def test_stop_strings():
    assert apply_stop("abc\ndef", ["\n"]) == ("abc", True)
    assert apply_stop("abc", ["\n"]) == ("abc", False)


def test_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ICLMEM_OPENAI_MODEL", "gpt-4-0613")
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        OpenAIBackend()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("ICLMEM_OPENAI_MODEL")
    with pytest.raises(MissingAPIKeyError, match="ICLMEM_OPENAI_MODEL"):
        OpenAIBackend()
    with pytest.raises(ValueError, match="unknown backend"):
        make_backend("carrier-pigeon")


def _silent_server() -> tuple[socket.socket, int]:
    """A TCP server that accepts connections and never answers."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns = []

    def accept():
        while True:
            try:
                conns.append(srv.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_unanswering_server_bounded_wait_and_per_instance_errors(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    srv, port = _silent_server()
    sleeps: list[float] = []
    try:
        b = OpenAIBackend(
            model="m",
            base_url=f"http://127.0.0.1:{port}/v1",
            timeout=0.5,
            retries=2,
            backoff=0.05,
            sleep=lambda s: (sleeps.append(s), time.sleep(s)),
        )
        start = time.monotonic()
        out = b.complete_batch([ChatRequest.user("hello"), ChatRequest.user("again")])
        elapsed = time.monotonic() - start
    finally:
        srv.close()
    assert elapsed < 15  # 2 requests x 3 attempts x 0.5 s timeout, plus backoff
    assert [c.ok for c in out] == [False, False] and all("failed after 3 attempts" in c.error for c in out)
    assert "Timeout" in out[0].error
    assert sorted(sleeps) == [0.05, 0.05, 0.1, 0.1]  # exponential backoff between attempts (both requests in flight)
    assert b.calls == 6


def test_refused_connection_is_reported(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    b = OpenAIBackend(model="m", base_url=f"http://127.0.0.1:{port}/v1", timeout=2, retries=1, backoff=0.01)
    out = b.complete_batch([ChatRequest.user("hello")])
    assert not out[0].ok and "Connection" in out[0].error


def test_inprocess_hands_over_each_completion_as_it_is_done(backend, exp):
    reqs = [ChatRequest(r.messages, Decoding(3)) for r in exp.memorization_requests("pairs_only", 0)]  # short: fast
    backend.prefix_cache, backend.batch_size = True, 2
    expected = [c.text for c in backend.complete_batch(reqs)]
    seen = []
    for i, completion in backend.complete_iter([*reqs, ChatRequest.user("word " * 9000, Decoding(4))]):
        seen.append((i, completion.text, backend.generated_tokens))
    assert seen[0][0] == 4 and seen[0][1] == ""  # the overflowing prompt is reported first, before any decoding
    assert sorted(i for i, _, _ in seen[1:]) == [0, 1, 2, 3] and [expected[i] for i, _, _ in seen[1:]] == [
        t for _, t, _ in seen[1:]
    ]
    counts = [n for _, _, n in seen[1:]]
    assert counts == sorted(counts) and counts[0] < counts[-1]  # the first was handed over before the last was decoded
    assert isinstance(backend, StreamingBackend) and backend.base_url is None


def test_openai_base_url_is_in_the_cache_key_and_the_api_key_in_no_record(monkeypatch, tmp_path):
    secret = "sk-never-stored-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIBackend(model="m").base_url == DEFAULT_BASE_URL  # the openai client's default, made explicit
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    a, b = OpenAIBackend(model="m"), OpenAIBackend(model="m", base_url="http://127.0.0.1:8001/v1")
    assert a.base_url == "http://127.0.0.1:8000/v1" and isinstance(a, StreamingBackend)
    for server in (a, b):  # no network: each "server" answers with its own port
        monkeypatch.setattr(
            server, "_once", lambda r, s=server: Completion(f"{s.base_url[-7:]} {r.messages[-1][1]}", 3, 2)
        )
    reqs = [ChatRequest.user("hello"), ChatRequest.user("hello", repeat=1)]
    ca, cb = CachedBackend(a, root=tmp_path), CachedBackend(b, root=tmp_path)
    assert [c.text for c in ca.complete_batch(reqs)] == ["8000/v1 hello"] * 2
    assert cb.missing(reqs) == reqs and [c.text for c in cb.complete_batch(reqs)] == ["8001/v1 hello"] * 2
    assert [c.text for c in CachedBackend(a, root=tmp_path).complete_batch(reqs)] == ["8000/v1 hello"] * 2
    records = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(records) == 4 and not any(secret in p.read_text() or secret in str(p) for p in records)
    assert {p.parent.parent.name for p in records} == {"m"} and len({p.parents[2].name for p in records}) == 2


def test_openai_backend_adopts_the_window_the_server_reports(monkeypatch):
    import http.server
    import json as _json

    class Models(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            body = _json.dumps(
                {
                    "object": "list",
                    "data": [
                        {"id": "other", "object": "model", "created": 0, "owned_by": "x", "max_model_len": 4096},
                        {"id": "long-model", "object": "model", "created": 0, "owned_by": "x", "max_model_len": 32768},
                    ],
                }
            ).encode()
            _send_json(self, 200 if self.path.endswith("/models") else 404, body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.delenv("ICLMEM_OPENAI_CONTEXT", raising=False)
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        b = OpenAIBackend(model="long-model", base_url=url, retries=0, timeout=5)
        assert b.context_window is None and b.adopt_reported_window() == 32768 == b.context_window
        monkeypatch.setenv("ICLMEM_OPENAI_CONTEXT", "8192")  # the environment wins over the report
        assert OpenAIBackend(model="long-model", base_url=url, retries=0, timeout=5).adopt_reported_window() == 8192
        monkeypatch.delenv("ICLMEM_OPENAI_CONTEXT")
        assert OpenAIBackend(model="unlisted", base_url=url, retries=0, timeout=5).adopt_reported_window() is None
    finally:
        server.shutdown()


def test_a_request_the_server_refuses_is_not_retried(monkeypatch):
    import http.server

    calls = []

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            calls.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = b'{"error": {"message": "maximum context length is 8192 tokens", "type": "invalid_request_error"}}'
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        sleeps: list[float] = []
        b = OpenAIBackend(
            model="m",
            base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
            retries=3,
            timeout=5,
            sleep=sleeps.append,
        )
        (c,) = b.complete_batch([ChatRequest.user("a long prompt", Decoding(4))])
        assert not c.ok and "HTTP 400" in c.error and "maximum context length" in c.error
        assert len(calls) == 1 and sleeps == []  # one attempt, no backoff
    finally:
        server.shutdown()


def test_openai_token_count_is_the_servers_where_it_tokenizes_else_a_lower_estimate(monkeypatch, backend):
    """vLLM's /tokenize gives exact counts; without it (OpenAI) the estimate stays below the true count, so no k that
    fits a 32k window is left out (paper Sec. 4 "Model": gpt-4-32k)."""
    import http.server
    import json as _json

    from iclmem.llm.backends import lower_token_estimate

    asked = []

    class Tokenize(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            payload = _json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            asked.append(self.path)
            body = _json.dumps({"count": 7 * len(payload["messages"])}).encode()
            _send_json(self, 200 if self.path == "/tokenize" else 404, body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Tokenize)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    request = ChatRequest((("system", "Classify."), ("user", "Text: Names is Domaine X. Grapes is Pinot Noir.")))
    try:
        b = OpenAIBackend(model="m", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", retries=0, timeout=5)
        assert b.count_tokens(request) == 14 and b.exact_token_counts is True
        assert b.count_tokens(request) == 14 and asked == ["/tokenize"]  # remembered per prompt
    finally:
        server.shutdown()
    with socket.socket() as s:  # a port nobody listens on: no tokenizer, the estimate
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    off = OpenAIBackend(model="m", base_url=f"http://127.0.0.1:{port}/v1", retries=0, timeout=2)
    assert off.count_tokens(request) == lower_token_estimate(request) and off.exact_token_counts is False
    words = "Names is Château Montelena. Region is Napa Valley. Grapes is Chardonnay. ABV is 13.5. " * 40
    long = ChatRequest((("user", words),))
    assert lower_token_estimate(long) < 0.8 * backend.count_tokens(long)  # well below a real BPE count (SmolLM2's)
