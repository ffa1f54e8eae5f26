"""Appendix A2 of this book (no paper section): reading the speed benchmarks' result files (notebook A2).

The benchmarks of ``benchmarks/`` write one JSON file each to ``benchmarks/results/``; :func:`read_results` reads
them, and :func:`other_results` lists those without a section of their own (:data:`SECTIONED`). Nothing here times
anything: speed is measured in ``benchmarks/`` as ratios within one run, never in the book build.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

import iclmem

#: Benchmarks the appendix shows in sections of their own; any other result file is listed at the end.
SECTIONED = (
    "roofline",
    "finetune_speed",
    "ltm_quality",
    "probe_speed",
    "bootstrap_speed",
    "null_speed",
    "openai_concurrency",
    "llm_decoding",
    "kill_random",
    "kernel_ceiling",
    "softmax_keys",
)


def read_results(results_dir: str | Path = "benchmarks/results") -> dict[str, dict]:
    """Every ``<name>.json`` of ``results_dir`` (relative to the repository root unless absolute), by name."""
    folder = Path(results_dir)
    if not folder.is_absolute():
        folder = Path(iclmem.__file__).resolve().parents[1] / folder
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no benchmark results in {folder}; run the scripts in benchmarks/ (see its README) or set results_dir."
        )
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def other_results(results: dict[str, dict]) -> dict[str, pd.DataFrame]:
    """Result files without a section of their own, flattened one level, by name."""
    return {
        name: pd.json_normalize(results[name], max_level=1).T.rename(columns={0: "value"})
        for name in sorted(set(results) - set(SECTIONED))
    }
