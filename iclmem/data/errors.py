"""Errors raised by :mod:`iclmem.data`; every message names the problem and the fix."""

from __future__ import annotations

from iclmem.user_errors import UserError


class DataError(UserError, ValueError):
    """Bad input to the data stage (Sec. 4.1 "Data Pre-Processing")."""


class UnknownDatasetError(DataError):
    """The name is neither a known table nor an existing file."""


class MissingColumnError(DataError):
    """A named column (usually the target) is not in the table."""


class TargetError(DataError):
    """The target column cannot be used for the requested task (NaNs, one class, non-numeric regression)."""


class DataFileNotFoundError(DataError, FileNotFoundError):
    """A data file (or the local CARTE folder) does not exist; also a ``FileNotFoundError``."""


class UnreadableFileError(DataError):
    """A data file exists but could not be parsed as CSV/parquet."""


class PoolSizeError(DataError):
    """The requested pools do not fit into the deduplicated table."""


class SplitValidationError(DataError):
    """No member/non-member draw passed the split validation of Sec. 4.1 / App. A.2 within ``max_redraws``."""


class ManifestError(DataError):
    """A split manifest is malformed or does not match the table it is applied to."""
