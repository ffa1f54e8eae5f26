"""A run's manipulation effects as a results bundle keeps them: what C12 and Fig. 4 read, exactly (issue 55).

Without a design's probe scores, C12's permutation null (Sec. 5 "Perturbation Effectiveness") reads each
configuration's :class:`iclmem.probe.effects.GroupRanks`, integer vectors that give every permutation's statistic
exactly, and Fig. 4's table reads each manipulation's observed AUC
(:func:`iclmem.probe.effects.manipulation_aucs`' rows).
An ``effects`` item keeps both for a run's fine-tuned probed epochs: ``ranks.parquet`` (one row per epoch and query:
``epoch``, ``query_id``, ``is_member`` and a group's rank sum per column, each group's number of manipulations in
the file's metadata) and ``aucs.parquet``.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..probe.effects import GroupRanks, group_ranks_of

_META = b"iclmem.effects"


def _parquet(frame: pd.DataFrame, meta: dict | None = None) -> bytes:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if meta is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META: json.dumps(meta).encode()})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", compression_level=19, use_dictionary=False)
    return buffer.getvalue()


def encode_ranks(ranks: dict[int, GroupRanks]) -> bytes:
    """The parquet bytes of each epoch's :class:`GroupRanks` (rank sums as int32: ``|s_G| <= 2 |G| n_queries``)."""
    sizes: dict[str, int] = {}
    frames = []
    for epoch, r in sorted(ranks.items()):
        sizes.update(zip(r.groups, r.sizes, strict=True))
        frame = r.frame()
        frames.append(frame.assign(**{g: frame[g].astype(np.int32) for g in r.groups}).assign(epoch=int(epoch)))
    return _parquet(pd.concat(frames, ignore_index=True), {"sizes": sizes})


def decode_ranks(data: bytes | str) -> dict[int, GroupRanks]:
    """Each epoch's :class:`GroupRanks` from :func:`encode_ranks`' bytes (or a file of them), exactly."""
    table = pq.read_table(io.BytesIO(data) if isinstance(data, bytes) else data)
    sizes = json.loads((table.schema.metadata or {})[_META])["sizes"]
    frame = table.to_pandas()
    out = {}
    for epoch, part in frame.groupby("epoch", sort=True):
        rows = part.drop(columns="epoch").dropna(axis=1, how="all").reset_index(drop=True)
        out[int(epoch)] = group_ranks_of(rows, sizes)
    return out


def encode_aucs(aucs: pd.DataFrame) -> bytes:
    """The parquet bytes of a run's observed per-manipulation AUCs (as computed: float64)."""
    return _parquet(aucs.reset_index(drop=True))


def decode_aucs(data: bytes | str) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(data) if isinstance(data, bytes) else data)


__all__ = ["decode_aucs", "decode_ranks", "encode_aucs", "encode_ranks"]
