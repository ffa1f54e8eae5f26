"""The package's own import graph: which source files a module's behaviour can depend on.

The results store keys every artifact by the code that produced it (:func:`iclmem.store.keys.code_version`).
A hand-kept list of files goes stale the day a module gains an import, and a stale key keeps
serving results the current code would no longer compute. This module reads the list from the
code instead: the *import closure* of the module whose function produces an artifact, found by
parsing (never executing) each module's ``import`` and ``from ... import`` statements, at module
level and inside functions alike.

The closure of a module holds

* the module itself and every ``iclmem`` module it imports, recursively;
* the ``__init__.py`` of every package on the way (importing ``iclmem.probe.run`` runs
  ``iclmem/probe/__init__.py`` first);
* the non-Python resources that sit beside the modules of the closure (``recipes.yaml`` beside
  ``iclmem/data/*.py``): a package reads them at run time.

The chapter packages (``iclmem.chapters``), the report vocabulary (``iclmem.report``) and the book machinery
(``iclmem.book``) present results and must never be part of an engine artifact's closure; :func:`import_closure`
refuses a closure that reaches them.
"""

from __future__ import annotations

import ast
import threading
from functools import lru_cache
from pathlib import Path

PACKAGE = "iclmem"
PACKAGE_ROOT = Path(__file__).parents[1]
#: file types read at run time that key an artifact like code does (data files beside the modules)
RESOURCE_SUFFIXES: tuple[str, ...] = (".yaml", ".yml", ".json", ".jsonl", ".csv", ".txt")
#: packages that present results; an engine artifact never depends on them
PRESENTATION_PACKAGES: tuple[str, ...] = (f"{PACKAGE}.chapters", f"{PACKAGE}.report", f"{PACKAGE}.book")


class ImportGraphError(RuntimeError):
    """A module that cannot be found in the package, or an engine closure that reaches the chapters, the report or
    the book machinery."""


def module_file(module: str, root: Path = PACKAGE_ROOT) -> Path | None:
    """The source file of ``module`` (``iclmem.probe.run`` -> ``<root>/probe/run.py``), or None if it is not a
    module."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    file = base.with_suffix(".py")
    return file if file.is_file() else None


def _is_package(module: str, root: Path) -> bool:
    file = module_file(module, root)
    return file is not None and file.name == "__init__.py"


def _imported_modules(module: str, root: Path) -> set[str]:
    """The ``iclmem`` modules that ``module``'s source imports (statically, anywhere in the file)."""
    file = module_file(module, root)
    assert file is not None
    package = module if _is_package(module, root) else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), filename=str(file))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            # ``from pkg import name``: name may be a submodule of pkg
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if module_file(m, root) is not None}


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _tree_state(root: Path) -> tuple[tuple[str, int], ...]:
    """Names and modification times of the package's modules: a cached closure is reused only while they hold."""
    return tuple(sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*.py")))


#: One closure is computed at a time: ``ast.parse`` in two threads at once fails on CPython 3.11.7 ("AST constructor
#: recursion depth mismatch"), as two sweep tasks on a local cluster of threads computing their keys did.
_CLOSURE_LOCK = threading.Lock()


def _closure(module: str, root: Path) -> tuple[str, ...]:
    state = _tree_state(root)
    with _CLOSURE_LOCK:
        return _closure_at(module, root, state)


@lru_cache(maxsize=64)
def _closure_at(module: str, root: Path, state: tuple) -> tuple[str, ...]:
    if module_file(module, root) is None:
        raise ImportGraphError(
            f"{module!r} is not a module of the {PACKAGE} package under {root}; "
            f"name it in dotted form, e.g. '{PACKAGE}.training.finetune'."
        )
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(
            m for m in [*_parents(current), *_imported_modules(current, root)] if m not in seen and module_file(m, root)
        )
    return tuple(sorted(seen))


def import_closure(module: str, root: Path | str = PACKAGE_ROOT) -> list[Path]:
    """Every source and resource file that ``module`` can depend on through the package's own imports.

    ``root`` is the package folder (a copy of it in tests). The files are sorted; resources are the
    files with :data:`RESOURCE_SUFFIXES` directly beside a module of the closure.
    Raises :class:`ImportGraphError` if the closure reaches a presentation package (``iclmem.chapters``,
    ``iclmem.report``, ``iclmem.book``).
    """
    root = Path(root).resolve()
    modules = _closure(module, root)
    leaked = [
        m for m in modules if m in PRESENTATION_PACKAGES or m.startswith(tuple(p + "." for p in PRESENTATION_PACKAGES))
    ]
    if leaked:
        raise ImportGraphError(
            f"{module} imports the chapter, report or book modules {leaked}: the engine must not depend on how "
            "results are presented. Move the needed code into the engine."
        )
    files = {module_file(m, root) for m in modules}
    folders = {f.parent for f in files if f is not None}
    resources = {p for d in folders for p in d.iterdir() if p.is_file() and p.suffix in RESOURCE_SUFFIXES}
    return sorted({f for f in files if f is not None} | resources)


__all__ = ["ImportGraphError", "PACKAGE_ROOT", "RESOURCE_SUFFIXES", "import_closure", "module_file"]
