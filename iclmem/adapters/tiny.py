"""Tiny random TabICL / TabPFN v2 checkpoints in each package's own format (for tests and dry runs).

The real architectures, built from the packages' own config classes at a tiny size, with random
weights (every weight matrix drawn from N(0, 1/fan_in), so that features, labels and queries all
move the output; the packages' own initializations zero some output projections). They predict
nothing useful: they let the whole chain (fine-tuning, probing, calibration, the notebooks) run
with ``model=tabicl:PATH`` or ``tabpfn:PATH`` where no real weights exist.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import torch

from .base import quiet_import

#: TabICL kwargs of the tiny classifier (TabICL's own constructor arguments).
TINY_TABICL = dict(
    max_classes=10,
    embed_dim=16,
    col_num_blocks=1,
    col_nhead=2,
    col_num_inds=8,
    row_num_blocks=1,
    row_nhead=2,
    row_num_cls=2,
    icl_num_blocks=1,
    icl_nhead=2,
    ff_factor=2,
    zero_init=False,
)
#: TabPFNV2Config fields of the tiny classifier.
TINY_TABPFN = dict(max_num_classes=10, emsize=16, nlayers=1, nhead=2, features_per_group=2)


def _randomize(net: torch.nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            if p.ndim >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[-1]))


def tiny_tabicl_network(seed: int = 0, regression: bool = False, **overrides) -> tuple[torch.nn.Module, dict]:
    """A tiny TabICL module with random weights, and its constructor kwargs."""
    with quiet_import():
        from tabicl._model.tabicl import TabICL

    config = {**TINY_TABICL, **({"max_classes": 0, "num_quantiles": 31} if regression else {}), **overrides}
    torch.manual_seed(seed)
    net = TabICL(**config)
    _randomize(net, seed)
    return net, config


def tiny_tabpfn_network(
    seed: int = 0, regression: bool = False, n_buckets: int = 32, **overrides
) -> tuple[torch.nn.Module, dict]:
    """A tiny TabPFN v2 module with random weights, and its config as a dict (regression: no criterion yet)."""
    with quiet_import():
        from tabpfn.architectures import tabpfn_v2

    fields = {**TINY_TABPFN, **({"max_num_classes": 0, "num_buckets": n_buckets} if regression else {}), **overrides}
    config = tabpfn_v2.TabPFNV2Config(**fields)
    torch.manual_seed(seed)
    net = tabpfn_v2.get_architecture(config)
    _randomize(net, seed)
    return net, dataclasses.asdict(config)


def write_tiny_checkpoint(kind: str, path: str | Path, seed: int = 0, regression: bool = False) -> Path:
    """Write a tiny random checkpoint of ``kind`` ("tabicl" or "tabpfn") to ``path`` in that package's format."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "tabicl":
        net, config = tiny_tabicl_network(seed, regression)
        torch.save({"config": config, "state_dict": net.state_dict()}, path)
    elif kind == "tabpfn":
        net, config = tiny_tabpfn_network(seed, regression)
        state = dict(net.state_dict())
        if regression:  # TabPFN stores the bar distribution's borders with the criterion (standardized units)
            state["criterion.borders"] = torch.linspace(-4.0, 4.0, config["num_buckets"] + 1)
            state["criterion.losses_per_bucket"] = torch.zeros(
                config["num_buckets"]
            )  # FullSupportBarDistribution's buffer
        torch.save({"state_dict": state, "config": config, "architecture_name": "tabpfn_v2"}, path)
    else:
        raise ValueError(f"kind must be 'tabicl' or 'tabpfn', got {kind!r}.")
    return path


__all__ = ["TINY_TABICL", "TINY_TABPFN", "tiny_tabicl_network", "tiny_tabpfn_network", "write_tiny_checkpoint"]
