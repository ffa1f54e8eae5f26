"""The results store's errors: one line each, naming the store and the fix (they are
:class:`~iclmem.user_errors.UserError`
subclasses, so the command line prints them without a traceback).
"""

from __future__ import annotations

from ..user_errors import UserError


class StoreError(UserError):
    """A results store (or cache) that cannot serve or keep an artifact: full, read-only, damaged or locked."""


class StoreFullError(StoreError):
    """The disk of a store filled up mid-write; nothing partial was left."""


class StoreReadOnlyError(StoreError):
    """A store on a read-only disk was asked to write (it serves what it holds, it computes nothing new)."""


class DamagedArtifactError(StoreError):
    """A stored artifact does not match its completion record and could not be set aside to be recomputed."""


class StoreLockTimeout(StoreError):
    """Another writer held an artifact's lock longer than the wait allowed (``ICLMEM_LOCK_TIMEOUT``)."""


__all__ = ["DamagedArtifactError", "StoreError", "StoreFullError", "StoreLockTimeout", "StoreReadOnlyError"]
