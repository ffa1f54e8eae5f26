"""Chapter 06's completions in a results bundle (issue 55): collected per model folder of the completion cache,
served to an empty cache once checked, decoded again by a check and rejected when their text is not the model's."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from iclmem.bundle import read_bundle, serve
from iclmem.bundle.check import check_bundle, sample_draws
from iclmem.bundle.completions import FILE
from iclmem.bundle.store_runs import collect_store
from iclmem.llm.backends import InProcessBackend
from iclmem.llm.cache import CachedBackend, record_sha256
from iclmem.llm.chat import ChatRequest, Decoding

pytestmark = pytest.mark.slow

REQUESTS = [ChatRequest.user(f"Continue: {word}", Decoding(max_new_tokens=4, stop=())) for word in ("red", "blue")]


@pytest.fixture(scope="module")
def decoded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two completions of the in-process base model in a cache of their own, and a bundle of that cache."""
    tmp = tmp_path_factory.mktemp("completions")
    cache = tmp / "cache" / "llm_completions"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ICLMEM_BUNDLE", "off")
        texts = [c.text for c in CachedBackend(InProcessBackend(batch_size=2), cache).complete_batch(REQUESTS)]
    (tmp / "store").mkdir()
    bundle, report = collect_store(tmp / "bundle", results_dir=tmp / "store", command="t", completions=cache)
    return {"tmp": tmp, "texts": texts, "bundle": bundle, "report": report}


def _fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bundle: Path) -> None:
    monkeypatch.setenv("ICLMEM_BUNDLE", str(bundle))
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path / "cache"))
    serve.reset()


def test_completions_are_kept_per_model_folder_and_drawn_for_the_base_model(decoded: dict):
    bundle = decoded["bundle"]
    [entry] = [e for e in bundle.items.values() if e["kind"] == "completions"]
    assert decoded["report"]["completions"] == entry["records"] == 2 and entry["recomputable"]
    assert entry["folder"].startswith("inprocess/local/")
    draws = sample_draws(bundle, n=5)  # completions are one stratum, drawn once (not in the random phase)
    assert len(draws) == 1 and draws[0].kind == "completion" and draws[0].task.startswith(entry["key"])
    assert {sample_draws(bundle, n=5, seed=s)[0].task for s in range(20)} == {
        f"{entry['key']}:{key}" for key in _keys(bundle, entry)
    }  # either completion, by the seed


def test_a_checked_bundle_answers_an_empty_cache_without_the_model(
    decoded: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    _fresh(monkeypatch, tmp_path, decoded["bundle"].root)
    report = check_bundle(read_bundle(decoded["bundle"].root), n=2, workers=1, progress=False)
    assert report.verdict == "accepted", report.disagreements()
    backend = InProcessBackend(batch_size=2)

    def decode(self, requests):  # asked for nothing, or the test fails
        return iter(()) if not requests else pytest.fail(f"{len(requests)} bundled completions were decoded")

    monkeypatch.setattr(type(backend), "complete_iter", decode)
    answered = CachedBackend(backend).complete_batch(REQUESTS)
    assert [c.text for c in answered] == decoded["texts"] and all(c.cached for c in answered)
    assert not (tmp_path / "cache" / "llm_completions").exists() or not list(
        (tmp_path / "cache" / "llm_completions").rglob("*.json")
    )  # nothing copied into the reader's cache: the bundle answers


def test_a_completion_the_model_does_not_give_rejects_the_bundle(
    decoded: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import shutil

    from iclmem.bundle.completions import completions_fill
    from iclmem.bundle.layout import write_manifest
    from iclmem.store.integrity import seal

    copy = tmp_path / "bundle"
    shutil.copytree(decoded["bundle"].root, copy)
    [entry] = [e for e in read_bundle(copy).items.values() if e["kind"] == "completions"]
    folder = copy / "items" / "completions" / entry["key"]
    records = [json.loads(line) for line in gzip.decompress((folder / FILE).read_bytes()).decode().splitlines()]
    for record in records:  # completions the model never gave, each with a valid sha256 of its own
        record["text"] += " (edited)"
        record["sha256"] = record_sha256({k: v for k, v in record.items() if k != "sha256"})
    completions_fill(records)(folder)
    seal(folder, "iclmem.bundle:completions", "")
    manifest = read_bundle(copy).manifest
    items = {**manifest["items"], f"completions/{entry['key']}": {**entry, "record_digest": _digest(folder)}}
    write_manifest(copy, {**{k: v for k, v in manifest.items() if k not in ("digest", "items")}, "items": items})
    _fresh(monkeypatch, tmp_path, copy)
    report = check_bundle(read_bundle(copy), n=2, workers=1, progress=False)
    assert report.verdict == "rejected"
    assert any("(edited)" in line for line in report.disagreements())


def _digest(folder: Path) -> str:
    return json.loads((folder / "complete.json").read_text())["digest"]


def _keys(bundle, entry: dict) -> list[str]:
    folder = bundle.item_dir("completions", entry["key"])
    return [json.loads(line)["key"] for line in gzip.decompress((folder / FILE).read_bytes()).decode().splitlines()]
