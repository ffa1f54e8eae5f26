"""Progress bars on the terminal, never in a notebook.

Every long loop of the package (fine-tuning runs and steps, probing, sweeps, LLM batches,
pretraining) reports through :func:`tqdm`, which writes to the process's real standard error
(``sys.__stderr__``). In a terminal that is the terminal. In a notebook kernel started by
``iclmem run`` / ``iclmem book`` (:func:`iclmem.notebook.execute` turns the kernel's capture of
file-descriptor output off) it is the terminal the command runs in, so a bar is seen while the
notebook runs and is never stored in the executed notebook.
"""

from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm as _tqdm


def tqdm(*args: Any, **kwargs: Any) -> _tqdm:
    """:class:`tqdm.tqdm` on ``sys.__stderr__`` (see the module docstring); any ``file`` given wins."""
    kwargs.setdefault("file", sys.__stderr__)
    return _tqdm(*args, **kwargs)


__all__ = ["tqdm"]
