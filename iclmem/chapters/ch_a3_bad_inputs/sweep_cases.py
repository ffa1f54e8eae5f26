"""Appendix A3 (no paper section): bad sweep grids (iclmem.sweep)."""

from __future__ import annotations

from pathlib import Path

from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
    tiny_grid,
    tiny_grid_file,
)
from iclmem.sweep import SweepError, load_grid, parse_grid


def parse(folder: Path, **changes) -> object:
    return parse_grid(tiny_grid(**changes), "grid.yaml", folder)


SWEEP_ENTRY = "iclmem.sweep.parse_grid"
#: Mistakes in a sweep's grid file, answered by :mod:`iclmem.sweep`, in catalogue order.
SWEEP_CASES: list[BadInput] = [
    BadInput(
        "grid-file-missing",
        "Loaded a grid file that does not exist.",
        "iclmem.sweep.load_grid",
        lambda d: load_grid(d / "nope.yaml"),
        SweepError,
        r"no grid file at .*nope\.yaml",
        r"see grids/book\.yaml",
    ),
    BadInput(
        "grid-file-bad-yaml",
        "Loaded a grid file with broken YAML.",
        "iclmem.sweep.load_grid",
        lambda d: load_grid(tiny_grid_file(d, text="name: tiny\ndatasets: [wine_pl\n")),
        SweepError,
        r"not valid YAML",
        r"fix the syntax",
    ),
    BadInput(
        "grid-dataset-unknown",
        "Listed the dataset `wine_lp` in a grid.",
        SWEEP_ENTRY,
        lambda d: parse(d, datasets=["wine_lp"]),
        SweepError,
        r"unknown dataset 'wine_lp'",
        r"valid names: .*wine_pl.*or give a file as \{path: data\.csv",
    ),
    BadInput(
        "grid-axis-missing",
        "Wrote a grid without `query_sizes`.",
        SWEEP_ENTRY,
        lambda d: parse_grid({"name": "g", "datasets": ["wine_pl"], "learning_rates": [1e-3]}, "grid.yaml", d),
        SweepError,
        r"missing 'query_sizes'",
        r"every grid needs datasets, learning_rates and query_sizes",
    ),
    BadInput(
        "grid-axis-empty-in-file",
        "Wrote `learning_rates: []` in a grid.",
        SWEEP_ENTRY,
        lambda d: parse(d, learning_rates=[]),
        SweepError,
        r"axis 'learning_rates' is empty",
        r"give at least one value",
    ),
    BadInput(
        "grid-name-bad",
        "Named a grid `my grid` (with a space).",
        SWEEP_ENTRY,
        lambda d: parse(d, name="my grid"),
        SweepError,
        r"got 'my grid'",
        r"name must be a word of letters, digits",
    ),
    BadInput(
        "grid-learning-rate-text",
        "Wrote a learning rate as `fast`.",
        SWEEP_ENTRY,
        lambda d: parse(d, learning_rates=["fast"]),
        SweepError,
        r"got 'fast'",
        r"learning_rates must be a number",
    ),
    BadInput(
        "grid-dataset-file-missing",
        "Listed a dataset file that does not exist in a grid.",
        SWEEP_ENTRY,
        lambda d: parse(d, datasets=[{"path": "nope.csv", "target": "y"}]),
        SweepError,
        r"dataset file .*nope\.csv' does not exist",
        r"relative paths start at the grid file's folder",
    ),
    BadInput(
        "grid-probe-epoch-odd",
        "Asked to probe at epoch 3, which fine-tuning never keeps.",
        SWEEP_ENTRY,
        lambda d: parse(d, probe={"epochs": [3]}),
        SweepError,
        r"probe\.epochs \[3\] are not probing epochs",
        r"fine-tuning keeps the paper's \[0, 1, 2, 5",
    ),
    BadInput(
        "grid-probe-epochs-beyond",
        "Asked to probe at epoch 5 in a grid of 2 epochs.",
        SWEEP_ENTRY,
        lambda d: parse(d, probe={"epochs": [5]}),
        SweepError,
        r"are all beyond epochs=2",
        r"raise epochs or add earlier epochs",
    ),
    BadInput(
        "grid-random-pairs-labels",
        "Combined random pairs with randomized labels in one grid part.",
        SWEEP_ENTRY,
        lambda d: parse(d, regimes=["multi_task_random"], label_conditions=["members"]),
        SweepError,
        r"multi_task_random samples queries with their true labels",
        r"use label_conditions \[none\]",
    ),
]


def sweep_cases() -> list[BadInput]:
    """Mistakes in a sweep's grid file, answered by :mod:`iclmem.sweep`, in catalogue order."""
    return list(SWEEP_CASES)


__all__ = ["SWEEP_CASES", "sweep_cases"]
