"""The model interface every LTM exposes to fine-tuning and probing (Sec. 4.1, 4.2).

An :class:`ICLTask` is one (context, queries) pair on encoded features. An LTM predicts a
distribution for every query of many tasks of different sizes in one padded, masked batch:

* classification: probabilities over the labels present in the context. Labels are mapped
  to output slots canonically (sorted unique context labels -> slots 0..k-1), so the same
  label set always uses the same slots;
* regression: a bar distribution over the target standardized with ``target_center`` and
  ``target_scale`` (dataset-level statistics by default, see :mod:`iclmem.ltm.encoding`).

:class:`Predictions` holds log-probabilities and derives the three probing scores the paper
uses (Sec. 4.2): loss (cross-entropy / bar NLL), entropy and target confidence (probability
of the true class, or probability mass of the bin holding the true value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from iclmem.user_errors import UserError

from .outputs import bin_centers, bin_index


class LTMInputError(UserError, ValueError):
    """Bad input to an LTM: the message names the problem and the fix."""


@dataclass
class ICLTask:
    """One in-context learning problem on encoded features.

    context_x (n_ctx, F) and query_x (n_q, F): encoded features (NaN = missing).
    context_y (n_ctx,): raw labels (classification) or target values (regression).
    query_y (n_q,) or None: true labels/values, needed for losses and confidences.
    """

    context_x: np.ndarray
    context_y: np.ndarray
    query_x: np.ndarray
    query_y: np.ndarray | None = None
    task: str = "classification"
    target_center: float | None = None
    target_scale: float | None = None

    @property
    def is_regression(self) -> bool:
        return self.task == "regression"

    def classes(self) -> np.ndarray:
        """Sorted unique context labels: slot i holds ``classes()[i]``."""
        return np.unique(self.context_y)

    def target_stats(self) -> tuple[float, float]:
        if self.target_center is not None and self.target_scale is not None:
            return float(self.target_center), float(self.target_scale)
        y = self.context_y.astype(np.float64)
        return float(y.mean()), float(y.std() + 1e-6)


def validate_task(task: ICLTask, max_classes: int, max_features: int, max_context: int) -> None:
    """Raise :class:`LTMInputError` for inputs the model cannot take."""
    if task.task not in ("classification", "regression"):
        raise LTMInputError(f"task must be 'classification' or 'regression', got {task.task!r}.")
    cx, qx = np.asarray(task.context_x), np.asarray(task.query_x)
    if cx.ndim != 2 or qx.ndim != 2:
        raise LTMInputError("context_x and query_x must be 2-D arrays (rows x features).")
    if len(cx) == 0:
        raise LTMInputError("the context is empty; give at least one context row.")
    if len(qx) == 0:
        raise LTMInputError("there are no query rows; give at least one query row.")
    if cx.shape[1] != qx.shape[1]:
        raise LTMInputError(
            f"context has {cx.shape[1]} features but queries have {qx.shape[1]}; encode both with the same encoder."
        )
    if cx.shape[1] > max_features:
        raise LTMInputError(
            f"{cx.shape[1]} features exceed the model's {max_features}; subsample them with "
            "iclmem.ltm.encoding.subsample_features."
        )
    if len(cx) > max_context:
        raise LTMInputError(f"context has {len(cx)} rows, more than the model's {max_context}; draw a smaller context.")
    if len(task.context_y) != len(cx):
        raise LTMInputError(f"context_y has {len(task.context_y)} entries for {len(cx)} context rows.")
    if task.query_y is not None and len(task.query_y) != len(qx):
        raise LTMInputError(f"query_y has {len(task.query_y)} entries for {len(qx)} query rows.")
    for name, arr in (("context_x", cx), ("query_x", qx)):
        if np.isinf(arr).any():
            raise LTMInputError(
                f"{name} holds inf values; encode features with TableEncoder (inf is not a valid value)."
            )
    if task.is_regression:
        ys = [task.context_y] + ([task.query_y] if task.query_y is not None else [])
        for y in ys:
            if not np.isfinite(np.asarray(y, dtype=np.float64)).all():
                raise LTMInputError("regression targets hold NaN or inf; drop those rows first.")
    else:
        if any(isinstance(v, float) and math.isnan(v) for v in np.asarray(task.context_y).tolist()):
            raise LTMInputError("context labels hold NaN; drop those rows first.")
        k = len(task.classes())
        if k > max_classes:
            raise LTMInputError(
                f"the context holds {k} classes, more than the model's {max_classes}; merge rare classes or choose "
                "another dataset."
            )
        if task.query_y is not None:
            unknown = set(np.asarray(task.query_y).tolist()) - set(task.classes().tolist())
            if unknown:
                raise LTMInputError(
                    f"query labels {sorted(unknown)[:5]} do not occur in the context; every query label must be a "
                    "context label."
                )


@dataclass
class Predictions:
    """Per-query predictive distributions of one task (log-probabilities over slots or bins)."""

    log_probs: torch.Tensor  # (n_q, k) classes or (n_q, n_bins) bins
    task: ICLTask
    n_bins: int = 0
    bin_bound: float = 0.0

    def _target_index(self) -> torch.Tensor:
        if self.task.query_y is None:
            raise LTMInputError("this task has no query_y; losses and confidences need the true query targets.")
        if self.task.is_regression:
            c, s = self.task.target_stats()
            z = torch.as_tensor((np.asarray(self.task.query_y, dtype=np.float64) - c) / s, dtype=torch.float32)
            return bin_index(z, self.n_bins, self.bin_bound).to(self.log_probs.device)
        slots = np.searchsorted(self.task.classes(), np.asarray(self.task.query_y))
        return torch.as_tensor(slots, dtype=torch.long, device=self.log_probs.device)

    def loss(self) -> torch.Tensor:
        """Cross-entropy over the discrete outputs: classes, or the bins of the bar distribution.

        This is the probing loss (Sec. 4.2, Tab. 2 "cross-entropy loss"). For regression it differs
        from the density NLL (:meth:`nll`) by the constant ``log(bin width)``, so it is always
        non-negative and loss ratios (the collapse test, Tab. 3) are well defined.
        """
        return -self.target_log_prob()

    def target_log_prob(self) -> torch.Tensor:
        """Log-probability of the true class, or of the bin holding the true value: ``-loss()``."""
        return self.log_probs.gather(-1, self._target_index()[:, None]).squeeze(-1)

    def nll(self) -> torch.Tensor:
        """Negative log-likelihood: cross-entropy, or bar-density NLL in standardized target units."""
        if not self.task.is_regression:
            return self.loss()
        return self.loss() + math.log(2 * self.bin_bound / self.n_bins)

    def entropy(self) -> torch.Tensor:
        """Shannon entropy (nats) of the discrete predictive distribution."""
        p = self.log_probs.exp()
        return -(p * torch.nan_to_num(self.log_probs, neginf=0.0)).sum(-1)

    def target_confidence(self) -> torch.Tensor:
        """Probability of the true class, or mass of the bin holding the true value."""
        return self.target_log_prob().exp()

    def point(self) -> np.ndarray:
        """Predicted label (classification) or predictive mean in original units (regression)."""
        p = self.log_probs.exp()
        if self.task.is_regression:
            c, s = self.task.target_stats()
            mean = (p * bin_centers(self.n_bins, self.bin_bound).to(p.device)).sum(-1)
            return mean.detach().cpu().numpy() * s + c
        return self.task.classes()[p.argmax(-1).cpu().numpy()]

    def probabilities(self) -> np.ndarray:
        return self.log_probs.exp().detach().cpu().numpy()


class LTM(Protocol):
    """What fine-tuning and probing need from a tabular in-context model."""

    def predict(self, tasks: list[ICLTask], grad: bool = False) -> list[Predictions]: ...

    def trainable_parameters(self) -> list[torch.nn.Parameter]: ...

    def clone(self) -> LTM: ...

    @property
    def max_classes(self) -> int:
        """The most classes a classification context may hold (the model's output slots, Sec. 4.1).

        Fine-tuning and the probe refuse a table with more classes before any compute
        (:func:`iclmem.training.finetune.prepare_run_data`, :func:`iclmem.probe.run.run_queries`,
        :func:`iclmem.book.table_parameters.fitting_query_sizes`), naming this limit.
        """
        ...
