"""CPU thread count of torch, from ``$ICLMEM_THREADS`` (how to run the book on a busy machine).

PyTorch uses every core by default. On a machine whose cores are already busy (another
notebook, a pretraining run, a sweep worker), two threads that wait on each other can run
5-20x slower than one: set ``ICLMEM_THREADS=1`` for every process but one. Unset, torch's
default is kept. Results do not depend on it beyond floating-point summation order.
"""

from __future__ import annotations

import os

import torch

THREADS_ENV = "ICLMEM_THREADS"


def configure_threads() -> int:
    """Apply ``$ICLMEM_THREADS`` to torch (if set) and return the thread count in use."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"{THREADS_ENV}={raw!r} is not a positive integer; set it to e.g. 1, or unset it for torch's default.")
        if torch.get_num_threads() != int(raw):
            torch.set_num_threads(int(raw))
    return torch.get_num_threads()


__all__ = ["THREADS_ENV", "configure_threads"]
