"""No secret reaches any file: with the API keys set to a marker, notebook 06 runs against a loopback
OpenAI-compatible server (`transformers serve`, not a mock) inside a book build, and the marker appears in no
executed notebook, no HTML page, no file of the results store, no completion-cache record and no log.

The keys travel only through the environment: ``OPENAI_API_KEY`` (the generator's, read by
:class:`iclmem.llm.backends.OpenAIBackend`) and ``ICLMEM_JUDGE_API_KEY`` (the LLM judge's own endpoint,
:func:`iclmem.llm.judge_runs.judge_backend`, here the same server under the judge's variables). ``HF_TOKEN`` gets a
marker as well: nothing may write a Hugging Face token either.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

import pytest

from iclmem.book.build import BuildOptions, build_book
from iclmem.llm.model import ensure_model_dir
from iclmem.llm.server import LoopbackServer

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = "06_llm_kshot_replication"
TOC = f"""\
format: jb-book
root: intro
parts:
  - caption: Notebooks
    chapters:
      - file: notebooks/{NOTEBOOK}
"""
#: On top of the tiny book's parameters of notebook 06: the OpenAI-compatible backend, one prompt setting, two
#: instances (8 completions and 2 judgements, each a request to the server).
OPENAI = {
    "backend": "openai",
    "finetune_epochs": 0,
    "settings": ["full"],
    "n_instances": 2,
    "n_demonstrations": 2,
    "llm_judge_pairs": 2,
    "progress": False,
}


def _llm_judge_sent(executed: Path) -> int | None:
    """``sent to judge`` of the LLM judge's row in the executed notebook's judges' counts table (None if absent)."""
    import json

    for cell in json.loads(executed.read_text())["cells"]:
        for out in cell.get("outputs", []):
            html = "".join(out.get("data", {}).get("text/html", []))
            if "sent to judge" not in html:
                continue
            header = [h.strip() for h in re.findall(r"<th[^>]*>([^<]*)</th>", html)]
            for row in re.findall(r"<tr>(.*?)</tr>", html, re.S):
                cells = [c.strip() for c in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
                if cells and cells[0] == "LLM":
                    return int(dict(zip(header[-len(cells) :], cells, strict=True))["sent to judge"].replace(",", ""))
    return None


def _project(root: Path) -> Path:
    """A book of notebook 06 alone, with the repository's configuration (as tests/book/test_book.py builds one)."""
    root.mkdir()
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    (root / "book").mkdir()
    shutil.copy(REPO / "book" / "favicon.svg", root / "book" / "favicon.svg")
    (root / "_toc.yml").write_text(TOC)
    (root / "intro.md").write_text(f"# Intro\n\nSee {{doc}}`notebooks/{NOTEBOOK}`.\n")
    (root / "notebooks").mkdir()
    shutil.copy(REPO / "notebooks" / f"{NOTEBOOK}.py", root / "notebooks" / f"{NOTEBOOK}.py")
    return root


def _files_with(folder: Path, marker: bytes) -> list[str]:
    return [str(p.relative_to(folder)) for p in sorted(folder.rglob("*")) if p.is_file() and marker in p.read_bytes()]


@pytest.mark.slow
def test_api_keys_reach_no_notebook_page_store_cache_or_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], book_overrides: dict
) -> None:
    marker = f"sk-iclmem-marker-{uuid.uuid4().hex}"
    model_dir = ensure_model_dir()  # the converted model, from the usual cache (before ICLMEM_CACHE moves it)
    monkeypatch.setenv("OPENAI_API_KEY", marker)
    monkeypatch.setenv("HF_TOKEN", f"hf_{marker}")
    monkeypatch.setenv("ICLMEM_JUDGE_API_KEY", f"judge-{marker}")
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path / "cache"))  # the completion cache
    monkeypatch.setenv("ICLMEM_RESULTS", str(tmp_path / "results"))  # the results store
    monkeypatch.setenv("ICLMEM_THREADS", "1")
    monkeypatch.delenv("ICLMEM_OPENAI_CONTEXT", raising=False)
    root = _project(tmp_path / "proj")
    build = tmp_path / "_build"
    with LoopbackServer(model_dir, threads=1, startup_timeout=300) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("ICLMEM_OPENAI_MODEL", server.model_name)
        monkeypatch.setenv("ICLMEM_JUDGE_BASE_URL", server.base_url)  # the judge on "its own" server, with its own key
        monkeypatch.setenv("ICLMEM_JUDGE_MODEL", server.model_name)
        result = build_book(
            root, build, {NOTEBOOK: {**book_overrides[NOTEBOOK], **OPENAI}}, options=BuildOptions(progress=False)
        )
        server_log = server.log_tail(n=10**8)
    terminal = capfd.readouterr()

    assert result.executed == [f"notebooks/{NOTEBOOK}"]
    executed = build / "executed" / "notebooks" / f"{NOTEBOOK}.ipynb"
    page = build / "html" / "notebooks" / f"{NOTEBOOK}.html"
    assert executed.is_file() and page.is_file()
    text = executed.read_text()
    assert "failed requests" in text and " 0 failed requests" in text, "the server answered every request"
    records = list((tmp_path / "cache" / "llm_completions" / "openai").rglob("*.json"))
    assert records, "the completions were cached"
    assert server_log.strip(), "the server's log is part of what is checked"

    assert _llm_judge_sent(executed) == 2, "the judges' counts table shows the LLM judge's 2 completions"
    needles = [marker.encode(), f"hf_{marker}".encode(), f"judge-{marker}".encode()]
    for needle in needles:
        found = {"project, build, html, results, cache": _files_with(tmp_path, needle)}
        assert found == {"project, build, html, results, cache": []}
        assert needle.decode() not in server_log
        assert needle.decode() not in terminal.out and needle.decode() not in terminal.err
