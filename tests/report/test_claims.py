"""The claims scorecard: claim records, reading them back from executed notebooks, the table, and
the book's ordering of reader pages (executed last, keyed on the other executed notebooks)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import nbformat
import pytest
import yaml

import iclmem.book.build as book
from iclmem.book.build import (
    READER_PARAMETER,
    BuildOptions,
    build_book,
    cache_key,
    execution_order,
    is_reader,
    reader_executed_dir,
    toc_pages,
)
from iclmem.book.execute import notebook_parameters, read_notebook, run_notebook
from iclmem.report.glue import (
    MISSING,
    null_rate_text,
    page_link,
    read_glued_claims,
    scorecard_html,
    scorecard_table,
    verdict_counts,
)
from iclmem.report.records import VERDICTS, ClaimError, claim_record
from iclmem.report.registry import CLAIMS, SCORECARD_PAGE

REPO = Path(__file__).resolve().parents[2]

HEADER = """\
# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---
"""

LONG_REASON = (
    "the chapter's reason, long enough to be wrapped by IPython's pretty printer: " * 3 + "'q' \"dq\" <b> & a < b"
)

#: A chapter that records two claims (C1 with an interval, C3 without), one claim the registry
#: lacks, an ordinary glue and a displayed dict that must not be taken for claims.
CHAPTER = (
    HEADER
    + f"""
# %% [markdown]
# # 4. A calibration chapter

# %% tags=["parameters"]
auc = 0.61

# %%
from myst_nb import glue

from iclmem.report.glue import glue_claim

glue_claim("C1", "8/10 tasks", f"AUC {{auc:.2f}}", "reproduced", {LONG_REASON!r}, interval="95% CI [0.55, 0.67]",
           null="membership permuted", observed="0.61", null_range="[0.40, 0.60]", null_rate=0.03)
glue_claim("C3", "2/10 tasks", "0/1 tasks", "differs", "no task passes TPR@1% > 0.1")
glue_claim("X1", "-", "-", "not testable here", "an id the registry lacks")
glue("claim_count", 3, display=False)
from iclmem.report.design_glue import DesignProgress, glue_design_claims, interim
from iclmem.report.records import claim_record

progress = DesignProgress("decide", 5, 10, 0.5, 3)
glue_design_claims(interim([claim_record("C1", "8/10 tasks", "1/3 tables", "differs", "few")], progress), progress)
{{"id": "C2", "paper": "p", "ours": "o", "interval": None, "verdict": "reproduced", "reason": "displayed, not glued"}}
"""
)

READER = (
    HEADER
    + """
# %% [markdown]
# # Reader

# %% tags=["parameters"]
executed_dir: str = "_build/executed"

# %%
import json
from pathlib import Path

executed = json.loads((Path(executed_dir) / "notebooks" / "tiny.ipynb").read_text())
print("READ", executed["metadata"]["papermill"]["parameters"])
"""
)

TOC = """\
format: jb-book
root: intro
parts:
  - caption: Scorecard
    chapters:
      - file: notebooks/reader
  - caption: Notebooks
    chapters:
      - file: notebooks/tiny
"""


def _outputs(ipynb: Path) -> str:
    nb = nbformat.read(ipynb, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def executed_chapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:data:`CHAPTER` executed with papermill (once for this module)."""
    folder = tmp_path_factory.mktemp("chapter")
    (folder / "chapter.py").write_text(CHAPTER)
    return run_notebook(folder / "chapter.py", {}, folder / "chapter.ipynb", cwd=folder, progress=False)


@pytest.fixture
def executed_dir(tmp_path: Path, executed_chapter: Path) -> Path:
    """An executed folder in which only notebook 04 was executed (it is :data:`CHAPTER`)."""
    folder = tmp_path / "executed"
    (folder / "notebooks").mkdir(parents=True)
    shutil.copy(executed_chapter, folder / "notebooks" / "04_calibration.ipynb")
    return folder


# --- claim records ------------------------------------------------------------------------------


def test_a_record_with_an_unknown_verdict_or_no_reason_is_an_error() -> None:
    with pytest.raises(
        ClaimError,
        match=r"claim C1: verdict 'confirmed' is not one of reproduced, differs, inconclusive, holds by "
        r"construction, not comparable here, not testable here",
    ):
        claim_record("C1", "8/10", "1/1", "confirmed", "because")
    with pytest.raises(ClaimError, match="reason must be non-empty"):
        claim_record("C1", "8/10", "1/1", "differs", "  ")
    assert claim_record("C1", "8/10", "1/1", "differs", "because", interval="[0, 1]") == {
        "id": "C1",
        "paper": "8/10",
        "ours": "1/1",
        "interval": "[0, 1]",
        "verdict": "differs",
        "reason": "because",
        "null": None,
        "observed": None,
        "null_range": None,
        "null_rate": None,
        "null_draws": None,
        "points": None,
    }


def test_the_null_rate_shows_its_monte_carlo_error() -> None:
    record = claim_record("C5", "p", "o", "inconclusive", "r", null="x", null_rate=0.08, null_draws=1000)
    assert null_rate_text(record) == "8.0% ± 0.9% (1000 draws)"  # sqrt(0.08 * 0.92 / 1000) = 0.0086
    assert null_rate_text({**record, "null_rate": 0.0}) == "0% (< 0.3% at 95%, 1000 draws)"
    assert null_rate_text({**record, "null_draws": None}) == "8%"
    with pytest.raises(ClaimError, match="null_draws 0 is not a positive count"):
        claim_record("C5", "p", "o", "inconclusive", "r", null="x", null_rate=0.08, null_draws=0)


def test_a_reproduced_record_must_state_a_null_that_chance_rarely_satisfies() -> None:
    with pytest.raises(ClaimError, match="needs its null"):
        claim_record("C1", "8/10", "1/1", "reproduced", "because")
    with pytest.raises(ClaimError, match="in 38% of null draws"):
        claim_record("C6", "12%", "52%", "reproduced", "inside", null="membership permuted", null_rate=0.38)
    with pytest.raises(ClaimError, match="not a share"):
        claim_record("C6", "12%", "52%", "inconclusive", "inside", null="membership permuted", null_rate=1.5)
    ok = claim_record(
        "C6",
        "12%",
        "13%",
        "reproduced",
        "inside",
        null="membership permuted",
        null_rate=0.05,
        observed="0.13",
        null_range="[0.0, 0.04]",
    )
    assert ok["null_rate"] == 0.05 and ok["observed"] == "0.13"
    assert (
        claim_record("C4", "55%", "50%", "reproduced", "inside", null="no null applies: no labels")["null_rate"] is None
    )
    # the same share under a lenient null is inconclusive, and that is a valid record
    assert (
        claim_record("C6", "12%", "13%", "inconclusive", "inside", null="membership permuted", null_rate=0.38)[
            "verdict"
        ]
        == "inconclusive"
    )


def test_the_registry_holds_the_25_claims_of_both_papers() -> None:
    ids = [claim.id for claim in CLAIMS]  # C12 is judged as its three sub-claims
    assert ids == [f"C{i}" for i in range(1, 12)] + ["C12a", "C12b", "C12c"] + [f"C{i}" for i in range(13, 17)] + [
        "P1",
        "P2",
        "P3",
    ] + [f"D{i}" for i in range(1, 10)] + ["M1", "M2"]  # M1, M2: beyond the papers (chapter 7, DP-SGD)
    chapters = {claim.id: claim.chapter for claim in CLAIMS}
    assert chapters["C14"] == "notebooks/01_split_validation"
    assert chapters["C10"] == "notebooks/02_controlled_finetuning"
    assert {chapters[f"C12{x}"] for x in "abc"} == {"notebooks/03_multiple_choice_probing"}
    assert chapters["C13"] == "notebooks/05_realistic_regimes"
    assert {chapters[f"C{i}"] for i in (*range(1, 10), 11, 15, 16)} == {"notebooks/04_calibration"}
    assert {chapters["P1"], chapters["P2"], chapters["P3"]} == {"notebooks/A6_instrument"}  # the instrument's page
    assert {chapters[f"D{i}"] for i in range(1, 10)} == {"notebooks/06_llm_kshot_replication"}
    toc = {page.name for page in toc_pages(REPO)}
    assert set(chapters.values()) | {SCORECARD_PAGE} <= toc
    assert all(claim.statement.strip() and "\n" not in claim.statement for claim in CLAIMS)


# --- reading glued claims -----------------------------------------------------------------------


def test_glued_claims_are_read_back_from_an_executed_notebook(executed_chapter: Path) -> None:
    claims = read_glued_claims(executed_chapter)
    assert list(claims) == ["C1", "C3", "X1"]  # neither the plain glue nor the displayed dict
    assert claims["C1"] == claim_record(
        "C1",
        "8/10 tasks",
        "AUC 0.61",
        "reproduced",
        LONG_REASON,
        "95% CI [0.55, 0.67]",
        null="membership permuted",
        observed="0.61",
        null_range="[0.40, 0.60]",
        null_rate=0.03,
    )
    assert claims["C3"]["interval"] is None and claims["C3"]["verdict"] == "differs"


def _notebook_with_output(path: Path, name: str, text: str) -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("glue_claim(...)")
    prefix = "application/papermill.record/"
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={prefix + "text/plain": text},
            metadata={"scrapbook": {"name": name, "mime_prefix": prefix}},
        )
    ]
    nb.cells = [cell]
    nbformat.write(nb, path)
    return path


def test_a_glued_claim_that_is_not_a_literal_record_is_an_error(tmp_path: Path) -> None:
    fields = (
        "'paper': 'p', 'ours': 'o', 'interval': None, 'reason': 'r', 'null': None, 'observed': None, "
        "'null_range': None, 'null_rate': None, 'null_draws': None, 'points': None"
    )
    bad = _notebook_with_output(
        tmp_path / "code.ipynb", "claim-C1", "{'id': 'C1', 'verdict': __import__('os').getcwd()}"
    )
    with pytest.raises(ClaimError, match=r"code\.ipynb: glued 'claim-C1' is not a literal dict"):
        read_glued_claims(bad)
    other = _notebook_with_output(
        tmp_path / "other.ipynb", "claim-C2", f"{{'id': 'C1', 'verdict': 'differs', {fields}}}"
    )
    with pytest.raises(ClaimError, match="glued 'claim-C2' holds the record of claim 'C1'"):
        read_glued_claims(other)
    verdict = _notebook_with_output(
        tmp_path / "verdict.ipynb", "claim-C1", f"{{'id': 'C1', 'verdict': 'maybe', {fields}}}"
    )
    with pytest.raises(ClaimError, match="verdict 'maybe'"):
        read_glued_claims(verdict)
    fine = _notebook_with_output(tmp_path / "fine.ipynb", "claim-C1", f"{{'id': 'C1', 'verdict': 'differs', {fields}}}")
    assert read_glued_claims(fine)["C1"]["verdict"] == "differs"


# --- the scorecard table ------------------------------------------------------------------------


def test_the_scorecard_has_one_row_per_claim_and_shows_the_gaps(executed_dir: Path) -> None:
    table = scorecard_table(executed_dir)
    assert list(table["claim"]) == [claim.id for claim in CLAIMS] + ["X1"]
    rows = table.set_index("claim")
    c1 = rows.loc["C1"]
    assert (c1["paper"], c1["this build"], c1["verdict"]) == (
        "8/10 tasks",
        "AUC 0.61 95% CI [0.55, 0.67]",
        "reproduced",
    )
    assert c1["section"] == '<a href="04_calibration.html#a-calibration-chapter">4. A calibration chapter</a>'
    assert rows.loc["C3", "this build"] == "0/1 tasks" and rows.loc["C3", "verdict"] == "differs"
    # notebook 04 ran but did not record C2: missing, naming the notebook
    assert rows.loc["C2", "verdict"] == MISSING and rows.loc["C2", "paper"] == ""
    assert rows.loc["C2", "reason"] == "not recorded: notebooks/04_calibration does not glue claim-C2"
    # notebook 01 did not run at all
    assert (
        rows.loc["C14", "verdict"] == MISSING
        and "notebooks/01_split_validation.ipynb is not in" in rows.loc["C14", "reason"]
    )
    assert rows.loc["C14", "section"].startswith('<a href="01_split_validation.html">')
    assert rows.loc["X1", "statement"].startswith("(not in the registry")
    counts = verdict_counts(table)
    assert list(counts.index) == [*VERDICTS, MISSING]
    assert counts.to_dict() == {
        "reproduced": 1,
        "differs": 1,
        "inconclusive": 0,
        "holds by construction": 0,
        "not comparable here": 0,
        "not testable here": 1,
        "missing": len(CLAIMS) - 2,
    }
    assert rows.loc["C1", "null rate"] == "3%" and "95% of the null: [0.40, 0.60]" in rows.loc["C1", "null"]
    # the registered design's reading, glued apart (design-claim-C1): its own column, the build's verdict kept
    assert (rows.loc["C1", "other verdict"], rows.loc["C1", "other reading"]) == ("differs", "1/3 tables")
    assert rows.loc["C3", "other verdict"] == "" and rows.loc["C3", "other reading"] == ""
    assert set(table["decided by"]) == {"book grid"}  # 5 of 10 tasks: interim, the grid decides
    assert rows.loc["C3", "null rate"] == "-"


def test_a_design_reading_is_read_back_apart_with_its_progress(
    executed_chapter: Path, executed_dir: Path, tmp_path: Path
) -> None:
    from iclmem.report.design_glue import design_state_text, read_design_claims

    state = design_state_text(executed_dir)  # as the scorecard says it
    assert state == "design decide: 5 of 10 tasks on 3 tables (0.50 CPU-hours), interim: its sweep is still running"
    assert design_state_text(executed_dir, "notebooks/05_realistic_regimes").startswith("not read")
    from iclmem.report.design_glue import power_file, registered_power, with_registered_power

    powered = with_registered_power(scorecard_table(executed_dir), executed_dir).set_index("claim")["registered power"]
    registered = registered_power(power_file("decide")).loc["C1"]  # the power table committed with grids/decide.yaml
    assert powered["C1"] == f"{registered['registered power']} ({registered['registered status']})"
    assert powered["D1"] == ""  # an LLM claim: the tabular design registers none
    assert (with_registered_power(scorecard_table(tmp_path), tmp_path)["registered power"] == "").all()  # no design

    [record] = read_design_claims(executed_chapter).values()
    assert record["id"] == "C1" and record["verdict"] == "differs"
    assert record["reason"].endswith(
        "read on the design decide: 5 of 10 tasks on 3 tables (0.50 CPU-hours), interim: its sweep is still running"
    )
    assert set(read_glued_claims(executed_chapter)) == {"C1", "C3", "X1"}  # the build's records are not mixed in
    assert read_glued_claims(executed_chapter)["C1"]["verdict"] == "reproduced"


def test_a_complete_design_accepted_here_decides_its_chapters_rows(tmp_path: Path) -> None:
    from iclmem.report.design_glue import DesignProgress
    from iclmem.report.glue import design_decides

    assert not design_decides(asdict(DesignProgress("d", 9, 10, 1.0, 3, "accepted")))  # incomplete
    assert not design_decides(asdict(DesignProgress("d", 10, 10, 1.0, 3, "not checked")))  # complete, not checked
    assert DesignProgress("d", 10, 10, 1.0, 3, "accepted").decides
    fields = (
        "'interval': None, 'null': None, 'observed': None, 'null_range': None, 'null_rate': None, 'null_draws': None"
    )
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("glue(...)")
    prefix = "application/papermill.record/"
    glued = {
        "claim-C1": f"{{'id': 'C1', 'paper': 'p', 'ours': 'grid', 'verdict': 'inconclusive', 'reason': 'r', {fields}, "
        "'points': None}",
        "design-claim-C1": f"{{'id': 'C1', 'paper': 'p', 'ours': 'design', 'verdict': 'differs', 'reason': 'r', "
        f"{fields}, 'points': None}}",
        "design-progress": repr(asdict(DesignProgress("decide", 10, 10, 1.0, 3, "accepted"))),
    }
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={prefix + "text/plain": text},
            metadata={"scrapbook": {"name": n, "mime_prefix": prefix}},
        )
        for n, text in glued.items()
    ]
    nb.cells = [cell]
    (tmp_path / "notebooks").mkdir()
    nbformat.write(nb, tmp_path / "notebooks" / "04_calibration.ipynb")
    rows = scorecard_table(tmp_path).set_index("claim")
    c1 = rows.loc["C1"]
    assert (c1["this build"], c1["verdict"], c1["decided by"]) == ("design", "differs", "registered design")
    assert (c1["other reading"], c1["other verdict"]) == ("grid", "inconclusive")  # the grid's, beside it
    assert rows.loc["C3", "decided by"] == "book grid"  # no design record: the grid's row (here missing)


def test_the_scorecard_html_escapes_texts_and_keeps_links(executed_dir: Path) -> None:
    page = scorecard_html(scorecard_table(executed_dir))
    assert '<a href="04_calibration.html#a-calibration-chapter">4. A calibration chapter</a>' in page
    assert "&lt;b&gt; &amp; a &lt; b" in page and "<b>" not in page
    assert "<th>chapter</th>" not in page and "<th>section</th>" in page
    assert page.count("<tr") == 1 + len(CLAIMS) + 1  # the header, one row per claim and X1


def test_links_are_relative_to_the_page_that_shows_them() -> None:
    assert page_link("notebooks/04_calibration") == "04_calibration.html"
    assert page_link("notebooks/04_calibration", from_page="book/intro") == "../notebooks/04_calibration.html"
    assert page_link("notebooks/04_calibration", from_page="index") == "notebooks/04_calibration.html"


def test_the_scorecard_notebook_renders_the_table_and_glues_the_counts(executed_dir: Path, tmp_path: Path) -> None:
    source = REPO / "notebooks" / "00_scorecard.py"
    assert notebook_parameters(read_notebook(source))[READER_PARAMETER].default == "_build/executed"
    out = run_notebook(
        source, {"executed_dir": str(executed_dir)}, tmp_path / "scorecard.ipynb", cwd=REPO, progress=False
    )
    nb = nbformat.read(out, as_version=4)
    htmls = [
        o["data"]["text/html"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if "text/html" in o.get("data", {})
    ]
    tables = [h for h in htmls if 'class="scorecard"' in h]
    # the papers' table (with X1, a claim outside the registry) and the one beyond the papers (M1, M2), each with its
    # header
    assert len(tables) == 2 and tables[0].count("<tr") == 1 + len(CLAIMS) - 2 + 1 and tables[1].count("<tr") == 1 + 2
    assert 'href="04_calibration.html#a-calibration-chapter"' in tables[0]  # the section that glued the claim
    assert 'data-claim="M1"' in tables[1] and 'data-claim="M1"' not in tables[0]
    # one badge per row, and one for C1's reading on the registered design (a column of the papers' table only)
    assert sum(t.count('class="verdict-badge"') for t in tables) == len(CLAIMS) + 1 + 1
    assert "<th>registered design</th>" in tables[0] and "registered design" not in tables[1]
    opening = next(h for h in htmls if "scorecard-counts" in h)
    assert "<b>1</b> " in opening and opening.count('class="verdict-badge"') == 7  # six verdicts and missing
    assert all(
        "remove-input" in c.metadata.get("tags", [])
        or "remove-cell" in c.metadata.get("tags", [])  # the parameters' check (iclmem.book.parameter_check)
        or "parameters" in c.metadata.get("tags", [])
        or "injected-parameters" in c.metadata.get("tags", [])
        for c in nb.cells
        if c.cell_type == "code"
    )  # no code shown
    glued = {
        o["metadata"]["scrapbook"]["name"]: o["data"]["application/papermill.record/text/plain"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if "scrapbook" in o.get("metadata", {})
    }
    assert glued == {
        "n_reproduced": "1",
        "n_differs": "1",
        "n_inconclusive": "0",
        "n_holds_by_construction": "0",
        "n_not_comparable_here": "0",
        "n_not_testable_here": "1",
        "n_missing": str(len(CLAIMS) - 2),
        "n_claims": str(len(CLAIMS) + 1),
        "design_state": "design decide: 5 of 10 tasks on 3 tables (0.50 CPU-hours), interim: its sweep is still "
        "running",
    }


def test_the_scorecard_comes_first_in_the_toc_and_in_the_introduction() -> None:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    assert toc["parts"][0] == {"caption": "Scorecard", "chapters": [{"file": SCORECARD_PAGE}]}
    intro = (REPO / "book" / "intro.md").read_text()
    organized = intro.split("## How this book is organized", 1)[1]
    links = re.findall(r"\{doc\}`([^`]+)`", organized)
    assert links[0] == "../notebooks/00_scorecard"
    assert {"../notebooks/06_llm_kshot_replication", "../notebooks/A1_reference_ltm"} <= set(links)


# --- the book: reader pages run last, keyed on the others ---------------------------------------


@pytest.fixture
def executions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every notebook papermill executes during a build, in order (package fingerprint pinned)."""
    monkeypatch.setattr(book, "package_fingerprint", lambda: "pinned package")
    calls: list[str] = []
    real = book.execute

    def counting(nb, output, parameters, **kwargs):  # noqa: ANN001, ANN202
        calls.append(output.name)
        return real(nb, output, parameters, **kwargs)

    monkeypatch.setattr(book, "execute", counting)
    return calls


@pytest.fixture
def project(tmp_path: Path, make_notebook: Callable[..., Path]) -> Path:
    """A book whose toc lists a reader page before the tiny notebook it reads."""
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text(TOC)
    (root / "intro.md").write_text("# Intro\n")
    make_notebook(root / "notebooks" / "tiny.py")
    (root / "notebooks" / "reader.py").write_text(READER)
    return root


def test_reader_pages_are_recognized_and_ordered_last(project: Path) -> None:
    assert is_reader(read_notebook(project / "notebooks" / "reader.py"))
    assert not is_reader(read_notebook(project / "notebooks" / "tiny.py"))
    assert execution_order({"r": True, "a": False, "b": False}) == ["a", "b", "r"]
    assert reader_executed_dir(project / "_build" / "executed", project) == "_build/executed"
    assert reader_executed_dir(project.parent / "out" / "executed", project) == str(
        (project.parent / "out" / "executed").resolve()
    )


def test_cache_key_covers_the_inputs_of_a_reader() -> None:
    plain = cache_key(b"x", {"n": 1}, "pkg")
    assert plain == cache_key(b"x", {"n": 1}, "pkg", None)
    keyed = {
        cache_key(b"x", {"n": 1}, "pkg", {"a": "1"}),
        cache_key(b"x", {"n": 1}, "pkg", {"a": "2"}),
        cache_key(b"x", {"n": 1}, "pkg", {"a": "1", "b": "1"}),
    }
    assert len(keyed | {plain}) == 4


@pytest.mark.slow
def test_the_reader_runs_after_the_others_and_again_when_they_change(
    project: Path, tmp_path: Path, executions: list[str]
) -> None:
    build = tmp_path / "out"

    def run(overrides: dict | None = None) -> list[str]:
        return build_book(project, build, overrides, options=BuildOptions(render_html=False, progress=False)).executed

    assert run({"tiny": {"n": 5}}) == ["notebooks/tiny", "notebooks/reader"]  # listed first, executed last
    assert executions == ["tiny.ipynb", "reader.ipynb"]
    reader = build / "executed" / "notebooks" / "reader.ipynb"
    assert "READ {'n': 5}" in _outputs(reader)  # it read this build's executed tiny notebook
    executed_param = json.loads(reader.read_text())["metadata"]["papermill"]["parameters"]
    assert executed_param == {"executed_dir": str((build / "executed").resolve())}
    assert run({"tiny": {"n": 5}}) == []

    assert run({"tiny": {"n": 6}}) == ["notebooks/tiny", "notebooks/reader"]  # the other notebook changed
    assert "READ {'n': 6}" in _outputs(reader)
    tiny = build / "executed" / "notebooks" / "tiny.ipynb"
    tiny.write_text(tiny.read_text().replace("RESULT", "RESULT "))  # an edited executed copy fails its record
    rerun = run({"tiny": {"n": 6}})
    assert rerun[0] == "notebooks/tiny"  # set aside as damaged and executed again, never served
    assert any((build / "quarantine").rglob("tiny.ipynb*"))
    assert run({"tiny": {"n": 6}}) == []
    meta = json.loads((build / "executed" / "notebooks" / "reader.ipynb.cache.json").read_text())
    assert set(meta["inputs"]) == {"notebooks/tiny"}
    assert "inputs" not in json.loads((build / "executed" / "notebooks" / "tiny.ipynb.cache.json").read_text())


def test_the_reader_keeps_its_default_inside_the_project_and_an_override_wins(
    project: Path, tmp_path: Path, executions: list[str]
) -> None:
    assert build_book(project, None, options=BuildOptions(render_html=False, progress=False)).executed == [
        "notebooks/tiny",
        "notebooks/reader",
    ]
    reader = project / "_build" / "executed" / "notebooks" / "reader.ipynb"
    assert (
        json.loads(reader.read_text())["metadata"]["papermill"]["parameters"] == {}
    )  # the default is this build's folder
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(project / "_build" / "executed", elsewhere)
    build_book(
        project,
        tmp_path / "out",
        {"reader": {"executed_dir": str(elsewhere)}},
        options=BuildOptions(render_html=False, progress=False),
    )
    parameters = json.loads((tmp_path / "out" / "executed" / "notebooks" / "reader.ipynb").read_text())["metadata"][
        "papermill"
    ]
    assert parameters["parameters"] == {"executed_dir": str(elsewhere)}
