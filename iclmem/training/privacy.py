"""Differentially private fine-tuning: DP-SGD (Abadi et al. 2016), the mitigation IclMem's Sec. 6 names.

Neither paper measures it; chapter 7 does. The privacy unit is **one member row**: a query row of
the fine-tuning pairs. The context-pool rows (the training context C') are treated as public: they
are not protected, only the members whose membership the book's attacks try to infer.

One DP step on a task of context C' and Q member queries:

1. **per-member gradients.** The LTM's query rows never serve as keys (:func:`iclmem.ltm.model.key_rows`),
   so a member's loss depends on the weights through C' and its own row only. Its gradient is that
   of the task "C' plus this one query"; :func:`per_sample_gradients` computes all Q of them
   with ``torch.func`` (``vmap`` of ``grad`` over the query row, through Opacus' functorch helper
   :func:`opacus.grad_sample.functorch.make_functional`, the same machinery as Opacus'
   ``grad_sample_mode="functorch"``), :data:`PER_SAMPLE_CHUNK` members at a time (``vmap``'s
   ``chunk_size``: the same values, with batched activations small enough to stay in cache; faster than
   all Q at once, as ``benchmarks/dp_step.py`` measures).
   Opacus' module hooks cannot be used: the network reshapes
   its batch into rows x columns and slices the ``qkv`` weights (:meth:`_Block._attend`), so no layer sees
   one member per batch entry. The hand-written backward of :class:`~iclmem.ltm.attention.SmallAttention`
   does not compose with ``torch.func``; per-member gradients leave that backward to autograd
   (:func:`plain_attention`): the same function, differentiated by autograd instead of by hand.
2. **clipping factors** ``c_i = min(1, C / (||g_i|| + 1e-6))``, Opacus' own formula (``DPOptimizer``).
3. **the clipped mean in the same pass**: ``sum_i c_i g_i / Q`` summed from the per-member gradients
   (no second backward: the gradients are at hand), plus Gaussian noise of standard deviation
   ``sigma C / Q`` on every coordinate, seeded per step (a resumed run draws the same noise). Without
   clipping (``max_grad_norm=None``) no per-member gradient is needed: the step runs the plain backward,
   and with ``sigma = 0`` it is the plain step bit for bit (``tests/engine/test_privacy.py``).

Every member is in every step (the single-task schedule, Sec. 4.1), so the sampling rate is 1 and
the accountant composes ``epochs`` Gaussian mechanisms; epsilon comes from Opacus' accountants
(RDP or PRV), never from code of ours.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from iclmem.user_errors import UserError

from ..ltm import ICLTask, ReferenceLTM
from ..ltm import attention as attention_module
from ..ltm.interface import Predictions
from ..ltm.outputs import bar_log_probs, class_log_probs
from ..ltm.reference import query_start

ACCOUNTANTS = ("rdp", "prv")
#: Members per ``vmap`` chunk of :func:`per_sample_gradients`: ``benchmarks/dp_step.py`` times it against all at once.
PER_SAMPLE_CHUNK = 5
#: delta of every epsilon the book reports: below 1 / (the members of the largest table's split), the usual choice.
DEFAULT_DELTA = 1e-5


class PrivacyError(UserError, ValueError):
    """A privacy setting that cannot run: the message names the fix."""


@dataclass(frozen=True)
class PrivacyConfig:
    """DP-SGD settings of one fine-tuning run (part of its store key through ``asdict``).

    Give ``noise_multiplier`` (sigma) or ``target_epsilon`` (at ``delta``; sigma is then Opacus'
    :func:`~opacus.accountants.utils.get_noise_multiplier` for the run's steps). ``max_grad_norm``:
    the clipping norm C per member, None for no clipping (then sigma must be 0). ``accountant``: rdp | prv.
    """

    noise_multiplier: float | None = None
    target_epsilon: float | None = None
    delta: float = DEFAULT_DELTA
    max_grad_norm: float | None = 1.0
    accountant: str = "rdp"

    def checked(self) -> PrivacyConfig:
        """Validate (errors name the fix) and return self."""
        if (self.noise_multiplier is None) == (self.target_epsilon is None):
            raise PrivacyError(
                "give exactly one of noise_multiplier (sigma) and target_epsilon, e.g. PrivacyConfig(target_epsilon=4)."
            )
        if self.accountant not in ACCOUNTANTS:
            raise PrivacyError(f"accountant {self.accountant!r} is not one of {ACCOUNTANTS}.")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise PrivacyError(f"max_grad_norm must be positive or None (no clipping), got {self.max_grad_norm}.")
        if self.noise_multiplier is not None and self.noise_multiplier < 0:
            raise PrivacyError(f"noise_multiplier must be >= 0, got {self.noise_multiplier}.")
        if self.target_epsilon is not None and not self.target_epsilon > 0:
            raise PrivacyError(
                f"target_epsilon must be positive, got {self.target_epsilon}; a non-private run has privacy=None."
            )
        if self.max_grad_norm is None and (self.target_epsilon is not None or self.noise_multiplier):
            raise PrivacyError("noise without clipping protects nothing: set max_grad_norm (the clipping norm C).")
        if not 0 < self.delta < 1:
            raise PrivacyError(f"delta must lie in (0, 1), got {self.delta}.")
        return self

    def sigma(self, steps: int, sample_rate: float = 1.0) -> float:
        """The noise multiplier: given, or the smallest Opacus finds for ``target_epsilon`` after ``steps`` steps."""
        if self.noise_multiplier is not None:
            return float(self.noise_multiplier)
        from opacus.accountants.utils import get_noise_multiplier

        return float(
            get_noise_multiplier(
                target_epsilon=self.target_epsilon,
                target_delta=self.delta,
                sample_rate=sample_rate,
                steps=steps,
                accountant=self.accountant,
            )
        )


def epsilon(
    sigma: float, sample_rate: float, steps: int, delta: float = DEFAULT_DELTA, accountant: str = "rdp"
) -> float:
    """Opacus' epsilon at ``delta`` after ``steps`` steps of noise multiplier ``sigma`` at ``sample_rate`` (inf when
    sigma is 0)."""
    if sigma <= 0:
        return math.inf
    if steps == 0:
        return 0.0
    from opacus.accountants import create_accountant

    acc = create_accountant(mechanism=accountant)
    acc.history = [(float(sigma), float(sample_rate), int(steps))]
    return float(acc.get_epsilon(delta=delta))


@dataclass(frozen=True)
class DPStep:
    """A resolved DP-SGD step for :func:`iclmem.training.loop.train`: clipping norm C (None: none), sigma, seed of the
    noise."""

    max_grad_norm: float | None
    sigma: float
    seed: int = 0

    @classmethod
    def of(cls, config: PrivacyConfig, steps: int, seed: int = 0, sample_rate: float = 1.0) -> DPStep:
        config = config.checked()
        return cls(config.max_grad_norm, config.sigma(steps, sample_rate), seed)


class _AutogradAttention:
    """:class:`~iclmem.ltm.attention.SmallAttention`'s computation left to autograd (``torch.func`` can transform
    it)."""

    @staticmethod
    def apply(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        return torch.bmm(attention_module.attention_weights(q, k, bias), v)


@contextlib.contextmanager
def plain_attention() -> Iterator[None]:
    """Every attention as batched matmuls whose backward autograd derives, for ``torch.func`` transforms.

    The hand-written backward of :class:`~iclmem.ltm.attention.SmallAttention` does not compose with
    ``vmap``, and torch's fused kernel has no batching rule (a per-sample loop, 10 s a step here).
    """
    saved = attention_module.SMALL_ATTENTION_PAIRS, attention_module.SmallAttention
    attention_module.SMALL_ATTENTION_PAIRS, attention_module.SmallAttention = 2**62, _AutogradAttention
    try:
        yield
    finally:
        attention_module.SMALL_ATTENTION_PAIRS, attention_module.SmallAttention = saved


def target_index(model: ReferenceLTM, task: ICLTask) -> torch.Tensor:
    """Per query: the slot (class) or bin (regression) whose log-probability is minus its loss."""
    return Predictions(torch.empty(0), task, model.cfg.n_bins, model.cfg.bin_bound)._target_index()


Grads = dict[str, torch.Tensor]


def per_sample_gradients(
    model: ReferenceLTM, task: ICLTask, chunk_size: int | None = PER_SAMPLE_CHUNK, with_losses: bool = False
) -> Grads | tuple[Grads, torch.Tensor]:
    """Per member query of ``task``: the gradient of its loss, each parameter as (Q, *shape); see the module docstring.

    ``chunk_size``: members per ``vmap`` chunk (None: all at once; the values are the same). ``with_losses``:
    return ``(gradients, losses)``, the (Q,) member losses of the same pass.
    """
    from opacus.grad_sample.functorch import make_functional
    from torch.func import grad_and_value, vmap

    batch = {k: v.to(model.device) for k, v in model.collate([task]).items()}
    start, n_q, cfg = query_start(batch), len(task.query_x), model.cfg
    one = {k: (v[:, : start + 1] if v.dim() > 1 else v) for k, v in batch.items() if k != "x"}  # C' and one query row
    xs = batch["x"][0, start : start + n_q]  # (Q, F): the member rows
    head = batch["x"][:, :start]  # (1, C, F)
    names = [n for n, p in model.network.named_parameters() if p.requires_grad]
    fmodel, params = make_functional(model.network, disable_autograd_tracking=True)
    all_names = [n for n, _ in model.network.named_parameters()]
    k = None if task.is_regression else len(task.classes())

    def loss(trainable: tuple[torch.Tensor, ...], row: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        given = dict(zip(names, trainable, strict=True))
        values = [given.get(n, p) for n, p in zip(all_names, params, strict=True)]
        x = torch.cat([head, row.view(1, 1, -1)], dim=1)
        z = fmodel(values, x, **one)[:, start]  # (1, n_out)
        if k is None:
            lp = bar_log_probs(z, cfg.n_bins)
        else:
            lp = class_log_probs(z, torch.full((1,), k, device=z.device), cfg.max_classes)[:, :k]
        return -lp.gather(-1, target.view(1, 1)).sum()

    trainable = tuple(p for n, p in zip(all_names, params, strict=True) if n in set(names))
    chunk = None if chunk_size is None else max(1, min(int(chunk_size), n_q))
    with plain_attention():
        grads, losses = vmap(grad_and_value(loss), in_dims=(None, 0, 0), chunk_size=chunk)(
            trainable, xs, target_index(model, task).to(model.device)
        )
    out = dict(zip(names, grads, strict=True))
    return (out, losses) if with_losses else out


def per_sample_norms(grads: dict[str, torch.Tensor]) -> torch.Tensor:
    """The L2 norm of each member's whole gradient (all parameters together), shape (Q,)."""
    return torch.stack([g.flatten(1).norm(dim=1) for g in grads.values()], dim=1).norm(dim=1)


def clip_factors(norms: torch.Tensor, max_grad_norm: float) -> torch.Tensor:
    """Opacus' per-sample clipping factors ``min(1, C / (norm + 1e-6))``."""
    return (max_grad_norm / (norms + 1e-6)).clamp(max=1.0)


def noise_generator(seed: int, epoch: int, index: int) -> torch.Generator:
    """The noise of one step, seeded by (run seed, epoch, step): the same after a resume."""
    state = np.random.SeedSequence([int(seed), 0xD9, int(epoch), int(index)]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(state) & (2**63 - 1))


def private_backward(model: ReferenceLTM, task: ICLTask, dp: DPStep, epoch: int, index: int = 0) -> torch.Tensor:
    """Leave DP-SGD's clipped, noised mean gradient in ``.grad`` (zeroed before); return the mean member loss
    (unclipped).

    One pass (see the module docstring): the per-member gradients, their clipping factors and their
    clipped mean. The gradients must be zero (or None) on entry: the caller's ``optimizer.zero_grad()``.
    """
    if dp.max_grad_norm is None:  # no clipping: the plain backward (with sigma = 0, the plain step bit for bit)
        losses = model.predict([task], grad=True)[0].loss()
        losses.mean().backward()
    else:
        with torch.no_grad():
            grads, losses = per_sample_gradients(model, task, with_losses=True)
            factors = clip_factors(per_sample_norms(grads), dp.max_grad_norm)
            named = dict(model.network.named_parameters())
            for name, g in grads.items():
                p = named[name]
                mean = torch.tensordot(factors.to(g.dtype), g, dims=1).div_(len(factors)).to(p.dtype)
                p.grad = mean if p.grad is None else p.grad.add_(mean)
    n = losses.shape[0]
    if dp.sigma > 0:
        gen, std = noise_generator(dp.seed, epoch, index), dp.sigma * float(dp.max_grad_norm) / n
        for p in model.trainable_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype).to(p.device)
            p.grad = noise.mul_(std) if p.grad is None else p.grad.add_(noise, alpha=std)
    return losses.detach().mean()


__all__ = [
    "ACCOUNTANTS",
    "DEFAULT_DELTA",
    "PER_SAMPLE_CHUNK",
    "DPStep",
    "PrivacyConfig",
    "PrivacyError",
    "clip_factors",
    "epsilon",
    "noise_generator",
    "per_sample_gradients",
    "per_sample_norms",
    "plain_attention",
    "private_backward",
    "target_index",
]
