"""Both papers' claims C1-C16 (IclMem) and D1-D9 (Golchin et al.): the registry, the glue and the scorecard (notebook
00).

The contract between chapters and the scorecard. A chapter that computes a claim of ``../shared/claims.md`` (IclMem
C1-C16, Golchin et al. D1-D9)
records it with :func:`glue_claim`: the paper's value (from the chapter's constants), this build's value (a short text),
its interval where one
exists, a verdict and the reason for it. The record is glued (myst-nb) under ``claim-<ID>``
as a plain dict, so the scorecard page reads it from the executed notebook; nothing on the
scorecard is typed.

Verdicts (:data:`VERDICTS`; :func:`iclmem.report.verdicts.evidence_verdict` chooses one):

* ``reproduced``: the build agrees with the claim as stated, *and* its rule rarely says so under the
  claim's null (``null_rate`` at most :data:`iclmem.stats.permutation.NULL_LEVEL`), or the record states why
  no null applies (``null`` begins with "no null");
* ``differs``: computed, and the build contradicts the claim;
* ``inconclusive``: at this sample size the build cannot separate the paper's value from its
  contradiction (it agrees, but chance agrees as often; or it disagrees within the noise);
* ``holds by construction``: the procedure makes the claim true whatever the data (a split redrawn
  until it passes its checks; a model declared invariant to what the manipulation changes);
* ``not comparable here``: the claim is a value on the paper's model's own scale (ConTextTab's peak AUC, its
  outcome shares), which a 0.2M-parameter reference LTM does not share and no direction or shape of it is stated;
  ours is computed and shown beside the paper's, and no verdict is drawn (:data:`iclmem.report.registry.CLAIMS`
  says, per claim, whether it is compared by value, direction or shape, and why);
* ``not testable here``: the build cannot compute it (the paper's models or data are missing).

Neither ``inconclusive`` nor ``holds by construction`` counts as reproduced. Each record also
carries its null: ``null`` (what the evidence assumes exchangeable, or why no null applies),
``observed`` (the statistic the rule reads), ``null_range`` (the central 95% of that statistic
under the null) and ``null_rate`` (how often the rule says "reproduced" under the null).

Its parts, one job each, re-exported here: :mod:`~iclmem.report.records` (one claim's record, its fields
and verdict words, :class:`ClaimResult`) and :mod:`~iclmem.report.registry` (the registry :data:`CLAIMS`).
This module glues the records (:func:`glue_claim`, :func:`glue_claims`) and reads them back from the executed
notebooks into the scorecard (:func:`read_glued_claims`, :func:`scorecard_table`).
"""

from __future__ import annotations

import ast
import html
import posixpath
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd

from iclmem.report.records import (
    RECORD_FIELDS,
    VERDICTS,
    ClaimError,
    PlainText,
    claim_record,
    record_from,
)
from iclmem.report.registry import (
    CLAIMS,
    SCORECARD_PAGE,
    claims_by_id,
    comparison,
)
from iclmem.report.verdicts import monte_carlo_error

GLUE_PREFIX = "claim-"
#: The glue name prefix of a claim read on the registered design (:mod:`iclmem.report.design_glue`).
DESIGN_PREFIX = "design-claim-"
#: The glue name of the registered design's progress (:class:`iclmem.report.design_glue.DesignProgress`).
PROGRESS_NAME = "design-progress"
#: Who decides a scorecard row: the book's own grid, or the registered design once complete and checked here.
BOOK_GRID, REGISTERED_DESIGN = "book grid", "registered design"
MISSING = "missing"  # the scorecard's verdict for a registry claim that no executed chapter glued


def glue_claim(
    claim_id: str, paper: str, ours: str, verdict: str, reason: str, interval: str | None = None, **null_fields: Any
) -> dict[str, Any]:
    """Glue one claim's record under ``claim-<ID>`` (not displayed) and return it.

    ``paper``: the paper's value as text, formatted from the chapter's paper constants;
    ``null_fields``: ``null``, ``observed``, ``null_range``, ``null_rate``, ``points`` of :func:`claim_record`.
    """
    from myst_nb import glue

    record = claim_record(claim_id, paper, ours, verdict, reason, interval, **null_fields)
    glue(GLUE_PREFIX + record["id"], record, display=False)
    return record


def glue_text(key: str, value: object) -> None:
    """Glue ``value`` as plain text under ``key`` (not displayed), for ``{glue:text}`` in the page's prose."""
    from myst_nb import glue

    glue(key, PlainText(str(value)), display=False)


def glue_claims(records: Iterable[Mapping[str, Any]], prefix: str = GLUE_PREFIX) -> int:
    """Glue every record of :func:`claim_record` (as a chapter module returns them) under ``<prefix><ID>`` (the
    registered design's: :data:`DESIGN_PREFIX`); returns how many."""
    from myst_nb import glue

    n = 0
    for r in records:
        record = record_from(r)
        glue(prefix + record["id"], record, display=False)
        n += 1
    return n


# --- reading glued claims back from executed notebooks -------------------------------------------


def read_glued_claims(ipynb_path: str | Path, prefix: str = GLUE_PREFIX) -> dict[str, dict[str, Any]]:
    """The claim records an executed notebook glued with :func:`glue_claim`, by claim id (``prefix``: another
    glue name prefix, e.g. :data:`iclmem.report.design_glue.DESIGN_PREFIX` for the registered design's records).

    myst-nb's ``glue(name, value, display=False)`` writes a ``display_data`` output whose
    ``metadata.scrapbook`` is ``{"name": name, "mime_prefix": "application/papermill.record/"}``
    and whose data holds the value's ``repr`` under ``<mime_prefix>text/plain``. Outputs named
    ``claim-<ID>`` are parsed with :func:`ast.literal_eval` (never ``eval``) and re-checked with
    :func:`claim_record`; a later record of the same id replaces an earlier one, as in myst-nb.
    Raises :class:`ClaimError` naming the notebook when a record cannot be read.
    """
    path = Path(ipynb_path)
    nb = nbformat.read(path, as_version=4)
    found: dict[str, dict[str, Any]] = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            meta = output.get("metadata", {}).get("scrapbook")
            if not isinstance(meta, Mapping) or not str(meta.get("name", "")).startswith(prefix):
                continue
            name = str(meta["name"])
            text = output.get("data", {}).get(str(meta.get("mime_prefix", "")) + "text/plain")
            if isinstance(text, list):  # nbformat may keep multi-line strings as lists of lines
                text = "".join(text)
            try:
                value = ast.literal_eval(text) if isinstance(text, str) else None
            except (ValueError, SyntaxError) as exc:
                raise ClaimError(
                    f"{path}: glued {name!r} is not a literal dict: {exc}; re-execute the notebook that glued it "
                    "(records come from iclmem.report.glue.glue_claim)"
                ) from exc
            if not isinstance(value, dict):
                raise ClaimError(
                    f"{path}: glued {name!r} is not a dict; record claims with iclmem.report.glue.glue_claim."
                )
            fields = set(RECORD_FIELDS)
            if set(value) | {"null_draws"} != fields:  # records glued before null_draws existed lack it
                raise ClaimError(
                    f"{path}: glued {name!r} has fields {sorted(value)}, a claim record has {sorted(fields)}; "
                    "re-execute the chapter (records come from iclmem.report.glue.glue_claim)."
                )
            record = record_from(value)
            if prefix + record["id"] != name:
                raise ClaimError(f"{path}: glued {name!r} holds the record of claim {record['id']!r}.")
            found[record["id"]] = record
    return found


def _heading(line: str) -> str | None:
    """The text of a markdown heading line (levels 1-4), else None."""
    stripped = line.strip()
    hashes = len(stripped) - len(stripped.lstrip("#"))
    if 1 <= hashes <= 4 and stripped[hashes : hashes + 1] == " ":
        return stripped[hashes:].strip()
    return None


def claim_anchors(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Per claim an executed notebook glued: the html anchor of the section it was glued in (the last heading before
    it).

    Anchors are docutils ids of the heading text (what Sphinx gives a section: lower case, runs of
    other characters as one hyphen); a claim glued before any heading gets none.
    """
    from docutils.nodes import make_id

    out: dict[str, str] = {}
    current: str | None = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                text = _heading(line)
                if text is not None:
                    current = make_id(text)
            continue
        for output in cell.get("outputs", []):
            meta = output.get("metadata", {}).get("scrapbook")
            name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
            if name.startswith(GLUE_PREFIX) and current:
                out[name[len(GLUE_PREFIX) :]] = current
    return out


def page_link(chapter: str, from_page: str = SCORECARD_PAGE) -> str:
    """The html address of toc page ``chapter`` relative to page ``from_page`` (Jupyter Book's html builder)."""
    return posixpath.relpath(f"{chapter}.html", posixpath.dirname(from_page) or ".")


def _page_title(nb: nbformat.NotebookNode, default: str) -> str:
    """The first markdown heading of a notebook (its page title in the book), else ``default``."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return default


def _with_interval(record: Mapping[str, Any]) -> str:
    return f"{record['ours']} {record['interval']}" if record.get("interval") else str(record["ours"])


SCORECARD_COLUMNS = (
    "claim",
    "statement",
    "compared by",
    "paper",
    "this build",
    "verdict",
    "null rate",
    "null",
    "reason",
    "decided by",
    "other reading",
    "other verdict",
    "chapter",
    "section",
    "link",
    "points",
)


def null_rate_text(record: Mapping[str, Any]) -> str:
    """The null "reproduce" rate as the scorecard shows it: a percent with its Monte Carlo standard error over the
    record's ``null_draws`` (when it states them), or why there is none."""
    rate = record.get("null_rate")
    if rate is not None:
        n = record.get("null_draws")
        if not n:
            return f"{100 * float(rate):.0f}%"
        if float(rate) == 0:  # no draw agreed: the rule of three's 95% upper bound stands in for the error
            return f"0% (< {300 / n:.1f}% at 95%, {n} draws)"
        return f"{100 * float(rate):.1f}% ± {100 * monte_carlo_error(float(rate), n):.1f}% ({n} draws)"
    null = str(record.get("null") or "")
    return "no null applies" if null.lower().startswith("no null") else "-"


def claims_table(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """A chapter's claim records as its page shows them: one row per claim id, the null rate with its Monte Carlo
    error (:func:`null_rate_text`)."""
    rows = [
        {
            "id": r["id"],
            "paper": r["paper"],
            "ours": r["ours"],
            "verdict": r["verdict"],
            "null rate": null_rate_text(r),
            "observed": r.get("observed"),
            "null_range": r.get("null_range"),
            "reason": r["reason"],
        }
        for r in records
    ]
    return pd.DataFrame(rows).set_index("id")


def _null_text(record: Mapping[str, Any]) -> str:
    parts = [str(record.get("null") or "-")]
    if record.get("observed"):
        parts.append(f"observed: {record['observed']}")
    if record.get("null_range"):
        parts.append(f"95% of the null: {record['null_range']}")
    return "; ".join(parts)


def _other(record: Mapping[str, Any] | None) -> tuple[str, str]:
    """(value with interval, verdict) of the reading that does not decide a row; empty where there is none."""
    return ("", "") if record is None else (_with_interval(record), str(record["verdict"]))


def read_glued_progress(ipynb_path: str | Path) -> dict[str, Any] | None:
    """The design progress a notebook glued under :data:`PROGRESS_NAME` (a literal dict), or None."""
    nb = nbformat.read(Path(ipynb_path), as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            meta = output.get("metadata", {}).get("scrapbook")
            if isinstance(meta, Mapping) and meta.get("name") == PROGRESS_NAME:
                text = output.get("data", {}).get(str(meta.get("mime_prefix", "")) + "text/plain")
                value = ast.literal_eval("".join(text) if isinstance(text, list) else str(text))
                return value if isinstance(value, dict) else None
    return None


def design_decides(progress: Mapping[str, Any] | None) -> bool:
    """Whether a glued design progress decides its chapter's rows: every task bundled, its sample accepted here."""
    return bool(progress) and progress["tasks_bundled"] >= progress["tasks"] and progress.get("check") == "accepted"


def _record_cells(record: Mapping[str, Any] | None, missing: str) -> tuple:
    """A scorecard row's (paper, this build, verdict, null rate, null, reason, points) from a claim's ``record``; a
    claim no chapter recorded reads :data:`MISSING`, with ``missing`` (where it should have come from) as its
    reason."""
    if record is None:
        return "", "", MISSING, "-", "-", f"not recorded: {missing}", None
    return (
        record["paper"],
        _with_interval(record),
        record["verdict"],
        null_rate_text(record),
        _null_text(record),
        record["reason"],
        record.get("points"),
    )


def scorecard_table(executed_dir: str | Path, page: str = SCORECARD_PAGE) -> pd.DataFrame:
    """One row per claim of :data:`CLAIMS`, in registry order, read from the executed chapters.

    Columns: ``claim`` (id), ``statement``, ``paper`` (the paper's value), ``this build`` (value
    and interval), ``verdict``, ``null rate`` (how often the claim's rule says "reproduced" under its
    null), ``null`` (what is exchangeable, the observed statistic and the null's 95% range),
    ``reason``, ``decided by`` (:data:`BOOK_GRID`, or :data:`REGISTERED_DESIGN` where the chapter read the claim on
    a design that is complete and accepted here, :func:`design_decides`: its record then fills the columns before),
    ``other reading`` and ``other verdict`` (the reading that does not decide: the design's while it is interim,
    glued ``design-claim-<ID>`` by :mod:`iclmem.report.design_glue`, else the grid's; empty where none),
    ``chapter`` (toc name),
    ``section`` (an html link to the section of the chapter that computes it, relative to ``page``), ``link`` (that
    link's address) and ``points`` (the record's numeric points, for the figure). Chapter ``X`` is read from
    ``<executed_dir>/X.ipynb``. A claim its chapter did not glue gets verdict :data:`MISSING` and a reason naming
    that chapter; a claim a chapter glued that the registry lacks is appended after the registry rows.
    """
    executed_dir = Path(executed_dir)
    records: dict[str, dict[str, dict[str, Any]]] = {}
    designed: dict[str, dict[str, dict[str, Any]]] = {}  # the registered design's records, by chapter and claim id
    deciding: set[str] = set()  # the chapters whose design decides
    titles: dict[str, str] = {}
    anchors: dict[str, dict[str, str]] = {}
    for chapter in dict.fromkeys(claim.chapter for claim in CLAIMS):
        path = executed_dir / f"{chapter}.ipynb"
        titles[chapter] = chapter
        if path.is_file():
            records[chapter] = read_glued_claims(path)
            designed[chapter] = read_glued_claims(path, prefix=DESIGN_PREFIX)
            if design_decides(read_glued_progress(path)):
                deciding.add(chapter)
            nb = nbformat.read(path, as_version=4)
            titles[chapter] = _page_title(nb, chapter)
            anchors[chapter] = claim_anchors(nb)

    def row(claim_id: str, statement: str, chapter: str, grid: Mapping[str, Any] | None) -> dict[str, Any]:
        design = designed.get(chapter, {}).get(claim_id)
        decided = chapter in deciding and design is not None
        record, other = (design, grid) if decided else (grid, design)
        by = REGISTERED_DESIGN if decided else BOOK_GRID
        anchor = anchors.get(chapter, {}).get(claim_id)
        href = page_link(chapter, page) + (f"#{anchor}" if anchor else "")
        link = f'<a href="{html.escape(href)}">{html.escape(titles[chapter])}</a>'
        where = (
            f"{chapter} does not glue {GLUE_PREFIX}{claim_id}"
            if chapter in records
            else (f"{chapter}.ipynb is not in {executed_dir} (not executed yet)")
        )
        paper, build, verdict, rate, null, reason, points = _record_cells(record, where)
        cells = (claim_id, statement, comparison(claim_id)[0], paper, build, verdict, rate, null, reason, by)
        return dict(zip(SCORECARD_COLUMNS, (*cells, *_other(other), chapter, link, href, points), strict=True))

    registry = claims_by_id()
    rows = [row(c.id, c.statement, c.chapter, records.get(c.chapter, {}).get(c.id)) for c in CLAIMS]
    rows += [
        row(claim_id, "(not in the registry of iclmem.report.glue)", chapter, record)
        for chapter, found in records.items()
        for claim_id, record in found.items()
        if claim_id not in registry
    ]
    return pd.DataFrame(rows, columns=list(SCORECARD_COLUMNS))


def verdict_counts(table: pd.DataFrame) -> pd.Series:
    """How many rows of a :func:`scorecard_table` have each verdict (every verdict listed, zeros included)."""
    order = [*VERDICTS, MISSING]
    counts = table["verdict"].value_counts()
    return pd.Series({verdict: int(counts.get(verdict, 0)) for verdict in order}, name="claims", dtype=int)


def scorecard_html(table: pd.DataFrame) -> str:
    """The scorecard as an html table: text cells escaped, the ``section`` links kept, ``chapter`` dropped."""
    shown = table.drop(columns=["chapter", "link", "points"]).copy()
    for column in shown.columns:
        if column != "section":
            shown[column] = shown[column].map(lambda text: html.escape(str(text)))
    return shown.to_html(escape=False, index=False, classes="scorecard", border=0, justify="left")


__all__ = [
    "null_rate_text",
    "claims_table",
    "GLUE_PREFIX",
    "DESIGN_PREFIX",
    "PROGRESS_NAME",
    "BOOK_GRID",
    "REGISTERED_DESIGN",
    "design_decides",
    "read_glued_progress",
    "MISSING",
    "glue_claim",
    "glue_claims",
    "glue_text",
    "SCORECARD_COLUMNS",
    "claim_anchors",
    "read_glued_claims",
    "page_link",
    "scorecard_table",
    "verdict_counts",
    "scorecard_html",
]
