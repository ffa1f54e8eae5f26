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

from iclmem.bundle import read_bundle
from iclmem.bundle.check import detection_probability
from iclmem.bundle.collect import stratum
from iclmem.bundle.command import ensure_checked
from iclmem.bundle.layout import Bundle
from iclmem.bundle.sampling import recomputable_text
from iclmem.bundle.serve import bundle_roots, read_check
from iclmem.store.atomic import size_text
from iclmem.store.imports import PACKAGE_ROOT
from iclmem.store.keys import content_key
from iclmem.training.grid import RunSpec


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
                "grid": m["grid"]["name"] if "grid" in m else "the book's own runs (iclmem bundle collect)",
                "tasks bundled": f"{m['tasks_bundled']} of {m['grid']['tasks']}" if "grid" in m else _held(v.bundle),
                "CPU-hours": m.get("cpu_hours", "not recorded"),
                "size": size_text(v.size),
                "made": f"{made['date']} on {made['machine']['processor']} ({made['code_commit'][:10]})",
                "check here": (v.check or {}).get("verdict", "not checked"),
            }
        )
    return pd.DataFrame(rows)


def _held(bundle: Bundle) -> str:
    """What a store's bundle holds, in words: its runs, probe scores and completions."""
    kinds = pd.Series([e["kind"] for e in bundle.items.values()]).value_counts()
    records = sum(int(e.get("records", 0)) for e in bundle.items.values())
    return f"{kinds.get('finetune', 0)} runs, {kinds.get('probe', 0)} probe scores, {records} completions"


def _design(views: list[BundleView]) -> list[BundleView]:
    """The bundles of a design's grid (not a store's: :mod:`iclmem.bundle.store_runs`)."""
    return [v for v in views if "grid" in v.bundle.manifest]


def _item_bytes(bundle: Bundle) -> pd.DataFrame:
    """One row per item: its kind, run (or key) and bytes on disk."""
    rows = []
    for key, entry in bundle.items.items():
        kind, name = key.split("/", 1)
        size = sum(p.stat().st_size for p in bundle.item_dir(kind, name).iterdir() if p.is_file())
        rows.append({"kind": kind, "run": entry.get("run", name), "key": name, "bytes": size})
    return pd.DataFrame(rows, columns=["kind", "run", "key", "bytes"])


def contents_table(view: BundleView) -> pd.DataFrame:
    """What a bundle keeps, per kind of item: how many, their size and share of the bundle."""
    items = _item_bytes(view.bundle)
    table = items.groupby("kind").bytes.agg(items="size", bytes="sum").sort_values("bytes", ascending=False)
    table["share"] = (table.bytes / table.bytes.sum()).map("{:.1%}".format)
    table["size"] = table.bytes.map(size_text)
    return table.reset_index()[["kind", "items", "size", "share"]]


def _task_bytes(bundle: Bundle) -> pd.DataFrame:
    """Bytes per bundled task (its summary, run, and every item of its probed runs) and its stratum."""
    items = _item_bytes(bundle)
    rows = []
    for key, entry in bundle.items.items():
        if entry["kind"] != "sweep":
            continue
        spec, run = entry["spec"], entry["run"]
        runs = {run, *(content_key(run, d) for d in spec.get("datasets") or [spec["dataset"]])}
        mine = items[items.run.isin(runs) | items.key.isin(runs) | (items.key == key.split("/", 1)[1])]
        rows.append({"stratum": stratum(RunSpec(**spec)), "bytes": int(mine.bytes.sum())})
    return pd.DataFrame(rows, columns=["stratum", "bytes"])


def size_projection(view: BundleView) -> pd.DataFrame:
    """Per stratum (Q x regime) of the bundle's grid: tasks bundled of the grid's, bytes per bundled task, and the
    size the whole grid would take. A stratum not bundled yet is taken at the mean bytes per task of the bundled
    ones of its regime (at another Q; of any regime if none): an upper bound for a smaller Q."""
    per_task = _task_bytes(view.bundle)
    strata = view.bundle.manifest.get("grid", {}).get("strata") or {}
    regime = per_task.stratum.str.split(" ").str[-1]
    rows = []
    for name, n in sorted(strata.items()):
        done = per_task[per_task.stratum == name].bytes
        alike = per_task[regime == name.split(" ")[-1]].bytes
        each = done.mean() if len(done) else alike.mean() if len(alike) else per_task.bytes.mean()
        rows.append({"stratum": name, "bundled": f"{len(done)} of {n}", "per task": size_text(int(each)),
                     "projected": size_text(int(each * n)), "bytes": each * n})  # fmt: skip
    return pd.DataFrame(rows, columns=["stratum", "bundled", "per task", "projected", "bytes"])


#: The unit costs and pilot from which a design's cost was projected before it ran (benchmarks/design_costs.py).
DESIGN_COSTS = PACKAGE_ROOT.parent / "benchmarks" / "results" / "design_costs.json"
_SPEC_KEY = ("regime", "dataset", "query_size", "learning_rate", "label_condition", "seed")


def registered_designs(views: list[BundleView]) -> list[BundleView]:
    """The bundles of a registered design: those whose grid was registered with a power table
    (:func:`iclmem.report.design_glue.power_file`)."""
    from iclmem.report.design_glue import power_file

    return [v for v in _design(views) if power_file(v.bundle.manifest["grid"]["name"]).is_file()]


def cost_projection(view: BundleView, costs_path: str | Path = DESIGN_COSTS) -> pd.DataFrame:
    """Per stratum (Q x regime) of a design's grid: tasks bundled, the measured seconds per bundled task (its wall
    time in the sweep, one thread per task), the registered projection for the same tasks
    (:func:`iclmem.chapters.ch00_scorecard.design_plan.task_costs`, from the unit costs measured before the run), their
    ratio, and the whole stratum's CPU-hours at the measured rate (a stratum with no task bundled yet: at the
    projection times the ratio of all bundled tasks)."""
    from iclmem.chapters.ch00_scorecard.design_plan import DesignFacts, task_costs
    from iclmem.sweep.gridfile import load_grid

    grid = load_grid(PACKAGE_ROOT.parent / view.bundle.manifest["grid"]["file"])
    projected = task_costs(DesignFacts.of(grid), json.loads(Path(costs_path).read_text()))
    projected["key"] = [tuple(getattr(spec, k) for k in _SPEC_KEY) for spec in grid.specs]
    projected["stratum"] = [stratum(spec) for spec in grid.specs]
    sweeps = [e for e in view.bundle.items.values() if e["kind"] == "sweep"]
    measured = pd.DataFrame(
        {"key": [tuple(e["spec"][k] for k in _SPEC_KEY) for e in sweeps], "wall_s": [e["wall_s"] for e in sweeps]}
    )
    done = projected.merge(measured, on="key")
    ratio_all = done.wall_s.sum() / done.task_s.sum() if len(done) else float("nan")
    rows = []
    for name, part in projected.groupby("stratum", sort=True):
        mine = done[done.stratum == name]
        ratio = mine.wall_s.sum() / mine.task_s.sum() if len(mine) else ratio_all
        rows.append(
            {
                "stratum": name,
                "bundled": f"{len(mine)} of {len(part)}",
                "measured s per task": round(float(mine.wall_s.mean()), 1) if len(mine) else None,
                "projected s per task": round(float(mine.task_s.mean() if len(mine) else part.task_s.mean()), 1),
                "measured / projected": round(float(ratio), 2),
                "stratum CPU-hours at the measured rate": round(float(part.task_s.sum() * ratio / 3600), 2),
                "registered CPU-hours": round(float(part.task_s.sum() / 3600), 2),
            }
        )
    return pd.DataFrame(rows)


LANDING_COLUMNS = ("dataset", "task", "Q", "lr", "epoch", "farthest", "max |difference|", "x tolerance", "seconds")


def landing_table(view: BundleView) -> pd.DataFrame:
    """One row per recomputed draw: which task and epoch, the quantity that landed farthest and how far (no row: the
    bundle was not checked here)."""
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
    return pd.DataFrame(rows, columns=list(LANDING_COLUMNS))


def plot_landings(view: BundleView) -> plt.Figure | None:
    """Each draw's largest excess over the tolerance (log scale; the line at 1 is the tolerance); None when the
    bundle was not checked here."""
    table = landing_table(view)
    if table.empty:
        return None
    fig, ax = plt.subplots(figsize=(7, 0.25 * max(len(table), 4) + 1))
    labels = [
        f"LLM completion {i}" if r.task == "completion" else f"{r.dataset} Q={r.Q} lr={r.lr:g} e{r.epoch}"
        for i, r in enumerate(table.itertuples(), 1)
    ]
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


def _null_bytes(row: dict) -> int:
    """The shipped nulls' bytes, or their projection at a narrower float."""
    return row["bytes"] if row["dtype"].startswith("float64") else row["projected_bytes"]


def precision_table(path: str | Path) -> pd.DataFrame:
    """``benchmarks/bundle_precision.py``'s result (issue 55 item 1): per float width of the nulls' float64 columns,
    how many of chapters 02-05's design claims change verdict or record, the largest null-rate change, and the
    nulls' size at that width (projected from a re-encoded sample; empty if absent)."""
    path = Path(path)
    if not path.is_file():
        return pd.DataFrame()
    rows = json.loads(path.read_text())["rows"]
    return pd.DataFrame(
        {
            "nulls' float columns": r["dtype"],
            "claims read": r["claims"],
            "verdicts moved": len(r["verdicts_moved"]),
            "records changed": ", ".join(r["records_changed"]) or "none",
            "largest null-rate change": f"{100 * r['max_null_rate_change']:.1f} points",
            "nulls on disk (MB)": round(_null_bytes(r) / 1e6, 1),
        }
        for r in rows
    )


def bundle_texts(views: list[BundleView]) -> dict[str, str]:
    """The values the page's prose states, to glue."""
    chaotic = {"a5-chaotic": recomputable_text()}
    if not views:
        none = "none (no bundle in use)"
        return {
            "a5-bundles": "no results bundle is in use: every result was computed by this build",
            **{k: none for k in ("a5-detection", "a5-draws", "a5-seed", "a5-tolerance", "a5-verdict", "a5-grid-size")},
            **chaotic,
        }
    designs = _design(views) or views
    running = [
        x.bundle.name for x in _design(views) if x.bundle.manifest["tasks_bundled"] < x.bundle.manifest["grid"]["tasks"]
    ]
    v = designs[0]
    check = v.check or {}
    projection = size_projection(v)
    grid_size = size_text(int(projection.bytes.sum())) if len(projection) else "not projected (no strata recorded)"
    n = int(check.get("draws", 0))
    tol = check.get("tolerance", {})
    return {
        "a5-bundles": f"{len(views)} results bundle{'s' if len(views) > 1 else ''} in the repository"
        + (
            f" ({', '.join(running)}: a design whose sweep is still running: not checked here, and read by chapters "
            "02-05 as an interim reading beside the book's grid, which decides the scorecard)"
            if running
            else ""
        ),
        "a5-detection": f"{detection_probability(n):.1%}",
        "a5-draws": str(n),
        "a5-seed": str(check.get("seed", "")),
        "a5-tolerance": f"|a - b| <= {tol.get('atol', '')} + {tol.get('rtol', '')} |b|",
        "a5-verdict": check.get("verdict", "not checked"),
        "a5-grid-size": grid_size,
        **chaotic,
    }


__all__ = [
    "DESIGN_COSTS",
    "BundleView",
    "cost_projection",
    "registered_designs",
    "bundle_table",
    "bundle_texts",
    "bundles_in_use",
    "contents_table",
    "landing_table",
    "plot_landings",
    "size_projection",
]
