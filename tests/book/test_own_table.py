"""Your own table end to end (issue 14): one parameters file drives notebooks 01 -> 04, runs are reused, a book renders.

The table is written by the test (not a shipped one): a binary target stored as text, a numeric
column with missing values, a text categorical and duplicate rows. Parameters are tiny.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import yaml

from iclmem.book.shareable import file_fingerprint
from iclmem.book.table_parameters import TableFitError, fitting_query_sizes, notebook_tables
from iclmem.cli import main
from iclmem.probe.settings import ProbeSettings

pytestmark = pytest.mark.slow  # the whole file is slow (a module or session fixture builds a book)

REPO = Path(__file__).resolve().parents[2]
CHAIN = [
    "01_split_validation",
    "02_controlled_finetuning",
    "03_multiple_choice_probing",
    "04_calibration",
    "A6_instrument",
]
TINY = {
    "target": "outcome",
    "task": "classification",
    "learning_rates": [0.01],
    "query_sizes": [24],
    "label_conditions": ["none", "members"],
    "epochs": 2,
    "context_size": 32,
    "probe_epochs": [0, 2],
    "max_queries": 8,
    "n_boot": 10,
    "control_query_size": 20,
    "control_context_size": 32,
    "control_epochs": [2],
    "control_learning_rates": [0.001],
    "curve_learning_rates": [0.01],
    "curve_epochs": [2],
    "seed": 3,
}


def _table(path: Path, n: int = 140) -> Path:
    rng = np.random.default_rng(7)
    x = rng.normal(size=n)
    frame = pd.DataFrame(
        {
            "size": np.where(rng.random(n) < 0.1, np.nan, x.round(3)),
            "colour": rng.choice(["red", "green", "blue"], n),
            "score": rng.integers(0, 50, n),
            "outcome": np.where(x + rng.normal(scale=0.5, size=n) > 0, "yes", "no"),
        }
    )
    frame = pd.concat([frame, frame.iloc[:6]], ignore_index=True)  # duplicate rows: dropped before any split
    frame.to_csv(path, index=False)
    return path


def documented_commands(page: Path = REPO / "book" / "adapt.md") -> list[str]:
    """The `iclmem ...` lines of the bash blocks of a page, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip().startswith("iclmem ")]


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """book/adapt.md's commands, as written, in a checkout of the project, on a table and a tiny parameters file of
    the test."""
    tmp = tmp_path_factory.mktemp("own")
    for name in ("notebooks", "book", "_config.yml", "_toc.yml", "pyproject.toml"):
        (tmp / name).symlink_to(REPO / name)
    _table(tmp / "my_table.csv")
    (tmp / "my_table.yaml").write_text(yaml.safe_dump({"data_path": "my_table.csv", **TINY}))
    commands = documented_commands()
    assert [c.split()[1] for c in commands] == ["params", "run", "run", "run", "run", "run", "book"]
    runs_after = {}
    mp = pytest.MonkeyPatch()
    mp.chdir(tmp)
    mp.delenv("ICLMEM_RESULTS", raising=False)
    try:
        for command in commands:
            args = shlex.split(command)[1:]
            assert main(args) == 0, command
            key = Path(args[1]).stem if args[0] == "run" else args[0]
            runs_after[key] = sorted(p.name for p in (tmp / "results" / "finetune").glob("*"))
    finally:
        mp.undo()
    return tmp, tmp / "results", runs_after


def _glued(path: Path) -> dict:
    nb = nbformat.read(path, as_version=4)
    return {
        o.metadata["scrapbook"]["name"]: o.data
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("metadata", {}).get("scrapbook")
    }


def test_one_file_drives_01_to_04_and_runs_are_fine_tuned_once(chain):
    tmp, store, runs_after = chain
    made = runs_after["02_controlled_finetuning"]
    assert len(made) == 2  # one learning rate x one Q x two label conditions
    assert runs_after["03_multiple_choice_probing"] == made  # 03 probed 02's runs: no second fine-tuning
    assert runs_after["04_calibration"] == made  # 04 reads the grid: its controls are A6's
    control = set(runs_after["A6_instrument"]) - set(made)
    # A6 adds its positive control on the table itself (All) and the table's curve, which is the control's setting
    # under N and All at control_query_size (20, not the grid's 24): its All run is the control's; the grid's runs
    # are reused, and no shipped table is fine-tuned (issue 57: breast_cancer's control used to run here too)
    assert len(control) == 2
    manifests = [p for p in (store / "manifests").glob("*.json") if not p.name.endswith(".complete.json")]
    assert sorted(p.name for p in manifests) == [
        "my_table-Q20-s3-all.json",
        "my_table-Q20-s3-none.json",
        "my_table-Q24-s3-members.json",
        "my_table-Q24-s3-none.json",
    ]  # 01's manifests (Q24), reused by 02, and the controls' (Q20), each beside its completion record
    assert runs_after["book"] == runs_after["A6_instrument"]  # the book trained nothing again
    nb04 = nbformat.read(tmp / "_build" / "runs" / "04_calibration.ipynb", as_version=4)
    outputs = [
        o for c in nb04.cells if c.cell_type == "code" and "exhaustive_table(" in c.source for o in c.get("outputs", [])
    ]
    html = outputs[0].data["text/html"]
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert body.count("<tr>") == 1 * 1 * len(
        TINY["probe_epochs"][1:]
    )  # one row per configuration (dataset, Q, lr, epoch > 0)
    assert "my_table" in body


def test_the_controls_of_a_book_of_your_table_ran_on_it(chain):
    """Appendix A6's controls name your table, in the commands' run and in the book's; the page says so."""
    tmp = chain[0]
    for path in (
        tmp / "_build" / "runs" / "A6_instrument.ipynb",
        tmp / "_build" / "my_table" / "executed" / "notebooks" / "A6_instrument.ipynb",
    ):
        nb = nbformat.read(path, as_version=4)
        recorded = nb.metadata["papermill"]["parameters"]
        assert (recorded["control_dataset"], recorded["curve_datasets"], recorded["factor_seen"]) == (
            "my_table",
            ["my_table"],
            "my_table",
        )
        glued = {k: v.get("application/papermill.record/text/plain", "") for k, v in _glued(path).items()}
        assert "20 members of my_table" in glued["control_setting"]
        assert "'my_table' is a classification table" in glued["strongest_factor"]  # one line says why: not run
        shown = [c for c in nb.cells if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", [])]
        text = json.dumps([o.get("data", {}) for c in shown for o in c.get("outputs", [])])
        assert "breast_cancer" not in text and "wine_pl" not in text  # no shipped table on the page


def test_the_pages_say_which_table_they_ran_on(chain):
    tmp = chain[0]
    for stem in CHAIN[1:]:
        nb = nbformat.read(tmp / "_build" / "runs" / f"{stem}.ipynb", as_version=4)
        text = json.dumps([o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])])
        assert re.search(r"Run on your table `my_table\.csv \(sha256 [0-9a-f]{12}\)`", text), stem


def test_no_page_holds_the_absolute_path_of_your_table_and_the_store_keeps_it(chain):
    tmp, store, _ = chain
    table = (tmp / "my_table.csv").resolve()
    pages = [*(tmp / "_build").rglob("*.ipynb"), *(tmp / "_build").rglob("*.html")]
    assert len(pages) > 10
    for page in pages:
        text = page.read_text(errors="replace")
        assert str(table.parent) not in text and str(tmp) not in text, page
    fingerprint = file_fingerprint(table)
    runs = tmp / "_build" / "runs" / "02_controlled_finetuning.ipynb"
    recorded = nbformat.read(runs, as_version=4).metadata["papermill"]["parameters"]["data_path"]
    assert recorded == f"my_table.csv (sha256 {fingerprint})"  # the parameters table shows name and fingerprint
    entry = json.loads((store / "inputs" / f"{fingerprint}.json").read_text())
    assert entry == {"file": "my_table.csv", "sha256_prefix": fingerprint, "path": str(table)}


def test_a_book_of_your_own_table_renders_beside_the_main_book(chain):
    tmp = chain[0]
    out = tmp / "_build" / "my_table"
    assert "intro.html" in (out / "html" / "index.html").read_text()
    index = (out / "html" / "intro.html").read_text()
    assert "my_table" in index and "data_path" in index  # the intro page names the table and the parameters
    for stem in CHAIN:
        assert (out / "html" / "notebooks" / f"{stem}.html").is_file()
        assert (out / "executed" / "notebooks" / f"{stem}.ipynb").is_file()
    assert (
        not (tmp / "_build" / "executed").exists() and not (tmp / "_build" / "html").exists()
    )  # the main book's folders: untouched


def test_a_table_too_small_for_q_fails_before_any_compute_and_says_what_fits(tmp_path):
    tables = notebook_tables(
        data_path=str(_table(tmp_path / "small.csv", n=60)), target="outcome", task="classification"
    )
    with pytest.raises(
        TableFitError, match=r"small has \d+ rows .* too few for query size\(s\) \[512\].*sizes up to \d+ fit"
    ):
        fitting_query_sizes(tables, [24, 512])
    assert fitting_query_sizes(tables, [24, 512], drop_unfit=True) == [24]


def test_many_classes_and_stray_names_are_clear_errors(tmp_path):
    path = tmp_path / "many.csv"
    pd.DataFrame({"x": np.arange(200), "y": np.arange(200) % 12}).to_csv(path, index=False)
    with pytest.raises(TableFitError, match="12 classes.*task: regression"):
        fitting_query_sizes(notebook_tables(data_path=str(path), target="y", task="classification"), [20])
    params = tmp_path / "typo.yaml"
    params.write_text(yaml.safe_dump({"data_path": str(path), "target": "y", "learnin_rates": [0.1]}))
    assert (
        main(
            [
                "run",
                str(REPO / "notebooks" / "02_controlled_finetuning.py"),
                "-f",
                str(params),
                "-o",
                str(tmp_path / "x.ipynb"),
            ]
        )
        == 2
    )


def test_a_shared_file_gives_each_notebook_its_names_and_catches_typos():
    from iclmem.book.execute import (
        ParameterError,
        notebook_parameters,
        project_parameter_names,
        read_notebook,
        shared_file_values,
    )

    declared = notebook_parameters(read_notebook(REPO / "notebooks" / "01_split_validation.py"))
    known = project_parameter_names(REPO)
    assert {"learning_rates", "probe_epochs", "data_path", "control_epochs"} <= known
    values, skipped = shared_file_values(declared, {"data_path": "t.csv", "learning_rates": [0.1], "epochs": 2}, known)
    assert values == {"data_path": "t.csv"} and skipped == ["epochs", "learning_rates"]
    with pytest.raises(ParameterError, match="'learnin_rates' is a parameter of no notebook"):
        shared_file_values(declared, {"learnin_rates": [0.1]}, known)


def test_chapter_groups_resolve_in_book_order():
    from iclmem.book.execute import UsageError
    from iclmem.book.own_book import absolute_paths, chapter_stems

    available = [
        "01_split_validation",
        "02_controlled_finetuning",
        "03_multiple_choice_probing",
        "04_calibration",
        "05_realistic_regimes",
        "A6_instrument",
    ]
    assert chapter_stems(["05_realistic_regimes", "tabular"], available) == available
    assert chapter_stems(["regimes"], available) == ["05_realistic_regimes"]
    with pytest.raises(UsageError, match="unknown chapter 'tabulr'"):
        chapter_stems(["tabulr"], available)
    assert absolute_paths({"data_path": "t.csv", "target": "t.csv"}, Path("/data")) == {
        "data_path": "/data/t.csv",
        "target": "t.csv",
    }


def test_the_book_of_your_own_table_opens_in_the_browser_without_errors(chain):
    """Served locally and opened in headless Chromium like the main book: every page loads, no error, no request
    outside."""
    import functools
    import http.server
    import threading

    from playwright.sync_api import sync_playwright
    from test_real_book import CHROMIUM, CHROMIUM_ARGS, _visit

    html = chain[0] / "_build" / "my_table" / "html"

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            visits = {
                page: _visit(browser, f"{base}{page}.html", base)
                for page in ["intro", *(f"notebooks/{s}" for s in CHAIN)]
            }
            browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    for page, visit in visits.items():
        assert visit["status"] == 200, page
        assert (visit["console"], visit["errors"], visit["external"]) == ([], [], []), page
    assert "my_table" in visits["intro"]["title"]


def test_a_regression_table_with_its_target_stored_as_text_goes_through_the_engine(tmp_path, monkeypatch):
    """Numbers written as text parse; a non-numeric target is an error that names the column; the grid runs and
    probes."""
    from iclmem.data import TargetError
    from iclmem.training.grid import GridAxes, expand_grid, probe_grid, run_grid

    rng = np.random.default_rng(1)
    x = rng.normal(size=120)
    frame = pd.DataFrame(
        {
            "a": np.where(rng.random(120) < 0.1, np.nan, x.round(3)),
            "kind": rng.choice(["p", "q"], 120),
            "price": [f"{v:.2f}" for v in 10 + 3 * x],
        }
    )
    frame.to_csv(tmp_path / "prices.csv", index=False)
    frame.assign(price="$" + frame.price).to_csv(tmp_path / "dollars.csv", index=False)
    with pytest.raises(TargetError, match="target 'price' has non-numeric values.*convert the column"):
        notebook_tables(data_path=str(tmp_path / "dollars.csv"), target="price", task="regression")
    tables = notebook_tables(data_path=str(tmp_path / "prices.csv"), target="price", task="regression")
    assert tables["prices"].task == "regression"
    monkeypatch.setenv("ICLMEM_RESULTS", str(tmp_path / "results"))
    with pytest.raises(TableFitError, match=r"query size\(s\) \[20\] cannot pass split validation .* above 20"):
        fitting_query_sizes(tables, [20, 30])
    specs = expand_grid(GridAxes(list(tables), [0.01], fitting_query_sizes(tables, [30]), ["none"]), 2, 0, 32)
    runs = run_grid(specs, progress=False, tables=tables)
    summary, _ = probe_grid(
        specs, runs, None, ProbeSettings(max_queries=6, epochs=(0, 2), n_boot=5), progress=False, tables=tables
    )
    assert summary.epoch.tolist() == [0, 2] and set(summary.dataset) == {"prices"} and summary.outcome.notna().all()
