"""A book of your own table runs its controls on that table (issue 57), and ``iclmem book`` finds the project from a
folder of your own.

Nothing here executes a notebook: the commands' calls into the book machinery are captured.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import iclmem
import iclmem.book.build
import iclmem.book.execute
import iclmem.book.own_book
from iclmem.book.execute import UsageError, book_root, notebook_parameters, read_notebook
from iclmem.book.own_book import build_own_book, own_table_controls
from iclmem.bundle.serve import ENV as BUNDLE_ENV
from iclmem.cli import main

REPO = Path(__file__).resolve().parents[2]
NB_A6 = REPO / "notebooks" / "A6_instrument.py"
CONTROLS = {"control_dataset": "my_table", "curve_datasets": ["my_table"], "factor_seen": "my_table"}
NO_DESIGN = {
    "design": ""
}  # the registered design reads the project's suite, not your table: an own-table book skips it


def _declared(stem: str) -> dict:
    return notebook_parameters(read_notebook(REPO / "notebooks" / f"{stem}.py"))


def test_the_controls_of_appendix_a6_name_your_table_unless_you_name_another():
    declared = _declared("A6_instrument")
    assert own_table_controls(declared, {"data_path": "/data/my_table.csv"}) == {**CONTROLS, **NO_DESIGN}
    given = {"data_path": "my_table.csv", "control_dataset": "breast_cancer"}
    rest = {"curve_datasets": ["my_table"], "factor_seen": "my_table", **NO_DESIGN}
    assert own_table_controls(declared, given) == rest
    assert own_table_controls(_declared("04_calibration"), {"data_path": "my_table.csv"}) == NO_DESIGN
    assert own_table_controls(declared, {"datasets": ["spotify"]}) == {}  # the shipped tables: the defaults stay
    assert own_table_controls(_declared("02_controlled_finetuning"), {"data_path": "my_table.csv"}) == NO_DESIGN
    assert own_table_controls(_declared("01_split_validation"), {"data_path": "my_table.csv"}) == {}  # no design read


def test_the_default_book_keeps_its_controls_on_the_shipped_tables():
    declared = _declared("A6_instrument")
    assert declared["control_dataset"].default == "breast_cancer"
    assert declared["curve_datasets"].default == ["spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices"]
    assert declared["factor_seen"].default == "wine_pl"


def test_an_own_table_book_gives_appendix_a6_your_table_for_its_controls(tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setattr(iclmem.book.own_book, "build_book", lambda project, out, over, *a, **kw: seen.update(over))
    build_own_book(REPO, {"data_path": "my_table.csv", "target": "y"}, ["tabular"], tmp_path / "out", cwd=tmp_path)
    assert {k: seen["notebooks/A6_instrument"][k] for k in CONTROLS} == CONTROLS
    for stem in ("01_split_validation", "02_controlled_finetuning", "03_multiple_choice_probing", "04_calibration"):
        assert not set(CONTROLS) & set(seen[f"notebooks/{stem}"]), stem
    for stem in ("02_controlled_finetuning", "03_multiple_choice_probing", "04_calibration", "A6_instrument"):
        assert seen[f"notebooks/{stem}"]["design"] == "", stem


def test_a_book_of_your_table_checks_and_serves_no_bundle(tmp_path, monkeypatch, capsys):
    """A results bundle holds the project's tables, never yours: checking one (minutes) would buy nothing."""
    import types

    import iclmem.bundle.command

    monkeypatch.setattr(iclmem.bundle.command, "ensure_checked", lambda **k: pytest.fail("a bundle was checked"))
    built = types.SimpleNamespace(executed=[], cached=[], html=tmp_path / "html", timing=lambda: "")
    monkeypatch.setattr(iclmem.book.own_book, "build_own_book", lambda *a, **k: built)
    params = tmp_path / "my_table.yaml"
    params.write_text(yaml.safe_dump({"data_path": "my_table.csv", "target": "y"}))
    monkeypatch.setenv(BUNDLE_ENV, "")  # as in a reader's shell: the project's bundles in use
    assert main(["book", "-f", str(params), "--chapters", "tabular", "--out", str(tmp_path / "out")]) == 0
    assert os.environ[BUNDLE_ENV] == "off"  # the notebooks' kernels inherit it
    assert "none served (a book of your own table computes it)" in capsys.readouterr().out


def test_iclmem_run_on_your_table_names_it_and_without_one_passes_no_control(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(iclmem.book.execute, "run_notebook", lambda nb, values, *a, **k: seen.append(values) or nb)
    params = tmp_path / "my_table.yaml"
    params.write_text(yaml.safe_dump({"data_path": str(tmp_path / "my_table.csv"), "target": "y"}))
    assert main(["run", str(NB_A6), "-f", str(params)]) == 0
    assert {k: seen[-1][k] for k in CONTROLS} == CONTROLS
    assert main(["run", str(NB_A6), "-f", str(params), "-p", "factor_seen", ""]) == 0
    assert seen[-1]["factor_seen"] == ""  # yours wins: "" skips the factor table
    assert main(["run", str(NB_A6)]) == 0
    assert not set(CONTROLS) & set(seen[-1])


def test_book_root_is_the_project_around_you_else_the_packages_checkout(tmp_path, monkeypatch):
    copy = tmp_path / "copy"
    (copy / "sub").mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        (copy / name).write_text("title: t\n")
    assert book_root(copy / "sub") == copy.resolve()
    assert Path(iclmem.__file__).resolve().parents[1] == REPO  # the tests run on a checkout
    assert book_root(tmp_path) == REPO
    monkeypatch.setattr(iclmem.book.execute, "package_checkout", lambda: None)
    with pytest.raises(UsageError, match=r"no book project found: no folder at or above .* pass --root"):
        book_root(tmp_path)


def test_a_book_of_your_table_from_your_own_folder_finds_the_project_and_builds_beside_you(tmp_path, monkeypatch):
    seen = {}

    def capture(root, values, chapters, out, results=None, **kw):
        seen.update(root=root, out=out)
        return iclmem.book.build.BookResult(tmp_path / "html")

    monkeypatch.setattr(iclmem.book.own_book, "build_own_book", capture)
    monkeypatch.setenv(BUNDLE_ENV, "off")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_table.yaml").write_text(yaml.safe_dump({"data_path": "my_table.csv", "target": "y"}))
    assert main(["book", "-f", "my_table.yaml", "--chapters", "tabular", "--no-html"]) == 0
    assert seen == {"root": REPO, "out": tmp_path.resolve() / "_build" / "my_table"}


@pytest.mark.slow
def test_iclmem_book_run_outside_the_project_reads_the_projects_toc(tmp_path):
    """A real process, in a folder of your own: the chapters are looked up in the project's _toc.yml (the unknown one
    is named against them), not refused for want of a _toc.yml here."""
    (tmp_path / "p.yaml").write_text("data_path: t.csv\ntarget: y\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), BUNDLE_ENV: "off"}
    args = [sys.executable, "-m", "iclmem.cli", "book", "-f", "p.yaml", "--chapters", "tabulr", "--no-html"]
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "unknown chapter 'tabulr'" in done.stderr and "01_split_validation" in done.stderr
    assert "no _toc.yml" not in done.stderr
