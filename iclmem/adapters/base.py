"""What the TabICL and TabPFN adapters share (Sec. 4.1, 4.2): checkpoint files, batching, the LTM protocol.

An adapter wraps another package's torch module behind :class:`~iclmem.ltm.interface.LTM`, so
the one training loop (:mod:`iclmem.training`) fine-tunes it and the probe scores it exactly as
the reference LTM. It exposes what those modules read of a model: ``network`` (the torch module),
``cfg`` (limits: :class:`AdapterLimits`), ``max_classes``, ``checkpoint_sha256``, ``store_identity``, ``device``,
``state_dict()``, ``clone()``, ``trainable_parameters()`` and ``predict()``.

Batching: another architecture has no context mask, so tasks are grouped by their exact shape
(context rows, features, query rows) and number of classes, and each group is one forward pass
without padding; the probe's batches (:func:`iclmem.probe.scoring.score_tasks`) hold few shapes.

Preprocessing (the zero-information context, Sec. 4.2): a multiple-choice context is |Y| copies
of the query's features, so every feature is constant over the context. Any statistic fitted on
the context (standard scaling, constant-column removal) maps the query's features to a constant
and the model never sees them. ``preprocessing="dataset"`` (the default) feeds the features as
:class:`~iclmem.ltm.encoding.TableEncoder` standardized them, once, on the whole table;
``"context"`` applies the package's own per-context steps (what its scikit-learn wrapper or its
forward does), kept to measure what a naive probe would see. The switch holds for every forward,
fine-tuning and probing alike, so M_theta and M_ref always read the same inputs (and it is part of
the store key). Each adapter's module docstring names its steps. Ensembling over feature permutations
(``n_permutations``) is off (1) by default: one
deterministic forward per task.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from iclmem.user_errors import UserError

from ..ltm.interface import ICLTask, LTMInputError, Predictions, validate_task

Preprocessing = Literal["dataset", "context"]
PREPROCESSING: tuple[str, ...] = ("dataset", "context")


class BorderPredictions(Predictions):
    """:class:`~iclmem.ltm.interface.Predictions` over regression bins of unequal width.

    ``borders``: ``n_bins + 1`` increasing edges in standardized target units (TabPFN's stored
    borders); values outside fall into the outermost bins. Loss, entropy and target confidence are
    those of the discrete bin distribution, as for the reference LTM; :meth:`nll` adds the log
    width of the bin holding the value.
    """

    def __init__(self, log_probs: torch.Tensor, task: ICLTask, borders: torch.Tensor) -> None:
        super().__init__(log_probs, task, len(borders) - 1, float(borders.abs().max()))
        self.borders = borders.to(torch.float32)

    def _target_index(self) -> torch.Tensor:
        if not self.task.is_regression:
            return super()._target_index()
        if self.task.query_y is None:
            raise LTMInputError("this task has no query_y; losses and confidences need the true query targets.")
        z = torch.as_tensor(standardized_targets(self.task, self.task.query_y))
        idx = torch.bucketize(z, self.borders[1:-1], right=True).clamp(0, len(self.borders) - 2)
        return idx.to(self.log_probs.device)

    def nll(self) -> torch.Tensor:
        widths = (self.borders[1:] - self.borders[:-1]).to(self.log_probs.device)
        return self.loss() + widths[self._target_index()].log()

    def point(self) -> np.ndarray:
        if not self.task.is_regression:
            return super().point()
        c, s = self.task.target_stats()
        centers = ((self.borders[1:] + self.borders[:-1]) / 2).to(self.log_probs.device)
        return (self.log_probs.exp() * centers).sum(-1).detach().cpu().numpy() * s + c


class AdapterCheckpointError(UserError, RuntimeError):
    """A TabICL/TabPFN checkpoint is missing, unreadable or of another architecture; the message says where weights
    come from."""


@dataclass(frozen=True)
class AdapterLimits:
    """The sizes an adapted model takes (read by fine-tuning and the probe as ``model.cfg``)."""

    max_classes: int
    max_features: int
    max_context: int
    n_bins: int = 0
    bin_bound: float = 0.0


@contextlib.contextmanager
def quiet_import():
    """Import a package without the warnings it raises at import (tqdm's 'IProgress not found' in a notebook kernel)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        yield


def import_package(name: str, pin: str, module: str):  # noqa: ANN201 - the module imported
    """``import module`` of an adapter's optional package, quietly; without the ``ltms`` extra, an error with the
    fix."""
    import importlib

    try:
        with quiet_import():
            return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - the extra is installed by make test
        raise AdapterCheckpointError(
            f"the {name} adapter needs the package: pip install 'iclmem[ltms]' ({pin})."
        ) from exc


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def checked_path(path: str | Path, family: str, where: str) -> Path:
    """``path`` as an existing file, else an :class:`AdapterCheckpointError` saying where the weights come from."""
    p = Path(path)
    if not p.is_file():
        raise AdapterCheckpointError(
            f"no {family} checkpoint at {p}: iclmem never downloads weights. {where} "
            f"Put the file at {p} (or pass its path as model={family.lower()}:PATH)."
        )
    return p


def context_slots(task: ICLTask) -> np.ndarray:
    """Context labels as output slots 0..k-1 (sorted unique labels, the interface's canonical order)."""
    return np.searchsorted(task.classes(), np.asarray(task.context_y)).astype(np.float32)


def standardized_targets(task: ICLTask, y: np.ndarray) -> np.ndarray:
    """Regression targets in the task's standardized units (``target_stats``, dataset-level by default)."""
    c, s = task.target_stats()
    return ((np.asarray(y, dtype=np.float64) - c) / s).astype(np.float32)


def context_standardize(cx: np.ndarray, qx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standard scaling fitted on the context rows (zero spread -> scale 1), as the packages' wrappers do.

    On a multiple-choice context every column is constant, so every query feature becomes 0.
    """
    with np.errstate(all="ignore"):
        mean = np.nanmean(cx, axis=0)
        std = np.nanstd(cx, axis=0)
    mean = np.nan_to_num(mean)
    std = np.where(np.isfinite(std) & (std > 1e-6), std, 1.0)
    return ((cx - mean) / std).astype(np.float32), ((qx - mean) / std).astype(np.float32)


class AdapterLTM:
    """Common part of the adapters: one forward per shape group, permutation ensembles, cloning, identity.

    Subclasses implement :meth:`_forward` (log-probabilities of the queries of a group of tasks of
    one shape) and set ``kind`` ("tabicl" or "tabpfn").
    """

    kind = "adapter"

    def __init__(
        self,
        network: torch.nn.Module,
        limits: AdapterLimits,
        checkpoint_sha256: str,
        *,
        preprocessing: Preprocessing = "dataset",
        n_permutations: int = 1,
        seed: int = 0,
        model_path: str | None = None,
    ) -> None:
        if preprocessing not in PREPROCESSING:
            raise LTMInputError(
                f"preprocessing must be one of {PREPROCESSING}, got {preprocessing!r}; 'dataset' keeps the query's "
                "features visible in a multiple-choice context (Sec. 4.2)."
            )
        if n_permutations < 1:
            raise LTMInputError(f"n_permutations must be >= 1, got {n_permutations}; 1 is one deterministic forward.")
        self.network = network
        self.cfg = limits
        self.checkpoint_sha256 = checkpoint_sha256
        self.preprocessing = preprocessing
        self.n_permutations = n_permutations
        self.seed = seed
        self.model_path = model_path
        #: the checkpoint's non-weight fields (config, architecture name, criterion state), written back by :meth:`save`
        self.checkpoint_extra: dict = {}

    # --- identity --------------------------------------------------------------------------
    @property
    def store_identity(self) -> str:
        """The checkpoint and the probing options as results-store keys read them."""
        from ..runtime.device import store_identity
        from ..store.keys import code_version

        # the adapters live outside the closure of the reference's runs, so the adapter's own closure is hashed here
        options = (
            f"{self.kind}:{self.checkpoint_sha256}:{self.preprocessing}:p{self.n_permutations}s{self.seed}"
            f":code{code_version(type(self).__module__)}"
        )
        return store_identity(options, self.device)

    @property
    def device(self) -> torch.device:
        return next(self.network.parameters()).device

    @property
    def max_classes(self) -> int:
        """The classes the adapted model predicts at most (:attr:`AdapterLimits.max_classes`, from its checkpoint)."""
        return self.cfg.max_classes

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.network.parameters() if p.requires_grad]

    def state_dict(self) -> dict:
        return self.network.state_dict()

    def clone(self) -> AdapterLTM:
        """An independent copy (for fine-tuning); this model stays untouched."""
        other = copy.copy(self)
        other.network = copy.deepcopy(self.network)
        return other

    @property
    def invariances(self):
        """What the probe may merge (:mod:`iclmem.probe.invariances`): row order only, unless a subclass argues more.

        Both architectures read the context rows through attention without row positions, so
        permuting them permutes a sum (exact up to float32 rounding; tested).
        """
        from ..probe.invariances import Invariances

        return Invariances(True, False, f"{self.kind}: context rows enter through attention without row positions")

    def checkpoint_blob(self) -> dict:
        """This model's weights in its package's own checkpoint format (what ``model_path`` reads)."""
        raise NotImplementedError

    def save(self, path: str | Path) -> Path:
        """Write the current weights (e.g. M_theta of a run) as a checkpoint of the package's format, loadable as
        ``model=KIND:PATH``
        and by the package's own scikit-learn wrapper."""
        from ..store.atomic import atomic_torch_save

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_torch_save(self.checkpoint_blob(), path)
        return path

    def input_rows(self, task: ICLTask) -> int:
        return len(task.context_x) + len(task.query_x)

    # --- prediction ------------------------------------------------------------------------
    def _forward(
        self, tasks: list[ICLTask], cx: np.ndarray, qx: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(B, n_q, k or n_bins) log-probabilities for tasks of one shape, and the regression borders (or None)."""
        raise NotImplementedError

    def _features(self, tasks: list[ICLTask]) -> tuple[np.ndarray, np.ndarray]:
        cx = np.stack([np.asarray(t.context_x, dtype=np.float32) for t in tasks])
        qx = np.stack([np.asarray(t.query_x, dtype=np.float32) for t in tasks])
        return cx, qx

    def _group_log_probs(self, tasks: list[ICLTask]) -> tuple[torch.Tensor, torch.Tensor | None]:
        cx, qx = self._features(tasks)
        if self.n_permutations == 1:
            return self._forward(tasks, cx, qx)
        rng = np.random.default_rng(self.seed)
        runs, borders = [], None
        for _ in range(self.n_permutations):
            perm = rng.permutation(cx.shape[-1])
            lp, borders = self._forward(tasks, cx[..., perm], qx[..., perm])
            runs.append(lp)
        return torch.logsumexp(torch.stack(runs), dim=0) - np.log(self.n_permutations), borders

    def predict(self, tasks: list[ICLTask], grad: bool = False) -> list[Predictions]:
        """Predictive distributions for every query of every task; tasks of equal shape share a forward."""
        for t in tasks:
            validate_task(t, self.cfg.max_classes, self.cfg.max_features, self.cfg.max_context)
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, t in enumerate(tasks):
            n_classes = 0 if t.is_regression else len(t.classes())  # one softmax width per forward
            groups[(len(t.context_x), t.context_x.shape[1], len(t.query_x), t.task, n_classes)].append(i)
        out: list[Predictions | None] = [None] * len(tasks)
        with torch.set_grad_enabled(grad):
            for idx in groups.values():
                group = [tasks[i] for i in idx]
                lp, borders = self._group_log_probs(group)
                if not grad:
                    lp = lp.detach().cpu()
                for j, i in enumerate(idx):
                    t = tasks[i]
                    k = lp.shape[-1] if t.is_regression else len(t.classes())
                    if borders is not None and t.is_regression:
                        out[i] = BorderPredictions(lp[j, :, :k], t, borders.detach().cpu())
                    else:
                        out[i] = Predictions(lp[j, :, :k], t, self.cfg.n_bins, self.cfg.bin_bound)
        return out  # type: ignore[return-value]


__all__ = [
    "import_package",
    "quiet_import",
    "BorderPredictions",
    "AdapterCheckpointError",
    "AdapterLimits",
    "AdapterLTM",
    "PREPROCESSING",
    "Preprocessing",
    "checked_path",
    "context_slots",
    "context_standardize",
    "sha256_file",
    "standardized_targets",
]
