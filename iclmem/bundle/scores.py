"""Probe scores as a results bundle keeps them: every value the probe computed, and nothing it can derive (issue 55).

The probe (Sec. 4.2) computes each query's loss, entropy and confidence in float32 (:mod:`iclmem.probe.scoring`);
the store keeps them as float64 beside columns that repeat what the file's name says. A bundle keeps, per row:
``query_id`` (int32), ``is_member``, ``manipulation`` (dictionary-encoded), ``loss`` and ``entropy`` (float32: the
values computed, exactly, byte-stream-split), zstd-compressed. :func:`decode` gives back the store's frame bit for
bit: ``category`` from the manipulation's record (Tab. 7), ``confidence`` as the probe computed it (``exp(-loss)`` in
float32), and ``model``/``epoch`` from which model the file holds. ``tests/bundle`` checks the round trip on real
scores.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from ..probe.manipulations import MANIPULATIONS

#: The columns a bundle keeps, in order.
KEPT: tuple[str, ...] = ("query_id", "is_member", "manipulation", "loss", "entropy")


def encode(frame: pd.DataFrame) -> bytes:
    """The parquet bytes of ``frame``'s kept columns at the precision the probe computed them."""
    slim = pd.DataFrame(
        {
            "query_id": frame["query_id"].to_numpy(np.int32),
            "is_member": frame["is_member"].to_numpy(bool),
            "manipulation": pd.Categorical(frame["manipulation"].astype(str)),
            "loss": frame["loss"].to_numpy(np.float32),
            "entropy": frame["entropy"].to_numpy(np.float32),
        }
    )
    lossless = np.array_equal(slim["loss"].to_numpy(np.float64), frame["loss"].to_numpy(np.float64), equal_nan=True)
    if not lossless:
        raise ValueError("the scores are not float32 values: a bundle would round them")
    buffer = io.BytesIO()
    # the floats byte-stream-split (their exponent bytes together) before zstd at its highest level: 37% fewer bytes
    # than plain parquet on the book's scores (measured on 20 of them), every value as it was
    table = pa.Table.from_pandas(slim, preserve_index=False)
    pq.write_table(
        table, buffer, compression="zstd", compression_level=19, use_dictionary=["manipulation"],
        use_byte_stream_split=["loss", "entropy"],
    )  # fmt: skip
    return buffer.getvalue()


def encode_witness(frames: dict[str, pd.DataFrame]) -> bytes:
    """One parquet file of several models' scores (``"ref"``, ``"theta-<epoch>"`` -> frame), each as :func:`encode`
    keeps it, with a ``which`` column: a run's witness, in one file instead of one per model."""
    parts = [pd.read_parquet(io.BytesIO(encode(frame))).assign(which=which) for which, frame in frames.items()]
    slim = pd.concat(parts, ignore_index=True)
    slim["manipulation"] = pd.Categorical(slim["manipulation"].astype(str))
    slim["which"] = pd.Categorical(slim["which"])
    buffer = io.BytesIO()
    slim.to_parquet(buffer, index=False, compression="zstd")
    return buffer.getvalue()


def decode_witness(data: bytes | str, which: str) -> pd.DataFrame | None:
    """The store's frame of model ``which``'s scores in a witness (:func:`encode_witness`); None if it has none."""
    slim = pd.read_parquet(io.BytesIO(data) if isinstance(data, bytes) else data)
    part = slim[slim["which"].astype(str) == which].drop(columns="which").reset_index(drop=True)
    if part.empty:
        return None
    buffer = io.BytesIO()
    part.to_parquet(buffer, index=False)
    return decode(buffer.getvalue(), which)


def decode(data: bytes | str, which: str, template: pd.DataFrame | None = None) -> pd.DataFrame:
    """The store's frame of the scores ``which`` (``"ref"`` or ``"theta-<epoch>"``) from :func:`encode`'s bytes
    (or a file of them); ``template``: a frame whose column dtypes the result takes (the store's, in tests)."""
    slim = pd.read_parquet(io.BytesIO(data) if isinstance(data, bytes) else data)
    names = slim["manipulation"].astype(str)
    loss = slim["loss"].to_numpy(np.float32)
    out = pd.DataFrame(
        {
            "query_id": slim["query_id"].to_numpy(np.int64),
            "is_member": slim["is_member"].to_numpy(bool),
            "manipulation": names.to_numpy(),
            "category": names.map(lambda n: MANIPULATIONS[n].category).to_numpy(),
            "loss": loss.astype(np.float64),
            "entropy": slim["entropy"].to_numpy(np.float32).astype(np.float64),
            "confidence": torch.exp(-torch.from_numpy(loss.copy())).numpy().astype(np.float64),
            "model": "ref" if which == "ref" else "theta",
            "epoch": -1 if which == "ref" else int(which.split("-", 1)[1]),
        }
    )
    if template is not None:
        out = out.astype(template.dtypes.to_dict())
    return out


__all__ = ["KEPT", "decode", "decode_witness", "encode", "encode_witness"]
