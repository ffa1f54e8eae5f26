"""Other tabular ICL models behind the LTM interface, and the ``model`` parameter that names one (Sec. 4.1, 4.2).

``model`` is ``reference`` (the shipped LTM), ``reference-v1`` (its earlier weights, pretrained on contexts of
16 rows or more and shipped until stage 4, kept so a change can be compared on one page), ``tabicl:PATH`` or
``tabpfn:PATH`` (a local
checkpoint file of that architecture: pretrained, or one's own fine-tuned one). Calibration
always uses the pretrained checkpoint of the same architecture as M_ref (``reference_model``).
The adapters need the optional extra ``pip install 'iclmem[ltms]'``; they import their package
only when a checkpoint is loaded.
"""

from __future__ import annotations

from pathlib import Path

from ..ltm.interface import LTMInputError
from .base import PREPROCESSING, AdapterCheckpointError, AdapterLimits, AdapterLTM

MODEL_KINDS: tuple[str, ...] = ("reference", "tabicl", "tabpfn")


def parse_model(spec: str) -> tuple[str, str | None]:
    """``(kind, path)`` of a ``model`` parameter; errors name the accepted forms.

    For the shipped reference ``path`` is its version: ``None`` for the current weights, ``"v1"`` for
    ``reference-v1`` (:data:`iclmem.ltm.reference.REFERENCE_VERSIONS`).
    """
    from ..ltm.reference import REFERENCE_VERSIONS

    spec = str(spec).strip()
    if spec == "reference":
        return "reference", None
    if spec.startswith("reference-") and spec.removeprefix("reference-") in REFERENCE_VERSIONS:
        return "reference", spec.removeprefix("reference-")
    kind, sep, path = spec.partition(":")
    if not sep or kind not in MODEL_KINDS[1:] or not path:
        versions = ", ".join(f"'reference-{v}'" for v in REFERENCE_VERSIONS)
        raise LTMInputError(
            f"model must be 'reference', {versions}, 'tabicl:PATH' or 'tabpfn:PATH' (PATH: a local checkpoint "
            f"file), got {spec!r}."
        )
    return kind, path


def load_model(spec: str, *, preprocessing: str = "dataset", n_permutations: int = 1, seed: int = 0):
    """The LTM a ``model`` parameter names (see the module docstring); the reference ignores the adapter options.

    ``~`` in PATH is expanded (a shell leaves ``tabpfn:~/...`` as it is).
    """
    kind, path = parse_model(spec)
    if preprocessing not in PREPROCESSING:
        raise LTMInputError(
            f"preprocessing must be one of {PREPROCESSING}, got {preprocessing!r}; 'dataset' keeps the query's "
            "features visible in a multiple-choice context (Sec. 4.2)."
        )
    if kind == "reference":
        from ..ltm.reference import load_reference

        return load_reference(path)
    if kind == "tabicl":
        from .tabicl import load_tabicl

        return load_tabicl(
            Path(path).expanduser(), preprocessing=preprocessing, n_permutations=n_permutations, seed=seed
        )
    from .tabpfn import load_tabpfn

    return load_tabpfn(Path(path).expanduser(), preprocessing=preprocessing, n_permutations=n_permutations, seed=seed)


__all__ = [
    "MODEL_KINDS",
    "PREPROCESSING",
    "AdapterCheckpointError",
    "AdapterLTM",
    "AdapterLimits",
    "load_model",
    "parse_model",
]
