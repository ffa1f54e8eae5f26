"""Claims read on the registered decision design (``grids/decide.yaml``, issue 57 item 4), glued beside the grid's.

A chapter reads its claims twice: on this build's grid (glued ``claim-<ID>``, the scorecard's verdict) and on the
design's results bundle (:class:`iclmem.bundle.design.Design`, glued ``design-claim-<ID>``). The design's records
carry its progress (:class:`DesignProgress`): while its sweep is still running they are *interim*, read on the tasks
bundled so far, and its bundle has no recomputed sample yet (:mod:`iclmem.bundle.recheck` checks a design only once
it is complete); the scorecard shows them in their own column and keeps the grid's verdict until the design is
complete and its recomputed sample accepted on this machine (:attr:`DesignProgress.decides`), then the design's
records decide (:func:`iclmem.report.glue.scorecard_table`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from iclmem.bundle.design import Design
from iclmem.bundle.layout import BundleError, read_bundle
from iclmem.bundle.serve import default_folder, read_check
from iclmem.report.glue import (
    DESIGN_PREFIX,
    PROGRESS_NAME,
    design_decides,
    glue_claims,
    read_glued_claims,
    read_glued_progress,
)
from iclmem.store.imports import PACKAGE_ROOT


@dataclass(frozen=True)
class DesignProgress:
    """How much of a registered design its bundle holds: a reading on fewer tasks than the grid's is interim."""

    name: str
    tasks_bundled: int
    tasks: int
    cpu_hours: float
    tables: int
    check: str = "not checked"  # this machine's check of the bundle (iclmem.bundle.recheck): accepted, rejected, ...

    @property
    def complete(self) -> bool:
        return self.tasks_bundled >= self.tasks

    @property
    def decides(self) -> bool:
        """Whether its readings replace the grid's verdicts: every task bundled and its recomputed sample accepted
        (:func:`iclmem.report.glue.design_decides` of its glued fields)."""
        return design_decides(asdict(self))

    @property
    def text(self) -> str:
        if self.decides:
            state = "complete, its recomputed sample accepted here: it decides the scorecard"
        elif self.complete:
            state = f"complete but {self.check} here: the scorecard keeps the grid's verdicts"
        else:
            state = "interim: its sweep is still running"
        return (
            f"design {self.name}: {self.tasks_bundled} of {self.tasks} tasks on {self.tables} tables "
            f"({self.cpu_hours:.2f} CPU-hours), {state}"
        )


def load_design(name: str, folder: str | Path | None = None) -> Design:
    """The design whose results bundle is ``<folder>/<name>`` (default folder: the project's ``bundle/``)."""
    root = Path(folder) if folder else default_folder()
    return Design(read_bundle(root / name))


def design_progress(design: Design) -> DesignProgress:
    """The progress of ``design`` from its bundle's manifest (tables: those with a finished task)."""
    manifest = design.bundle.manifest
    return DesignProgress(
        name=str(manifest["grid"]["name"]),
        tasks_bundled=int(manifest["tasks_bundled"]),
        tasks=int(manifest["grid"]["tasks"]),
        cpu_hours=float(manifest["cpu_hours"]),
        tables=int(design.summary.dataset.nunique()),
        check=str((read_check(design.bundle) or {}).get("verdict", "not checked")),
    )


def registered_power(power_csv: str | Path) -> pd.DataFrame:
    """The registered power table (``grids/decide_power.csv``, committed before the design ran) by claim id:
    ``registered power`` (the rate at which the claim's rule agrees when the paper's value holds) and ``registered
    status`` (powered, underpowered by design, or the claim's standing where no size applies)."""
    table = pd.read_csv(power_csv)
    table = table[table.claim != "design"].set_index("claim")
    return pd.DataFrame(
        {
            "registered power": table.power.map(lambda p: "-" if pd.isna(p) else f"{100 * p:.0f}%"),
            "registered status": table.status,
        }
    )


def interim(records: Iterable[Mapping[str, Any]], progress: DesignProgress) -> list[dict[str, Any]]:
    """``records`` with the design's progress appended to each reason (what the reading stands on)."""
    return [{**r, "reason": f"{r['reason']}; read on the {progress.text}"} for r in records]


def glue_design_claims(records: Iterable[Mapping[str, Any]], progress: DesignProgress) -> int:
    """Glue each record (checked by :func:`iclmem.report.records.record_from`) as ``design-claim-<ID>`` and the
    progress once; returns how many records."""
    from myst_nb import glue

    glue(PROGRESS_NAME, asdict(progress), display=False)
    return glue_claims(records, prefix=DESIGN_PREFIX)


def power_file(name: str) -> Path:
    """The registered power table of the design ``name``: ``grids/<name>_power.csv`` in the project, committed with
    its grid before the design ran."""
    return PACKAGE_ROOT.parent / "grids" / f"{name}_power.csv"


def with_registered_power(table: pd.DataFrame, executed_dir: str | Path) -> pd.DataFrame:
    """The scorecard ``table`` with each claim's ``registered power`` (as text, with its status) from the power table
    of the design that notebook 04 read in ``executed_dir`` (empty where the design registers none, or none was
    read)."""
    path = Path(executed_dir) / "notebooks" / "04_calibration.ipynb"
    progress = read_glued_progress(path) if path.is_file() else None
    if not progress or not power_file(progress["name"]).is_file():
        return table.assign(**{"registered power": ""})
    power = registered_power(power_file(progress["name"]))
    text = power["registered power"] + " (" + power["registered status"].astype(str) + ")"
    return table.assign(**{"registered power": table.claim.map(text).fillna("")})


def read_on_design(name: str, read: Callable[[Design], list[dict]]) -> tuple[Design | None, pd.DataFrame]:
    """A chapter's claims on the design ``name`` (``read``: the chapter's reader, e.g.
    :func:`iclmem.chapters.ch04_calibration.on_design.design_calibration_claims`): glued as ``design-claim-<ID>``
    with the progress (:func:`glue_design_claims`), the progress glued as text under ``design_progress``, and
    returned as (the design, its claims table with the registered power (:func:`power_file`) beside each verdict).
    An empty ``name`` reads nothing: (None, an empty table); so does a design whose bundle is missing or damaged
    (:class:`~iclmem.bundle.layout.BundleError`: one line on stderr and in the page's progress text)."""
    from iclmem.report.glue import claims_table, glue_text

    if not name:
        glue_text("design_progress", "not read (the parameter design is empty)")
        return None, pd.DataFrame()
    try:
        design = load_design(name)
        progress = design_progress(design)
        records = interim(read(design), progress)
    except BundleError as err:  # a missing or damaged design: the page says so, the grid's verdicts stand
        print(f"iclmem: the design {name!r} is not read: {err}", file=sys.stderr)
        glue_text("design_progress", f"not read ({err})")
        return None, pd.DataFrame()
    glue_design_claims(records, progress)
    glue_text("design_progress", progress.text)
    table = claims_table(records)
    power = power_file(progress.name)
    if power.is_file():
        table = table.join(registered_power(power))
    else:  # a design registered without a power table
        table = table.assign(**{"registered power": "-", "registered status": "no power table registered"})
    return design, table[["ours", "verdict", "registered power", "registered status", "null rate", "reason"]]


def design_state_text(executed_dir: str | Path, chapter: str = "notebooks/04_calibration") -> str:
    """The design's progress as ``chapter`` (executed under ``executed_dir``) glued it, as one sentence for the
    scorecard; says so when that chapter did not read a design."""
    path = Path(executed_dir) / f"{chapter}.ipynb"
    progress = read_glued_progress(path) if path.is_file() else None
    return DesignProgress(**progress).text if progress else f"not read ({chapter} read no design in this build)"


def read_design_claims(ipynb_path: str | Path) -> dict[str, dict[str, Any]]:
    """The design's claim records an executed notebook glued with :func:`glue_design_claims`, by claim id."""
    return read_glued_claims(ipynb_path, prefix=DESIGN_PREFIX)


__all__ = [
    "DesignProgress",
    "design_progress",
    "design_state_text",
    "glue_design_claims",
    "interim",
    "load_design",
    "power_file",
    "with_registered_power",
    "read_design_claims",
    "read_on_design",
    "registered_power",
]
