"""The scorecard page's layout (iclmem.chapters.ch00_scorecard) and the anchors its links go to
(claims.claim_anchors)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import nbformat  # noqa: E402
import pandas as pd  # noqa: E402

from iclmem.chapters.ch00_scorecard.figures import plot_points, point_frame  # noqa: E402
from iclmem.chapters.ch00_scorecard.tables import compact_html, counts_html, verdict_badge  # noqa: E402
from iclmem.report.glue import GLUE_PREFIX, claim_anchors
from iclmem.report.records import VERDICTS


def _table() -> pd.DataFrame:
    rows = []
    for i, verdict in enumerate([*VERDICTS, "reproduced"]):
        points = [{"label": "Q=50", "paper": 0.12, "build": 0.1, "lo": 0.05, "hi": 0.2}] if i % 2 == 0 else None
        rows.append(
            {
                "claim": f"C{i + 1}",
                "statement": "a <claim> & more",
                "paper": "12%",
                "this build": "10% [5%, 20%]",
                "verdict": verdict,
                "null rate": "3%",
                "null": "membership permuted",
                "reason": "because <b>",
                "chapter": "notebooks/04_calibration",
                "section": '<a href="04_calibration.html#the-claims">4.</a>',
                "link": "04_calibration.html#the-claims",
                "points": points,
            }
        )
    return pd.DataFrame(rows)


def test_every_verdict_has_its_own_badge():
    badges = {v: verdict_badge(v) for v in VERDICTS}
    assert len({b.split("background:")[1][:7] for b in badges.values()}) == len(VERDICTS)  # a colour each
    assert all(f'data-verdict="{v}"' in b for v, b in badges.items())


def test_the_counts_sentence_and_the_compact_table():
    table = _table()
    opening = counts_html(table)
    assert "<b>7</b> rows" in opening and '<b>2</b> <span class="verdict-badge" data-verdict="reproduced"' in opening
    assert 'data-verdict="missing"' not in opening  # no missing claim: not listed
    page = compact_html(table)
    assert page.count("<tr") == 1 + len(table) and page.count('class="verdict-badge"') == len(table)
    assert "a &lt;claim&gt; &amp; more" in page and "because &lt;b&gt;" in page and "<details>" in page
    assert '<a href="04_calibration.html#the-claims">C1</a>' in page


def test_a_design_reading_gets_its_own_column_only_when_a_chapter_read_one():
    table = _table()
    assert "registered design" not in compact_html(table)
    designed = table.assign(**{"decided by": "book grid", "other reading": "", "other verdict": ""})
    assert "registered design" not in compact_html(designed)  # no chapter read the design: no empty column
    designed.loc[0, ["other reading", "other verdict"]] = ["1/30 <tables>", "differs"]
    page = compact_html(designed)
    assert "<th>registered design</th>" in page and "1/30 &lt;tables&gt;" in page
    assert page.count('class="verdict-badge"') == len(table) + 1  # the build's verdicts, and the design's one
    designed.loc[0, "decided by"] = "registered design"  # a design that decides: the grid's reading goes beside
    assert "<th>book grid</th>" in compact_html(designed) and "<b>decided by</b>: registered design" in compact_html(
        designed
    )


def test_the_figure_has_one_row_per_numeric_point():
    table = _table()
    assert list(point_frame(table).claim) == ["C1", "C3", "C5", "C7"]
    fig = plot_points(table)
    assert len(fig.axes[0].get_yticklabels()) == 4


def test_claim_anchors_name_the_section_a_claim_was_glued_in():
    nb = nbformat.v4.new_notebook()
    glued = nbformat.v4.new_code_cell("glue(...)")
    glued.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"text/plain": "{}"},
            metadata={"scrapbook": {"name": GLUE_PREFIX + "C13", "mime_prefix": ""}},
        )
    ]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 5. Realistic regimes\n\n## Tab. 12: peak detectable memorization per regime"),
        nbformat.v4.new_markdown_cell("text with a #hashtag, not a heading"),
        glued,
    ]
    assert claim_anchors(nb) == {"C13": "tab-12-peak-detectable-memorization-per-regime"}


def test_a_failing_positive_control_is_said_at_the_top():
    table = _table()
    table.loc[0, "claim"] = "P1"
    assert "scorecard-instrument" not in counts_html(table.assign(verdict="reproduced"))
    assert "The positive control does not pass" in counts_html(table.assign(verdict="differs"))
