"""TabPFN v2 (PyPI ``tabpfn==9.2.0``, Apache-2.0 code) behind the LTM interface (Sec. 4.1, 4.2; future work).

Weights: a local file only, in TabPFN's own checkpoint format (``.ckpt`` or ``.safetensors`` with
``state_dict``, ``config`` and optionally ``architecture_name = "tabpfn_v2"``; what
``TabPFNClassifier(model_path=...)`` reads). The pretrained v2 weights (``tabpfn-v2-classifier.ckpt``,
``tabpfn-v2-regressor.ckpt``) are published by Prior Labs on Hugging Face (``Prior-Labs/TabPFN-v2-clf``,
``Prior-Labs/TabPFN-v2-reg``) under their own licence; download one yourself and pass
``tabpfn:PATH``. Nothing downloads here. Other TabPFN architectures (v2.5 and later) are refused.

The adapter calls the ``TabPFNV2`` module's layers in float32 with gradients. Its forward fits, on
every call (``TabPFNV2._embed_features``): (1) the constant-feature mask over all rows and removes
those features (``_remove_constant_features``), (2) NaN/inf indicators and imputation with the
context mean, (3) a standard scaler on the context rows, (4) a feature-group normalization that
zeroes constant features, again over all rows. On a multiple-choice context (|Y| copies of x_q,
plus x_q as the query) every feature is constant: (1) removes them all, (3) would map them to 0
and (4) would zero them, so the model sees only the labels and predicts the same for every query.
``TabPFNClassifier`` adds, outside the module, per-context quantile/power transforms, feature and
class shuffling ensembles and a softmax temperature of 0.9.

``preprocessing="dataset"`` (default) keeps (2) and the group scaling of (4) with every real
(non-padding) feature counted as used, and skips (1) and (3): the features come as
:class:`~iclmem.ltm.encoding.TableEncoder` standardized them on the whole table, which on an
ordinary context of the table is roughly what (3) would give (robust standardization, median and
IQR / 1.349, clipped at 5: about zero center and unit spread; exactly equal when the context is
already standardized on its own rows, tested). ``"context"`` is the module's own forward,
unchanged (the naive probe). Temperature 1, one ensemble member (``n_permutations``).

Outputs (the rule for the probing scores):

* classification: softmax over the first k of the checkpoint's ``max_num_classes`` logits (labels
  densified in sorted order, as TabPFN does); loss = cross-entropy, entropy over the k classes,
  confidence = p(true class).
* regression: TabPFN's bar distribution over the target standardized with the task's statistics,
  with the checkpoint's stored borders (``criterion.borders``, in standardized units): ``p_j`` =
  softmax of the ``num_buckets`` logits; loss = ``-log p_j`` of the bucket holding the true value
  (values outside the borders fall into the outer buckets), entropy over the buckets,
  confidence = ``p_j``. (TabPFN's half-normal tails change densities outside the borders, not
  bucket masses.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..ltm.interface import ICLTask, LTMInputError
from .base import (
    AdapterCheckpointError,
    AdapterLimits,
    AdapterLTM,
    Preprocessing,
    checked_path,
    context_slots,
    import_package,
    sha256_file,
    standardized_targets,
)

WHERE = (
    "TabPFN v2 weights are published by Prior Labs on Hugging Face (Prior-Labs/TabPFN-v2-clf: "
    "tabpfn-v2-classifier.ckpt, "
    "Prior-Labs/TabPFN-v2-reg: tabpfn-v2-regressor.ckpt); download one yourself (accepting its licence), or save a "
    "fine-tuned one with tabpfn.model_loading.save_tabpfn_model."
)
#: TabPFN's pretraining limits (its InferenceConfig: MAX_NUMBER_OF_FEATURES, MAX_NUMBER_OF_SAMPLES).
MAX_FEATURES = 500
MAX_CONTEXT = 10_000


def _tabpfn_v2():  # noqa: ANN202 - the tabpfn_v2 module
    return import_package("TabPFN", "tabpfn==9.2.0", "tabpfn.architectures.tabpfn_v2")


def dataset_feature_embedding(net: torch.nn.Module, x: torch.Tensor, n_train: int) -> torch.Tensor:
    """``TabPFNV2._embed_features`` without the context-fitted steps that erase a constant column.

    x: (rows, B, features). Keeps the NaN indicators, the imputation with the context mean (a
    column missing in every row imputes to 0) and the feature-group scaling with every real
    feature counted as used; skips constant-feature removal and the context's standard scaler.
    Returns (B, rows, groups, emsize).
    """
    m = _tabpfn_v2()
    rows, batch = x.shape[:2]
    x_rsf, n_groups = m._pad_and_reshape_feature_groups(x, net.features_per_group)
    real, _ = m._pad_and_reshape_feature_groups(torch.ones_like(x[:1]), net.features_per_group)
    used = real[0].bool()  # (S, F): False on the padding that fills the last group
    indicator = m._generate_nan_and_inf_indicator(x_rsf)
    x_rsf, _ = m._impute_nan_and_inf_with_mean(x_rsf, n_train)
    x_rsf = torch.nan_to_num(x_rsf, nan=0.0)
    n_used = torch.clip(used.sum(-1, keepdim=True), min=1)
    x_rsf = m._normalize_feature_groups(x_rsf, net.features_per_group, used, n_used)
    emb = net.feature_group_embedder(torch.cat([x_rsf, indicator], dim=-1).to(net.feature_group_embedder.weight.dtype))
    return net.add_column_embeddings(emb.unflatten(1, [batch, n_groups]).transpose(0, 1))


class TabPFNLTM(AdapterLTM):
    """A TabPFN v2 checkpoint as an :class:`~iclmem.ltm.interface.LTM` (see the module docstring)."""

    kind = "tabpfn"

    def __init__(self, *args, borders: torch.Tensor | None = None, task_kind: str = "classification", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.borders = borders
        self.task_kind = task_kind

    @property
    def invariances(self):
        """Row order always; uniform duplication too with ``preprocessing="dataset"``.

        The row attention renormalizes over identical copies (as for the reference LTM, see
        :mod:`iclmem.probe.equivalence`), and with "dataset" nothing else reads the row count (the
        imputation mean is a mean). The module's own forward ("context") standard-scales with the
        unbiased std of the context, which duplication changes (measured: 4e-3 in probability).
        """
        from ..probe.invariances import Invariances

        dataset = self.preprocessing == "dataset"
        return Invariances(
            True,
            dataset,
            "tabpfn v2: row attention without row positions"
            + (", renormalized over identical copies; no context statistic reads the row count" if dataset else ""),
        )

    def checkpoint_blob(self) -> dict:
        state = {k: v.detach().cpu() for k, v in self.network.state_dict().items()}
        extra = self.checkpoint_extra
        return {
            "state_dict": {**state, **extra["criterion"]},
            "config": dict(extra["config"]),
            "architecture_name": extra["architecture_name"],
        }

    def _forward(
        self, tasks: list[ICLTask], cx: np.ndarray, qx: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        net = self.network
        reg = tasks[0].is_regression
        if reg != (self.task_kind == "regression"):
            raise LTMInputError(
                f"this TabPFN checkpoint is a {self.task_kind} model; the task is {tasks[0].task}. Use a "
                f"tabpfn-v2-{'regressor' if reg else 'classifier'} checkpoint."
            )
        dev = self.device
        x = torch.as_tensor(np.concatenate([cx, qx], axis=1), device=dev).transpose(0, 1)  # (rows, B, F)
        y = np.stack([standardized_targets(t, t.context_y) if reg else context_slots(t) for t in tasks])
        y = torch.as_tensor(y, device=dev).transpose(0, 1)  # (n_ctx, B)
        n_train = y.shape[0]
        net.eval()  # TabPFNV2 has no dropout; eval and train compute the same
        if self.preprocessing == "context":
            out = net(x, y)  # the module's own forward, (n_q, B, n_out)
        else:
            y_emb, _, _ = net._embed_targets(y, num_rows=x.shape[0], num_train_labels=n_train, batch_size=x.shape[1])
            h = torch.cat((dataset_feature_embedding(net, x, n_train), y_emb[:, :, None]), dim=2)
            factor = net.get_default_performance_options().save_peak_memory_factor
            for block in net.blocks:
                h, _ = block([h], n_train, factor)
            out = net._decode(h, n_train, only_return_standard_out=True)
        out = out.transpose(0, 1)  # (B, n_q, n_out)
        if reg:
            return torch.log_softmax(out, dim=-1), self.borders
        k = int(max(len(t.classes()) for t in tasks))
        return torch.log_softmax(out[..., :k], dim=-1), None


def _read_checkpoint(path: Path) -> dict:
    from tabpfn.checkpoint import Checkpoint

    try:
        blob = Checkpoint(path).load()
    except Exception as exc:  # noqa: BLE001 - any load failure means a bad file
        raise AdapterCheckpointError(
            f"{path} cannot be read as a TabPFN checkpoint ({exc}); the file is corrupt or of another format. {WHERE}"
        ) from exc
    if not isinstance(blob, dict) or "state_dict" not in blob or "config" not in blob:
        raise AdapterCheckpointError(f"{path} is not a TabPFN checkpoint (no 'state_dict' and 'config'). {WHERE}")
    if "col_num_blocks" in blob["config"] or any(
        k.startswith(("col_embedder.", "icl_predictor.")) for k in blob["state_dict"]
    ):
        raise AdapterCheckpointError(
            f"{path} is a TabICL checkpoint, not a TabPFN one; load it with model=tabicl:{path}."
        )
    name = blob.get("architecture_name", "tabpfn_v2")
    if name != "tabpfn_v2":
        raise AdapterCheckpointError(
            f"{path} holds TabPFN architecture {name!r}; this adapter takes TabPFN v2 (tabpfn_v2) "
            f"checkpoints only. {WHERE}"
        )
    return blob


def load_tabpfn(
    model_path: str | Path, *, preprocessing: Preprocessing = "dataset", n_permutations: int = 1, seed: int = 0
) -> TabPFNLTM:
    """Load a TabPFN v2 checkpoint from a local file (see the module docstring for the options)."""
    from ..runtime.device import compute_device
    from ..runtime.threads import configure_threads

    configure_threads()
    m = _tabpfn_v2()
    path = checked_path(model_path, "TabPFN", WHERE)
    blob = _read_checkpoint(path)
    state = blob["state_dict"]
    criterion = {k.replace("criterion.", ""): v for k, v in state.items() if "criterion." in k}
    try:
        config, _ = m.parse_config(blob["config"])
        net = m.get_architecture(config)
        net.load_state_dict({k: v for k, v in state.items() if "criterion." not in k})
    except Exception as exc:  # noqa: BLE001
        raise AdapterCheckpointError(
            f"{path} does not match TabPFN v2's architecture ({exc}); pass a TabPFN v2 checkpoint "
            f"for tabpfn==9.2.0. {WHERE}"
        ) from exc
    regression = config.max_num_classes <= 0
    borders = None
    if regression:
        if "borders" not in criterion:
            raise AdapterCheckpointError(
                f"{path} is a TabPFN regressor without stored bar-distribution borders "
                f"(criterion.borders); it cannot give a predictive distribution. {WHERE}"
            )
        borders = criterion["borders"].to(torch.float32)
    limits = AdapterLimits(
        max_classes=config.max_num_classes if not regression else 10,
        max_features=MAX_FEATURES,
        max_context=MAX_CONTEXT,
        n_bins=config.num_buckets if regression else 0,
        bin_bound=float(borders.abs().max()) if regression else 0.0,
    )
    model = TabPFNLTM(
        net.to(compute_device()),
        limits,
        sha256_file(path),
        preprocessing=preprocessing,
        n_permutations=n_permutations,
        seed=seed,
        model_path=str(path),
        borders=borders,
        task_kind="regression" if regression else "classification",
    )
    model.checkpoint_extra = {
        "config": dict(blob["config"]),
        "architecture_name": "tabpfn_v2",
        "criterion": {k: v.detach().cpu() for k, v in state.items() if "criterion." in k},
    }
    return model


__all__ = ["TabPFNLTM", "dataset_feature_embedding", "load_tabpfn"]
