"""Appendix A5: each results bundle in use, what made it, and how far its recomputed sample landed here (issue 55).

A bundle is served only after a random sample of it was recomputed on the reader's machine and landed within
tolerance (:mod:`iclmem.bundle.recheck`); this page shows that sample: each draw, the largest excess over the
tolerance of each compared quantity (at most 1 is within), the seed of the draw, and the probability that a
change moving a tenth of the bundle would have been caught.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from iclmem.atomic import size_text
from iclmem.bundle import read_bundle
from iclmem.bundle.command import ensure_checked
from iclmem.bundle.layout import Bundle
from iclmem.bundle.recheck import detection_probability, recomputable_text
from iclmem.bundle.serve import bundle_roots, read_check


@dataclass(frozen=True)
class BundleView:
    """A bundle in use and its check record on this machine (None: not checked, e.g. ICLMEM_BUNDLE=off)."""

    bundle: Bundle
    check: dict | None

    @property
    def size(self) -> int:
        return sum(p.stat().st_size for p in self.bundle.root.rglob("*") if p.is_file())


def bundles_in_use(check: bool = True) -> list[BundleView]:
    """Every bundle ``ICLMEM_BUNDLE`` names, checked first when it has no record for this code (``check``)."""
    if check:
        ensure_checked(progress=False)
    return [BundleView(b, read_check(b)) for b in (read_bundle(r) for r in bundle_roots())]


def bundle_table(views: list[BundleView]) -> pd.DataFrame:
    """One row per bundle: its grid, tasks bundled, CPU-hours, size, what made it, and its check here."""
    rows = []
    for v in views:
        m, made = v.bundle.manifest, v.bundle.manifest["made"][-1]
        rows.append(
            {
                "bundle": v.bundle.name,
                "grid": m["grid"]["name"],
                "tasks bundled": f"{m['tasks_bundled']} of {m['grid']['tasks']}",
                "CPU-hours": m["cpu_hours"],
                "size": size_text(v.size),
                "made": f"{made['date']} on {made['machine']['processor']} ({made['code_commit'][:10]})",
                "check here": (v.check or {}).get("verdict", "not checked"),
            }
        )
    return pd.DataFrame(rows)


def landing_table(view: BundleView) -> pd.DataFrame:
    """One row per recomputed draw: which task and epoch, the quantity that landed farthest and how far."""
    rows = []
    for x in (view.check or {}).get("landings", []):
        worst = max(x["excess"], key=x["excess"].get) if x["excess"] else ""
        rows.append(
            {
                "dataset": x["dataset"],
                "task": x["kind"],
                "Q": x["query_size"],
                "lr": x["learning_rate"],
                "epoch": x["epoch"],
                "farthest": worst or x["problem"],
                "max |difference|": x["max_abs"].get(worst, float("nan")),
                "x tolerance": x["excess"].get(worst, float("inf")),
                "seconds": x["seconds"],
            }
        )
    return pd.DataFrame(rows)


def plot_landings(view: BundleView) -> plt.Figure:
    """Each draw's largest excess over the tolerance (log scale; the line at 1 is the tolerance)."""
    table = landing_table(view)
    fig, ax = plt.subplots(figsize=(7, 0.25 * max(len(table), 4) + 1))
    labels = [f"{r.dataset} Q={r.Q} lr={r.lr:g} e{r.epoch}" for r in table.itertuples()]
    floor = 1e-6  # a bitwise landing (0) drawn at the floor
    ceiling = 1e3  # a draw that could not be compared (inf) drawn at the ceiling
    excess = table["x tolerance"].astype(float).clip(lower=floor, upper=ceiling)
    ax.barh(labels, excess, color=["tab:blue" if x <= 1 else "tab:red" for x in excess])
    ax.axvline(1.0, color="tab:red", linestyle="--", label="tolerance")
    ax.set_xscale("log")
    ax.set_xlabel(f"largest |difference| / tolerance (0 drawn at {floor:g}, not comparable at {ceiling:g})")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def drift_table(path: str | Path) -> pd.DataFrame:
    """``benchmarks/bundle_drift.py``'s result: per table, learning rate and probed epoch, how far the same run
    lands with two threads instead of one (drift) and with the learning rate moved by a relative 1e-3 (a change),
    as the largest excess over the tolerance of the scores, the training losses and the metrics (empty if absent)."""
    path = Path(path)
    if not path.is_file():
        return pd.DataFrame()
    rows = json.loads(path.read_text())["rows"]
    out = []
    for r in rows:
        out.append(
            {
                "table": r["table"],
                "lr": r["learning_rate"],
                "epoch": r["epoch"],
                "compared": r["compared"],
                "scores x tolerance": max(r["scores loss x_tolerance"], r["scores entropy x_tolerance"]),
                "train loss x tolerance": r["train loss x_tolerance"],
                "metrics x tolerance": r["metrics x_tolerance"],
                "scores max |difference|": max(r["scores loss max_abs"], r["scores entropy max_abs"]),
            }
        )
    return pd.DataFrame(out)


def bundle_texts(views: list[BundleView]) -> dict[str, str]:
    """The values the page's prose states, to glue."""
    chaotic = {"a5-chaotic": recomputable_text()}
    if not views:
        none = "none (no bundle in use)"
        return {
            "a5-bundles": "no results bundle is in use: every result was computed by this build",
            **{k: none for k in ("a5-detection", "a5-draws", "a5-seed", "a5-tolerance", "a5-verdict")},
            **chaotic,
        }
    v = views[0]
    check = v.check or {}
    n = int(check.get("draws", 0))
    tol = check.get("tolerance", {})
    return {
        "a5-bundles": f"{len(views)} results bundle{'s' if len(views) > 1 else ''} in use",
        "a5-detection": f"{detection_probability(n):.1%}",
        "a5-draws": str(n),
        "a5-seed": str(check.get("seed", "")),
        "a5-tolerance": f"|a - b| <= {tol.get('atol', '')} + {tol.get('rtol', '')} |b|",
        "a5-verdict": check.get("verdict", "not checked"),
        **chaotic,
    }


__all__ = ["BundleView", "bundle_table", "bundle_texts", "bundles_in_use", "landing_table", "plot_landings"]
