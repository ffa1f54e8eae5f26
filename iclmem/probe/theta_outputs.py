"""M_theta's outputs on given tasks, cached by the run, the epoch and the exact task arrays (issue 55).

Beyond the probe's scores (:func:`iclmem.probe.probe_run`), a few readings ask a fine-tuned model for its outputs on
tasks of their own: chapter 07's held-out utility, appendix A6's context attack, held-out quality and context ladder.
A run served by a results bundle keeps no weights, so each such question would fine-tune the run again. What these
readings need of M_theta is a pure function of its weights and of the task arrays: :func:`theta_outputs` keeps it
in the results store under ``theta_outputs/<key>`` (key: the run, the epoch, what is asked and the sha256 of every
array of the tasks) and a store's bundle (:mod:`iclmem.bundle.store_runs`) keeps it under the same inputs without the
run's code version. The weights are checked by the bundle's run draws (training losses, metrics) and the model's
forward pass by its probe-score draws, so a served output can only be stale if those moved; a task built otherwise
has another digest and is computed again.

What is asked: ``"predict"`` (:meth:`~iclmem.ltm.interface.LTM.predict`: per task, each query's loss and point
prediction) or ``"score"`` (:func:`iclmem.probe.scoring.score_tasks`: per task, its query's loss, entropy and
confidence).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from ..bundle.serve import lookup
from ..ltm import ICLTask, ReferenceLTM
from ..store.atomic import atomic_write_bytes, atomic_write_text
from ..store.integrity import produce, seal, served
from ..store.keys import artifact_dir, code_version, content_key, input_key
from ..training.finetune import FinetuneRun
from .scoring import score_tasks

KIND = "theta_outputs"
FILE = "outputs.npz"
ASKED = ("predict", "score")


def tasks_digest(tasks: Sequence[ICLTask]) -> str:
    """sha256 over every array and setting of ``tasks``, in order: two task lists share it only when equal."""
    h = hashlib.sha256()
    for t in tasks:
        for name in ("context_x", "context_y", "query_x", "query_y"):
            value = getattr(t, name)
            array = np.asarray([] if value is None else value)
            h.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
            h.update(np.ascontiguousarray(array).tobytes() if array.dtype != object else repr(array.tolist()).encode())
        h.update(json.dumps([t.task, t.target_center, t.target_scale]).encode())
    return h.hexdigest()


def _compute(model, tasks: Sequence[ICLTask], asked: str) -> dict[str, np.ndarray]:
    if asked == "score":
        return {"scores": score_tasks(model, tasks)}
    with torch.no_grad():
        predictions = model.predict(list(tasks))
    out = {}
    for i, p in enumerate(predictions):
        out[f"loss_{i}"] = np.asarray(p.loss(), dtype=np.float64)
        point = np.asarray(p.point())
        out[f"point_{i}"] = np.array(point.tolist()) if point.dtype == object else point  # npz keeps no objects
    return out


def _read(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def theta_outputs(
    run: FinetuneRun, epoch: int, reference: ReferenceLTM, tasks: Sequence[ICLTask], asked: str = "predict"
) -> dict[str, np.ndarray]:
    """M_theta's outputs at ``epoch`` on ``tasks`` (``asked``: see the module docstring): from the run's results
    store, else a checked bundle, else computed (the run fine-tuned here first when it was served without weights)
    and stored. ``"predict"``: ``loss_<i>`` and ``point_<i>`` per task; ``"score"``: ``scores`` (tasks x 3)."""
    if asked not in ASKED:
        raise ValueError(f"asked={asked!r}: give one of {', '.join(ASKED)}")
    digest, which = tasks_digest(tasks), f"theta-{epoch}"
    root = getattr(run, "store", None) or run.path.parents[1]
    key = content_key(run.key, which, asked, digest, reference.store_identity, code_version(__name__))
    folder = artifact_dir(KIND, key, root)
    if not served(folder):
        bundled = lookup(KIND, bundle_key(run.input_key, which, asked, digest, reference)) if run.input_key else None
        if bundled is not None:
            return _read(bundled / FILE)

    def write() -> dict[str, np.ndarray]:
        values = _compute(run.model(epoch, reference), tasks, asked)
        buffer = io.BytesIO()
        np.savez(buffer, **values)
        atomic_write_bytes(folder / FILE, buffer.getvalue())
        params = {"run": run.key, "model": which, "asked": asked, "tasks": digest}
        atomic_write_text(folder / "params.json", json.dumps(params, indent=1))
        seal(folder, __name__, code_version(__name__))
        return values

    return produce(folder, lambda: _read(folder / FILE), write, what=f"M_theta's outputs {KIND}/{key}")


def bundle_key(run_input_key: str, which: str, asked: str, digest: str, reference: ReferenceLTM) -> str:
    """The outputs' name in a results bundle: the run's input key, the model, what is asked and the tasks' digest."""
    return input_key(run_input_key, which, asked, digest, reference.store_identity)


def predicted(outputs: dict[str, np.ndarray], i: int) -> tuple[np.ndarray, np.ndarray]:
    """Task ``i``'s (losses, point predictions) of a ``"predict"`` output."""
    return outputs[f"loss_{i}"], outputs[f"point_{i}"]


__all__ = ["ASKED", "FILE", "KIND", "bundle_key", "predicted", "tasks_digest", "theta_outputs"]
