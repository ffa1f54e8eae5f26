"""Appendix A2's prose numbers, read from the result files it renders and the code they describe (issue 53 item 5).

Every number the page states in words is glued from :func:`prose_texts`; a result file that is absent gives "-" for
its names, so the page renders whatever ``benchmarks/results/`` holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MISSING = "-"


def _range(values: list[float], fmt: str = "{:,.0f}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def _roofline(result: Mapping[str, Any]) -> dict[str, str]:
    one = result.get("runs", {}).get("current", {}).get("1")
    if not one:
        return {}
    step = max(one["finetuning"].values(), key=lambda r: r["gflop_per_step"])  # the largest step shape (Q = 512)
    book = list(one.get("probing_book", {}).values())
    synthetic = list(one.get("probing", {}).values())
    out = {
        "peak_1": f"{one['peak_gflop_per_s']:.0f}",
        "ft_gflops_1": f"{step['gflop_per_s']:.0f}",
        "ft_fraction_1": f"{step['fraction']:.0%}",
    }
    if book:
        out["book_contexts"] = _range([r["contexts"] for r in book])
        out["book_fraction_1"] = _range([100 * r["fraction"] for r in book]) + "%"
    if synthetic:
        out["synthetic_probes"] = _range([r["probes"] for r in synthetic])
    return out


def _softmax(result: Mapping[str, Any]) -> dict[str, str]:
    keys = int(result["vector_keys"])
    narrow = [
        (name, int(row["features"]))
        for name, row in result.get("finetuning", {}).items()
        if int(row["features"]) + 1 < keys  # the feature attention's tokens: every feature and the target
    ]
    text = (
        " and ".join(f"{name} has {n} features" for name, n in narrow)
        + ", so "
        + " and ".join(str(n + 1) for _, n in narrow)
        + " tokens with the target"
        if narrow
        else "none of the tables measured is that narrow"
    )
    return {"vector_keys": str(keys), "narrow_tables": text}


def _null(result: Mapping[str, Any]) -> dict[str, str]:
    largest = max(result["bounds"], key=lambda r: r["members"] * r["non_members"])
    b, m, n = int(result["resamples"]), int(largest["members"]), int(largest["non_members"])
    side = math.isqrt(int(result["rank_path_pairs"]))
    return {
        "null_permutations": f"{int(result['permutations']):,}",
        "null_resamples": str(b),
        "null_mflop": f"{2 * b * m * n / 1e6:.0f}",  # one (B x m) @ (m x n) product of win counts
        "null_queries": f"{m} + {n}",
        "rank_path_pairs": f"{side} x {side}" if side * side == int(result["rank_path_pairs"]) else str(side),
    }


def _concurrency(result: Mapping[str, Any]) -> dict[str, str]:
    return {
        "paper_requests": f"{int(result['paper_scale_requests']):,}",
        "window_measured": str(max(int(r["concurrency"]) for r in result["rows"])),
    }


def _kills(result: Mapping[str, Any]) -> dict[str, str]:
    params = result.get("parameters", {})
    tables = sorted({d for p in params.values() for d in p.get("datasets", [])})
    sizes = sorted({q for p in params.values() for q in p.get("query_sizes", [])})
    epochs = sorted({p["epochs"] for p in params.values() if "epochs" in p})
    setting = ", ".join(
        [f"notebooks {' and '.join(result.get('chapters', []))} on {', '.join(tables)}"]
        + [f"Q = {', '.join(map(str, sizes))}"] * bool(sizes)
        + [f"{', '.join(map(str, epochs))} epochs"] * bool(epochs)
    )
    return {"kill_setting": setting, "kill_instants": str(result["instants"])}


def prose_texts(
    results: Mapping[str, Mapping[str, Any]], architecture: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """The names notebook A2's prose glues, by result file.

    ``roofline``: ``peak_1`` (GFLOP/s on one thread), ``ft_gflops_1`` and ``ft_fraction_1`` (the largest fine-tuning
    step), ``book_contexts`` and ``book_fraction_1`` (the book's probing workload: distinct contexts per run, fraction
    of the peak), ``synthetic_probes``; ``softmax_keys``: ``vector_keys`` and ``narrow_tables``; ``null_speed``:
    ``null_permutations``, ``null_resamples``, ``null_mflop``, ``null_queries``, ``rank_path_pairs``;
    ``openai_concurrency``: ``paper_requests``, ``window_measured``; ``kill_random``: ``kill_setting``,
    ``kill_instants``; ``bootstrap_speed``: ``bootstrap_resamples``; ``finetune_speed``: ``finetune_context``. From the
    code: ``n_manipulations`` (the suite), ``default_window`` (requests in flight by default) and, from
    ``architecture`` (the model card's), ``n_heads`` and ``head_dim``.
    """
    from iclmem.llm.pacing import DEFAULT_CONCURRENCY
    from iclmem.probe.manipulations import MANIPULATIONS

    names = (
        "peak_1 ft_gflops_1 ft_fraction_1 book_contexts book_fraction_1 synthetic_probes vector_keys narrow_tables "
        "null_permutations null_resamples null_mflop null_queries rank_path_pairs paper_requests window_measured "
        "kill_setting kill_instants bootstrap_resamples finetune_context n_heads head_dim"
    ).split()
    out = dict.fromkeys(names, MISSING)
    readers = {
        "roofline": _roofline,
        "softmax_keys": _softmax,
        "null_speed": _null,
        "openai_concurrency": _concurrency,
        "kill_random": _kills,
    }
    for name, read in readers.items():
        if name in results:
            out.update(read(results[name]))
    if "bootstrap_speed" in results:
        out["bootstrap_resamples"] = _range([r["n_boot"] for r in results["bootstrap_speed"]["rows"]])
    if "finetune_speed" in results:
        out["finetune_context"] = _range([r["n_context"] for r in results["finetune_speed"]["rows"]])
    if architecture:
        out["n_heads"] = str(architecture["n_heads"])
        out["head_dim"] = str(architecture["d_model"] // architecture["n_heads"])
    out["n_manipulations"] = str(len(MANIPULATIONS))
    out["default_window"] = str(DEFAULT_CONCURRENCY)
    return out


__all__ = ["MISSING", "prose_texts"]
