"""A tiny results store for the store tests (tests/store/test_store_*.py): a table, a tiny reference LTM, a manifest,
one fine-tuning run (kept epochs 0, 1, 2) and its probe scores, plus a small completion cache.

:data:`BUILD` is the same work as a child script (for the tests that run two processes, or ``iclmem run``):
it defines ``table``, ``reference``, ``manifest``, ``run`` and ``scores`` for the store ``results``.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from killing import TINY_INPUTS

from iclmem.data import split_manifest
from iclmem.ltm import ReferenceLTM
from iclmem.probe import probe_run
from iclmem.probe.settings import ProbeSettings
from iclmem.training.finetune import FinetuneConfig, finetune

#: The child script's version of :func:`inputs` and :func:`build` (``results``, ``lr`` and ``table_csv`` given).
BUILD = (
    'reference_sha = "tiny-store"\n'
    + TINY_INPUTS
    + textwrap.dedent("""
    from iclmem.data import split_manifest
    from iclmem.training.finetune import FinetuneConfig, finetune

    manifest = split_manifest(table, query_size=10, seed=0, results_dir=results)
    run = finetune(manifest, table, FinetuneConfig(lr, epochs=2, context_size=20, probe_epochs=(0, 1, 2)),
                   reference, results, progress=False)
""")
)


@dataclass
class Inputs:
    table: object
    reference: ReferenceLTM


def inputs(folder: Path) -> Inputs:
    """The table (written to ``folder/table.csv``) and the tiny reference LTM (:data:`killing.TINY_INPUTS`)."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {"table_csv": str(folder / "table.csv"), "reference_sha": "tiny-store"}
    exec(TINY_INPUTS, made)  # noqa: S102 - the child scripts' own code, run here for the same inputs
    return Inputs(made["table"], made["reference"])


CONFIG = FinetuneConfig(1e-2, epochs=2, context_size=20, probe_epochs=(0, 1, 2))


def build(inp: Inputs, results: Path, load_only: bool = False):
    """Manifest, run and probe scores in ``results`` (computed, or read where the store serves them)."""
    manifest = split_manifest(inp.table, query_size=10, seed=0, results_dir=results)
    run = finetune(manifest, inp.table, CONFIG, inp.reference, results, progress=False, load_only=load_only)
    if run is None:
        return manifest, None, None
    settings = ProbeSettings(max_queries=4, manipulations=("baseline",))
    scores = probe_run(run, inp.table, inp.reference, settings, progress=False)
    return manifest, run, scores
