"""Chapter 7 (IclMem Sec. 6's DP-SGD): utility, read on held-out **public** rows against their true targets.

The held-out rows are the context-pool rows outside C' (never a query and never in the training context,
:func:`public_task`); they serve the clipping norm (public data, outside the privacy budget) and utility: loss and
accuracy of M_theta and M_ref with bootstrap intervals (:func:`held_out_utility`).
"""

from __future__ import annotations

import numpy as np
import torch

from iclmem.data import Dataset
from iclmem.ltm import ICLTask
from iclmem.probe.theta_outputs import predicted, theta_outputs
from iclmem.stats.intervals import paired_bootstrap
from iclmem.training.finetune import FinetuneConfig, FinetuneRun, encoded_table, prepare_run_data


def public_task(manifest, table: Dataset, config: FinetuneConfig, max_classes: int | None = None):
    """C' as the context and the **public** rows outside it (the context pool outside C': never a member, a
    non-member or a row of C') as queries with their TRUE targets; and their ids.

    The targets are the table's target column at those rows, never the manifest's randomized labels
    (:meth:`~iclmem.data.manifest.SplitManifest.labels`). The rows serve both the clipping norm (public data, outside
    the privacy budget) and utility (accuracy on the task itself).
    """
    data = (
        prepare_run_data(manifest, table, config)
        if max_classes is None
        else prepare_run_data(manifest, table, config, max_classes)
    )
    ids = np.setdiff1d(manifest.context, data.context_ids)
    encoded = encoded_table(table, manifest.table_fingerprint)[1]
    x = encoded[ids][:, data.feature_columns]
    return data.task_for(x, table.target.to_numpy()[ids]), ids


def held_out_task(run: FinetuneRun, table: Dataset) -> tuple[ICLTask, np.ndarray]:
    """The held-out rows of ``run`` (:func:`public_task` of its manifest and config) and their ids."""
    return public_task(run.manifest, table, run.config)


def held_out_utility(
    run: FinetuneRun, table: Dataset, epoch: int, reference, n_boot: int = 200, seed: int = 0
) -> dict[str, float]:
    """Loss and accuracy of M_theta (at ``epoch``) and M_ref on the held-out rows against their true targets.

    With bootstrap 95% intervals (rows resampled), the number of rows (``held-out rows``) and, per row, 1 where
    the model predicts the true target (``theta correct``, ``ref correct``: for M2's paired intervals).
    """
    task, ids = held_out_task(run, table)
    truth = np.asarray(task.query_y)
    out: dict[str, float] = {"held-out rows": float(len(ids))}
    with torch.no_grad():
        ref = reference.predict([task])[0]
    outputs = {  # M_theta's from the store (or a results bundle): a served run is not fine-tuned again for them
        "theta": predicted(theta_outputs(run, epoch, reference, [task]), 0),
        "ref": (np.asarray(ref.loss(), dtype=np.float64), ref.point()),
    }
    for name, (loss, point) in outputs.items():
        values = {"loss": loss, "accuracy": (point == truth).astype(float)}
        out[f"{name} correct"] = values["accuracy"]
        for metric, v in values.items():
            out[f"{name} {metric}"] = float(v.mean())
            lo, hi, _ = paired_bootstrap(len(v), lambda i, v=v: float(v[i].mean()), n_boot, [seed, 0x07])
            out[f"{name} {metric} lo"], out[f"{name} {metric} hi"] = lo, hi
    return out
