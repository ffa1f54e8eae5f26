"""Probing a whole fine-tuning grid (Sec. 5, App. C): one summary row per (run, probing epoch)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from ..data import dataset_card
from ..finetune import FinetuneRun
from ..grid import RunSpec, prepared_table
from ..ltm import ReferenceLTM, load_reference
from .contexts import ProbeError
from .run import probe_run
from .summary import summarize_run


def probe_grid(specs: Sequence[RunSpec], runs: Sequence[FinetuneRun], reference: ReferenceLTM | None = None,
               epochs: Sequence[int] | None = None, n_candidates: int = 10, max_queries: int | None = None, seed: int = 0,
               n_boot: int = 200, results_dir: str | Path | None = None, progress: bool = True) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Probe every run at ``epochs`` (those it kept) and summarize each epoch (Tab. 3 outcome, AUC, TPR).

    Returns the summary (spec columns, dataset card's k and alpha, and :func:`summarize_run`'s
    columns) and the raw scores per run key. Scores come from the results store when present.
    """
    reference = reference or load_reference()
    if epochs is not None:
        kept_anywhere = set().union(*(run.config.probe_epochs for run in runs)) if runs else set()
        missing = sorted(set(epochs) - kept_anywhere)
        if missing:
            raise ProbeError(f"probing epochs {missing} were kept by none of the runs (kept: {sorted(kept_anywhere)}); fine-tuning keeps "
                             f"the paper's probing epochs (Tab. 2) up to each run's last epoch: choose epochs among those.")
    rows, scores = [], {}
    for spec, run in tqdm(list(zip(specs, runs, strict=True)), desc="probing runs", disable=not progress):
        table = prepared_table(spec.dataset)
        kept = [e for e in (epochs if epochs is not None else run.config.probe_epochs) if e in run.config.probe_epochs]
        sc = probe_run(run, table, kept, reference, n_candidates, None, seed, max_queries, results_dir=results_dir, progress=False)
        summary = summarize_run(sc, run, n_boot=n_boot, seed=seed)
        card = dataset_card(table).to_dict()
        for key, value in spec.to_dict().items():
            summary[key] = value
        summary["run_key"], summary["k"], summary["alpha"], summary["task"] = run.key, card.get("k"), card.get("alpha"), table.task
        rows.append(summary)
        scores[run.key] = sc
    return pd.concat(rows, ignore_index=True), scores
