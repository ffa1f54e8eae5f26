"""A book of your own table: the tabular chapters executed on it, rendered beside the main book.

``iclmem book -f my_table.yaml --chapters tabular --out _build/my_table`` writes a small project
into ``<out>/project/`` (the main book's ``_config.yml`` retitled, a ``_toc.yml`` with an intro page
and the chosen chapters, copies of their notebooks) and builds it with :func:`iclmem.book.build.build_book`
into ``<out>/``: executed notebooks in ``<out>/executed/``, the html in ``<out>/html/``. The
parameters file is one flat mapping shared by every chapter (``data_path``, ``target``, ``task``,
``learning_rates``, ...); each notebook takes the names it declares. Results go to their own
store, ``<out>/results`` unless ``results`` says otherwise, so nothing of the main book's build
folder or store is read or written, and a chapter reuses what an earlier one computed (notebook
03, 04 and A6 probe the runs notebook 02 fine-tuned).

The controls run on your table too (:func:`own_table_controls`): appendix A6's ``control_dataset``,
``curve_datasets`` and ``factor_seen`` name it unless the file sets them, so no shipped table is fine-tuned for a
book of yours; a control your table cannot carry is skipped on the page with one line that says why
(:mod:`iclmem.chapters.ch_a6_instrument.instrument_fit`). ``iclmem run`` with ``data_path`` does the same.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from iclmem.book.build import DEFAULT_BUILD, BookResult, BuildOptions, build_book, toc_pages
from iclmem.book.execute import (
    UsageError,
    notebook_parameters,
    project_parameter_names,
    read_notebook,
    shared_file_values,
)
from iclmem.book.shareable import PATH_PARAMETERS, shareable_label
from iclmem.store.atomic import atomic_write_text

#: Chapter groups ``--chapters`` accepts, besides notebook stems: ``tabular`` is notebooks 01-04 and the instrument's
#: appendix A6 (its controls on your table).
CHAPTER_GROUPS: dict[str, tuple[str, ...]] = {
    "tabular": (
        "01_split_validation",
        "02_controlled_finetuning",
        "03_multiple_choice_probing",
        "04_calibration",
        "A6_instrument",
    ),
    "regimes": ("05_realistic_regimes",),
}
#: Parameters holding a path (:mod:`iclmem.book.shareable`) are made absolute against the directory the command runs in.

#: Appendix A6's parameters that name the tables of its controls (the positive control, the per-table sensitivity
#: curve, the factor table's seen cell), each as its parameter takes a table's name; and the registered design, which
#: reads the project's table suite, not your table: an own-table book skips it.
OWN_TABLE_CONTROLS: dict[str, Callable[[str], Any]] = {
    "control_dataset": str,
    "curve_datasets": lambda name: [name],
    "factor_seen": str,
    "design": lambda name: "",
}


def own_table_controls(declared: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The control parameters of :data:`OWN_TABLE_CONTROLS` that a notebook declares and ``values`` leave out, set to
    the table of ``values["data_path"]`` by its name (the file's stem, as
    :func:`~iclmem.book.table_parameters.notebook_tables` names it); {} without a table of your own."""
    path = values.get("data_path")
    if not path:
        return {}
    name = Path(str(path)).stem
    return {k: as_value(name) for k, as_value in OWN_TABLE_CONTROLS.items() if k in declared and k not in values}


def chapter_stems(chapters: Sequence[str], available: Sequence[str]) -> list[str]:
    """Notebook stems of ``chapters`` (groups of :data:`CHAPTER_GROUPS` or stems), in book order, once each."""
    wanted: list[str] = []
    for item in chapters:
        for stem in CHAPTER_GROUPS.get(item, (item,)):
            if stem not in available:
                raise UsageError(
                    f"unknown chapter {item!r}: use {', '.join(CHAPTER_GROUPS)} or notebook stems "
                    f"({', '.join(available)})."
                )
            if stem not in wanted:
                wanted.append(stem)
    return [s for s in available if s in wanted]


def absolute_paths(values: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """``values`` with the path parameters made absolute against ``base`` (the kernels run elsewhere)."""
    return {
        k: (str((base / v).resolve()) if k in PATH_PARAMETERS and v and not Path(str(v)).is_absolute() else v)
        for k, v in values.items()
    }


def _shown(name: str, value: Any) -> str:
    """A value as the intro page shows it: a path parameter by its name and fingerprint
    (:mod:`iclmem.book.shareable`)."""
    if name in PATH_PARAMETERS and value and Path(str(value)).exists():
        return shareable_label(str(value))
    return repr(value)


def _intro(title: str, values: Mapping[str, Any], stems: Sequence[str]) -> str:
    shown = "\n".join(f"| `{k}` | `{_shown(k, v)}` |" for k, v in sorted(values.items()))
    links = "\n".join(f"- {{doc}}`notebooks/{s}`" for s in stems)
    return (
        f"# {title}\n\nThe chapters below were executed by `iclmem book --chapters` on the parameters of this table "
        "(every chapter takes the names it declares; each page's parameters cell shows what it ran with):\n\n"
        f"| parameter | value |\n|---|---|\n{shown}\n\n{links}\n"
    )


def write_project(root: Path, out: Path, stems: Sequence[str], values: Mapping[str, Any], title: str) -> Path:
    """The project folder of a book of your own table (see the module docstring); returns its path."""
    project = out / "project"
    (project / "notebooks").mkdir(parents=True, exist_ok=True)
    (project / "book").mkdir(exist_ok=True)
    config = yaml.safe_load((root / "_config.yml").read_text())
    config["title"] = title
    atomic_write_text(project / "_config.yml", yaml.safe_dump(config, sort_keys=False))
    toc = {"format": "jb-book", "root": "intro", "chapters": [{"file": f"notebooks/{s}"} for s in stems]}
    atomic_write_text(project / "_toc.yml", yaml.safe_dump(toc, sort_keys=False))
    atomic_write_text(project / "intro.md", _intro(title, values, stems))
    favicon = root / "book" / "favicon.svg"
    if favicon.is_file():
        shutil.copyfile(favicon, project / "book" / favicon.name)
    static = root / "book" / "_static"  # the stylesheet of the book's tables (html_static_path in _config.yml)
    if static.is_dir():
        shutil.copytree(static, project / "book" / "_static", dirs_exist_ok=True)
    for stem in stems:
        atomic_write_text(project / "notebooks" / f"{stem}.py", (root / "notebooks" / f"{stem}.py").read_text())
    return project


def build_own_book(
    root: Path,
    values: Mapping[str, Any],
    chapters: Sequence[str],
    out: Path,
    results: Path | None = None,
    *,
    cwd: Path | None = None,
    options: BuildOptions = DEFAULT_BUILD,
) -> BookResult:
    """Execute and render the chosen chapters of ``root`` on ``values`` into ``out`` (see the module docstring;
    ``options``: :func:`~iclmem.book.build.build_book`'s)."""
    available = [p.name.split("/", 1)[1] for p in toc_pages(root) if p.is_notebook and p.name.startswith("notebooks/")]
    stems = chapter_stems(chapters, available)
    values = absolute_paths(values, (cwd or Path.cwd()).resolve())
    declared = {s: notebook_parameters(read_notebook(root / "notebooks" / f"{s}.py")) for s in stems}
    known = project_parameter_names(root)
    overrides = {
        f"notebooks/{s}": {
            **own_table_controls(declared[s], values),
            **shared_file_values(declared[s], values, known, "the parameters file")[0],
        }
        for s in stems
    }
    table = (
        Path(str(values["data_path"])).stem
        if values.get("data_path")
        else ", ".join(values.get("datasets", ())) or "the default tables"
    )
    out = out.resolve()
    project = write_project(root, out, stems, values, f"iclmem report: {table}")
    store = (results or out / "results").resolve()
    previous = os.environ.get("ICLMEM_RESULTS")
    os.environ["ICLMEM_RESULTS"] = str(store)  # the kernels inherit it: this book's own results store
    try:
        return build_book(project, out, overrides, options)
    finally:
        if previous is None:
            os.environ.pop("ICLMEM_RESULTS", None)
        else:
            os.environ["ICLMEM_RESULTS"] = previous


__all__ = [
    "CHAPTER_GROUPS",
    "OWN_TABLE_CONTROLS",
    "absolute_paths",
    "build_own_book",
    "chapter_stems",
    "own_table_controls",
    "write_project",
]
