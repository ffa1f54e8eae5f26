"""Paper 1, Sec. 4.2, App. A.3 and Tab. 3 ("on loss or entropy"): the one strong signal of the grid explained
(appendix A6).

One configuration of the book's grid, wine_pl at lr 1e-2, 100 epochs, Q = 50, is found almost
perfectly by the loss metric and hardly by the entropy metric. :func:`strong_signal` reads that
cell, and the same cell with other seeds (another split and training context), through the
results store:

* per seed: the vanilla attack on C', the probe's AUC(Delta S) on loss and on entropy, and the loss
  ratio L_v(M_theta) / L_v(M_ref) with the members' training loss at that epoch;
* the per-category AUCs of App. A.3 (:func:`.instrument.category_aucs`);
* :func:`loss_and_entropy`: why the two metrics disagree. The loss reads the probability of the
  query's own label; the entropy reads how spread the prediction is, whatever the label. A model
  that moved probability onto the members' labels without becoming more (or less) certain overall
  shows in the loss and not in the entropy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from iclmem.chapters.ch_a6_instrument.instrument import auc_interval, category_aucs, context_scores
from iclmem.data import Dataset
from iclmem.probe.settings import ProbeSettings
from iclmem.training.grid import RunSpec, probe_grid, run_grid, table_of

#: The strong signal's default probe: 50 + 50 queries, 200 bootstrap draws.
STRONG_PROBE = ProbeSettings(max_queries=50, n_boot=200)


def strong_signal(
    spec: RunSpec,
    epoch: int,
    reference,
    seeds: Sequence[int] = (0, 1),
    probe: ProbeSettings = STRONG_PROBE,
    tables: Mapping[str, Dataset] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(per seed, per category at the first seed, loss against entropy per pool at the first seed)``; every seed's
    run probed with ``probe``'s candidates, query cap and bootstrap draws at ``epoch``, under its own seed."""
    n_boot = probe.n_boot
    specs = [replace(spec, seed=int(s)) for s in seeds]
    runs = run_grid(specs, reference, tables=tables, progress=False)
    table = table_of(spec.dataset, tables)
    rows, first = [], None
    for s, run in zip(specs, runs, strict=True):
        summary, scores = probe_grid(
            [s],
            [run],
            reference,
            replace(probe, epochs=(epoch,), seed=s.seed),
            progress=False,
            tables={s.dataset: table},
        )
        p = summary.iloc[0]
        vanilla = auc_interval(*context_scores(run, table, epoch, reference, 1.0, s.seed), n_boot, s.seed)
        m = run.metrics.set_index("epoch").loc[epoch]
        rows.append(
            {
                "seed": s.seed,
                "vanilla AUC": vanilla["auc"],
                "vanilla lo": vanilla["lo"],
                "probe AUC loss": float(p.auc_loss),
                "loss lo": float(p.auc_loss_lo),
                "probe AUC entropy": float(p.auc_entropy),
                "entropy lo": float(p.auc_entropy_lo),
                "loss ratio": float(m["loss_ratio"]),
                "train loss": float(m["train_loss"]),
                "collapsed": bool(m["collapsed"]),
            }
        )
        if first is None:
            first = scores[run.key]
    return pd.DataFrame(rows), category_aucs(first, epoch), loss_and_entropy(first, epoch)


def loss_and_entropy(scores: pd.DataFrame, epoch: int) -> pd.DataFrame:
    """Per pool: the mean over queries of the calibrated Delta S (M_theta minus M_ref, mean over manipulations) on
    loss and on entropy, and their correlation across queries."""
    ref = scores[scores.model == "ref"].groupby(["query_id", "is_member"])[["loss", "entropy"]].mean()
    theta = scores[(scores.model == "theta") & (scores.epoch == epoch)]
    delta = theta.groupby(["query_id", "is_member"])[["loss", "entropy"]].mean() - ref
    rows = []
    for member, part in delta.groupby(level="is_member"):
        rows.append(
            {
                "pool": "members" if member else "non-members",
                "queries": len(part),
                "mean Delta S loss": float(part.loss.mean()),
                "mean Delta S entropy": float(part.entropy.mean()),
                "correlation": float(np.corrcoef(part.loss, part.entropy)[0, 1]) if len(part) > 2 else np.nan,
            }
        )
    return pd.DataFrame(rows)


__all__ = ["loss_and_entropy", "strong_signal"]
