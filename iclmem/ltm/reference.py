"""The shipped reference LTM (M_ref in the paper, Sec. 4.2): loading, batching, cloning.

``load_reference()`` loads ``weights/reference.pt`` from inside the package, offline, and
checks its sha256 against the model card ``weights/reference.json``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import numpy as np
import torch

from iclmem.user_errors import UserError

from .interface import ICLTask, LTMInputError, Predictions, validate_task
from .model import LTMConfig, TabularICLTransformer
from .outputs import bar_log_probs, class_log_probs
from .prior import PriorConfig

WEIGHTS_DIR = Path(__file__).parent / "weights"
REFERENCE_WEIGHTS = WEIGHTS_DIR / "reference.pt"
REFERENCE_CARD = WEIGHTS_DIR / "reference.json"
#: earlier shipped weights, loadable by name (``model: reference-v1``): version -> what changed after it
REFERENCE_VERSIONS: dict[str, str] = {
    "v1": "stages 1-3 (9,500 steps), contexts of 16 rows or more; shipped until stage 4 added contexts of 2-15 rows",
}


class CheckpointError(UserError, RuntimeError):
    """A checkpoint is missing, corrupted or does not match its model card."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _distinct_rows(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index, count) of each distinct (features, encoded target) row, in order of first occurrence.

    Rows are compared byte for byte (float32), so merged rows are identical model inputs.
    """
    rows = np.ascontiguousarray(np.column_stack([x, y]).astype(np.float32))
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    order = np.argsort(first)
    return first[order], counts[order]


def _context_block(t: ICLTask, merge_rows: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A task's context as the network reads it: features, encoded target, multiplicity of each row."""
    cx = np.asarray(t.context_x, dtype=np.float32)
    if t.is_regression:
        c, s = t.target_stats()
        yc = (np.asarray(t.context_y, dtype=np.float64) - c) / s
    else:
        yc = np.searchsorted(t.classes(), np.asarray(t.context_y))
    yc = np.asarray(yc, dtype=np.float32)
    if not merge_rows:
        return cx, yc, np.ones(len(cx))
    keep, counts = _distinct_rows(cx, yc)
    return cx[keep], yc[keep], counts


def collate_tasks(tasks: list[ICLTask], cfg: LTMConfig, merge_rows: bool = False) -> dict[str, torch.Tensor]:
    """Pad tasks of different sizes into one batch, context first: rows ``0..C-1`` hold each task's
    context (padded to the largest, C), rows ``C..`` its queries; features padded.

    The layout lets the row attention take its keys from the first C rows only
    (:func:`~iclmem.ltm.model.key_rows`), without a mask when every task has C context rows.
    A task's query rows start at row C (:func:`query_start`).

    ``merge_rows``: identical context rows (same features, same target) become one row with its
    multiplicity in ``ctx_count``, which the row attention weighs exactly as the copies (exact in
    real arithmetic, float32 rounding apart; a scaled multiple-choice context of 100 rows holds at
    most |Y| distinct rows). The reference model reads the context only through that attention,
    so nothing else changes; the target statistics and class slots come from the whole context.
    """
    for t in tasks:
        validate_task(t, cfg.max_classes, cfg.max_features, cfg.max_context)
    contexts = [_context_block(t, merge_rows) for t in tasks]
    b = len(tasks)
    n_ctx = max(len(cx) for cx, _, _ in contexts)
    rows = n_ctx + max(len(t.query_x) for t in tasks)
    feats = max(t.context_x.shape[1] for t in tasks)
    x = torch.zeros(b, rows, feats)
    y = torch.zeros(b, rows)
    ctx = torch.zeros(b, rows, dtype=torch.bool)
    count = torch.ones(b, rows)
    fmask = torch.zeros(b, feats, dtype=torch.bool)
    for i, (t, (cx, yc, counts)) in enumerate(zip(tasks, contexts, strict=True)):
        n_c, n_q, f = len(cx), len(t.query_x), cx.shape[1]
        x[i, :n_c, :f] = torch.as_tensor(cx)
        x[i, n_ctx : n_ctx + n_q, :f] = torch.as_tensor(np.asarray(t.query_x, dtype=np.float32))
        y[i, :n_c] = torch.as_tensor(yc)
        ctx[i, :n_c] = True
        count[i, :n_c] = torch.as_tensor(counts, dtype=torch.float32)
        fmask[i, :f] = True
    batch = {
        "x": x,
        "y": y,
        "ctx_mask": ctx,
        "feat_mask": fmask,
        "is_regression": torch.tensor([t.is_regression for t in tasks]),
    }
    if merge_rows:
        batch["ctx_count"] = count
    return batch


def query_start(batch: dict[str, torch.Tensor]) -> int:
    """The first query row of a batch collated by :func:`collate_tasks` (its largest context)."""
    return int(batch["ctx_mask"].sum(dim=1).max())


class ReferenceLTM:
    """The reference tabular ICL transformer behind the :class:`~iclmem.ltm.interface.LTM` protocol."""

    def __init__(self, network: TabularICLTransformer, checkpoint_sha256: str = "", merge_rows: bool = True) -> None:
        self.network = network
        self.checkpoint_sha256 = checkpoint_sha256
        #: identical context rows enter the network once, weighted by their count (:func:`collate_tasks`)
        self.merge_rows = merge_rows

    @property
    def cfg(self) -> LTMConfig:
        return self.network.cfg

    @property
    def max_classes(self) -> int:
        """The classes this checkpoint's output head predicts at most (:attr:`LTMConfig.max_classes`)."""
        return self.cfg.max_classes

    def collate(self, tasks: list[ICLTask]) -> dict[str, torch.Tensor]:
        """The padded batch :meth:`predict` makes of ``tasks`` (:func:`collate_tasks`)."""
        return collate_tasks(tasks, self.cfg, self.merge_rows)

    def predict(
        self, tasks: list[ICLTask], grad: bool = False, batch: dict[str, torch.Tensor] | None = None
    ) -> list[Predictions]:
        """Predictive distributions for every query of every task, in one padded batch.

        ``batch``: :meth:`collate` of ``tasks`` made earlier, by a model of this architecture
        (probing scores one set of contexts with several models, :class:`~iclmem.probe.scoring.ScoringBatches`).
        """
        if not tasks:
            return []
        batch = self.collate(tasks) if batch is None else batch
        device = self.device
        with torch.set_grad_enabled(grad):
            logits = self.network(**{k: v.to(device) for k, v in batch.items()})
        if not grad:
            logits = logits.cpu()  # scores are read on the CPU; a no-op there
        out = []
        start = query_start(batch)
        for i, t in enumerate(tasks):
            n_q = len(t.query_x)
            z = logits[i, start : start + n_q]
            if t.is_regression:
                lp = bar_log_probs(z, self.cfg.n_bins)
            else:
                k = len(t.classes())
                lp = class_log_probs(z, torch.full((n_q,), k, device=z.device), self.cfg.max_classes)[:, :k]
            out.append(Predictions(lp, t, self.cfg.n_bins, self.cfg.bin_bound))
        return out

    def input_rows(self, task: ICLTask) -> int:
        """Rows the network gets for ``task``: distinct context rows (when merging) plus queries; sizes probing
        batches."""
        n_ctx = len(_context_block(task, True)[0]) if self.merge_rows else len(task.context_x)
        return n_ctx + len(task.query_x)

    @property
    def store_identity(self) -> str:
        """The checkpoint as results-store keys read it (:func:`iclmem.runtime.device.store_identity`)."""
        from ..runtime.device import store_identity

        return store_identity(self.checkpoint_sha256, self.device)

    @property
    def device(self) -> torch.device:
        """Where the network's weights are (``$ICLMEM_DEVICE`` at loading, :mod:`iclmem.runtime.device`)."""
        return next(self.network.parameters()).device

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.network.parameters() if p.requires_grad]

    def clone(self) -> ReferenceLTM:
        """An independent copy (for fine-tuning); the reference stays untouched."""
        return ReferenceLTM(copy.deepcopy(self.network), self.checkpoint_sha256, self.merge_rows)

    def state_dict(self) -> dict:
        return self.network.state_dict()

    def save(self, path: str | Path) -> Path:
        """Write this model (e.g. M_theta of a run, ``run.model(epoch).save(path)``) as a checkpoint file that
        :func:`load_checkpoint` reads: its architecture and its weights, as ``reference.pt`` holds them.

        What ``iclmem audit --model reference:PATH`` audits (Sec. 4.2, App. A.4); a run's own
        ``weights_epoch*.pt`` hold the weights alone.
        """
        from ..store.atomic import atomic_torch_save

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_torch_save({"config": self.cfg.to_dict(), "model": self.network.state_dict()}, path)
        return path


def export_checkpoint(state_path: Path, card_extra: dict, out_dir: Path = WEIGHTS_DIR) -> Path:
    """Write the weights of a pretraining state as ``reference.pt``, its model card and loss curve.

    The card records the architecture, pretraining config (prior, steps, seed), earlier stages
    (for a run continued with ``init_from``; steps and wall time are then totals), and
    the sha256 that :func:`load_checkpoint` verifies; ``reference_curve.csv`` holds the
    per-step pretraining loss (column ``regression``: 1 for regression batches).
    """
    import pandas as pd

    from ..store.atomic import atomic_torch_save, atomic_write_text

    state = torch.load(state_path, weights_only=False)
    cfg = state["config"]
    weights = out_dir / "reference.pt"
    atomic_torch_save({"config": cfg["model"], "model": state["model"]}, weights)
    curve = pd.DataFrame(state["curve"], columns=["step", "loss", "regression"])
    atomic_write_text(out_dir / "reference_curve.csv", curve.to_csv(index=False, float_format="%.5f"))
    card = {
        "name": "iclmem reference LTM",
        "architecture": cfg["model"],
        "n_parameters": sum(v.numel() for v in state["model"].values()),
        "prior": cfg["prior"],
        "pretraining": {k: v for k, v in cfg.items() if k not in ("model", "prior", "out_dir")},
        "steps_done": state.get("global_offset", 0) + state["step"],
        "wall_s": round(state["wall_s"] + sum(st["wall_s"] for st in state.get("stages", [])), 1),
        # earlier stages of a staged run (init_from): their configs, steps, wall time, state sha256
        "earlier_stages": state.get("stages", []),
        **card_extra,
        "sha256": sha256_file(weights),
    }
    atomic_write_text(out_dir / "reference.json", json.dumps(card, indent=2))
    return weights


def pretraining_stages(card: dict) -> list[dict]:
    """One row per pretraining stage of a model card: steps, cumulative end step, peak lr, seed, prior shares,
    minutes."""
    earlier = card.get("earlier_stages", [])
    last = {
        "config": {**card["pretraining"], "prior": card["prior"]},  # the card's totals minus the earlier stages
        "steps": card["steps_done"] - sum(st["steps"] for st in earlier),
        "wall_s": card["wall_s"] - sum(st["wall_s"] for st in earlier),
    }
    stages = [*earlier, last]
    rows, end = [], 0
    for i, st in enumerate(stages, start=1):
        cfg = st["config"]
        end += st["steps"]
        rows.append(
            {
                "stage": i,
                "steps": st["steps"],
                "ends at step": end,
                "peak lr": cfg["lr"],
                "warmup": cfg["warmup"],
                "data seed": cfg["seed"],
                "512-row context share": cfg["prior"].get("large_context_share"),
                # contexts under min_context (stage 4)
                "small-context share": cfg["prior"].get("small_context_share", 0.0),
                "regression share": cfg["prior"].get("regression_share"),
                "max categories": cfg["prior"].get(
                    "max_categories", PriorConfig.max_categories
                ),  # older stages predate the field
                "minutes": round(st["wall_s"] / 60, 1),
            }
        )
    return rows


def parameter_count_text(card: dict | None = None) -> str:
    """The reference LTM's parameter count as prose states it (230538 -> "231k", 2.4e6 -> "2.4M"), from its model card
    (the shipped one when ``card`` is None)."""
    if card is None:
        card = json.loads(REFERENCE_CARD.read_text())
    n = int(card["n_parameters"])
    return f"{n / 1e6:.1f}M" if n >= 1_000_000 else f"{n / 1e3:.0f}k"


def smallest_pretraining_context(card: dict) -> int:
    """The fewest context rows any pretraining stage of a model card showed the model (``small_context_min`` where a
    stage drew small contexts, else ``min_context``): the probe's binary contexts hold 2 rows (Sec. 4.2)."""
    stages = [st["config"].get("prior", {}) for st in card.get("earlier_stages", [])] + [card.get("prior", {})]
    sizes = [
        int(p.get("small_context_min", p.get("min_context", 16)))
        if float(p.get("small_context_share", 0.0)) > 0
        else int(p.get("min_context", 16))
        for p in stages
    ]
    return min(sizes)


def load_checkpoint(weights: Path, card: Path | None = None) -> ReferenceLTM:
    """Load an LTM checkpoint offline; if a model card is given, verify the sha256 first."""
    from ..runtime.device import compute_device
    from ..runtime.threads import configure_threads

    configure_threads()  # $ICLMEM_THREADS, read where every notebook and worker starts: loading the model
    weights = Path(weights)
    if not weights.exists():
        raise CheckpointError(f"checkpoint {weights} does not exist; reinstall iclmem or run `iclmem pretrain`.")
    digest = sha256_file(weights)
    if card is not None:
        expected = json.loads(Path(card).read_text())["sha256"]
        if digest != expected:
            raise CheckpointError(
                f"checkpoint {weights} has sha256 {digest[:12]}..., its model card says {expected[:12]}...: the file "
                f"is corrupted or was replaced; restore the shipped one (git checkout -- {weights}) or pass a "
                "checkpoint whose card matches."
            )
    try:
        blob = torch.load(weights, weights_only=True, map_location="cpu")
        net = TabularICLTransformer(LTMConfig(**blob["config"]))
        net.load_state_dict(blob["model"])
    except Exception as exc:  # noqa: BLE001 - any load failure means a bad file
        raise CheckpointError(
            f"checkpoint {weights} cannot be read ({exc}); pass a checkpoint written by iclmem pretrain, or "
            f"restore the shipped one (git checkout -- {weights})."
        ) from exc
    net.eval()
    return ReferenceLTM(net.to(compute_device()), digest)


def reference_files(version: str | None = None) -> tuple[Path, Path]:
    """(weights, model card) of the shipped reference (``None``) or of an earlier version (``"v1"``)."""
    if version is None:
        return REFERENCE_WEIGHTS, REFERENCE_CARD
    if version not in REFERENCE_VERSIONS:
        raise CheckpointError(
            f"no shipped reference version {version!r}; the versions are {sorted(REFERENCE_VERSIONS)} "
            "(model: reference-<version>), or 'reference' for the current weights."
        )
    return WEIGHTS_DIR / f"reference-{version}.pt", WEIGHTS_DIR / f"reference-{version}.json"


def load_reference(version: str | None = None) -> ReferenceLTM:
    """The shipped, pretrained reference LTM (M_ref), loaded offline with its hash checked; ``version``: an earlier
    shipped one (:data:`REFERENCE_VERSIONS`)."""
    return load_checkpoint(*reference_files(version))


__all__ = [
    "ReferenceLTM",
    "load_reference",
    "reference_files",
    "smallest_pretraining_context",
    "parameter_count_text",
    "REFERENCE_VERSIONS",
    "load_checkpoint",
    "export_checkpoint",
    "pretraining_stages",
    "collate_tasks",
    "query_start",
    "CheckpointError",
    "LTMInputError",
]
