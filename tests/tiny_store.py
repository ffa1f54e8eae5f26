"""A tiny results store for the store tests (tests/test_store_*.py): a table, a tiny reference LTM, a manifest,
one fine-tuning run (kept epochs 0, 1, 2) and its probe scores, plus a small completion cache.

:data:`BUILD` is the same work as a child script (for the tests that run two processes, or ``iclmem run``):
it defines ``table``, ``reference``, ``manifest``, ``run`` and ``scores`` for the store ``results``.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from iclmem.data import deduplicate, load_dataset, split_manifest
from iclmem.finetune import FinetuneConfig, finetune
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.probe import probe_run

#: The child script's version of :func:`inputs` and :func:`build` (``results``, ``lr`` and ``table_csv`` given).
BUILD = textwrap.dedent("""
    import numpy as np, pandas as pd, torch
    from iclmem.data import deduplicate, load_dataset, split_manifest
    from iclmem.finetune import FinetuneConfig, finetune
    from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120)})
    frame["target"] = (frame.a > 0).astype(int)
    frame.to_csv(table_csv, index=False)
    table = deduplicate(load_dataset(table_csv, target="target", task="classification"))
    torch.manual_seed(0)
    reference = ReferenceLTM(TabularICLTransformer(LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16,
                                                             max_context=64)).eval(), checkpoint_sha256="tiny-store")
    manifest = split_manifest(table, query_size=10, seed=0, results_dir=results)
    run = finetune(manifest, table, FinetuneConfig(lr, epochs=2, context_size=20, probe_epochs=(0, 1, 2)),
                   reference, results, progress=False)
""")


@dataclass
class Inputs:
    table: object
    reference: ReferenceLTM


def inputs(folder: Path) -> Inputs:
    """The table (written to ``folder/table.csv``) and the tiny reference LTM; the same on every call."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120)})
    frame["target"] = (frame.a > 0).astype(int)
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / "table.csv", index=False)
    table = deduplicate(load_dataset(folder / "table.csv", target="target", task="classification"))
    torch.manual_seed(0)
    network = TabularICLTransformer(
        LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)
    ).eval()
    return Inputs(table, ReferenceLTM(network, checkpoint_sha256="tiny-store"))


CONFIG = FinetuneConfig(1e-2, epochs=2, context_size=20, probe_epochs=(0, 1, 2))


def build(inp: Inputs, results: Path, load_only: bool = False):
    """Manifest, run and probe scores in ``results`` (computed, or read where the store serves them)."""
    manifest = split_manifest(inp.table, query_size=10, seed=0, results_dir=results)
    run = finetune(manifest, inp.table, CONFIG, inp.reference, results, progress=False, load_only=load_only)
    if run is None:
        return manifest, None, None
    scores = probe_run(
        run, inp.table, reference=inp.reference, manipulations=["baseline"], max_queries=4, progress=False
    )
    return manifest, run, scores
