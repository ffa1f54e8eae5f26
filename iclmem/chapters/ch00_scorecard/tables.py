"""Notebook 00, the scorecard (both papers, claims C1-C16 and D1-D9; P1-P3, M1, M2): the page's badges and tables.

What the page shows is read from :func:`iclmem.report.glue.scorecard_table`; this module only
lays it out: :func:`verdict_badge` (one coloured badge per verdict word), :func:`counts_html` (the
sentence the page opens on), :func:`compact_html` (claim, statement, paper, this build, verdict;
the reason, the null and the link in a ``<details>`` below this build's value) and :func:`split_beyond` (the rows
of the papers apart from those beyond them). The figure is :mod:`iclmem.chapters.ch00_scorecard.figures`.
"""

from __future__ import annotations

import html

import pandas as pd

from iclmem.report.glue import BOOK_GRID, MISSING, REGISTERED_DESIGN, verdict_counts
from iclmem.report.records import VERDICTS
from iclmem.report.registry import BEYOND_PAPERS, CLAIMS, comparison

#: Badge colours per verdict (background, text): green only for what counts as evidence.
BADGE_COLOURS: dict[str, tuple[str, str]] = {
    "reproduced": ("#1a7f37", "#ffffff"),
    "differs": ("#cf222e", "#ffffff"),
    "inconclusive": ("#9a6700", "#ffffff"),
    "holds by construction": ("#57606a", "#ffffff"),
    "not comparable here": ("#ddf4ff", "#0a3069"),
    "not testable here": ("#d0d7de", "#24292f"),
    MISSING: ("#000000", "#ffffff"),
}


def verdict_badge(verdict: str) -> str:
    """One verdict as a coloured badge (a ``span.verdict-badge`` whose ``data-verdict`` is the word)."""
    bg, fg = BADGE_COLOURS.get(verdict, ("#ffffff", "#000000"))
    return (
        f'<span class="verdict-badge" data-verdict="{html.escape(verdict)}" style="background:{bg};color:{fg};'
        "border-radius:0.8em;padding:0.05em "
        f'0.6em;white-space:nowrap;font-size:0.85em;font-weight:600">{html.escape(verdict)}</span>'
    )


def counts_html(table: pd.DataFrame) -> str:
    """The page's opening sentence: how many claims got each verdict, each count beside its badge."""
    counts = verdict_counts(table)
    parts = [
        f'<span class="verdict-count" data-verdict="{html.escape(v)}"><b>{int(counts[v])}</b> {verdict_badge(v)}</span>'
        for v in [*VERDICTS, MISSING]
        if v != MISSING or counts[v]
    ]
    beyond = " and the rows beyond the papers" if table.claim.astype(str).str.startswith("M").any() else ""
    text = (
        f'<p class="scorecard-counts">Of the <b>{len(table)}</b> rows (the two papers\' claims, the instrument '
        f"rows P1-P3{beyond}), this build finds: "
        + ", ".join(parts)
        + ". Only <i>reproduced</i> is evidence for a claim: it agrees "
        "with the paper, and its rule says so by chance in at most 5% of the claim's null draws.</p>"
    )
    positive = table[table.claim == "P1"]
    if len(positive) and positive.verdict.iloc[0] != "reproduced":
        text += (
            '<p class="scorecard-instrument"><b>The positive control does not pass</b> (P1): the probe did not detect '
            "memorization that is known to be there. A non-detection in the rows below is therefore no evidence that a "
            "model "
            "did not memorize, only that this probe cannot show it with this reference model (the instrument's "
            "page shows where the signal is lost: the context ladder and the per-table reach).</p>"
        )
    return text


def _details(row: pd.Series) -> str:
    how, why = comparison(str(row["claim"]))
    items = [
        ("why", row["reason"]),
        (f"compared by {how}", why),
        ("null rate", row["null rate"]),
        ("null", row["null"]),
        ("decided by", row.get("decided by", "")),
        ("registered power on the design", row.get("registered power", "")),
    ]
    body = "".join(
        f"<p><b>{name}</b>: {html.escape(str(text))}</p>" for name, text in items if str(text) not in ("", "-")
    )
    return f"<details><summary>why</summary>{body}<p>computed in {row['section']}</p></details>"


def compact_html(table: pd.DataFrame) -> str:
    """The scorecard table: claim (linked to the section computing it), statement, paper, this build (its details
    below), verdict, and, where a chapter also read the claim on the registered design, the reading that does not
    decide the row (the design's while it is interim, the book grid's once the design decides) with its verdict."""
    beside = bool(table.get("other verdict", pd.Series(dtype=str)).astype(bool).any())
    decided = table.get("decided by", pd.Series(dtype=str)) == REGISTERED_DESIGN
    other = BOOK_GRID if decided.any() else REGISTERED_DESIGN  # the reading that does not decide the rows
    columns = ("claim", "statement", "paper", "this build", "verdict") + ((other,) if beside else ())
    head = "".join(f"<th>{h}</th>" for h in columns)
    rows = []
    for _, row in table.iterrows():
        cells = [
            f'<a href="{html.escape(row["link"])}">{html.escape(row["claim"])}</a>',
            html.escape(row["statement"]),
            html.escape(str(row["paper"])),
            html.escape(str(row["this build"])) + _details(row),
            verdict_badge(row["verdict"]),
        ]
        if beside:
            read = row["other verdict"]
            cells.append(
                f"{verdict_badge(read)}<br><small>{html.escape(str(row['other reading']))}</small>" if read else "-"
            )
        rows.append(
            f'<tr data-claim="{html.escape(row["claim"])}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
        )
    return (
        '<div class="scorecard-page"><table '
        f'class="scorecard"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
        "</table></div>"
    )


def split_beyond(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scorecard's rows of the papers (and the instrument), and those beyond the papers (M1, M2: chapter 7)."""
    beyond = table.claim.isin([c.id for c in CLAIMS if c.paper == BEYOND_PAPERS])
    return table[~beyond], table[beyond]


__all__ = [
    "BADGE_COLOURS",
    "compact_html",
    "counts_html",
    "split_beyond",
    "verdict_badge",
]
