"""Both papers' claims C1-C16 (IclMem) and D1-D9 (Golchin et al.): the registry, the glue and the scorecard (notebook
00).

The contract between chapters and the scorecard. A chapter that computes a claim of ``../shared/claims.md`` (IclMem
C1-C16, Golchin et al. D1-D9)
records it with :func:`glue_claim`: the paper's value (from the chapter's constants), this build's value (a short text),
its interval where one
exists, a verdict and the reason for it. The record is glued (myst-nb) under ``claim-<ID>``
as a plain dict, so the scorecard page reads it from the executed notebook; nothing on the
scorecard is typed.

Verdicts (:data:`VERDICTS`; :func:`iclmem.chapters.verdicts.evidence_verdict` chooses one):

* ``reproduced``: the build agrees with the claim as stated, *and* its rule rarely says so under the
  claim's null (``null_rate`` at most :data:`iclmem.stats.NULL_LEVEL`), or the record states why
  no null applies (``null`` begins with "no null");
* ``differs``: computed, and the build contradicts the claim;
* ``inconclusive``: at this sample size the build cannot separate the paper's value from its
  contradiction (it agrees, but chance agrees as often; or it disagrees within the noise);
* ``holds by construction``: the procedure makes the claim true whatever the data (a split redrawn
  until it passes its checks; a model declared invariant to what the manipulation changes);
* ``not testable here``: the build cannot compute it (the paper's models or data are missing).

Neither ``inconclusive`` nor ``holds by construction`` counts as reproduced. Each record also
carries its null: ``null`` (what the evidence assumes exchangeable, or why no null applies),
``observed`` (the statistic the rule reads), ``null_range`` (the central 95% of that statistic
under the null) and ``null_rate`` (how often the rule says "reproduced" under the null).
"""

from __future__ import annotations

import ast
import html
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd


class PlainText(str):
    """A string that displays without quotes (myst-nb ``{glue:text}`` shows the text/plain repr)."""

    def __repr__(self) -> str:
        return str.__str__(self)

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython's pretty printer
        p.text(str.__str__(self))


VERDICTS: tuple[str, ...] = ("reproduced", "differs", "inconclusive", "holds by construction", "not testable here")
#: The record's fields, in the order the scorecard shows them.
RECORD_FIELDS: tuple[str, ...] = (
    "id",
    "paper",
    "ours",
    "interval",
    "verdict",
    "reason",
    "null",
    "observed",
    "null_range",
    "null_rate",
    "points",
)
# : The keys of one numeric point of a record (the scorecard's figure): the paper's value and this build's with its
# interval.
POINT_KEYS: tuple[str, ...] = ("label", "paper", "build", "lo", "hi")
#: The largest null "reproduce" rate a reproduced claim may have (equals :data:`iclmem.stats.NULL_LEVEL`).
MAX_NULL_RATE = 0.05
GLUE_PREFIX = "claim-"
MISSING = "missing"  # the scorecard's verdict for a registry claim that no executed chapter glued


class ClaimError(ValueError):
    """A claim record is malformed: the message names the field and the fix."""


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def _points(claim_id: str, points: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    if points is None:
        return None
    out = []
    for point in points:
        if set(point) != set(POINT_KEYS):
            raise ClaimError(f"claim {claim_id}: a point has keys {sorted(point)}, it needs {list(POINT_KEYS)}.")
        out.append({"label": str(point["label"]), **{k: float(point[k]) for k in POINT_KEYS[1:]}})
    return out


@dataclass(frozen=True)
class ClaimResult:
    """One claim's result, the one shape every chapter returns (its :meth:`record` is what :func:`glue_claim` stores).

    Checked once, here: the verdict is one of :data:`VERDICTS`, the id and reason are non-empty, ``null_rate`` lies
    in [0, 1], and a ``reproduced`` verdict states its null (``null``: what the evidence assumes exchangeable, or
    why no null applies) and has a null rate of at most :data:`MAX_NULL_RATE`. ``observed``: the statistic the
    rule reads; ``null_range``: its central 95% under the null; ``points``: values for the scorecard's figure.
    """

    claim_id: str
    paper: str
    ours: str
    verdict: str
    reason: str
    interval: str | None = None
    null: str | None = None
    observed: str | None = None
    null_range: str | None = None
    null_rate: float | None = None
    points: tuple[Mapping[str, Any], ...] | None = None

    def __post_init__(self) -> None:
        claim_id, verdict, null = self.claim_id, self.verdict, self.null
        if verdict not in VERDICTS:
            raise ClaimError(f"claim {claim_id}: verdict {verdict!r} is not one of {', '.join(VERDICTS)}.")
        if not str(claim_id).strip() or not str(self.reason).strip():
            raise ClaimError(f"claim {claim_id!r}: the id and the reason must be non-empty.")
        rate = None if self.null_rate is None else float(self.null_rate)
        if rate is not None and not 0.0 <= rate <= 1.0:
            raise ClaimError(f"claim {claim_id}: null_rate {rate} is not a share in [0, 1].")
        if verdict == "reproduced":
            if not null or not str(null).strip():
                raise ClaimError(
                    f"claim {claim_id}: a reproduced verdict needs its null (what the evidence assumes exchangeable, "
                    "or why no null applies); pass null=..."
                )
            if rate is not None and rate > MAX_NULL_RATE + 1e-12:
                raise ClaimError(
                    f"claim {claim_id}: the rule says 'reproduced' in {rate:.0%} of null draws "
                    f"(> {MAX_NULL_RATE:.0%}): chance alone gives that verdict; call it 'inconclusive' "
                    "(iclmem.chapters.verdicts.evidence_verdict)."
                )
        object.__setattr__(self, "null_rate", rate)
        object.__setattr__(self, "points", None if self.points is None else tuple(_points(claim_id, self.points)))

    def record(self) -> dict[str, Any]:
        """The plain dict that is glued, tabled and read back by the scorecard."""
        return {
            "id": str(self.claim_id),
            "paper": str(self.paper),
            "ours": str(self.ours),
            "interval": _optional_text(self.interval),
            "verdict": self.verdict,
            "reason": str(self.reason),
            "null": _optional_text(self.null),
            "observed": _optional_text(self.observed),
            "null_range": _optional_text(self.null_range),
            "null_rate": self.null_rate,
            "points": None if self.points is None else [dict(p) for p in self.points],
        }


def claim_record(
    claim_id: str,
    paper: str,
    ours: str,
    verdict: str,
    reason: str,
    interval: str | None = None,
    *,
    null: str | None = None,
    observed: str | None = None,
    null_range: str | None = None,
    null_rate: float | None = None,
    points: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The record of a :class:`ClaimResult` with these fields (checked there)."""
    return ClaimResult(
        claim_id,
        paper,
        ours,
        verdict,
        reason,
        interval,
        null,
        observed,
        null_range,
        null_rate,
        None if points is None else tuple(points),
    ).record()


def record_from(fields: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`claim_record` from a mapping with the record's fields (``interval`` and the null fields optional)."""
    return claim_record(
        fields["id"],
        fields["paper"],
        fields["ours"],
        fields["verdict"],
        fields["reason"],
        fields.get("interval"),
        null=fields.get("null"),
        observed=fields.get("observed"),
        null_range=fields.get("null_range"),
        null_rate=fields.get("null_rate"),
        points=fields.get("points"),
    )


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


# --- the registry of claims ---------------------------------------------------------------------


def glue_text(key: str, value: object) -> None:
    """Glue ``value`` as plain text under ``key`` (not displayed), for ``{glue:text}`` in the page's prose."""
    from myst_nb import glue

    glue(key, PlainText(str(value)), display=False)


def glue_claims(records: Iterable[Mapping[str, Any]]) -> int:
    """Glue every record of :func:`claim_record` (as a chapter module returns them); returns how many."""
    from myst_nb import glue

    n = 0
    for r in records:
        record = record_from(r)
        glue(GLUE_PREFIX + record["id"], record, display=False)
        n += 1
    return n


ICLMEM = "IclMem (Capano & Böhler 2026)"
GOLCHIN = "Golchin et al. 2024"
INSTRUMENT = "this book (the instrument)"
BEYOND_PAPERS = "this book (beyond the papers)"
SCORECARD_PAGE = "notebooks/00_scorecard"  # toc name of the page that renders the scorecard
_SPLITS = "notebooks/01_split_validation"
_FINETUNE = "notebooks/02_controlled_finetuning"
_PROBING = "notebooks/03_multiple_choice_probing"
_CALIBRATION = "notebooks/04_calibration"
_REGIMES = "notebooks/05_realistic_regimes"
_LLM = "notebooks/06_llm_kshot_replication"
_MITIGATION = "notebooks/07_mitigation"


@dataclass(frozen=True)
class Claim:
    """One quantitative claim of a paper: its id, a one-line paraphrase, and the toc page recording it.

    The statement carries no values: the paper's value and this build's come from the chapter's
    glued record, so nothing on the scorecard is typed twice.
    """

    id: str
    paper: str
    statement: str
    chapter: str


#: The claims of ``shared/claims.md``: IclMem C1-C16 (ConTextTab on 10 CARTE tasks) and
#: Golchin et al. 2024 D1-D9 (GPT-4 on WNLI, RTE, TREC, DBpedia), in scorecard order. C12 is judged
#: as its three sub-claims (C12a-c), each of which can come out differently. P1 and P2 are the book's
#: instrument rows: the positive and the negative control of the probe (notebook 04). M1 and M2 go beyond
#: the papers: DP-SGD, the mitigation IclMem's Sec. 6 names (notebook 07), under their own scorecard heading.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "C1",
        ICLMEM,
        "Most tasks show detectable memorization (AUC(ΔS) > 0.5, TPR > 0.1) under controlled fine-tuning",
        _CALIBRATION,
    ),
    Claim("C2", ICLMEM, "The largest AUC(ΔS) and the per-task AUC / TPR@10% / TPR@1% of Tab. 1", _CALIBRATION),
    Claim("C3", ICLMEM, "TPR at 1% FPR exceeds 0.1 in only a few tasks", _CALIBRATION),
    Claim(
        "C4",
        ICLMEM,
        "Representational collapse is the most frequent outcome, at high learning rates (lr ≥ 1e-2)",
        _CALIBRATION,
    ),
    Claim(
        "C5",
        ICLMEM,
        "Share of runs with loss inversion (non-members score the lower loss), at Q = 50 and Q = 512",
        _CALIBRATION,
    ),
    Claim(
        "C6", ICLMEM, "Detectable memorization is much more frequent at query size Q = 50 than at Q = 512", _CALIBRATION
    ),
    Claim("C7", ICLMEM, "Shares of context overfitting and of no signal, at Q = 50 and Q = 512", _CALIBRATION),
    Claim(
        "C8",
        ICLMEM,
        "Binary tasks are the most vulnerable; label density n/k drives the signal at Q = 50",
        _CALIBRATION,
    ),
    Claim(
        "C9",
        ICLMEM,
        "Over epochs the Q = 50 signal grows, while the Q = 512 signal peaks mid-training and vanishes",
        _CALIBRATION,
    ),
    Claim(
        "C10",
        ICLMEM,
        "The loss ratio L_FT / L_Base is bimodal: near 1x at low lr, far above the 5x collapse threshold "
        "at aggressive lr",
        _FINETUNE,
    ),
    Claim(
        "C11",
        ICLMEM,
        "Calibration against the reference model exposes most raw TPR@10% signals as difficulty artifacts",
        _CALIBRATION,
    ),
    Claim("C12a", ICLMEM, "True-label skew and mixing true with other labels raise AUC(ΔS) slightly", _PROBING),
    Claim("C12b", ICLMEM, "Positional shuffling of the context changes AUC(ΔS) by about 0", _PROBING),
    Claim("C12c", ICLMEM, "Feature reduction and distractor columns change AUC(ΔS) negligibly", _PROBING),
    Claim("C13", ICLMEM, "Realistic regimes (multi-task pairs, few epochs) remove most of the signal", _REGIMES),
    Claim(
        "C14", ICLMEM, "Member and non-member splits are distribution-matched (KS, TVD below the thresholds)", _SPLITS
    ),
    Claim("C15", ICLMEM, "Leakage can be localized: a modest AUC can come with a high TPR@10%", _CALIBRATION),
    Claim(
        "C16",
        ICLMEM,
        "High-cardinality targets leak only with high query coverage Q/n and a target not deducible from features",
        _CALIBRATION,
    ),
    Claim(
        "P1",
        INSTRUMENT,
        "The probe detects memorization known to be there (positive control, strongest setting of the "
        "sensitivity curve)",
        _CALIBRATION,
    ),
    Claim(
        "P2",
        INSTRUMENT,
        "The probe does not detect what is not there (negative control: halves of the non-members)",
        _CALIBRATION,
    ),
    Claim("D1", GOLCHIN, "Memorization rises from zero-shot to few-shot to many-shot prompts", _LLM),
    Claim("D2", GOLCHIN, "25 demonstrations already raise memorization sharply; its level differs by dataset", _LLM),
    Claim("D3", GOLCHIN, "Near-exact matches turn into exact matches as the number of shots k grows", _LLM),
    Claim("D4", GOLCHIN, "Segment pairs alone (no labels, no instruction) surface about the most memorization", _LLM),
    Claim(
        "D5",
        GOLCHIN,
        "Full information and segment pairs with labels agree from k ≥ 25 and differ only at zero-shot",
        _LLM,
    ),
    Claim("D6", GOLCHIN, "In-context learning beats zero-shot once memorization reaches about 40%", _LLM),
    Claim("D7", GOLCHIN, "ICL performance correlates strongly with memorization (Pearson), except on RTE", _LLM),
    Claim("D8", GOLCHIN, "Performance on memorized instances exceeds performance on non-memorized ones", _LLM),
    Claim("D9", GOLCHIN, "Human review changes few of the GPT-4 judge's labels", _LLM),
    Claim(
        "M1",
        BEYOND_PAPERS,
        "DP-SGD at ε ≤ 4 removes the vanilla-attack signal (IclMem Sec. 6's named mitigation)",
        _MITIGATION,
    ),
    Claim("M2", BEYOND_PAPERS, "... at a held-out accuracy cost of at most the chapter's stated budget", _MITIGATION),
)


def claims_by_id() -> dict[str, Claim]:
    """The registry keyed by claim id."""
    return {claim.id: claim for claim in CLAIMS}


# --- reading glued claims back from executed notebooks -------------------------------------------


def read_glued_claims(ipynb_path: str | Path) -> dict[str, dict[str, Any]]:
    """The claim records an executed notebook glued with :func:`glue_claim`, by claim id.

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
            if not isinstance(meta, Mapping) or not str(meta.get("name", "")).startswith(GLUE_PREFIX):
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
                    "(records come from iclmem.chapters.claims.glue_claim)"
                ) from exc
            if not isinstance(value, dict):
                raise ClaimError(
                    f"{path}: glued {name!r} is not a dict; record claims with iclmem.chapters.claims.glue_claim."
                )
            fields = set(RECORD_FIELDS)
            if set(value) != fields:
                raise ClaimError(
                    f"{path}: glued {name!r} has fields {sorted(value)}, a claim record has {sorted(fields)}; "
                    "re-execute the chapter (records come from iclmem.chapters.claims.glue_claim)."
                )
            record = record_from(value)
            if GLUE_PREFIX + record["id"] != name:
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
    "paper",
    "this build",
    "verdict",
    "null rate",
    "null",
    "reason",
    "chapter",
    "section",
    "link",
    "points",
)


def null_rate_text(record: Mapping[str, Any]) -> str:
    """The null "reproduce" rate as the scorecard shows it: a percent, or why there is none."""
    rate = record.get("null_rate")
    if rate is not None:
        return f"{100 * float(rate):.0f}%"
    null = str(record.get("null") or "")
    return "no null applies" if null.lower().startswith("no null") else "-"


def _null_text(record: Mapping[str, Any]) -> str:
    parts = [str(record.get("null") or "-")]
    if record.get("observed"):
        parts.append(f"observed: {record['observed']}")
    if record.get("null_range"):
        parts.append(f"95% of the null: {record['null_range']}")
    return "; ".join(parts)


def scorecard_table(executed_dir: str | Path, page: str = SCORECARD_PAGE) -> pd.DataFrame:
    """One row per claim of :data:`CLAIMS`, in registry order, read from the executed chapters.

    Columns: ``claim`` (id), ``statement``, ``paper`` (the paper's value), ``this build`` (value
    and interval), ``verdict``, ``null rate`` (how often the claim's rule says "reproduced" under its
    null), ``null`` (what is exchangeable, the observed statistic and the null's 95% range),
    ``reason``, ``chapter`` (toc name), ``section`` (an html link to the section of the chapter
    that computes it, relative to ``page``), ``link`` (that link's address) and ``points`` (the
    record's numeric points, for the figure). Chapter ``X`` is read from ``<executed_dir>/X.ipynb``. A claim its chapter
    did not
    glue gets verdict :data:`MISSING` and a reason naming that chapter; a claim a chapter glued that
    the registry lacks is appended after the registry rows.
    """
    executed_dir = Path(executed_dir)
    records: dict[str, dict[str, dict[str, Any]]] = {}
    titles: dict[str, str] = {}
    anchors: dict[str, dict[str, str]] = {}
    for chapter in dict.fromkeys(claim.chapter for claim in CLAIMS):
        path = executed_dir / f"{chapter}.ipynb"
        titles[chapter] = chapter
        if path.is_file():
            records[chapter] = read_glued_claims(path)
            nb = nbformat.read(path, as_version=4)
            titles[chapter] = _page_title(nb, chapter)
            anchors[chapter] = claim_anchors(nb)

    def row(claim_id: str, statement: str, chapter: str, record: Mapping[str, Any] | None) -> dict[str, Any]:
        anchor = anchors.get(chapter, {}).get(claim_id)
        href = page_link(chapter, page) + (f"#{anchor}" if anchor else "")
        link = f'<a href="{html.escape(href)}">{html.escape(titles[chapter])}</a>'
        if record is None:
            where = (
                f"{chapter} does not glue {GLUE_PREFIX}{claim_id}"
                if chapter in records
                else (f"{chapter}.ipynb is not in {executed_dir} (not executed yet)")
            )
            return dict(
                zip(
                    SCORECARD_COLUMNS,
                    (
                        claim_id,
                        statement,
                        "",
                        "",
                        MISSING,
                        "-",
                        "-",
                        f"not recorded: {where}",
                        chapter,
                        link,
                        href,
                        None,
                    ),
                    strict=True,
                )
            )
        return dict(
            zip(
                SCORECARD_COLUMNS,
                (
                    claim_id,
                    statement,
                    record["paper"],
                    _with_interval(record),
                    record["verdict"],
                    null_rate_text(record),
                    _null_text(record),
                    record["reason"],
                    chapter,
                    link,
                    href,
                    record.get("points"),
                ),
                strict=True,
            )
        )

    registry = claims_by_id()
    rows = [row(c.id, c.statement, c.chapter, records.get(c.chapter, {}).get(c.id)) for c in CLAIMS]
    rows += [
        row(claim_id, "(not in the registry of iclmem.chapters.claims)", chapter, record)
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
    "VERDICTS",
    "RECORD_FIELDS",
    "POINT_KEYS",
    "MAX_NULL_RATE",
    "record_from",
    "null_rate_text",
    "GLUE_PREFIX",
    "MISSING",
    "ClaimError",
    "claim_record",
    "glue_claim",
    "glue_claims",
    "glue_text",
    "PlainText",
    "Claim",
    "CLAIMS",
    "ICLMEM",
    "GOLCHIN",
    "INSTRUMENT",
    "SCORECARD_PAGE",
    "SCORECARD_COLUMNS",
    "claims_by_id",
    "claim_anchors",
    "read_glued_claims",
    "page_link",
    "scorecard_table",
    "verdict_counts",
    "scorecard_html",
]
