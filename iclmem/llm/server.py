"""A ``transformers serve`` process on loopback: an OpenAI-compatible server for the in-process model; and
:class:`EchoServer`, a model-free stand-in for a remote API (its latency, its ``Retry-After``), in a thread.

Used by the tests (the OpenAI-compatible backend against a real server, not a mock) and usable to serve
the converted SmolLM2 folder to any OpenAI client. ``transformers serve`` fails on the GGUF path but
serves the converted folder (:func:`iclmem.llm.model.ensure_model_dir`); ``--dtype float32`` keeps its
greedy decoding numerically equal to the in-process backend's.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from iclmem.llm.chat import LLMError


class ServerError(LLMError):
    """The server did not start or did not answer within the bounded wait."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _cli() -> list[str]:
    exe = Path(sys.executable).parent / "transformers"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("transformers")
    if found:
        return [found]
    return [sys.executable, "-m", "transformers.cli.transformers"]


class LoopbackServer:
    """``with LoopbackServer(folder) as server: ...`` -- ``server.base_url`` is the OpenAI base URL."""

    def __init__(
        self,
        model_dir: str | Path,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 240.0,
        threads: int | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.host = host
        self.port = port or free_port(host)
        self.startup_timeout = startup_timeout
        self.threads = threads
        self.process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="iclmem-serve-", suffix=".log", delete=False)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def model_name(self) -> str:
        return str(self.model_dir)

    def log_tail(self, n: int = 3000) -> str:
        return Path(self._log.name).read_text(errors="replace")[-n:]

    def start(self) -> LoopbackServer:
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        if self.threads:
            env["OMP_NUM_THREADS"] = str(self.threads)
        cmd = [
            *_cli(),
            "serve",
            str(self.model_dir),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--dtype",
            "float32",
            "--device",
            "cpu",
        ]
        self.process = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                raise ServerError(f"`transformers serve` exited with code {code}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://{self.host}:{self.port}/v1/models", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.5)
        self.stop()
        raise ServerError(
            f"`transformers serve` did not answer within {self.startup_timeout:.0f} s:\n{self.log_tail()}"
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self.process = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        Path(self._log.name).unlink(missing_ok=True)


#: What :class:`EchoServer` answers a chat request with: HTTP status, extra headers, JSON body.
Reply = tuple[int, dict[str, str], dict[str, Any]]


def echo_reply(body: dict[str, Any]) -> Reply:
    """A chat completion whose text is the last message's content (the request's ``model`` echoed too)."""
    text = str((body.get("messages") or [{}])[-1].get("content", ""))
    return (
        200,
        {},
        {
            "id": "chatcmpl-echo",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "echo"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {
                "prompt_tokens": len(text.split()),
                "completion_tokens": len(text.split()),
                "total_tokens": 2 * len(text.split()),
            },
        },
    )


class EchoServer:
    """A stdlib OpenAI-compatible ``/v1/chat/completions`` on loopback, no model: each request is answered after
    ``delay`` seconds by ``answer`` (default :func:`echo_reply`), each in a thread of its own
    (``ThreadingHTTPServer``), like a remote API whose latency does not grow with the requests in flight.

    For benchmarks of the client (``benchmarks/openai_concurrency.py``) and tests of the OpenAI-compatible
    backend (concurrency, ``Retry-After``). :attr:`max_in_flight` is the most requests it held at once,
    :attr:`received` the prompts (last message contents) in the order they arrived.
    ``with EchoServer(delay=0.2) as server: ...`` -- ``server.base_url`` is the OpenAI base URL.
    """

    def __init__(
        self, delay: float = 0.0, answer: Callable[[dict[str, Any]], Reply] | None = None, host: str = "127.0.0.1"
    ) -> None:
        import http.server

        self.delay = delay
        self.answer = answer or echo_reply
        self.received: list[str] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real API servers

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                status, headers, payload = outer._serve(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    def _serve(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.received.append(str((body.get("messages") or [{}])[-1].get("content", "")))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            return self.answer(body)
        finally:
            with self._lock:
                self.in_flight -= 1

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> EchoServer:
        self._thread = threading.Thread(target=self._server.serve_forever, name="iclmem-echo-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> EchoServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
