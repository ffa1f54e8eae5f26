"""CPU thread count of torch, from ``$ICLMEM_THREADS`` (how to run the book on a busy machine).

PyTorch uses every core by default. On a machine whose cores are already busy (another
notebook, a pretraining run, a sweep worker), two threads that wait on each other can run
5-20x slower than one: set ``ICLMEM_THREADS=1`` for every process but one. Unset, torch's
default is kept. Results do not depend on it beyond floating-point summation order.
"""

from __future__ import annotations

import os

THREADS_ENV = "ICLMEM_THREADS"


def positive_int_env(name: str, unset: str, example: int = 1) -> int | None:
    """``$name`` as a positive integer, or None when unset; ``unset`` says what unsetting it does (for the error)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{name}={raw!r} is not a positive integer; set it to e.g. {example}, or unset it {unset}.")
    return int(raw)


def configure_threads() -> int:
    """Apply ``$ICLMEM_THREADS`` to torch (if set) and return the thread count in use."""
    import torch  # here, so that reading THREADS_ENV (iclmem book) does not import torch

    threads = positive_int_env(THREADS_ENV, "for torch's default")
    if threads is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


__all__ = ["THREADS_ENV", "configure_threads", "positive_int_env"]
