"""The paper's grid as a distributed sweep (Sec. 5, Tab. 2; App. D, Tab. 12).

The paper's evaluation is 1,128 probing runs. A sweep runs a grid file (:func:`load_grid`) as
tasks on Dask distributed: a :class:`distributed.LocalCluster` by default (one process per
worker, one thread each), or an existing scheduler (``scheduler="tcp://host:8786"``; e.g. a
``dask_jobqueue.SLURMCluster``, see the book's "Running the sweep on a cluster").

One task = one :class:`~iclmem.training.grid.RunSpec`: fine-tune (or load from the store) in the spec's
regime, probe every dataset of the run with the 48 manipulations (or load the scores), and
summarize per probing epoch (AUC(Delta S), TPR@FPR, Tab. 3 outcome). The fine-tuning and probe
artifacts go to the content-addressed store as always; the task then writes a summary file
``<results>/sweep/<grid name>/<spec key>.json`` atomically, with status ``ok`` and the rows, or
``error`` with the exception and its traceback. So:

* a killed sweep resumes where it stopped (finished tasks are skipped, an interrupted fine-tune
  resumes from its last checkpoint), and a finished sweep re-runs nothing;
* a failing configuration is reported with its error and does not stop the others;
* notebooks read the summaries from the store (:func:`collect_sweep`), so a grid run on a
  cluster renders in the book without recomputation.

The spec key hashes the spec, the probe settings, the dataset sources, the reference
checkpoint's sha256 and the version of the code that computes the rows. On a cluster the
results folder must be on a filesystem that every worker sees.
"""

from .engine import (
    DEFAULT_TIMEOUT_S,
    Cluster,
    SweepResult,
    collect_sweep,
    connect,
    local_client,
    run_sweep,
    sweep_workers,
)
from .gridfile import (
    GRID_KEYS,
    PART_KEYS,
    PROBE_KEYS,
    DatasetSource,
    Grid,
    SweepError,
    load_grid,
    parse_grid,
)
from .tasks import probe_summary, read_summary, reference_sha, run_task, spec_key, summary_dir

__all__ = [
    "Cluster",
    "DEFAULT_TIMEOUT_S",
    "GRID_KEYS",
    "PART_KEYS",
    "PROBE_KEYS",
    "DatasetSource",
    "Grid",
    "SweepError",
    "SweepResult",
    "collect_sweep",
    "connect",
    "load_grid",
    "local_client",
    "parse_grid",
    "probe_summary",
    "read_summary",
    "reference_sha",
    "run_sweep",
    "run_task",
    "spec_key",
    "summary_dir",
    "sweep_workers",
]
