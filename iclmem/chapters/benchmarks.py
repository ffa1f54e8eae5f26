"""Appendix A2 of this book (no paper section): the speed benchmarks of ``benchmarks/`` (notebook A2).

The benchmarks write one JSON file each to ``benchmarks/results/``; this module reads them and
shapes their ratios into the appendix's tables. Nothing here times anything: speed is measured in
``benchmarks/`` as ratios within one run, never in the book build.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

import iclmem

#: Benchmarks the appendix shows in sections of their own; any other result file is listed at the end.
SECTIONED = ("finetune_speed", "ltm_quality", "probe_speed", "bootstrap_speed")


def read_results(results_dir: str | Path = "benchmarks/results") -> dict[str, dict]:
    """Every ``<name>.json`` of ``results_dir`` (relative to the repository root unless absolute), by name."""
    folder = Path(results_dir)
    if not folder.is_absolute():
        folder = Path(iclmem.__file__).resolve().parents[1] / folder
    if not folder.is_dir():
        raise FileNotFoundError(f"no benchmark results in {folder}; run the scripts in benchmarks/ (see its README) or set results_dir.")
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def finetune_speed_table(result: dict) -> pd.DataFrame:
    """Fine-tuning steps per second per configuration, with seconds per step."""
    return pd.DataFrame(result["rows"]).assign(seconds_per_step=lambda d: 1 / d.steps_per_s)


def settings(result: dict) -> pd.DataFrame:
    """A benchmark's scalar settings and results (everything but its per-configuration ``rows``)."""
    return pd.Series({k: v for k, v in result.items() if k != "rows"}).to_frame("value")


def probe_speed_tables(result: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Batched vs naive probing throughput, and the ratios (with the largest score difference between the two)."""
    table = pd.DataFrame({k: result[k] for k in ("batched", "naive")}).T[["probes_per_cpu_s", "probes_per_wall_s", "wall_s"]]
    ratios = {k: v for k, v in result.items() if k.startswith("ratio") or k == "max_abs_difference"}
    return table, pd.Series(ratios).to_frame("value")


def other_results(results: dict[str, dict]) -> dict[str, pd.DataFrame]:
    """Result files without a section of their own, flattened one level, by name."""
    return {name: pd.json_normalize(results[name], max_level=1).T.rename(columns={0: "value"})
            for name in sorted(set(results) - set(SECTIONED))}


__all__ = ["SECTIONED", "finetune_speed_table", "other_results", "probe_speed_tables", "read_results", "settings"]
