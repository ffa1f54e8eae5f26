"""Where the reference LTM computes: ``$ICLMEM_DEVICE`` (CPU by default; a CUDA GPU when asked for).

``ICLMEM_DEVICE=cuda`` (or ``cuda:1``) puts the model and its batches on that GPU; ``auto`` picks
the first GPU when one is present and the CPU otherwise; unset or ``cpu`` keeps everything on the
CPU, where the book's numbers are computed. Results on a GPU equal the CPU's up to float32
summation order (different kernels), not bitwise, so the results store keys runs by device.
"""

from __future__ import annotations

import os

import torch

from iclmem.user_errors import UserError

DEVICE_ENV = "ICLMEM_DEVICE"


class DeviceError(UserError, RuntimeError):
    """``$ICLMEM_DEVICE`` names a device this machine does not have."""


def compute_device() -> torch.device:
    """The device of ``$ICLMEM_DEVICE``: ``cpu`` (default), ``cuda``, ``cuda:N`` or ``auto``."""
    raw = os.environ.get(DEVICE_ENV, "").strip().lower() or "cpu"
    if raw == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if raw != "cpu" and not raw.startswith("cuda"):
        raise DeviceError(
            f"{DEVICE_ENV}={raw!r} is not a device; use cpu, cuda, cuda:N or auto (or unset it for the CPU)."
        )
    try:
        device = torch.device(raw)
    except RuntimeError as exc:
        raise DeviceError(f"{DEVICE_ENV}={raw!r} is not a device ({exc}); use cpu, cuda, cuda:N or auto.") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(
                f"{DEVICE_ENV}={raw} but this machine has no CUDA GPU that torch can use (torch "
                f"{torch.__version__}); unset it (or set cpu, or auto) to compute on the CPU, or install a CUDA build "
                "of torch."
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise DeviceError(
                f"{DEVICE_ENV}={raw} but this machine has {torch.cuda.device_count()} GPU(s); use cuda:0 .. "
                f"cuda:{torch.cuda.device_count() - 1}."
            )
    return device


def store_identity(checkpoint_sha256: str, device: torch.device) -> str:
    """A checkpoint as results-store keys read it: its sha256, plus ``@<device>`` when not the CPU.

    A GPU's float32 kernels sum in another order than the CPU's, so its runs and scores are kept
    apart from the CPU's (the book's) instead of overwriting or mixing with them.
    """
    return checkpoint_sha256 if device.type == "cpu" else f"{checkpoint_sha256}@{device.type}"


__all__ = ["DEVICE_ENV", "DeviceError", "compute_device", "store_identity"]
