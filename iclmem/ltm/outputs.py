"""Turning LTM output logits into distributions and the scores the paper uses.

Classification (Sec. 4.2): probabilities over the labels present in the context; the
output slots beyond the context's ``n_classes`` are masked out.
Regression: a discretized ("bar") distribution over the standardized target, bins of equal
width on ``[-bin_bound, bin_bound]``; values outside are clipped into the outermost bins.
The density inside a bin is ``p_bin / width``, so the bar NLL of a value ``y`` in
standardized units is ``-log p_bin(y) + log width`` (add ``log scale`` for original units).
"""

from __future__ import annotations

import math

import torch


def bin_edges(n_bins: int, bound: float) -> torch.Tensor:
    """Equal-width bin edges on ``[-bound, bound]``."""
    return torch.linspace(-bound, bound, n_bins + 1)


def bin_index(y: torch.Tensor, n_bins: int, bound: float) -> torch.Tensor:
    """Index of the bin that holds each standardized value (clipped to the range)."""
    width = 2 * bound / n_bins
    return ((y.clamp(-bound, bound) + bound) / width).floor().long().clamp(0, n_bins - 1)


def bin_centers(n_bins: int, bound: float) -> torch.Tensor:
    edges = bin_edges(n_bins, bound)
    return (edges[:-1] + edges[1:]) / 2


def class_log_probs(logits: torch.Tensor, n_classes: torch.Tensor, max_classes: int) -> torch.Tensor:
    """Log-probabilities over the first ``n_classes`` slots (others are -inf).

    logits: (..., >= max_classes); n_classes broadcastable to logits.shape[:-1].
    """
    z = logits[..., :max_classes]
    slots = torch.arange(max_classes, device=z.device)
    valid = slots < n_classes.unsqueeze(-1)
    return torch.log_softmax(z.masked_fill(~valid, float("-inf")), dim=-1)


def bar_log_probs(logits: torch.Tensor, n_bins: int) -> torch.Tensor:
    return torch.log_softmax(logits[..., :n_bins], dim=-1)


def per_row_loss(
    logits: torch.Tensor,
    y: torch.Tensor,
    is_regression: torch.Tensor,
    n_classes: torch.Tensor,
    max_classes: int,
    n_bins: int,
    bound: float,
) -> torch.Tensor:
    """Cross-entropy (classification) or bar NLL in standardized units (regression).

    logits (B, R, n_out); y (B, R); is_regression (B,); n_classes (B,). Returns (B, R).
    Rows are not masked here: callers select query rows.
    """
    b, r = y.shape
    reg = is_regression[:, None].expand(b, r)
    nc = n_classes[:, None].expand(b, r)
    lp_cls = class_log_probs(logits, nc.clamp(min=1), max_classes)
    slot = torch.where(reg, torch.zeros_like(y), y).long().clamp(0, max_classes - 1)
    loss_cls = -lp_cls.gather(-1, slot.unsqueeze(-1)).squeeze(-1)
    if not bool(is_regression.any()):
        return loss_cls
    lp_bar = bar_log_probs(logits, n_bins)
    idx = bin_index(torch.where(reg, y, torch.zeros_like(y)), n_bins, bound)
    width = 2 * bound / n_bins
    loss_reg = -lp_bar.gather(-1, idx.unsqueeze(-1)).squeeze(-1) + math.log(width)
    return torch.where(reg, loss_reg, loss_cls)


def entropy(log_probs: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (nats) of a discrete distribution given as log-probabilities."""
    p = log_probs.exp()
    return -(p * torch.where(torch.isfinite(log_probs), log_probs, torch.zeros_like(log_probs))).sum(-1)
