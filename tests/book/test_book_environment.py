"""The build environment files agree with pyproject.toml."""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

import pytest
import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def test_environment_yml_mirrors_the_dependencies() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    reqs = project["dependencies"] + extras["test"]
    for extra in re.findall(r"iclmem\[(\w+)\]", " ".join(extras["test"])):  # self-referencing extras
        reqs += extras[extra]
    wanted = {_name(r) for r in reqs} - {"iclmem"}
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    listed = {_name(d) for d in conda + pip if not d.startswith("-")}
    assert wanted - listed == set(), "add these to environment.yml"
    assert "torch==2.13.0" in pip and "torch==2.13.0" in project["dependencies"]
    assert "jupyter-book>=1.0.4,<2" in conda


def test_ci_runs_make_test() -> None:
    script = REPO / ".ci" / "run"
    assert script.stat().st_mode & stat.S_IXUSR and os.access(script, os.X_OK)
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in text
    assert re.search(r"^make test$", text, flags=re.M)


def test_makefile_targets_and_environment() -> None:
    makefile = (REPO / "Makefile").read_text()
    for target in ("book:", "test:", "install:"):
        assert re.search(rf"^{target}", makefile, flags=re.M), target
    assert "export HF_HUB_OFFLINE := 1" in makefile
    assert "carte-ai==0.0.26" in makefile and "--no-deps" in makefile
    assert ".installed-$(HASH)" in makefile
