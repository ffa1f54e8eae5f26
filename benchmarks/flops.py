"""FLOP counting for the benchmarks: ``FlopCounterMode`` plus torch's CPU flash attention, which it misses.

torch 2.13's ``FlopCounterMode`` has formulas for the CUDA attention kernels but none for
``aten._scaled_dot_product_flash_attention_for_cpu`` (and its backward): on the CPU the row
attention of every fine-tuning step counted zero FLOPs, so ``roofline.py``'s fractions before this
module left out about a third of a step's work. Registered here with torch's own SDPA formulas
(``sdpa_flop_count``: QK^T and PV; ``sdpa_backward_flop_count``: the four matmuls of the gradient).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

_CPU_FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_CPU_FLASH_BACKWARD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


def _forward(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return flop_counter.sdpa_flop_count(query_shape, key_shape, value_shape)


def _backward(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return flop_counter.sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


if _CPU_FLASH not in flop_counter.flop_registry:
    flop_counter.register_flop_formula(_CPU_FLASH, get_raw=False)(_forward)
    flop_counter.register_flop_formula(_CPU_FLASH_BACKWARD, get_raw=False)(_backward)


def flops_by_op(fn: Callable[[], object]) -> dict[str, int]:
    """FLOPs of one call of ``fn`` by aten op name (matmuls and attention; elementwise work counts zero)."""
    with FlopCounterMode(display=False) as counter:
        fn()
    counts = counter.get_flop_counts().get("Global", {})
    return {str(op).removeprefix("aten."): int(n) for op, n in counts.items()}


def counted_flops(fn: Callable[[], object]) -> int:
    """Total FLOPs of one call of ``fn`` (:func:`flops_by_op` summed)."""
    return sum(flops_by_op(fn).values())
