"""Pretraining the reference LTM on the synthetic prior (``iclmem pretrain --config``).

Resumable: the full state (weights, optimizer, step, loss curve, wall time) is written
atomically every ``checkpoint_every`` steps; a run started again with the same config
resumes from it. Deterministic for a seed: the model is initialized from ``seed`` and
the tables of step ``s`` are drawn from ``numpy.random.default_rng([seed, s])``, so a
resumed run sees exactly the data an uninterrupted one would.

Staged runs: a config with ``init_from`` (the ``state.pt`` of an earlier run with the same
architecture) starts from that run's weights and optimizer moments and runs its own
learning-rate schedule and prior; the earlier stages, their wall time and the sha256 of the
state they started from are carried in the new state, and the loss curve continues the global
step count. This is how the shipped reference was extended (``configs/pretrain_reference_stage2.yaml``).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import yaml

from ..runtime.progress import Bar
from ..store.atomic import atomic_torch_save
from .model import LTMConfig, TabularICLTransformer
from .outputs import per_row_loss
from .prior import PriorConfig, SyntheticTable, sample_table


@dataclass
class PretrainConfig:
    """Everything that defines a pretraining run."""

    steps: int = 20000
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: int = 500
    cells_per_step: int = 40000
    max_query: int = 128
    seed: int = 0
    threads: int = 2
    checkpoint_every: int = 200
    out_dir: str = "runs/pretrain"
    init_from: str | None = None
    model: LTMConfig = field(default_factory=LTMConfig)
    prior: PriorConfig = field(default_factory=PriorConfig)

    @classmethod
    def from_yaml(cls, path: str | Path) -> PretrainConfig:
        raw = yaml.safe_load(Path(path).read_text()) or {}
        model = LTMConfig(**raw.pop("model", {}))
        prior = PriorConfig(**raw.pop("prior", {}))
        unknown = set(raw) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise ValueError(
                f"pretrain config {path}: unknown keys {sorted(unknown)}; valid keys: "
                f"{sorted(cls.__dataclass_fields__)}"
            )
        return cls(model=model, prior=prior, **raw)


def collate(tables: list[SyntheticTable], n_features: int) -> dict[str, torch.Tensor]:
    """Pad tables with the same feature count into one batch (rows: context, then queries)."""
    rows = max(len(t.y) for t in tables)
    b = len(tables)
    x = torch.zeros(b, rows, n_features)
    y = torch.zeros(b, rows)
    ctx = torch.zeros(b, rows, dtype=torch.bool)
    query = torch.zeros(b, rows, dtype=torch.bool)
    for i, t in enumerate(tables):
        n = len(t.y)
        x[i, :n] = torch.from_numpy(t.x)
        y[i, :n] = torch.from_numpy(t.y)
        ctx[i, : t.n_context] = True
        query[i, t.n_context : n] = True
    return {
        "x": x,
        "y": y,
        "ctx_mask": ctx,
        "query_mask": query,
        "feat_mask": torch.ones(b, n_features, dtype=torch.bool),
        "is_regression": torch.tensor([t.is_regression for t in tables]),
        "n_classes": torch.tensor([t.n_classes for t in tables]),
    }


def sample_batch(cfg: PretrainConfig, step: int) -> dict[str, torch.Tensor]:
    """The deterministic batch of one pretraining step."""
    rng = np.random.default_rng([cfg.seed, step])
    p = cfg.prior
    n_ctx, stats_rows = _context_rows(rng, p)
    n_q = int(min(cfg.max_query, max(8, n_ctx // 2)))
    n_feat = int(np.exp(rng.uniform(np.log(p.min_features), np.log(p.max_features + 1))))
    n_feat = min(max(n_feat, p.min_features), p.max_features)
    is_reg = bool(rng.random() < p.regression_share)
    b = max(1, cfg.cells_per_step // ((n_ctx + n_q) * (n_feat + 1)))
    tables = [sample_table(rng, p, n_ctx, n_q, n_feat, is_reg, stats_rows) for _ in range(b)]
    return collate(tables, n_feat)


def _context_rows(rng: np.random.Generator, p: PriorConfig) -> tuple[int, int | None]:
    """One step's context size and the rows its tables are scaled on (``None``: the context itself).

    Small tables dominate, so a step holds many tables (a diverse batch); log-uniform sizes. With
    ``small_context_share`` > 0 (stage 4), that share of steps has a context of ``small_context_min`` ..
    ``min_context - 1`` rows, log-uniform, scaled on ``population_rows`` rows; a share of 0 draws nothing more,
    so the earlier stages' batches are unchanged.
    """
    if p.small_context_share > 0 and rng.random() < p.small_context_share:
        n_ctx = int(np.exp(rng.uniform(np.log(p.small_context_min), np.log(p.min_context))))
        return min(max(n_ctx, p.small_context_min), p.min_context - 1), p.population_rows
    top = p.max_context if rng.random() < p.large_context_share else min(p.typical_context, p.max_context)
    n_ctx = int(np.exp(rng.uniform(np.log(p.min_context), np.log(top + 1))))
    return min(max(n_ctx, p.min_context), p.max_context), None


def batch_loss(model: TabularICLTransformer, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    m = model.cfg
    logits = model(batch["x"], batch["y"], batch["ctx_mask"], batch["feat_mask"], batch["is_regression"])
    loss = per_row_loss(
        logits, batch["y"], batch["is_regression"], batch["n_classes"], m.max_classes, m.n_bins, m.bin_bound
    )
    q = batch["query_mask"]
    return (loss * q).sum() / q.sum()


def _lr_factor(cfg: PretrainConfig, step: int) -> float:
    if step < cfg.warmup:
        return (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def _identity(config: dict) -> dict:
    """The config entries that define the run (threads and checkpoint cadence do not)."""
    return {k: v for k, v in config.items() if k not in ("threads", "checkpoint_every", "out_dir")}


def _start_from(
    cfg: PretrainConfig, model: TabularICLTransformer, opt: torch.optim.Optimizer
) -> tuple[list, list, int]:
    """Load the earlier stage named by ``cfg.init_from``: (stages, curve, global step offset)."""
    from .reference import sha256_file

    path = Path(str(cfg.init_from))
    if not path.is_file():
        raise FileNotFoundError(
            f"init_from: {path} does not exist; run the earlier stage first (iclmem pretrain --config ...)."
        )
    init = torch.load(path, weights_only=False)
    if init["config"]["model"] != asdict(cfg.model):
        raise ValueError(
            f"init_from: {path} has model {init['config']['model']}, this config has {asdict(cfg.model)}; a later "
            "stage must keep the architecture."
        )
    model.load_state_dict(init["model"])
    opt.load_state_dict(init["optimizer"])
    offset = init.get("global_offset", 0) + init["step"]
    stage = {
        "config": {k: v for k, v in init["config"].items() if k != "out_dir"},
        "steps": init["step"],
        "wall_s": round(init["wall_s"], 1),
        "state_sha256": sha256_file(path),
    }
    return init.get("stages", []) + [stage], list(init["curve"]), offset


def pretrain(cfg: PretrainConfig, progress: bool = True) -> Path:
    """Run (or resume) pretraining; returns the path of the state file."""
    torch.set_num_threads(cfg.threads)
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / "state.pt"
    torch.manual_seed(cfg.seed)
    model = TabularICLTransformer(cfg.model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    step, curve, wall, stages, offset = 0, [], 0.0, [], 0
    if state_path.exists():
        state = torch.load(state_path, weights_only=False)
        if _identity(state["config"]) != _identity(asdict(cfg)):
            raise ValueError(
                f"{state_path} was written by a different pretraining config; use another out_dir or delete it."
            )
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, curve, wall = state["step"], state["curve"], state["wall_s"]
        stages, offset = state.get("stages", []), state.get("global_offset", 0)
    elif cfg.init_from:
        stages, curve, offset = _start_from(cfg, model, opt)  # this stage's own wall time starts at 0
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=2))
    bar = Bar(total=cfg.steps, initial=step, disable=not progress, desc="pretrain")
    t0 = time.perf_counter() - wall
    while step < cfg.steps:
        for g in opt.param_groups:
            g["lr"] = cfg.lr * _lr_factor(cfg, step)
        batch = sample_batch(cfg, step)
        loss = batch_loss(model, batch)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        reg = bool(batch["is_regression"][0])
        curve.append((offset + step, loss.item(), int(reg)))
        step += 1
        bar.update(1)
        if step % 20 == 0:
            recent = [c[1] for c in curve[-200:] if c[2] == 0]
            bar.set_postfix(cls_loss=f"{np.mean(recent):.3f}" if recent else "-")
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            atomic_torch_save(
                {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "step": step,
                    "curve": curve,
                    "wall_s": time.perf_counter() - t0,
                    "config": asdict(cfg),
                    "stages": stages,
                    "global_offset": offset,
                },
                state_path,
            )
    bar.close()
    return state_path
