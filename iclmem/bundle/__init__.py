"""Results bundles (issue 55): a design's results shipped read-only in the repository, served to the engine by
their input keys, and accepted on a machine only after a recomputed sample of them agrees (Sec. 4-5's outputs).

:mod:`~iclmem.bundle.layout` reads and writes a bundle, :mod:`~iclmem.bundle.serve` serves its items,
:mod:`~iclmem.bundle.collect` makes one from a results store, :mod:`~iclmem.bundle.recheck` recomputes a sample.
"""

from .layout import Bundle, BundleError, read_bundle
from .serve import bundles_off, lookup, served_bundles

__all__ = ["Bundle", "BundleError", "bundles_off", "lookup", "read_bundle", "served_bundles"]
