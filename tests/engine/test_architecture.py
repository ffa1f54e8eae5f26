"""The layout the README promises (issue 40, "the tree mirrors the book"): one chapter package per notebook of
``_toc.yml``, named after it and listed in book order; each notebook imports its own package's ``__init__``; no
import circle; no facade re-exports; short chapter functions; no private name shared between modules; no chapter
module named like an engine module; an engine that never imports the chapters, the report layer or the book
machinery; short notebook cells. Every check reads the source with :mod:`ast` (nothing is imported) and its
failure lists each violation with its file and line."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "iclmem"
CHAPTERS = PACKAGE / "chapters"
NOTEBOOKS = REPO / "notebooks"
#: the layers above the engine: the chapter packages, the report vocabulary, the book machinery
PRESENTATION = ("iclmem.chapters", "iclmem.report", "iclmem.book")
#: the one engine module that may import the layers above it (the ``iclmem`` command builds the book)
ENGINE_EXCEPTIONS = frozenset({"iclmem.cli"})
#: the standard parts of a chapter package (the issue's "paper.py, claims.py, tables.py, figures.py")
STANDARD_PARTS = frozenset({"__init__", "paper", "claims", "tables", "figures"})
MAX_FUNCTION_LINES = 80
#: chapter packages held to a tighter limit (the bad-input catalogue: one case per function)
MAX_FUNCTION_LINES_IN = {"ch_a3_bad_inputs": 60}
MAX_CELL_LINES = 15
#: A public function takes at most this many parameters before it counts as a long list (issue 54 item 4: the engine
#: takes parameter objects, RunSpec, ProbeSettings, GridAxes, ... instead of loose arguments) ...
MAX_PARAMETERS = 7
#: ... and at most this many public functions of the package may exceed it (a ratchet: lower it as they go).
MAX_LONG_SIGNATURES = 10


# ---------------------------------------------------------------------------------------------------- the sources


@dataclass(frozen=True)
class Module:
    """One source file of ``iclmem``: its dotted name, its path and its parsed tree."""

    name: str
    path: Path
    tree: ast.Module

    @property
    def rel(self) -> str:
        return str(self.path.relative_to(REPO))

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def package(self) -> str:
        """The package a relative import starts from."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


@dataclass(frozen=True)
class Import:
    """``from <module> import <names>`` (``names`` empty for ``import <module>``) at ``line`` of a file."""

    module: str
    names: tuple[str, ...]
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Module]:
    """Every ``iclmem`` module by its dotted name."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" not in path.parts:
            name = _module_name(path)
            out[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements anywhere in ``node`` (in functions too), except under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child):
            yield from _import_nodes(ast.Module(body=child.orelse, type_ignores=[]))
        else:
            yield from _import_nodes(child)


def imports(tree: ast.Module, package: str = "") -> list[Import]:
    """The imports of a parsed file, relative ones resolved against ``package``."""
    out = []
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            out += [Import(alias.name, (), node.lineno) for alias in node.names]
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([node.module] if node.module else []))
        out.append(Import(base, tuple(alias.name for alias in node.names), node.lineno))
    return out


def defined_names(tree: ast.Module) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments; not imports)."""
    names: set[str] = set()

    def targets(node: ast.AST) -> Iterator[str]:
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Tuple | ast.List):
            for element in node.elts:
                yield from targets(element)

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    names.update(targets(target))
            elif isinstance(node, ast.AnnAssign | ast.AugAssign):
                names.update(targets(node.target))
            elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return names


def dunder_all(tree: ast.Module) -> tuple[list[str], int] | None:
    """The names in a module's ``__all__`` and its line, or None if it has none."""
    for node in tree.body:
        value = None
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            value = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            value = node.value
        if value is not None:
            if isinstance(value, ast.List | ast.Tuple):
                return [e.value for e in value.elts if isinstance(e, ast.Constant)], node.lineno
            return [], node.lineno
    return None


def layer(name: str) -> str:
    """``chapters``, ``report``, ``book`` or ``engine``."""
    for top in PRESENTATION:
        if name == top or name.startswith(top + "."):
            return top.rpartition(".")[2]
    return "engine"


def chapter_package(name: str) -> str | None:
    """The chapter package (``ch04_calibration``) a module name belongs to, if any."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["iclmem", "chapters"] else None


def import_edges(module: Module) -> list[tuple[str, int]]:
    """The ``iclmem`` modules a module imports and the lines, each edge to the module that holds the imported
    name: ``from pkg import submodule`` is an edge to the submodule, ``from pkg import name`` one to ``pkg``."""
    known = modules()
    edges = []
    for imp in imports(module.tree, module.package):
        if not imp.module.startswith("iclmem"):
            continue
        submodules = [f"{imp.module}.{n}" for n in imp.names if f"{imp.module}.{n}" in known]
        edges += [(s, imp.line) for s in submodules]
        if (not imp.names or len(submodules) < len(imp.names)) and imp.module in known:
            edges.append((imp.module, imp.line))
    return [(target, line) for target, line in edges if target != module.name]


# ------------------------------------------------------------------------------------------------- the notebooks


def toc_notebooks() -> list[str]:
    """The notebook stems of ``_toc.yml`` in book order."""

    def files(node: object) -> Iterator[str]:
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                yield node["file"]
            for value in node.values():
                yield from files(value)
        elif isinstance(node, list):
            for value in node:
                yield from files(value)

    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    return [f.removeprefix("notebooks/") for f in files(toc) if f.startswith("notebooks/")]


def package_prefix(stem: str) -> str:
    """``04_calibration`` -> ``ch04_``, ``A3_bad_inputs`` -> ``ch_a3_``."""
    match = re.match(r"(\d+|[A-Z]\d+)_", stem)
    assert match, f"notebook {stem!r} does not start with its number (NN_ or AN_)"
    number = match.group(1)
    return f"ch{number}_" if number.isdigit() else f"ch_{number.lower()}_"


def named_after(package: str, stem: str) -> bool:
    """``ch05_regimes`` is named after ``05_realistic_regimes``: same number, each word of its name in the stem."""
    prefix = package_prefix(stem)
    words = package.removeprefix(prefix).split("_")
    return package.startswith(prefix) and all(w in stem.lower().split("_") for w in words)


def chapter_packages() -> list[str]:
    return sorted(p.name for p in CHAPTERS.iterdir() if p.is_dir() and (p / "__init__.py").is_file())


@cache
def package_of_notebook() -> dict[str, str | None]:
    """Notebook stem -> its chapter package (None if there is none)."""
    packages = chapter_packages()
    return {stem: next((p for p in packages if named_after(p, stem)), None) for stem in toc_notebooks()}


def _code_cells(source: str) -> Iterator[tuple[int, str, str]]:
    """(first line, header, code) of each ``# %%`` cell of a py:percent notebook."""
    line = 1
    parts = re.split(r"^(# %%.*)$", source, flags=re.M)
    line += parts[0].count("\n")
    for head, cell in zip(parts[1::2], parts[2::2], strict=True):
        yield line, head, cell
        line += cell.count("\n")


# ---------------------------------------------------------------------------------------------------- the checks


def test_every_notebook_of_the_toc_has_one_chapter_package_named_after_it_in_book_order():
    problems = []
    notebooks = toc_notebooks()
    packages = chapter_packages()
    missing = [stem for stem in notebooks if not (NOTEBOOKS / f"{stem}.py").is_file()]
    problems += [f"_toc.yml lists notebooks/{stem} but notebooks/{stem}.py does not exist" for stem in missing]
    for stem in notebooks:
        owners = [p for p in packages if p.startswith(package_prefix(stem))]
        if len(owners) != 1:
            problems.append(
                f"notebooks/{stem}.py: {len(owners)} chapter packages iclmem/chapters/{package_prefix(stem)}* "
                f"({', '.join(owners) or 'none'}); exactly one is expected"
            )
        elif not named_after(owners[0], stem):
            problems.append(f"iclmem/chapters/{owners[0]}/ is not named after notebooks/{stem}.py")
    owned = {p for p in packages for stem in notebooks if p.startswith(package_prefix(stem))}
    problems += [f"iclmem/chapters/{p}/ belongs to no notebook of _toc.yml" for p in packages if p not in owned]
    stray = sorted(p.name for p in CHAPTERS.glob("*.py") if p.name != "__init__.py")
    problems += [f"iclmem/chapters/{name}: a module outside every chapter package" for name in stray]
    in_book_order = [package_of_notebook()[stem] for stem in notebooks if package_of_notebook()[stem]]
    if in_book_order != sorted(in_book_order):
        problems.append(
            "`ls iclmem/chapters/` is not book order: _toc.yml has "
            + ", ".join(in_book_order)
            + "; sorted names give "
            + ", ".join(sorted(in_book_order))
        )
    assert not problems, "\n".join(problems)


def test_the_readme_lists_each_notebook_with_its_chapter_package():
    readme = (REPO / "README.md").read_text()
    problems = [
        f"README.md: no table row `{stem}` | `chapters/{package}/`"
        for stem, package in package_of_notebook().items()
        if package and not re.search(rf"`{re.escape(stem)}` \| `chapters/{re.escape(package)}/`", readme)
    ]
    assert not problems, "\n".join(problems)


def test_each_notebook_imports_its_own_chapter_package_init_and_no_other_chapter_package():
    problems = []
    for stem, package in package_of_notebook().items():
        path = NOTEBOOKS / f"{stem}.py"
        if package is None or not path.is_file():
            continue
        own = f"iclmem.chapters.{package}"
        found = imports(ast.parse(path.read_text(), filename=str(path)))
        chapter_imports = [i for i in found if i.module.startswith("iclmem.chapters")]
        for imp in chapter_imports:
            if imp.module == own and imp.names:
                continue
            if chapter_package(imp.module) == package:
                what = f"imports {imp.module} (a module of its package): import from {own}"
            else:
                what = f"imports {imp.module}, not its own chapter package {own}"
            problems.append(f"notebooks/{stem}.py:{imp.line}: {what}")
        if not any(i.module == own for i in chapter_imports):
            problems.append(f"notebooks/{stem}.py: never imports from {own}")
    assert not problems, "\n".join(problems)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the package's size
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_no_import_circle_among_the_iclmem_modules():
    """Imports inside functions count (they run too); those under ``if TYPE_CHECKING:`` do not."""
    edges = {name: import_edges(module) for name, module in modules().items()}
    graph = {name: {target for target, _ in out} for name, out in edges.items()}
    problems = []
    for component in _strongly_connected(graph):
        members = set(component)
        lines = [
            f"  {modules()[name].rel}:{line} imports {target}"
            for name in component
            for target, line in edges[name]
            if target in members
        ]
        problems.append(f"import circle among {', '.join(component)}:\n" + "\n".join(lines))
    assert not problems, "\n".join(problems)


def test_no_module_re_exports_a_name_it_does_not_define():
    """In the chapters, the report and the book, a module's ``__all__`` lists only the names it defines; a chapter
    package's ``__init__`` lists only names that its own modules define (and imports them from there). The
    engine's ``__all__`` (its public API, e.g. ``iclmem.data``) is out of scope: issue 40 leaves the engine's bytes
    as they are."""
    known = modules()
    problems = []
    for name, module in known.items():
        listed = dunder_all(module.tree)
        if listed is None or layer(name) == "engine":
            continue
        names, line = listed
        own = defined_names(module.tree)
        is_chapter_init = module.is_package and chapter_package(name) is not None and name.count(".") == 2
        if not is_chapter_init:
            foreign = [n for n in names if n not in own]
            if foreign:
                problems.append(f"{module.rel}:{line}: __all__ lists names it does not define: {', '.join(foreign)}")
            continue
        source = {n: imp for imp in imports(module.tree, module.package) for n in imp.names}
        for n in names:
            imp = source.get(n)
            if n in own:
                continue
            if imp is None:
                problems.append(f"{module.rel}:{line}: __all__ lists {n}, which it neither imports nor defines")
            elif chapter_package(imp.module) != chapter_package(name) or imp.module == name:
                problems.append(f"{module.rel}:{imp.line}: __all__ lists {n} from {imp.module}, not its own package")
            elif imp.module in known and n not in defined_names(known[imp.module].tree):
                problems.append(f"{module.rel}:{imp.line}: {n} is not defined in {imp.module} (a re-export)")
    assert not problems, "\n".join(problems)


def test_every_import_names_the_module_that_defines_the_name():
    """``from iclmem.x import name`` finds ``name`` defined in ``iclmem/x`` (or it is a submodule): no chapter,
    report or book module passes names through, for the package or for a notebook. Two exceptions: a notebook's
    import of its chapter package's ``__init__`` (which lists what the notebook uses), and a name an engine module
    lists in its ``__all__`` (the engine's public API, ``from iclmem.data import Dataset``)."""
    known = modules()
    files = [(m.rel, m.tree, m.package) for m in known.values()]
    files += [
        (str(p.relative_to(REPO)), ast.parse(p.read_text(), filename=str(p)), "")
        for p in sorted(NOTEBOOKS.glob("*.py"))
    ]
    problems = []
    for rel, tree, package in files:
        for imp in imports(tree, package):
            target = known.get(imp.module)
            if target is None or not imp.names:
                continue
            if rel.startswith("notebooks/") and chapter_package(imp.module) and imp.module.count(".") == 2:
                continue
            own = defined_names(target.tree)
            if layer(imp.module) == "engine":
                own |= set((dunder_all(target.tree) or ([], 0))[0])
            passed = [n for n in imp.names if n != "*" and n not in own and f"{imp.module}.{n}" not in known]
            if passed:
                problems.append(
                    f"{rel}:{imp.line}: imports {', '.join(passed)} from {imp.module}, which does not define it"
                )
    assert not problems, "\n".join(problems)


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's length in lines, its signature and body without its docstring (which says what it does and
    cites the paper: a long docstring is not a long function)."""
    length = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        length -= first.end_lineno - first.lineno + 1
    return length


def test_no_function_is_longer_than_the_limit():
    """Every function of the package, the chapters' and the engine's alike (issue 54 item 4), within the limit."""
    problems = []
    for name, module in modules().items():
        package = chapter_package(name)
        limit = MAX_FUNCTION_LINES_IN.get(package, MAX_FUNCTION_LINES) if package else MAX_FUNCTION_LINES
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = code_lines(node)
                if length > limit:
                    problems.append(
                        f"{module.rel}:{node.lineno}-{node.end_lineno}: {node.name} has {length} lines of code "
                        f"(limit {limit})"
                    )
    assert not problems, "\n".join(problems)


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's parameters, ``self`` / ``cls`` not counted, ``*args`` and ``**kwargs`` one each."""
    a = node.args
    count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
    return count - bool(a.args and a.args[0].arg in ("self", "cls"))


def test_few_public_functions_take_long_argument_lists():
    long = sorted(
        f"{module.rel}:{node.lineno}: {node.name} takes {parameter_count(node)} parameters"
        for module in modules().values()
        for node in ast.walk(module.tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
        and parameter_count(node) > MAX_PARAMETERS
    )
    assert len(long) <= MAX_LONG_SIGNATURES, (
        f"{len(long)} public functions take more than {MAX_PARAMETERS} parameters (at most {MAX_LONG_SIGNATURES} "
        "may): group them into a parameter object (RunSpec, ProbeSettings, GridAxes, ...)\n" + "\n".join(long)
    )


def test_no_private_name_is_imported_from_another_module_in_the_chapters_the_report_or_the_book():
    problems = []
    for module in modules().values():
        if layer(module.name) == "engine":
            continue
        for imp in imports(module.tree, module.package):
            private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
            if imp.module.startswith("iclmem") and private:
                problems.append(f"{module.rel}:{imp.line}: imports {', '.join(private)} from {imp.module}")
    assert not problems, "\n".join(problems)


def test_no_chapter_module_is_named_like_an_engine_module():
    engine = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if layer(_module_name(path)) == "engine" and path.stem != "__init__":
            engine.setdefault(path.stem, str(path.relative_to(REPO)))
    problems = [
        f"{module.rel}: named like the engine's {engine[module.path.stem]}"
        for name, module in modules().items()
        if chapter_package(name) and module.path.stem not in STANDARD_PARTS and module.path.stem in engine
    ]
    assert not problems, "\n".join(problems)


#: The engine's own packages that group the modules once at its root (issue 54 item 3).
ENGINE_GROUPS = ("store", "training", "stats", "runtime")


def test_the_package_root_keeps_only_its_init_the_command_line_and_user_errors():
    """Issue 54 item 3: the engine groups itself (store/, training/, stats/, runtime/); its root was 25 loose
    modules."""
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "cli.py", "user_errors.py"]


@pytest.mark.parametrize("group", ENGINE_GROUPS)
def test_an_engine_group_package_imports_nothing(group):
    """A group's ``__init__`` is in the code version of every module under it (:func:`iclmem.store.keys.code_version`
    hashes each package's ``__init__`` on the way): one import there would widen every one of their keys."""
    tree = ast.parse((PACKAGE / group / "__init__.py").read_text())
    imports = [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not imports, f"iclmem/{group}/__init__.py imports at lines {imports}"


def test_the_engine_never_imports_the_chapters_the_report_or_the_book():
    problems = []
    for name, module in modules().items():
        if layer(name) != "engine" or name in ENGINE_EXCEPTIONS:
            continue
        for target, line in import_edges(module):
            if layer(target) != "engine":
                problems.append(f"{module.rel}:{line}: imports {target}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("package", chapter_packages())
def test_chapter_package_docstring_opens_with_the_sections_it_covers(package):
    doc = ast.get_docstring(modules()[f"iclmem.chapters.{package}"].tree) or ""
    first = doc.split("\n\n")[0]
    assert re.search(r"Sec\.|App\.|Tab\.|Appendix|claims C|[Aa]ppendix A\d", first), (
        f"iclmem/chapters/{package}/__init__.py: {first!r}"
    )


@pytest.mark.parametrize("notebook", sorted(p.name for p in NOTEBOOKS.glob("*.py")))
def test_every_notebook_is_valid_python(notebook):
    """A syntax error found here in a millisecond, not after the book's other notebooks have run."""
    ast.parse((NOTEBOOKS / notebook).read_text(), filename=notebook)


def test_no_notebook_code_cell_is_longer_than_the_limit():
    long = []
    for nb in sorted(NOTEBOOKS.glob("*.py")):
        for line, head, cell in _code_cells(nb.read_text()):
            if "[markdown]" in head or "parameters" in head:
                continue
            code = [c for c in cell.splitlines() if c.strip() and not c.lstrip().startswith("#")]
            if len(code) > MAX_CELL_LINES:
                long.append(f"notebooks/{nb.name}:{line}: a code cell of {len(code)} lines (limit {MAX_CELL_LINES})")
    assert not long, "\n".join(long)


def test_no_markdown_heading_sits_in_a_code_cell():
    """A ``# ## Heading`` line under ``# %%`` (its ``[markdown]`` marker lost) renders as a code comment: the section
    disappears from the page and from its table of contents."""
    stray = []
    for nb in sorted(NOTEBOOKS.glob("*.py")):
        for line, head, cell in _code_cells(nb.read_text()):
            if "[markdown]" in head:
                continue
            stray += [f"notebooks/{nb.name}:{line}: {c}" for c in cell.splitlines() if re.match(r"# #+ \S", c)]
    assert not stray, "a markdown heading inside a code cell: add '# %% [markdown]' above it\n" + "\n".join(stray)
