"""A ``transformers serve`` process on loopback: an OpenAI-compatible server for the in-process model.

Used by the tests (the OpenAI-compatible backend against a real server, not a mock) and usable to serve
the converted SmolLM2 folder to any OpenAI client. ``transformers serve`` fails on the GGUF path but
serves the converted folder (:func:`iclmem.llm.model.ensure_model_dir`); ``--dtype float32`` keeps its
greedy decoding numerically equal to the in-process backend's.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

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

    def __init__(self, model_dir: str | Path, host: str = "127.0.0.1", port: int | None = None,
                 startup_timeout: float = 240.0, threads: int | None = None) -> None:
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
        cmd = [*_cli(), "serve", str(self.model_dir), "--host", self.host, "--port", str(self.port), "--dtype", "float32",
               "--device", "cpu"]
        self.process = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerError(f"`transformers serve` exited with code {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://{self.host}:{self.port}/v1/models", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.5)
        self.stop()
        raise ServerError(f"`transformers serve` did not answer within {self.startup_timeout:.0f} s:\n{self.log_tail()}")

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

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
        Path(self._log.name).unlink(missing_ok=True)
