"""Appendix A3 (no paper section): bad TabPFN v2 / TabICL checkpoints named by ``model`` (iclmem.adapters)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from iclmem.adapters import AdapterCheckpointError, load_model
from iclmem.adapters.tiny import write_tiny_checkpoint
from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
)
from iclmem.ltm import ICLTask, LTMInputError

ad = "iclmem.adapters.load_model"


def garbage(folder: Path) -> object:
    (folder / "bad.ckpt").write_bytes(b"garbage")
    return load_model(f"tabpfn:{folder / 'bad.ckpt'}")


def regression_on_classifier(folder: Path) -> object:
    rng = np.random.default_rng(0)
    model = load_model(f"tabpfn:{write_tiny_checkpoint('tabpfn', folder / 'cls.ckpt')}")
    return model.predict(
        [ICLTask(rng.normal(size=(8, 3)), rng.normal(size=8), rng.normal(size=(1, 3)), task="regression")]
    )


#: TabPFN v2 / TabICL checkpoints named by the ``model`` parameter (:mod:`iclmem.adapters`), tiny random ones.
ADAPTER_CASES: list[BadInput] = [
    BadInput(
        "model-spec-unknown",
        "Passed `-p model xgboost:model.json`.",
        ad,
        lambda d: load_model("xgboost:model.json"),
        LTMInputError,
        r"got 'xgboost:model\.json'",
        r"model must be 'reference', 'reference-v1', 'tabicl:PATH' or 'tabpfn:PATH'",
    ),
    BadInput(
        "adapter-weights-missing",
        "Named a TabPFN checkpoint that is not on disk (`-p model tabpfn:weights.ckpt`).",
        ad,
        lambda d: load_model(f"tabpfn:{d / 'weights.ckpt'}"),
        AdapterCheckpointError,
        r"no TabPFN checkpoint at .*weights\.ckpt: iclmem never downloads weights",
        r"Prior-Labs/TabPFN-v2-clf.*Put the file at",
    ),
    BadInput(
        "adapter-weights-corrupt",
        "Named a TabPFN checkpoint file that holds garbage.",
        ad,
        garbage,
        AdapterCheckpointError,
        r"bad\.ckpt cannot be read as a TabPFN checkpoint",
        r"download one yourself",
    ),
    BadInput(
        "adapter-other-architecture",
        "Named a TabICL checkpoint as `tabpfn:PATH`.",
        ad,
        lambda d: load_model(f"tabpfn:{write_tiny_checkpoint('tabicl', d / 'icl.ckpt')}"),
        AdapterCheckpointError,
        r"is a TabICL checkpoint, not a TabPFN one",
        r"load it with model=tabicl:",
    ),
    BadInput(
        "adapter-task-mismatch",
        "Predicted a regression target with a TabPFN classifier checkpoint.",
        "iclmem.adapters.tabpfn.TabPFNLTM.predict",
        regression_on_classifier,
        LTMInputError,
        r"this TabPFN checkpoint is a classification model; the task is regression",
        r"Use a tabpfn-v2-regressor checkpoint",
    ),
]


def adapter_cases() -> list[BadInput]:
    """TabPFN v2 / TabICL checkpoints named by the ``model`` parameter (:mod:`iclmem.adapters`), tiny random ones."""
    return list(ADAPTER_CASES)


__all__ = ["ADAPTER_CASES", "adapter_cases"]
