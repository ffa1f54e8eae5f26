"""No typed number in a chapter's prose (issue 53, item 5).

Every number a chapter page states in its markdown comes from the computation, through a myst-nb glue role
(``{glue:text}`key```, glued by a code cell with :func:`iclmem.report.glue.glue_text` or ``myst_nb.glue``), or is
removed: a number typed into the prose goes stale the first time the build computes another one. This module reads
the markdown cells of every notebook page of ``_toc.yml`` (jupytext percent: a cell starts with
``# %% [markdown]`` and its lines are ``#`` comments) and every ``book/*.md`` page of the toc that is not a guide
page (:data:`GUIDE_PAGES`), statically, and fails on a number that no rule of :data:`ALLOWED` explains.

**The paper's values.** A number quoted from one of the two papers is written with the ``paper`` role,
``{paper}`0.668```: it renders as the number itself, marked as the paper's (``iclmem.book.roles``), and this test
skips the role's whole content, so one role can hold a phrase such as ``{paper}`241 of 530 raw signals```. Nothing
else marks a number as the paper's: a sentence that merely mentions the paper does not, so a typed value of this
build cannot hide beside a quoted one.

**What is not a typed number** (each rule of :data:`ALLOWED` says why, and is as narrow as the book allows):
glue roles, ``paper`` roles and cross-reference roles; code fences (commands, not prose) and inline code that is
more than a bare number (``-p max_queries 50``, ``atol=1e-4``: a parameter the reader sets; a bare ```0.931```
is still a typed number); math, except a decimal that is not the right-hand side of a relation (``$k = 0$``,
``$10^{-2}$``, ``$> 0.5$`` state formulas and rule thresholds; ``$[-0.053, +0.002]$`` states a result); years;
references to the papers' and the book's sections, tables, figures, appendices, chapters, notebooks and issues;
claim ids and other names that begin with a letter (C12a, D1-D9, SmolLM2-135M, GPT-4, wine_pl, float32); numbered
list markers, inline enumerators ``(1)`` and the ordinal of a heading (``# 3. ...``); the book's fixed statistical
levels, next to what they are the level of (95% intervals and quantiles, the 5% null level, TPR at 1% and 10% FPR,
80% power: read from the code below, so a change there fails here); and 0.5, the AUC of chance.

A number this test flags is either glued from the cell that computes it, marked as the paper's, or removed (a
measurement of an earlier build belongs in CHANGELOG.md with its date, not on the page).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

#: Toc pages under ``book/`` that are guides, not chapters: they say how to install, run, adapt and scale the
#: book, so their numbers are commands, machine sizes and timings of past builds, which no notebook computes.
#: Any other ``book/*.md`` page the toc lists is checked like a notebook.
GUIDE_PAGES = frozenset({"book/intro", "book/reproduce", "book/adapt", "book/cluster"})

#: Sections another change is rewriting (issue 53), left as they are until it lands: (page, heading) -> why. Their
#: typed numbers are listed by :func:`test_pending_sections_still_hold_typed_numbers`, which fails once a section
#: holds none (or is renamed), so that its entry is removed here and the section is checked like the rest.
PENDING: dict[tuple[str, str], str] = {}

# --- the statistical levels the book fixes, read from the code that fixes them ------------------------------------


def _levels() -> dict[str, tuple[str, ...]]:
    from iclmem.chapters.ch04_calibration.power_plan import POWER
    from iclmem.stats.intervals import percentile_interval
    from iclmem.stats.metrics import FPR_TARGETS
    from iclmem.stats.permutation import NULL_LEVEL

    interval = inspect.signature(percentile_interval).parameters["level"].default

    def pct(x: float) -> str:
        return f"{100 * x:g}"

    return {
        "interval": (pct(interval),),  # 95% bootstrap intervals and the central 95% of a null
        "null": (pct(NULL_LEVEL), pct(1 - NULL_LEVEL)),  # "at most 5% of the null draws", "the 95% quantile"
        "fpr": tuple(pct(x) for x in FPR_TARGETS),  # TPR at 1% and 10% FPR
        "power": (pct(POWER),),  # "80% power"
    }


def _alternatives(values: Iterable[str]) -> str:
    return "|".join(re.escape(v) for v in sorted(set(values), key=len, reverse=True))


_LEVELS = _levels()
_STAT_WORDS = (
    r"(?:bootstrap|Wilson|percentile|confidence|noise|central|quantile|two-sided|one-sided|paired)?\s*"
    r"(?:intervals?|quantiles?|level|confidence|range|percentile|bootstraps?)"
)

#: The allowlist, in one place: (rule, pattern, why). A pattern's matches are blanked before numbers are looked for.
ALLOWED: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "heading ordinal",
        re.compile(r"^#{1,6}[ \t]+[A-Z]?\d+\.(?=\s)", re.M),
        "a page's or section's number in its heading (# 3. Multiple-choice probing)",
    ),
    (
        "list marker",
        re.compile(r"^[ \t]*\d+[.)](?=[ \t])", re.M),
        "a numbered list's markers (1. Deduplication)",
    ),
    (
        "inline enumerator",
        re.compile(r"\(\d\)"),
        "an enumeration inside a sentence: (1) full information, (2) segment pairs",
    ),
    (
        "year",
        re.compile(r"(?<![\d.,])(?:19[5-9]\d|20[0-3]\d)(?![\d%x-]|[.,]\d)"),
        "a year (Watson et al. 2022, December 2026)",
    ),
    (
        "reference",
        re.compile(
            r"\b(?:Secs?|Sections?|sections?|Tabs?|Tables?|Figs?|Figures?|Apps?|Appendix|appendix|Eqs?|Observations?|"
            r"Obs|[Cc]hapters?|[Nn]otebooks?|[Ss]tages?|[Ii]ssues?|items?)\.?\s+"
            r"[A-Z]?\.?\d+(?:\.\d+)*[a-z]?"
            r"(?:\s*(?:,|-|–|/|and|to|or)\s*(?:(?:Secs?|Tabs?|Figs?|Apps?)\.?\s*)?[A-Z]?\.?\d+(?:\.\d+)*[a-z]?)*"
        ),
        "a reference to a section, table, figure, appendix or observation of the papers, or to a chapter, "
        "notebook, pretraining stage or issue of the book (Sec. 4.2, Tab. 10 / 11, App. A.3, Fig. 2 and 3, "
        "sections 2-4, notebook 04, issue 42)",
    ),
    (
        "name",
        re.compile(r"(?<![\w.@-])(?=[A-Za-z_][\w.\-@/]*\d)[A-Za-z_]\w*(?:[.\-@/]\w+)*%?"),
        "a number inside a name that begins with a letter: claim ids (C1-C16, D1-D9, P1-P3, M1), models "
        "(SmolLM2-135M, GPT-4, all-MiniLM-L6-v2), tables (wine_pl), types (float32), metrics (TPR@10%, F1)",
    ),
    (
        "interval level",
        re.compile(rf"(?:\b(?:{_alternatives(_LEVELS['interval'])})%\s*{_STAT_WORDS}|central\s+95%)"),
        "the level of the book's intervals and null ranges (95% bootstrap interval, the central 95%)",
    ),
    (
        "null level",
        re.compile(
            rf"\b(?:{_alternatives(_LEVELS['null'])})%(?=\s*(?:{_STAT_WORDS}|of\s+(?:the\s+|its\s+)?(?:null|permutations|"
            rf"(?:null\s+)?draws|intervals)|expected|by\s+chance))"
            rf"|(?:at most|above|below)\s+(?:{_alternatives(_LEVELS['null'])})%(?=\s*(?:[),;:.]|$))"
        ),
        "the level of every claim's null (reproduced only when the rule says so in at most 5% of the null draws; "
        "the 95% quantile)",
    ),
    (
        "FPR operating point",
        re.compile(
            rf"\b(?:{_alternatives(_LEVELS['fpr'])})%(?=\s*(?:and\s+(?:{_alternatives(_LEVELS['fpr'])})%\s*)?"
            rf"(?:FPR|false[ -]positive rate))"
        ),
        "the two false-positive rates the attack's TPR is read at (TPR at 1% and 10% FPR)",
    ),
    (
        "power",
        re.compile(rf"\b(?:{_alternatives(_LEVELS['power'])})%\s+power"),
        "the power every power calculation asks for (80% power)",
    ),
    (
        "exit status",
        re.compile(r"\bstatus\s+\d+\b"),
        "a process exit status, part of the command line's interface (user errors exit with status 2)",
    ),
    (
        "chance AUC",
        re.compile(r"(?<![\d.])0\.50?(?![\d])"),
        "0.5, the AUC of an attack that cannot tell members from non-members",
    ),
)

# --- markup that holds no prose number ------------------------------------------------------------------------------

_CELL = re.compile(r"^# %%(.*)$")
_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})([^\n]*)\n.*?^[ \t]*\2[ \t]*$", re.M | re.S)
_CODE_DIRECTIVES = ("{code-block}", "{code}", "{code-cell}", "{sourcecode}")
#: Roles whose content is not prose: glued values, the paper's values, cross-reference targets.
_ROLES = re.compile(r"\{(?:glue(?::\w*)?|paper|doc|ref|numref|eq|download|term)\}`[^`]*`")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_BARE_NUMBER = re.compile(r"\s*[-+−±]?[\d.,]+\s*[%x]?\s*")
_DISPLAY_MATH = re.compile(r"\$\$.+?\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(.+?)(?<![\\$])\$", re.S)
_MATH_DECIMAL = re.compile(r"\d+\.\d+")
_RELATION = re.compile(r"(?:<|>|=|\\le|\\leq|\\ge|\\geq|\\neq|\\lt|\\gt|\\ll|\\gg)\s*[-+]?\s*$")
_URLS = re.compile(r"\]\([^)\n]*\)|<https?://[^>\s]*>|https?://\S+|<!--.*?-->", re.S)
#: A number: digits with thousands commas, a decimal part and an exponent (1e-4), its sign included. Numbers inside
#: a name are left to the "name" rule of ALLOWED, which has blanked them by then.
NUMBER = re.compile(r"[-+−±]?(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _blank_all(text: str, pattern: re.Pattern[str], keep: Callable[[re.Match[str]], bool] = lambda m: False) -> str:
    for m in reversed(list(pattern.finditer(text))):
        if not keep(m):
            text = _blank(text, m.start(), m.end())
    return text


def _blank_math(text: str, match: re.Match[str]) -> str:
    """Blank one math span, except its decimals that are not the right-hand side of a relation."""
    body = match.group(0)
    kept = [m for m in _MATH_DECIMAL.finditer(body) if not _RELATION.search(body[: m.start()])]
    out = text
    cursor = match.start()
    for m in kept:
        out = _blank(out, cursor, match.start() + m.start())
        cursor = match.start() + m.end()
    return _blank(out, cursor, match.end())


def prose(markdown: str) -> str:
    """``markdown`` with everything that is not prose blanked (same length and lines): code fences (not directive
    fences such as ``{note}``), glue / paper / reference roles, inline code that is more than a bare number, math
    (less its stated decimals, see :func:`_blank_math`), link targets and comments."""
    text = markdown
    for m in reversed(list(_FENCE.finditer(markdown))):
        info = m.group(3).strip()
        if info.startswith("{") and not info.startswith(_CODE_DIRECTIVES):  # a directive: its body is prose
            text = _blank(text, m.start(), markdown.index("\n", m.start()))  # its opening line ...
            text = _blank(text, markdown.rindex("\n", m.start(), m.end()), m.end())  # ... and its closing one
        else:
            text = _blank(text, m.start(), m.end())
    text = _blank_all(text, _ROLES)
    text = _blank_all(text, _INLINE_CODE, keep=lambda m: bool(_BARE_NUMBER.fullmatch(m.group(2))))
    text = _blank_all(text, _URLS)
    for pattern in (_DISPLAY_MATH, _INLINE_MATH):
        for m in reversed(list(pattern.finditer(text))):
            text = _blank_math(text, m)
    return text


@dataclass(frozen=True)
class Finding:
    """A typed number: the page, its line in the source file, the number, that line and the section it is in."""

    page: str
    line: int
    number: str
    source: str
    section: str = ""

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.number!r} in: {self.source.strip()}"


def typed_numbers(
    markdown: str, page: str = "<text>", first_line: int = 1, source_lines: list[str] | None = None
) -> list[Finding]:
    """The numbers of one markdown text that no glue produces and no rule of :data:`ALLOWED` explains."""
    text = prose(markdown)
    for _rule, pattern, _why in ALLOWED:
        text = _blank_all(text, pattern)
    lines = markdown.splitlines()
    found = []
    for m in NUMBER.finditer(text):
        offset = text.count("\n", 0, m.start())
        line = first_line + offset
        shown = source_lines[line - 1] if source_lines else lines[offset]
        found.append(Finding(page, line, m.group(0), shown))
    return found


def markdown_cells(source: str) -> list[tuple[int, str]]:
    """The markdown cells of a jupytext percent notebook: (line of the cell's first line, its text without ``#``)."""
    cells: list[tuple[int, list[str]]] = []
    current: list[str] | None = None
    for number, line in enumerate(source.splitlines(), 1):
        header = _CELL.match(line)
        if header:
            current = [] if re.search(r"\[(?:markdown|md)\]", header.group(1)) else None
            if current is not None:
                cells.append((number + 1, current))
            continue
        if current is not None:
            current.append(line[2:] if line.startswith("# ") else line[1:] if line.startswith("#") else line)
    return [(first, "\n".join(lines)) for first, lines in cells]


_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$")


def page_findings(path: Path, page: str) -> list[Finding]:
    """The typed numbers of one page: a jupytext notebook (``.py``, its markdown cells) or a markdown page, each with
    the heading of the section it is in."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    cells = markdown_cells(source) if path.suffix == ".py" else [(1, source)]
    headings = [
        (first + i, m.group(1))
        for first, cell in cells
        for i, line in enumerate(cell.splitlines())
        if (m := _HEADING.match(line))
    ]
    found = [f for first, cell in cells for f in typed_numbers(cell, page, first, lines)]
    return [replace(f, section=next((h for at, h in reversed(headings) if at <= f.line), "")) for f in found]


def chapter_pages(root: Path = REPO) -> dict[str, Path]:
    """The toc's chapter pages (every page but :data:`GUIDE_PAGES`), name -> source file."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    names = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    pages = {}
    for name in names:
        if name in GUIDE_PAGES:
            continue
        for suffix in (".py", ".md", ".ipynb"):
            if (root / f"{name}{suffix}").is_file():
                pages[name] = root / f"{name}{suffix}"
                break
    return pages


# --- the book -------------------------------------------------------------------------------------------------------


def test_every_chapter_page_is_checked():
    pages = chapter_pages()
    assert {p.name for p in pages.values()} >= {p.name for p in (REPO / "notebooks").glob("[0-9A]*.py")}
    assert all(p.suffix in (".py", ".md") for p in pages.values()), "an .ipynb page needs its own reader here"


@pytest.mark.parametrize("page", sorted(chapter_pages()))
def test_no_typed_number_in_a_chapter(page):
    found = [f for f in page_findings(chapter_pages()[page], page) if (page, f.section) not in PENDING]
    assert not found, (
        f"{len(found)} typed number(s) in {page}: glue each from the cell that computes it "
        "(iclmem.report.glue.glue_text and {glue:text}`key`), mark a value quoted from a paper as {paper}`...`, or "
        "remove it (an earlier build's measurement goes to CHANGELOG.md with its date):\n"
        + "\n".join(str(f) for f in found)
    )


def test_pending_sections_still_hold_typed_numbers():
    """An exemption lasts only while its section still holds typed numbers (PENDING is empty today)."""
    for page, section in sorted(PENDING):
        found = [f for f in page_findings(chapter_pages()[page], page) if f.section == section]
        assert found, f"{page}, section {section!r}: no typed number left (or renamed): remove its entry from PENDING"


# --- the checker itself ---------------------------------------------------------------------------------------------


def _notebook(*cells: str) -> str:
    parts = ["# %% [markdown]\n" + "\n".join("# " + line if line else "#" for line in c.splitlines()) for c in cells]
    return "\n\n".join(parts) + "\n\n# %%\nx = 0.931  # code is not prose\n"


def _numbers(text: str) -> list[str]:
    return [f.number for first, cell in markdown_cells(text) for f in typed_numbers(cell, "t", first)]


def test_a_typed_result_is_flagged():
    text = _notebook("# 4. Calibration\n\nThe AUC is 0.931 at $Q = 512$, and 12 of 40 runs collapse.")
    assert _numbers(text) == ["0.931", "12", "40"]


def test_a_flagged_number_names_its_line():
    text = _notebook("# Title", "Nothing here.\n\nThe AUC is 0.931.")
    (finding,) = [f for first, cell in markdown_cells(text) for f in typed_numbers(cell, "t", first, text.splitlines())]
    assert text.splitlines()[finding.line - 1] == "# The AUC is 0.931."


def test_glued_and_paper_values_are_not_flagged():
    text = _notebook(
        "The AUC is {glue:text}`peak_auc`; the paper's is {paper}`0.668` ({paper}`241 of 530` raw signals)."
    )
    assert _numbers(text) == []


def test_a_sentence_that_names_the_paper_does_not_mark_its_numbers():
    assert _numbers(_notebook("The paper finds 0.668, and ours is 0.931.")) == ["0.668", "0.931"]


def test_a_bare_number_in_backticks_is_still_typed():
    assert _numbers(_notebook("Run `-p max_queries 50` or `atol=1e-4`; the AUC is `0.931`.")) == ["0.931"]


def test_math_states_formulas_but_not_results():
    text = _notebook(
        "At $\\eta = 10^{-4}$ and $k = 0$, $\\mathrm{AUC} > 0.5$ and $\\mu_{gap} < 0.05$; the interval moved from\n"
        "$[-0.053, +0.002]$ to $-0.050$."
    )
    assert _numbers(text) == ["0.053", "0.002", "0.050"]


def test_code_fences_are_commands_but_directives_are_prose():
    text = _notebook("```bash\niclmem run -p epochs 500\n```\n\n```{note}\nThe AUC went from 0.966 to 0.970.\n```")
    assert _numbers(text) == ["0.966", "0.970"]


def test_the_allowed_kinds_of_numbers():
    text = _notebook(
        "# 3. Probing (Sec. 4.2, Tab. 10 / 11, App. A.3, Fig. 2 and 3)\n\n"
        "1. First, see sections 2-4 and notebook 04 (issue 42; Watson et al. 2022).\n"
        "2. Claims C1-C16 and D1-D9 on SmolLM2-135M-Instruct, GPT-4 and wine_pl in float32.\n\n"
        "Settings (1) and (2); bootstrap 95% intervals, the 95% quantile of the null, reproduced in at most 5% of\n"
        "the null draws; the TPR at 1% and 10% false positive rate (TPR@10%) with 80% power; an AUC of 0.5."
    )
    assert _numbers(text) == []


def test_a_level_away_from_its_statistic_is_typed():
    assert _numbers(_notebook("Detectable memorization in 5% of configurations, 95% of them at Q = 50.")) == [
        "5",
        "95",
        "50",
    ]


def test_every_rule_is_documented_and_used():
    assert len({rule for rule, _, _ in ALLOWED}) == len(ALLOWED)
    assert all(why for _, _, why in ALLOWED)


def test_the_paper_role_renders_its_text_marked_as_the_papers():
    from docutils import nodes
    from docutils.core import publish_doctree
    from docutils.parsers.rst import roles
    from myst_parser.parsers.docutils_ import Parser

    from iclmem.book.roles import PAPER_CLASS, ROLE, paper_role

    roles.register_local_role(ROLE, paper_role)
    tree = publish_doctree("The paper: {paper}`241 of 530` raw signals.", parser=Parser())
    (node,) = [n for n in tree.findall(nodes.inline) if PAPER_CLASS in n["classes"]]
    assert node.astext() == "241 of 530"
