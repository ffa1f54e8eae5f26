"""Appendix A2 of this book (no paper section): the figures of the speed benchmarks (notebook A2): the roofline
and the LLM decoding curve."""

from __future__ import annotations

import pandas as pd


def plot_roofline(table: pd.DataFrame):
    """Achieved fraction of the measured float32 matmul peak per stage, one panel per thread count."""
    import matplotlib.pyplot as plt

    threads = sorted(table.threads.unique())
    codes = list(dict.fromkeys(table.code))
    fig, axes = plt.subplots(1, len(threads), figsize=(5.5 * len(threads), 3.6), sharey=True, squeeze=False)
    for ax, t in zip(axes[0], threads, strict=True):
        part = table[table.threads == t]
        stages = list(dict.fromkeys(part.stage))
        width = 0.8 / len(codes)
        for i, code in enumerate(codes):
            rows = part[part.code == code].set_index("stage").reindex(stages)
            ax.barh([j + i * width for j in range(len(stages))], rows["fraction of peak"], height=width, label=code)
        ax.set_yticks([j + width * (len(codes) - 1) / 2 for j in range(len(stages))], stages)
        ax.axvline(1.0, color="black", lw=1)
        ax.set_xlim(0, 1.05)
        ax.set_xlabel("fraction of the fp32 matmul peak")
        ax.set_title(f"{t} thread{'s' if t > 1 else ''}: peak {part['peak GFLOP/s'].iloc[0]:.0f} GFLOP/s")
    axes[0][0].invert_yaxis()
    axes[0][-1].legend(loc="lower right")
    fig.tight_layout()
    return fig


def plot_decoding_curve(result: dict):
    """Speed relative to llama.cpp (median of back-to-back pairs) against the batch, continuous and static."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for kind in ("continuous", "static"):
        points = sorted(
            (int(name.split()[1]), way["over_llama_cpp"])
            for name, way in result.get("ways", {}).items()
            if name.startswith(kind) and "over_llama_cpp" in way
        )
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=kind)
    ax.axhline(1.0, color="black", lw=1, label="llama.cpp")
    if "chosen_batch" in result:
        ax.axvline(result["chosen_batch"], color="grey", ls=":", label=f"chosen: {result['chosen_batch']}")
    ax.set_xlabel("rows decoded together (batch)")
    ax.set_ylabel("speed / llama.cpp")
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig
