"""Store keys come from the code itself: every file a producer imports keys its artifacts (issue: keys that cannot go
stale)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import iclmem
from iclmem.store.imports import ImportGraphError, import_closure
from iclmem.store.keys import code_version

#: the modules whose functions write store artifacts (fine-tuning runs, probe scores, joint runs, sweep summaries)
PRODUCERS = ("iclmem.training.finetune", "iclmem.probe.run", "iclmem.training.regimes", "iclmem.sweep.tasks")


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    """A private copy of the package: edits here never touch the installed one."""
    root = tmp_path_factory.mktemp("pkg") / "iclmem"
    shutil.copytree(Path(iclmem.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


def _touch(path: Path) -> bytes:
    old = path.read_bytes()
    path.write_bytes(old + b"\n# an edit\n")
    return old


@pytest.mark.parametrize("producer", PRODUCERS)
@pytest.mark.slow
def test_an_edit_to_any_file_of_the_closure_changes_the_key(package, producer):
    before = code_version(producer, package)
    files = import_closure(producer, package)
    assert len(files) > 10
    for f in files:
        old = _touch(f)
        try:
            assert code_version(producer, package) != before, (
                f"an edit to {f.relative_to(package)} kept the key of {producer}"
            )
        finally:
            f.write_bytes(old)
    assert code_version(producer, package) == before


def test_the_probe_key_reads_the_files_the_old_hand_kept_list_missed(package):
    names = {str(f.relative_to(package)) for f in import_closure("iclmem.probe.run", package)}
    assert {"probe/invariances.py", "training/loop.py", "probe/scoring.py", "data/recipes.yaml"} <= names
    before = code_version("iclmem.probe.run", package)
    old = _touch(package / "probe" / "invariances.py")
    try:
        assert code_version("iclmem.probe.run", package) != before
    finally:
        (package / "probe" / "invariances.py").write_bytes(old)


def test_files_outside_the_closure_and_the_chapters_never_key_an_engine_artifact(package):
    before = {p: code_version(p, package) for p in PRODUCERS}
    for rel in ("report/glue.py", "chapters/ch04_calibration/claims.py", "book/build.py", "llm/backends.py", "cli.py"):
        old = _touch(package / rel)
        try:
            assert {p: code_version(p, package) for p in PRODUCERS} == before, rel
        finally:
            (package / rel).write_bytes(old)
    for p in PRODUCERS:
        closure = [f.relative_to(package).parts[0] for f in import_closure(p, package)]
        assert not {"chapters", "report", "book"} & set(closure), p


def test_a_new_import_brings_its_module_into_the_key(package):
    finetune = package / "training" / "finetune.py"
    old = finetune.read_bytes()
    (package / "training" / "helper_for_test.py").write_text("VALUE = 1\n")
    try:
        finetune.write_bytes(old + b"\n\ndef _late():\n    from .helper_for_test import VALUE\n    return VALUE\n")
        with_import = code_version("iclmem.training.finetune", package)
        (package / "training" / "helper_for_test.py").write_text("VALUE = 2\n")
        assert code_version("iclmem.training.finetune", package) != with_import
    finally:
        finetune.write_bytes(old)
        (package / "training" / "helper_for_test.py").unlink()


def test_an_engine_module_that_imports_a_chapter_is_refused(package):
    training = package / "training" / "loop.py"
    old = training.read_bytes()
    try:
        training.write_bytes(old + b"\nfrom ..chapters import claims  # presentation leaking into the engine\n")
        with pytest.raises(ImportGraphError, match="chapter"):
            code_version("iclmem.training.finetune", package)
    finally:
        training.write_bytes(old)


def test_an_unknown_module_names_the_expected_form(package):
    with pytest.raises(ImportGraphError, match="iclmem.training.finetune"):
        code_version("finetune.py", package)


@pytest.mark.parametrize("module_name", PRODUCERS)
def test_each_producer_keys_its_artifacts_by_its_own_closure(module_name):
    """The producers call ``code_version`` with their own module name (no hand-kept file list remains)."""
    import importlib

    module = importlib.import_module(module_name)
    source = Path(module.__file__).read_text()
    assert "code_version(__name__)" in source
    assert not [n for n in vars(module) if n.endswith("_CODE") and isinstance(getattr(module, n), tuple)]
