"""The code stays ruff-clean and ruff-formatted at 120 characters a line (pyproject.toml's [tool.ruff])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_passes_with_the_line_limit():
    result = _ruff("check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout[-3000:]


def test_the_code_is_ruff_formatted():
    result = _ruff("format", "--check", ".")
    assert result.returncode == 0, "run `.venv/bin/ruff format .`:\n" + result.stdout[-3000:]
