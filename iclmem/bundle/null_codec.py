"""A run's membership null as a results bundle keeps it: every permuted value, exactly, in half the bytes (issue 55).

The decision design's verdicts rest on permutation nulls (Sec. 4.2, Tab. 3): per fine-tuned run and probed epoch,
:func:`iclmem.probe.null.run_null` recomputes the summary's membership-dependent columns under ``n_perm``
relabellings of its queries. A reader cannot recompute them in a 20-minute build (about 6 s per Q = 512 epoch at
1,000 permutations on this project's CPU), and the probe scores they come from are several times the bundle's
size limit, so a bundle keeps the null rows themselves.

They are kept exactly. A permuted AUC is a count of won (member, non-member) pairs, ties counting half, over
``n_m * n_n``: it is stored as the integer ``2 n_m n_n AUC``; a TPR is a count of members over ``n_m``, stored as
that count (as int32 where it fits, without dictionaries: measured on a Q = 512 run's null at 1,000 permutations,
91.8 KB against 121 KB with them). :func:`encode` stores a column so only when every value comes back bit for bit
from one division, and as float64 otherwise (the bootstrap lower bounds, the loss gaps); :func:`decode` gives the
frame back bit for bit.
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..store.keys import input_key

_META = b"iclmem.null"


@dataclass(frozen=True)
class NullSettings:
    """How a bundled null was drawn (:func:`iclmem.probe.null.run_null`): permutations, seed, bootstrap resamples."""

    n_perm: int
    seed: int
    n_boot: int


def null_input_key(run: str, probe: dict, epochs: list[int], null: NullSettings, reference: dict) -> str:
    """The input key of a run's null: the run's, its probe's parameters, the epochs and how the null was drawn."""
    return input_key(run, "null", probe, [int(e) for e in epochs], asdict(null), reference)


def _scale(column: str, n_members: int, n_non_members: int) -> float:
    """A value ``x`` of ``column`` is stored as the integer ``x * scale`` when ``round(x * scale) / scale`` gives it
    back bit for bit; 0: kept as float64."""
    base = column.removeprefix("raw_").removeprefix("ref_")
    if base.startswith("auc_") and not base.endswith("_lo"):
        return 2.0 * n_members * n_non_members
    if base.startswith("tpr"):
        return float(n_members)
    return 0.0


def _decoded(counts: np.ndarray, scale: float) -> np.ndarray:
    return counts.astype(np.float64) / scale


def _smallest_int(values: np.ndarray) -> np.ndarray:
    """``values`` (whole numbers) as int32 when they fit, else int64: a quarter less to compress."""
    limit = np.iinfo(np.int32)
    fits = values.size == 0 or (values.min() >= limit.min and values.max() <= limit.max)
    return values.astype(np.int32 if fits else np.int64)


def encode(null: pd.DataFrame, n_members: int, n_non_members: int) -> bytes:
    """The parquet bytes of ``null`` (:func:`iclmem.probe.null.run_null`'s rows), integer-coded where exact."""
    columns, scales = {}, {}
    for name in null.columns:
        values = null[name].to_numpy()
        scale = _scale(str(name), n_members, n_non_members)
        if values.dtype.kind in "iu":
            columns[name] = _smallest_int(values)
            continue
        if scale:
            counts = np.round(values.astype(np.float64) * scale)
            if np.isfinite(counts).all() and np.array_equal(_decoded(counts, scale), values):
                columns[name], scales[name] = _smallest_int(counts), scale
                continue
        columns[name] = values.astype(np.float64)
    table = pa.Table.from_pandas(pd.DataFrame(columns), preserve_index=False)
    kept = {"scales": scales, "dtypes": {str(n): str(null[n].dtype) for n in null.columns}}
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META: json.dumps(kept).encode()})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", compression_level=19, use_dictionary=False)  # 0.76x the bytes
    return buffer.getvalue()


def decode(data: bytes | str) -> pd.DataFrame:
    """The null rows :func:`encode` kept, bit for bit (integer-coded columns as float64, the rest as stored)."""
    table = pq.read_table(io.BytesIO(data) if isinstance(data, bytes) else data)
    kept = json.loads((table.schema.metadata or {}).get(_META, b"{}"))
    frame = table.to_pandas()
    for name, scale in kept.get("scales", {}).items():
        frame[name] = _decoded(frame[name].to_numpy(), float(scale))
    return frame.astype(kept.get("dtypes", {}))


__all__ = ["NullSettings", "decode", "encode", "null_input_key"]
