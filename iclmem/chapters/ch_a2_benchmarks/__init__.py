"""Appendix A2 (notebook A2, no paper section): the speed benchmarks of ``benchmarks/``.

``results`` (reading the result files), ``tables`` (one table per benchmark), ``figures`` (roofline, decoding).
"""

from iclmem.chapters.ch_a2_benchmarks.figures import plot_decoding_curve, plot_roofline
from iclmem.chapters.ch_a2_benchmarks.prose import prose_texts
from iclmem.chapters.ch_a2_benchmarks.results import SECTIONED, other_results, read_results
from iclmem.chapters.ch_a2_benchmarks.tables import (
    decoding_summary,
    decoding_table,
    finetune_speed_table,
    kernel_ceiling_tables,
    kill_random_table,
    openai_concurrency_table,
    probe_speed_tables,
    roofline_speedups,
    roofline_table,
    settings,
    softmax_keys_table,
)

__all__ = [
    "prose_texts",
    "SECTIONED",
    "decoding_summary",
    "decoding_table",
    "finetune_speed_table",
    "kernel_ceiling_tables",
    "kill_random_table",
    "openai_concurrency_table",
    "other_results",
    "plot_decoding_curve",
    "plot_roofline",
    "probe_speed_tables",
    "read_results",
    "roofline_speedups",
    "roofline_table",
    "settings",
    "softmax_keys_table",
]
