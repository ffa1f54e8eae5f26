"""Appendix A1 (notebook A1): the reference LTM before and after stage 4 (contexts down to 2 rows; issue 53), on one
page.

Two benchmark results, each computed by the project's own scripts on both weights (``model: reference-v1`` and
``reference``): the quality against scikit-learn (:func:`quality_change`, from ``benchmarks/ltm_quality.py``) and
where the probe sees (:func:`reach_change`, :func:`ladder_change`, from ``benchmarks/probe_reach.py``: notebook 04's
instrument at the book's defaults, Paper 1 Sec. 4.2 and App. A).
"""

from __future__ import annotations

import pandas as pd

from iclmem.chapters.ch_a1_reference_ltm.tables import headline_scores


def _gaps(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (task, dataset): the LTM's headline score, the best baseline's and the gap (LTM minus best)."""
    scores = headline_scores(rows)
    baselines = [c for c in scores.columns if c != "ltm"]
    best = scores[baselines].max(axis=1)
    return pd.DataFrame({"ltm": scores["ltm"], "best baseline": best, "gap": scores["ltm"] - best})


def quality_change(rows_before: pd.DataFrame, rows_after: pd.DataFrame) -> pd.DataFrame:
    """Per dataset: the LTM's ROC AUC or R^2 and its gap to the best baseline, before and after, and the change."""
    before, after = _gaps(rows_before), _gaps(rows_after)
    out = pd.DataFrame(
        {
            "before": before["ltm"],
            "after": after["ltm"],
            "best baseline": after["best baseline"],
            "gap before": before["gap"],
            "gap after": after["gap"],
        }
    )
    out["change"] = out["after"] - out["before"]
    return out.reset_index()


def _cell_text(cell: dict | None, name: str) -> str:
    if not cell:
        return "-"
    return f"{cell[f'{name} AUC']:.3f} [{cell[f'{name} lo']:.3f}, {cell[f'{name} hi']:.3f}]"


def reach_change(reach: dict, before: str = "reference-v1", after: str = "reference") -> pd.DataFrame:
    """Per table: the strongest vanilla attack under All and the probe at that cell, for each model; then P1's cell.
    Models missing from ``reach`` are left out. (The recall control is notebook 04's: its rule changed after the
    committed ``probe_reach.json`` was computed, so this table does not show that file's ``recall_control``.)"""
    runs = {m: reach["runs"][m] for m in (before, after) if m in reach.get("runs", {})}
    tables = sorted({d for r in runs.values() for d in r["strongest_under_all"]})
    rows = []
    for d in tables:
        row: dict = {"table": d, "where": "strongest memorization under All"}
        for m, r in runs.items():
            cell = r["strongest_under_all"].get(d)
            row[f"vanilla ({m})"] = _cell_text(cell, "vanilla")
            row[f"probe ({m})"] = _cell_text(cell, "probe")
            row[f"cells seen ({m})"] = f"{r['cells_seen'].get(d, 0)} of {r['cells'].get(d, 0)}"
        rows.append(row)
    p1 = {"table": "P1's cell", "where": "the rule's cell"}
    for m, r in runs.items():
        cell = r.get("p1_cell")
        p1["where"] = "the rule's cell" if cell is None else f"{cell.get('dataset', '?')} lr {cell['learning_rate']:g}"
        p1[f"vanilla ({m})"] = _cell_text(cell, "vanilla")
        p1[f"probe ({m})"] = _cell_text(cell, "probe")
        p1[f"cells seen ({m})"] = "-"
    rows.append(p1)
    return pd.DataFrame(rows)


def ladder_change(reach: dict, before: str = "reference-v1", after: str = "reference") -> pd.DataFrame:
    """The context ladder at the control's strongest cell (AUC with its interval), one column per model."""
    cols = {}
    for m in (before, after):
        if m in reach.get("runs", {}):
            cols[m] = {
                r["context"]: f"{r['auc']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]" for r in reach["runs"][m]["ladder"]
            }
    return pd.DataFrame(cols).rename_axis("context").reset_index()


__all__ = ["ladder_change", "quality_change", "reach_change"]
