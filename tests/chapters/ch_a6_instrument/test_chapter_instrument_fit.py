"""Whether a table can carry the instrument's controls (notebook 04): a control that cannot run on the table its
parameters name is skipped with one line that says why, and nothing is fine-tuned for it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iclmem.chapters.ch_a6_instrument import table_curves
from iclmem.chapters.ch_a6_instrument.instrument import SensitivitySpec, run_sensitivity
from iclmem.chapters.ch_a6_instrument.instrument_cells import rule_setting
from iclmem.chapters.ch_a6_instrument.instrument_fit import control_unfit, factors_unfit, not_run_note
from iclmem.chapters.ch_a6_instrument.table_curves import (
    CurveSetting,
    curve_settings,
    run_table_curves,
    weakest_per_table,
)
from iclmem.data import Dataset, deduplicate, load_dataset


def _table(tmp_path, task: str, n: int = 120, name: str = "mine") -> Dataset:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    frame["y"] = (frame.a > 0).astype(int) if task == "classification" else 3 * frame.a + rng.normal(size=n)
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    return deduplicate(load_dataset(path, target="y", task=task))


def _no_training(*args, **kwargs):
    raise AssertionError("a skipped control fine-tuned a run")


def test_a_control_the_table_cannot_carry_is_one_line_naming_the_parameter_that_changes_it(tmp_path):
    regression, binary = _table(tmp_path, "regression", name="prices"), _table(tmp_path, "classification")
    assert control_unfit(binary, 50, ["all"]) == "" and control_unfit(binary, 50, ["flip"]) == ""
    assert control_unfit(regression, 50, ["none", "all"]) == ""
    flip = control_unfit(regression, 50, ["flip"])
    assert "prices is a regression table" in flip and "set control_label_condition to 'all'" in flip
    small = control_unfit(binary, 60, ["all"])
    assert f"{binary.n} rows" in small and f"set control_query_size to at most {(binary.n - 1) // 2}" in small
    assert "control_query_size above 20" in control_unfit(regression, 20, ["all"])  # the KS criterion needs Q > 20
    for reason in (flip, small):
        assert "\n" not in reason


def test_the_factor_table_runs_only_from_a_regression_cell_of_the_curve_with_a_control_beside_it():
    assert factors_unfit("wine_pl", ["spotify", "wine_pl"], "regression", True) == ""
    assert factors_unfit("", ["mine"], None, True) == "factor_seen is empty"
    assert "not a table of the curve (mine)" in factors_unfit("wine_pl", ["mine"], None, True)
    assert "'mine' is a classification table" in factors_unfit("mine", ["mine"], "classification", True)
    assert "positive control was not run" in factors_unfit("mine", ["mine"], "regression", False)


def test_a_skipped_control_fine_tunes_nothing_and_says_why(tmp_path, monkeypatch):
    import iclmem.training.grid

    monkeypatch.setattr(iclmem.training.grid, "run_grid", _no_training)
    tables = {"prices": _table(tmp_path, "regression", name="prices")}
    sens = run_sensitivity(SensitivitySpec("prices", [0.001], [2], 30, 16, "flip"), None, tables=tables)
    assert "prices is a regression table" in sens.skipped
    assert sens.curve.empty and sens.strongest() is None
    note = not_run_note({"the positive control on `prices`": sens.skipped})
    assert note.startswith("**Not run:** the positive control on `prices`: prices is a regression table")
    assert not_run_note({"the positive control": ""}) == ""


def test_the_curve_leaves_out_a_table_too_small_for_its_query_size(tmp_path, monkeypatch):
    monkeypatch.setattr(table_curves, "run_grid", lambda specs, *a, **k: [] if not specs else _no_training())
    tables = {"mine": _table(tmp_path, "classification", n=60)}
    settings = curve_settings(["mine"], [0.01], [2], 16, CurveSetting("mine", (0.001,), (2,), 16))
    curves = run_table_curves(settings, ["none", "all"], 50, None, tables=tables)
    assert list(curves.skipped) == ["mine"] and "too few for control_query_size=50" in curves.skipped["mine"]
    assert curves.curve.empty and weakest_per_table(curves.curve).empty and rule_setting(curves.curve) is None


@pytest.mark.parametrize("condition", ["none", "all"])
def test_a_table_that_fits_is_not_skipped(tmp_path, condition):
    assert control_unfit(_table(tmp_path, "regression"), 30, [condition]) == ""
