"""The registered decision design (issue 57, item 2): ``grids/decide.yaml`` parses in the sweep, its power table
``grids/decide_power.csv`` covers every tabular claim of the registry, and its projected cost is within the budget."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from iclmem.chapters.ch00_scorecard.design_plan import (
    BUDGET_CPU_HOURS,
    BUDGET_MARGIN,
    DESIGN_COSTS,
    SWEEP_SCALING,
    DesignFacts,
    design_cost,
)
from iclmem.data.suite import suite_names
from iclmem.report.registry import CLAIMS
from iclmem.sweep.gridfile import load_grid

REPO = Path(__file__).resolve().parents[3]
GRID, TABLE = REPO / "grids" / "decide.yaml", REPO / "grids" / "decide_power.csv"
STATUSES = {
    "powered",
    "underpowered by design",
    "holds by construction",
    "not testable here",
    "not comparable (shown, not judged)",
    "outside this design",
}


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return pd.read_csv(TABLE, keep_default_na=False)


def test_the_design_parses_in_the_sweep_on_every_suite_table():
    grid = load_grid(GRID)
    assert grid.name == "decide"
    tables = {d for s in grid.specs for d in s.datasets}
    assert tables == set(suite_names())
    assert grid.probe.max_queries >= max(s.query_size for s in grid.specs)  # every member and non-member probed
    assert {s.regime for s in grid.specs} == {"single_task_fixed", "multi_task_fixed", "multi_task_random"}
    assert len({s.seed for s in grid.specs}) > 1


def test_the_power_table_covers_every_tabular_claim(table):
    tabular = {c.id for c in CLAIMS if c.id.startswith(("C", "P"))}
    claims = set(table[table.claim != "design"].claim)
    assert tabular <= claims, f"no power row for {sorted(tabular - claims)}"
    rows = table[table.claim != "design"]
    assert set(rows.status) <= STATUSES
    under = rows[rows.status == "underpowered by design"]
    assert (under["what it would take"] != "").all(), "an underpowered claim says what it would take"
    powered = rows[rows.status == "powered"]
    assert (powered.power.astype(float) >= 0.8).all()
    assert (pd.to_numeric(powered["null rate"], errors="coerce").fillna(0) <= 0.05).all()


def test_the_projected_cost_is_within_the_budget(table):
    cost = design_cost(DesignFacts.of(load_grid(GRID)), REPO / DESIGN_COSTS, REPO / SWEEP_SCALING)
    assert cost["cpu_hours"] <= BUDGET_MARGIN * BUDGET_CPU_HOURS
    design = table[table.claim == "design"].set_index("unit")["units in design"].astype(float)
    assert design["CPU-hours (one thread per task)"] == pytest.approx(cost["cpu_hours"], abs=0.01)
    assert design["tasks"] == cost["tasks"]


@pytest.mark.slow
def test_the_committed_power_table_is_what_the_code_computes(table):
    """The registered numbers regenerate from the design, the measured unit costs and the pilot (seeded)."""
    from iclmem.chapters.ch00_scorecard.design_power import power_table

    fresh, _ = power_table(GRID, REPO / DESIGN_COSTS, REPO / SWEEP_SCALING)
    committed = table[table.claim != "design"].reset_index(drop=True)
    assert list(fresh.claim) == list(committed.claim)
    assert list(fresh.status) == list(committed.status)
    for column in ("power", "null rate"):
        a = pd.to_numeric(fresh[column], errors="coerce").fillna(-1).to_numpy()
        b = pd.to_numeric(committed[column], errors="coerce").fillna(-1).to_numpy()
        assert a == pytest.approx(b, abs=1e-4)


EXTENSION, EXTENSION_TABLE = REPO / "grids" / "decide_c9.yaml", REPO / "grids" / "decide_c9_power.csv"


def test_the_c9_extension_adds_q512_runs_apart_from_the_design():
    """The registered extension (grids/decide_c9.yaml) repeats runs_q512 at new seeds: joined to the design, every
    one of its runs counts as a run of its own, and C9's Q = 512 runs grow by as many."""
    base, extension = DesignFacts.of(load_grid(GRID)), DesignFacts.of(load_grid(EXTENSION))
    joined = base.joined(extension)
    assert set(extension.rows.query_size) == {512} and 0 not in set(extension.rows.seed)
    assert joined.rows.run.nunique() == base.rows.run.nunique() + extension.rows.run.nunique()
    before, after = (len(f.runs(f.single()).query("query_size == 512")) for f in (base, joined))
    assert after - before == len(extension.runs(extension.single())) == 252
    assert joined.epochs() == base.epochs()


def test_the_c9_extension_is_powered_as_registered():
    """Its committed power row: C9 powered (>= 80% at a null rate <= 5%) on the design and the extension together,
    with the extension's own task count."""
    table = pd.read_csv(EXTENSION_TABLE, keep_default_na=False)
    c9 = table[table.claim == "C9"].iloc[0]
    assert c9.status == "powered" and float(c9.power) >= 0.8 and float(c9["null rate"]) <= 0.05
    design = table[table.claim == "design"].set_index("unit")["units in design"].astype(float)
    assert design["tasks"] == len(load_grid(EXTENSION).specs)


@pytest.mark.slow
def test_the_committed_extension_power_is_what_the_code_computes():
    from iclmem.chapters.ch00_scorecard.design_power import extension_table

    fresh, _ = extension_table(GRID, EXTENSION, REPO / DESIGN_COSTS, REPO / SWEEP_SCALING)
    committed = pd.read_csv(EXTENSION_TABLE, keep_default_na=False)
    c9 = committed[committed.claim == "C9"].iloc[0]
    assert float(fresh.power.iloc[0]) == pytest.approx(float(c9.power), abs=1e-4)
    assert float(fresh["null rate"].iloc[0]) == pytest.approx(float(c9["null rate"]), abs=1e-4)
