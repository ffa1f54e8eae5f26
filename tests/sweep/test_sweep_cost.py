"""The grid cost projection (iclmem/sweep/cost.py) and notebook 04's grid options
(iclmem/chapters/ch04_calibration/grid_plan.py)."""

from __future__ import annotations

import json

import pytest

from iclmem.chapters.ch04_calibration.grid_plan import SHIPPED_TABLES, grid_options
from iclmem.sweep.cost import CostError, UnitCost, grid_cost, grid_wall_s, load_unit_costs, lpt_makespan
from iclmem.training.grid import GridAxes


def _measured(table: str, q: int, step: float) -> dict:
    return {"table": table, "Q": q, "step_s": step, "finetune_fixed_s": 2.0, "ref_s": 4.0, "theta_s": 2.0,
            "probed_queries": 100, "summary_s": 0.1}  # fmt: skip


@pytest.fixture
def unit_file(tmp_path):
    rows = [_measured(t, q, 1.0 if q == 50 else 3.0) for t in SHIPPED_TABLES for q in (50, 512)]
    path = tmp_path / "paper_shipped_cost.json"
    path.write_text(json.dumps({"measured": rows}))
    return path


def test_grid_cost_multiplies_the_unit_costs(unit_file):
    units = load_unit_costs(unit_file)
    assert units[("spotify", 512)] == UnitCost("spotify", 512, 3.0, 2.0, 0.04, 0.02, 0.1)
    cost = grid_cost(units, GridAxes(["spotify"], [0.1, 0.01], [50, 512], ["none", "members"]), 10, [0, 1, 10], None)
    by_q = cost.set_index("Q")
    assert by_q.loc[512, "runs"] == 4 and by_q.loc[512, "probed_per_pool"] == 512
    assert by_q.loc[512, "finetune_s"] == pytest.approx(4 * (2.0 + 10 * 3.0))
    # M_ref once per label condition, M_theta at epochs 1 and 10 (epoch 0 reuses M_ref's scores), 1,024 queries
    assert by_q.loc[512, "probe_s"] == pytest.approx(2 * 1024 * 0.04 + 4 * 2 * 1024 * 0.02)
    capped = grid_cost(units, GridAxes(["spotify"], [0.1], [512], ["none"]), 10, [0, 1, 10, 100], 50)
    assert capped.loc[0, "probed_per_pool"] == 50  # max_queries caps; epoch 100 > epochs is not probed
    assert capped.loc[0, "probe_s"] == pytest.approx(100 * 0.04 + 2 * 100 * 0.02)


def test_missing_costs_name_the_benchmark(tmp_path, unit_file):
    with pytest.raises(CostError, match="paper_shipped_cost.py"):
        load_unit_costs(tmp_path / "absent.json")
    with pytest.raises(CostError, match="mine"):
        grid_cost(load_unit_costs(unit_file), GridAxes(["mine"], [0.1], [50], ["none"]), 1, [0, 1], None)


def test_lpt_makespan_and_wall(unit_file):
    assert lpt_makespan([3, 3, 2, 2, 2], 2) == 7  # 3+2+2 | 3+2
    assert lpt_makespan([5, 1, 1], 3) == 5  # an indivisible task bounds the wall
    with pytest.raises(CostError, match="workers"):
        lpt_makespan([1.0], 0)
    cost = grid_cost(load_unit_costs(unit_file), GridAxes(["spotify"], [0.1, 0.01], [50], ["none"]), 10, [0, 1], None)
    one, two = grid_wall_s(cost, 1), grid_wall_s(cost, 2, efficiency=0.5)
    assert one["finetune_wall_s"] == pytest.approx(2 * 12.0)
    assert two["finetune_wall_s"] == pytest.approx(12.0 / 0.5)


def test_grid_options_rank_the_steps_to_the_paper(unit_file):
    book = dict(epochs=100, probe_epochs=[0, 1, 10, 100])

    def axes(tables: list, conditions: list) -> GridAxes:
        return GridAxes(tables, [0.1, 0.01], [50, 512], conditions)

    two = axes(["spotify", "wine_pl"], ["none", "members"])
    table = grid_options(two, max_queries=50, unit_costs=unit_file, **book)
    total = table.set_index("option")["fine-tuning + probing (x today)"]
    assert total.iloc[0] == pytest.approx(1.0)
    assert len(table) == 6 and (total.iloc[1:-1] > 1).all()
    assert total.iloc[-1] > total.iloc[1:-1].max()  # every step at once costs most
    assert table["smallest detectable AUC"].iloc[1] < table["smallest detectable AUC"].iloc[0]  # all rows: more power
    full = grid_options(
        axes(list(SHIPPED_TABLES), ["none", "members", "all"]), max_queries=None, unit_costs=unit_file, **book
    )
    assert not full["option"].str.contains("All beside|four shipped|every member").any()  # already in the grid
    own = grid_options(axes(["mine"], ["none"]), max_queries=50, unit_costs=unit_file, **book)
    assert list(own.columns) == ["note"] and "mine" in own["note"][0]


def test_grid_options_read_the_shipped_unit_costs_by_default():
    """The default ``unit_costs`` (a path relative to the repository) is found wherever the chapter module sits."""
    axes = GridAxes(["spotify", "wine_pl"], [0.1, 0.01], [50, 512], ["none", "members"])
    table = grid_options(axes, epochs=100, probe_epochs=[0, 1, 10, 100], max_queries=50)
    assert "note" not in table.columns, table.get("note")
    assert table.set_index("option")["fine-tuning + probing (x today)"].iloc[0] == pytest.approx(1.0)


def test_powered_preset_is_the_last_option():
    """grids/book_powered.yaml is what notebook 04's last option projects: 4 tables x 4 rates x 2 Q x N/M/All."""
    from pathlib import Path

    from iclmem.sweep import load_grid

    grid = load_grid(Path(__file__).resolve().parents[2] / "grids" / "book_powered.yaml")
    assert len(grid.specs) == 96
    assert {s.dataset for s in grid.specs} == set(SHIPPED_TABLES)
    assert {s.label_condition for s in grid.specs} == {"none", "members", "all"}
    assert grid.probe.max_queries >= max(s.query_size for s in grid.specs)  # every member and non-member probed
