"""The layout the README promises: an engine that never imports a chapter, one chapter module per notebook, short
cells."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "iclmem"
#: Notebook stem -> its chapter module (the README's table "paper section -> notebook -> chapter module").
CHAPTERS = {
    "00_scorecard": "scorecard",
    "01_split_validation": "split",
    "02_controlled_finetuning": "finetuning",
    "03_multiple_choice_probing": "probing",
    "04_calibration": "calibration",
    "05_realistic_regimes": "regimes",
    "06_llm_kshot_replication": "llm_kshot",
    "07_mitigation": "mitigation",
    "A1_reference_ltm": "reference_ltm",
    "A2_benchmarks": "benchmarks",
    "A3_bad_inputs": "bad_inputs",
    "A4_audit_your_model": "audit",
}
MAX_CELL_LINES = 15


def _imported_modules(path: Path) -> set[str]:
    """Absolute names of the iclmem modules a file imports (relative imports resolved)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out.add(module)
            out.update(f"{module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("iclmem")}


def test_no_engine_module_imports_a_chapter():
    engine = [p for p in PACKAGE.rglob("*.py") if "chapters" not in p.relative_to(PACKAGE).parts]
    offenders = {
        str(p.relative_to(REPO)): sorted(m for m in _imported_modules(p) if m.startswith("iclmem.chapters"))
        for p in engine
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_every_notebook_imports_its_chapter_module_and_the_readme_lists_it():
    notebooks = {p.stem: p for p in (REPO / "notebooks").glob("*.py")}
    assert set(notebooks) == set(CHAPTERS), (
        "a notebook without a chapter module (or a stale entry): update CHAPTERS and the README"
    )
    readme = (REPO / "README.md").read_text()
    for stem, module in CHAPTERS.items():
        assert (PACKAGE / "chapters" / f"{module}.py").is_file()
        assert re.search(rf"from iclmem\.chapters\.{module} import", notebooks[stem].read_text()), stem
        assert re.search(rf"`{stem}` \| `chapters/{module}\.py`", readme), f"README table row for {stem}"


@pytest.mark.parametrize("module", sorted(set(CHAPTERS.values())))
def test_chapter_docstring_opens_with_the_sections_it_covers(module):
    doc = ast.get_docstring(ast.parse((PACKAGE / "chapters" / f"{module}.py").read_text())) or ""
    first = doc.split("\n\n")[0]
    assert re.search(r"Sec\.|App\.|Tab\.|Appendix|claims C|[Aa]ppendix A\d", first), f"{module}: {first!r}"


@pytest.mark.parametrize("notebook", sorted(p.name for p in (REPO / "notebooks").glob("*.py")))
def test_every_notebook_is_valid_python(notebook):
    """A syntax error found here in a millisecond, not after the book's other notebooks have run."""
    ast.parse((REPO / "notebooks" / notebook).read_text(), filename=notebook)


def test_no_notebook_code_cell_is_longer_than_the_limit():
    long = []
    for nb in sorted((REPO / "notebooks").glob("*.py")):
        parts = re.split(r"^(# %%.*)$", nb.read_text(), flags=re.M)
        for head, cell in zip(parts[1::2], parts[2::2], strict=True):
            if "[markdown]" in head or "parameters" in head:
                continue
            code = [line for line in cell.splitlines() if line.strip() and not line.lstrip().startswith("#")]
            if len(code) > MAX_CELL_LINES:
                long.append(f"{nb.name}: {len(code)} lines")
    assert long == []
