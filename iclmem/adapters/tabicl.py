"""TabICL (PyPI ``tabicl==2.2.0``, BSD-3) behind the LTM interface (Sec. 4.1, 4.2; the paper's future work).

Weights: a local file only, in TabICL's own checkpoint format (``{"config": TabICL kwargs,
"state_dict": ...}``, what ``TabICLClassifier(model_path=...)`` reads). The pretrained ones are
published on Hugging Face (``jingang/TabICL``: ``tabicl-classifier-v2-20260212.ckpt``, a regressor
checkpoint for regression); download one yourself and pass ``tabicl:PATH``. Nothing downloads here.

The adapter calls ``TabICL._train_forward`` (column embedding -> row interaction -> ICL transformer),
in float32 with gradients, for fine-tuning and probing alike; dropout is set to 0 so both are
deterministic. ``TabICLClassifier`` adds, outside the torch module: a standard scaler fitted on the
context (+ outlier clipping at 4 sd and optional power/quantile normalization), an ensemble over
feature shuffles and class shifts (8 members), a softmax temperature of 0.9, bfloat16 autocast on the
CPU. With ``preprocessing="dataset"`` (default) none of them runs: the features come as
:class:`~iclmem.ltm.encoding.TableEncoder` standardized them on the whole table (NaN -> 0, the
table's center), temperature 1, one member; ``"context"`` applies the context-fitted standard
scaler, which maps every feature of a multiple-choice context to 0. The module itself has no
context-fitted step: its column embedder reads each column's values as they are.

Outputs (the rule for the probing scores):

* classification: softmax over the first k logits (k = number of context labels, slots in sorted
  label order); loss = cross-entropy, entropy over the k classes, confidence = p(true class).
  More than ``max_classes`` (the checkpoint's, 10 for the published one) is an error (TabICL's
  hierarchical many-class mode is not adapted).
* regression: TabICL predicts ``num_quantiles`` quantiles of the standardized target at levels
  ``i / (num_quantiles + 1)``; its own ``QuantileDistribution`` (spline between quantiles,
  parametric tails) gives a CDF F. The predictive distribution is F's mass on ``n_bins``
  equal-width bins on ``[-bin_bound, bin_bound]``, the outer bins taking the tails:
  ``p_j = F(e_{j+1}) - F(e_j)`` with ``e_0 = -inf``, ``e_n = +inf``. Loss = ``-log p_j`` of the bin
  holding the true value, entropy over the bins, confidence = ``p_j`` (as for the reference LTM).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..ltm.interface import ICLTask, LTMInputError
from ..ltm.outputs import bin_edges
from .base import (
    AdapterCheckpointError,
    AdapterLimits,
    AdapterLTM,
    Preprocessing,
    checked_path,
    context_slots,
    context_standardize,
    import_package,
    sha256_file,
    standardized_targets,
)

WHERE = (
    "TabICL weights are published on Hugging Face (repo jingang/TabICL, e.g. tabicl-classifier-v2-20260212.ckpt); "
    "download one yourself, or save a fine-tuned TabICL as torch.save({'config': ..., 'state_dict': ...})."
)
#: TabICL's pretraining prior goes up to about this many features and rows; beyond is extrapolation.
MAX_FEATURES = 100
MAX_CONTEXT = 10_000


def _import_tabicl():  # noqa: ANN202 - the TabICL class
    return import_package("TabICL", "tabicl==2.2.0", "tabicl._model.tabicl").TabICL


class TabICLLTM(AdapterLTM):
    """A TabICL checkpoint as an :class:`~iclmem.ltm.interface.LTM` (see the module docstring)."""

    kind = "tabicl"

    def checkpoint_blob(self) -> dict:
        state = {k: v.detach().cpu() for k, v in self.network.state_dict().items()}
        return {"config": dict(self.checkpoint_extra["config"]), "state_dict": state}

    # invariances: row order only (AdapterLTM). Not uniform duplication: TabICL's scalable softmax (SSMax/QASSMax)
    # scales attention logits with log(number of context rows), so copies change the output (measured: 7e-2).

    def _forward(
        self, tasks: list[ICLTask], cx: np.ndarray, qx: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        net = self.network
        reg = tasks[0].is_regression
        if reg and net.max_classes != 0:
            raise LTMInputError(
                "this TabICL checkpoint is a classifier (max_classes > 0); use a TabICL regressor checkpoint for "
                "regression."
            )
        if not reg and net.max_classes == 0:
            raise LTMInputError(
                "this TabICL checkpoint is a regressor (max_classes = 0); use a TabICL classifier checkpoint for "
                "classification."
            )
        if self.preprocessing == "context":
            pairs = [context_standardize(c, q) for c, q in zip(cx, qx, strict=True)]
            cx, qx = np.stack([a for a, _ in pairs]), np.stack([b for _, b in pairs])
        x = np.nan_to_num(np.concatenate([cx, qx], axis=1), nan=0.0)
        y = np.stack([standardized_targets(t, t.context_y) if reg else context_slots(t) for t in tasks])
        dev = self.device
        net.train()  # the training path: float32, gradients; dropout is 0 (set at loading)
        out = net._train_forward(torch.as_tensor(x, device=dev), torch.as_tensor(y, device=dev))  # (B, n_q, out)
        if not reg:
            k = int(max(len(t.classes()) for t in tasks))
            return torch.log_softmax(out[..., :k], dim=-1), None
        edges = bin_edges(self.cfg.n_bins, self.cfg.bin_bound).to(dev, out.dtype)
        cdf = net.quantile_dist(out).cdf(edges[1:-1].expand(*out.shape[:-1], -1))
        zeros, ones = torch.zeros_like(cdf[..., :1]), torch.ones_like(cdf[..., :1])
        mass = torch.diff(torch.cat([zeros, cdf, ones], dim=-1), dim=-1).clamp_min(1e-12)
        return mass.log() - mass.sum(-1, keepdim=True).log(), None


def load_tabicl(
    model_path: str | Path,
    *,
    preprocessing: Preprocessing = "dataset",
    n_permutations: int = 1,
    seed: int = 0,
    n_bins: int = 64,
    bin_bound: float = 5.0,
) -> TabICLLTM:
    """Load a TabICL checkpoint from a local file (see the module docstring for the options)."""
    from ..runtime.device import compute_device
    from ..runtime.threads import configure_threads

    configure_threads()
    TabICL = _import_tabicl()
    path = checked_path(model_path, "TabICL", WHERE)
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any load failure means a bad file
        raise AdapterCheckpointError(
            f"{path} cannot be read as a torch checkpoint ({exc}); the file is corrupt or not a TabICL "
            f"checkpoint. {WHERE}"
        ) from exc
    if not isinstance(blob, dict) or "config" not in blob or "state_dict" not in blob:
        raise AdapterCheckpointError(
            f"{path} is not a TabICL checkpoint (it has no 'config' and 'state_dict'). {WHERE}"
        )
    if "architecture_name" in blob or any(
        k.startswith(("blocks.", "feature_group_embedder", "transformer_encoder.")) for k in blob["state_dict"]
    ):
        raise AdapterCheckpointError(
            f"{path} is a TabPFN checkpoint, not a TabICL one; load it with model=tabpfn:{path}."
        )
    config = {**blob["config"], "dropout": 0.0}
    try:
        net = TabICL(**config)
        net.load_state_dict(blob["state_dict"])
    except Exception as exc:  # noqa: BLE001
        raise AdapterCheckpointError(
            f"{path} does not match TabICL's architecture ({exc}); pass a checkpoint written for tabicl==2.2.0. {WHERE}"
        ) from exc
    limits = AdapterLimits(
        max_classes=net.max_classes if net.max_classes > 0 else 10,
        max_features=MAX_FEATURES,
        max_context=MAX_CONTEXT,
        n_bins=n_bins if net.max_classes == 0 else 0,
        bin_bound=bin_bound if net.max_classes == 0 else 0.0,
    )
    model = TabICLLTM(
        net.to(compute_device()),
        limits,
        sha256_file(path),
        preprocessing=preprocessing,
        n_permutations=n_permutations,
        seed=seed,
        model_path=str(path),
    )
    model.checkpoint_extra = {"config": dict(blob["config"])}
    return model


__all__ = ["TabICLLTM", "load_tabicl"]
