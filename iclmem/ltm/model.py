"""A small PFN-style tabular in-context transformer: the reference LTM (M_ref).

The paper fine-tunes and probes ConTextTab (Sec. 4.1); its weights cannot be fetched
here, so the companion ships this model instead. The architecture follows the
TabPFN v2 / nanoTabPFN pattern:

* every cell (row r, column c) is a token: value and missing indicator -> linear embedding;
* the target is one more column; context rows carry a target embedding (class slot
  embedding or standardized value), query rows carry a learned "unknown target" embedding;
* each layer alternates attention across the columns of a row and attention across rows
  within a column; context rows attend to context rows and query rows attend to the
  context only, so a query's prediction never depends on other queries in the batch;
* the target cell of a query row is decoded into class logits (at most ``MAX_CLASSES``
  slots) or into a bar distribution over the standardized target (``n_bins`` bins).

Only target cells are decoded, so the last layer computes nothing else
(:meth:`_Block.target_cells`): the same outputs and gradients as the full layer, to float32
rounding, for less work per fine-tuning step (``benchmarks/finetune_speed.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .attention import attention

MAX_CLASSES = 10


@dataclass(frozen=True)
class LTMConfig:
    """Architecture hyperparameters of the reference LTM."""

    d_model: int = 96
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 192
    n_bins: int = 64
    bin_bound: float = 4.0
    max_classes: int = MAX_CLASSES
    max_features: int = 32
    max_context: int = 512
    column_embedding: bool = False  # learned embedding per column index (feature identity)

    def __post_init__(self) -> None:
        if self.n_layers < 1:
            raise ValueError(
                f"n_layers={self.n_layers}: the LTM needs at least one layer (its last layer decodes the target cells)"
            )

    def to_dict(self) -> dict:
        return asdict(self)


class _Block(nn.Module):
    """One layer: feature attention, row attention (masked to the context), feed-forward."""

    def __init__(self, cfg: LTMConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.norm_feat = nn.LayerNorm(d)
        self.qkv_feat = nn.Linear(d, 3 * d)
        self.out_feat = nn.Linear(d, d)
        self.norm_row = nn.LayerNorm(d)
        self.qkv_row = nn.Linear(d, 3 * d)
        self.out_row = nn.Linear(d, d)
        self.norm_ff = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, d))

    def _attend(
        self,
        x: torch.Tensor,
        qkv: nn.Linear,
        out: nn.Linear,
        mask: torch.Tensor | None,
        n_keys: int | None = None,
        queries: slice | None = None,
    ) -> torch.Tensor:
        """Multi-head self-attention of x (N, T, d) with keys and values from its first ``n_keys`` tokens.

        With ``n_keys < T`` the key and value projections run on those tokens only (the same
        weights, sliced from ``qkv``): query rows are never keys, so their k and v are not computed.
        ``queries`` (a slice of the T tokens, default all) are the tokens whose output is wanted: only
        they are projected to queries, and the result is (N, len(queries), d).
        """
        n, t, d = x.shape
        h = self.n_heads
        if (n_keys is None or n_keys >= t) and queries is None:
            q, k, v = qkv(x).view(n, t, 3, h, d // h).permute(2, 0, 3, 1, 4)  # each (N, h, T, d/h)
        else:
            n_keys = t if n_keys is None else min(n_keys, t)
            xq = x if queries is None else x[:, queries]
            w, bias = qkv.weight, qkv.bias
            q = F.linear(xq, w[:d], bias[:d]).view(n, xq.shape[1], h, d // h).transpose(1, 2)  # (N, h, T_q, d/h)
            kv = F.linear(x[:, :n_keys], w[d:], bias[d:]).view(n, n_keys, 2, h, d // h)
            k, v = kv.permute(2, 0, 3, 1, 4)  # each (N, h, n_keys, d/h)
        y = attention(q, k, v, mask)  # (N, h, T_q, d/h)
        return out(y.transpose(1, 2).reshape(n, q.shape[2], d))

    def forward(
        self, x: torch.Tensor, feat_mask: torch.Tensor | None, key_mask: torch.Tensor | None, n_keys: int
    ) -> torch.Tensor:
        """x: (B, R, C, d); feat_mask: (B, C) valid columns or None (all valid);
        key_mask: (B, n_keys) which of the first ``n_keys`` rows are context rows (bool) or their
        additive log-multiplicity (float, -inf off the context), or None (all are context, once);
        rows from ``n_keys`` on are never keys."""
        b, r, c, d = x.shape
        # attention across the columns of each row
        xf = x.reshape(b * r, c, d)
        fm = (
            None
            if feat_mask is None
            else feat_mask[:, None, None, None, :].expand(b, r, 1, 1, c).reshape(b * r, 1, 1, c)
        )
        xf = xf + self._attend(self.norm_feat(xf), self.qkv_feat, self.out_feat, fm)
        x = xf.view(b, r, c, d)
        # attention across rows, per column: keys and values come from context rows only
        xr = x.transpose(1, 2).reshape(b * c, r, d)
        rm = (
            None
            if key_mask is None
            else key_mask[:, None, None, None, :].expand(b, c, 1, 1, n_keys).reshape(b * c, 1, 1, n_keys)
        )
        xr = xr + self._attend(self.norm_row(xr), self.qkv_row, self.out_row, rm, n_keys)
        xr = xr + self.ff(self.norm_ff(xr))
        return xr.view(b, c, r, d).transpose(1, 2)

    def target_cells(
        self, x: torch.Tensor, feat_mask: torch.Tensor | None, key_mask: torch.Tensor | None, n_keys: int
    ) -> torch.Tensor:
        """This layer's output at the target cell of every row, (B, R, d): all the last layer must compute.

        Only the target cells of the last layer are decoded (:meth:`TabularICLTransformer.forward`),
        so that layer needs its feature attention's query at the target cell alone (keys and values
        still from every cell of the row), and its row attention and feed-forward on the target
        column alone: 1 of C columns. The result equals ``forward(...)[:, :, -1]`` up to float32
        rounding, forward and backward (``tests/ltm/test_ltm.py``); the saving per fine-tuning step is
        measured by ``benchmarks/finetune_speed.py``.
        """
        b, r, c, d = x.shape
        xf = x.reshape(b * r, c, d)
        fm = (
            None
            if feat_mask is None
            else feat_mask[:, None, None, None, :].expand(b, r, 1, 1, c).reshape(b * r, 1, 1, c)
        )
        t = x[:, :, -1] + self._attend(
            self.norm_feat(xf), self.qkv_feat, self.out_feat, fm, queries=slice(c - 1, c)
        ).view(b, r, d)
        rm = None if key_mask is None else key_mask[:, None, None, :]  # (B, 1, 1, n_keys)
        t = t + self._attend(self.norm_row(t), self.qkv_row, self.out_row, rm, n_keys)
        return t + self.ff(self.norm_ff(t))


def key_rows(ctx_mask: torch.Tensor, ctx_count: torch.Tensor | None = None) -> tuple[int, torch.Tensor | None]:
    """The row-attention keys of a batch: (n_keys, key_mask).

    Keys and values are context rows only. ``n_keys`` is one past the last context row of any
    task, so rows from there on are never computed as keys (a batch laid out context-first, as
    :func:`~iclmem.ltm.reference.collate_tasks` does, attends over its context block only, not
    over all R rows: 3x fewer attention FLOPs at 256 context + 512 query rows). ``key_mask`` is
    None when every one of those rows is a context row of every task (no mask, the fast kernel).

    ``ctx_count`` (B, R): how many identical copies of the row the context holds (a merged row,
    see :func:`~iclmem.ltm.reference.collate_tasks`). The key mask is then additive,
    ``log(count)`` on context rows and ``-inf`` elsewhere, so attention weighs a merged row
    exactly as its copies: ``sum_j m_j e^{s_j} v_j / sum_j m_j e^{s_j}``.
    """
    any_ctx = ctx_mask.any(dim=0)
    if not bool(any_ctx.any()):
        raise ValueError("a batch without context rows: every task needs at least one context row")
    n_keys = int(torch.nonzero(any_ctx)[-1]) + 1
    head = ctx_mask[:, :n_keys]
    if ctx_count is not None and not bool((ctx_count[:, :n_keys][head] == 1).all()):
        bias = torch.where(
            head, ctx_count[:, :n_keys].clamp_min(1).log(), torch.full_like(ctx_count[:, :n_keys], float("-inf"))
        )
        return n_keys, bias
    return n_keys, (None if bool(head.all()) else head)


class TabularICLTransformer(nn.Module):
    """The reference tabular in-context learner (see module docstring)."""

    def __init__(self, cfg: LTMConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.cell_embed = nn.Linear(2, d)
        self.target_column = nn.Parameter(torch.randn(d) * 0.02)
        self.class_embed = nn.Embedding(cfg.max_classes, d)
        self.value_embed = nn.Linear(1, d)
        self.unknown_target = nn.Parameter(torch.randn(d) * 0.02)
        self.task_embed = nn.Embedding(2, d)  # 0 = classification, 1 = regression
        # Without it, attention across a row sees the features as an unordered set of values.
        self.column_embed = nn.Embedding(cfg.max_features, d) if cfg.column_embedding else None
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.n_layers))
        self.norm_out = nn.LayerNorm(d)
        self.head_cls = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, cfg.max_classes))
        self.head_reg = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, cfg.n_bins))

    def forward(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        ctx_mask: torch.Tensor,
        feat_mask: torch.Tensor,
        is_regression: torch.Tensor,
        ctx_count: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Return output logits for every row, shape (B, R, n_out).

        x: (B, R, F) encoded features, NaN marks a missing cell.
        y: (B, R) class slot (classification) or standardized target (regression);
           only read on context rows.
        ctx_mask: (B, R) True for context rows; every other row is a query (or padding).
        feat_mask: (B, F) True for real (non-padded) feature columns.
        is_regression: (B,) bool.
        ctx_count: (B, R) or None: the multiplicity of each context row (None: every row once),
           read by the row attention only (:func:`key_rows`).
        n_out is ``max_classes`` when no table is a regression, ``n_bins`` otherwise;
        rows of a classification table use the first ``max_classes`` outputs.
        """
        b, r, f = x.shape
        missing = torch.isnan(x)
        cells = torch.stack([torch.where(missing, torch.zeros_like(x), x), missing.float()], dim=-1)
        h = self.cell_embed(cells)  # (B, R, F, d)
        if self.column_embed is not None:
            if f > self.cfg.max_features:
                raise ValueError(f"{f} feature columns exceed max_features={self.cfg.max_features}")
            h = h + self.column_embed.weight[:f]
        reg = is_regression[:, None]
        y_cls = torch.where(reg | ~ctx_mask, torch.zeros_like(y), y).long().clamp(0, self.cfg.max_classes - 1)
        y_reg = torch.where(reg & ctx_mask, y, torch.zeros_like(y)).unsqueeze(-1)
        t = torch.where(reg[..., None], self.value_embed(y_reg), self.class_embed(y_cls))
        t = torch.where(ctx_mask[..., None], t, self.unknown_target.expand(b, r, -1))
        t = t + self.target_column + self.task_embed(is_regression.long())[:, None, :]
        h = torch.cat([h, t.unsqueeze(2)], dim=2)  # target is the last column
        fm = None if bool(feat_mask.all()) else torch.cat([feat_mask, feat_mask.new_ones(b, 1)], dim=1)
        n_keys, key_mask = key_rows(ctx_mask, ctx_count)
        for block in self.blocks[:-1]:
            h = block(h, fm, key_mask, n_keys)
        z = self.norm_out(
            self.blocks[-1].target_cells(h, fm, key_mask, n_keys)
        )  # (B, R, d): only target cells are decoded
        logits_cls = self.head_cls(z)
        if not bool(is_regression.any()):
            return logits_cls
        logits_reg = self.head_reg(z)
        pad = logits_reg.new_full((b, r, self.cfg.n_bins - self.cfg.max_classes), float("-inf"))
        logits_cls = torch.cat([logits_cls, pad], dim=-1)
        return torch.where(reg[..., None], logits_reg, logits_cls)
