"""Benchmark: at what precision a design bundle must keep its membership nulls (issue 55 item 1).

A design bundle's largest kind of item is the membership null of each probed run (:mod:`iclmem.bundle.null_codec`):
the AUCs and TPRs are kept exactly as integer counts, and four columns as float64 (the bootstrap lower bounds
``auc_loss_lo`` and ``auc_entropy_lo``, the loss gaps ``mu_gap`` and ``sigma_gap``). This script reads every claim of
chapters 02-05 on the bundle (as the notebooks do) with those columns rounded to a narrower float, compares each
claim's record with the float64 reading (verdict, null rate, the build's value), and measures what the nulls would
take on disk at that precision (a seeded sample of null files re-encoded, projected to all of them). No AUC is
tuned: the readings are those of the shipped bundle.

    python benchmarks/bundle_precision.py [--bundle decide] [--dtypes float32 float16] [--sample 60]

Writes ``benchmarks/results/bundle_precision.json``; appendix A5 shows it.
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import random
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import iclmem.bundle.design as design_module
from iclmem.bundle.null_codec import decode
from iclmem.chapters.ch02_finetuning.on_design import design_finetuning_claims
from iclmem.chapters.ch03_probing.on_design import design_perturbation_claims
from iclmem.chapters.ch04_calibration.on_design import design_calibration_claims
from iclmem.chapters.ch05_regimes.on_design import design_regime_claims
from iclmem.report.design_glue import load_design

READERS = (design_calibration_claims, design_finetuning_claims, design_perturbation_claims, design_regime_claims)
OUT = Path(__file__).parent / "results" / "bundle_precision.json"


def rounded_decoder(dtype: str | None) -> Callable:
    """:func:`iclmem.bundle.null_codec.decode` with its float64 columns rounded through ``dtype`` (None: as kept)."""

    def read(path):
        frame = decode(path)
        if dtype is None:
            return frame
        for column in frame.columns:
            if frame[column].dtype == np.float64 and column not in _integer_coded(path):
                frame[column] = frame[column].to_numpy().astype(dtype).astype(np.float64)
        return frame

    return read


def _integer_coded(path) -> set[str]:
    """The columns a null file keeps as integer counts (exact at any float width, so never rounded here)."""
    meta = json.loads((pq.read_schema(path).metadata or {}).get(b"iclmem.null", b"{}"))
    return set(meta.get("scales", {}))


def claim_records(bundle: str, dtype: str | None) -> dict[str, dict]:
    """Every design claim of chapters 02-05 on ``bundle``, its nulls read at ``dtype``."""
    design_module.decode_null = rounded_decoder(dtype)
    design = load_design(bundle)
    return {r["id"]: r for read in READERS for r in read(design)}


def null_bytes(bundle: str, dtype: str, sample: int, seed: int = 0) -> dict:
    """Bytes of the bundle's null files, and a seeded sample of them re-encoded with float columns at ``dtype``."""
    files = sorted(Path("bundle", bundle, "items", "null").glob("*/null.parquet"))
    chosen = random.Random(seed).sample(files, min(sample, len(files)))
    kept = sum(f.stat().st_size for f in files)
    shown = narrow = 0
    for f in chosen:
        table = pq.read_table(f)
        columns = {
            n: table[n].cast(pa.from_numpy_dtype(np.dtype(dtype)))
            if table.schema.field(n).type == pa.float64()
            else table[n]
            for n in table.column_names
        }
        buffer = io.BytesIO()
        pq.write_table(pa.table(columns), buffer, compression="zstd", compression_level=19, use_dictionary=False)
        shown += f.stat().st_size
        narrow += len(buffer.getvalue())
    return {"files": len(files), "bytes": kept, "projected_bytes": round(kept * narrow / shown)}


def compare(base: dict[str, dict], other: dict[str, dict]) -> dict:
    """What moved between two readings: verdicts, null rates (largest change), the build's values."""
    moved = [c for c in base if other[c]["verdict"] != base[c]["verdict"]]
    changed = [
        c
        for c in base
        if (other[c].get("ours"), other[c].get("null_rate")) != (base[c].get("ours"), base[c].get("null_rate"))
    ]
    rates = [
        abs(other[c]["null_rate"] - base[c]["null_rate"])
        for c in base
        if base[c].get("null_rate") is not None and other[c].get("null_rate") is not None
    ]
    return {
        "claims": len(base),
        "verdicts_moved": moved,
        "records_changed": changed,
        "max_null_rate_change": max(rates, default=0.0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", default="decide")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"])
    parser.add_argument("--sample", type=int, default=60, help="null files re-encoded to measure the bytes")
    args = parser.parse_args()
    start = time.time()
    base = claim_records(args.bundle, None)
    rows = [{"dtype": "float64 (shipped)", **compare(base, base), **null_bytes(args.bundle, "float64", args.sample)}]
    for dtype in args.dtypes:
        rows.append(
            {
                "dtype": dtype,
                **compare(base, claim_records(args.bundle, dtype)),
                **null_bytes(args.bundle, dtype, args.sample),
            }
        )
        print(rows[-1], flush=True)
    result = {
        "bundle": args.bundle,
        "rows": rows,
        "sample": args.sample,
        "machine": platform.processor() or platform.machine(),
        "date": time.strftime("%Y-%m-%d"),
        "seconds": round(time.time() - start, 1),
        "command": "python benchmarks/bundle_precision.py "
        + " ".join(f"--{k} {v}" if not isinstance(v, list) else f"--{k} {' '.join(v)}" for k, v in vars(args).items()),
    }
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
