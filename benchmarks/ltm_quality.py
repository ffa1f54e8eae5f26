"""Benchmark: is the shipped reference LTM a genuine in-context learner? (issue: reference LTM)

Runs the LTM and scikit-learn baselines on 9 offline datasets x 5 seeds, the zero-information
check of multiple-choice contexts, and the forward / forward+backward speed on this CPU.
Writes ``benchmarks/results/ltm_quality.json``; the book appendix "The reference LTM" renders it.

    python benchmarks/ltm_quality.py [--seeds 5] [--model reference] [--out benchmarks/results/ltm_quality.json]

``--model reference-v1`` measures the weights shipped before stage 4 (``ltm_quality_reference-v1.json`` holds that
run, so the appendix shows the change on one page).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import pandas as pd
import torch
from tqdm.auto import tqdm

from iclmem.adapters import load_model
from iclmem.ltm.quality import (
    CLASSIFICATION_SETS,
    REGRESSION_SETS,
    evaluate_dataset,
    speed,
    text_numbers_change_encoding,
    zero_information_check,
)
from iclmem.store.atomic import atomic_write_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--datasets", nargs="*", default=list(CLASSIFICATION_SETS + REGRESSION_SETS))
    parser.add_argument("--model", default="reference", help="reference | reference-v1 (an earlier shipped version)")
    parser.add_argument("--out", default="benchmarks/results/ltm_quality.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load_model(args.model)
    t0 = time.perf_counter()
    frames = [evaluate_dataset(model, name, list(range(args.seeds))) for name in tqdm(args.datasets, desc="datasets")]
    # the same benchmark with text columns of numbers kept categorical (TableEncoder's numeric_text_share=None);
    # tables without such columns encode the same either way, so their rows are reused
    text_categorical = [
        evaluate_dataset(model, name, list(range(args.seeds)), numeric_text_share=None)
        if text_numbers_change_encoding(name)
        else frame
        for name, frame in zip(tqdm(args.datasets, desc="datasets, text numbers categorical"), frames, strict=True)
    ]
    zero = [zero_information_check(model, name) for name in tqdm(args.datasets, desc="zero-information")]
    result = {
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "torch": torch.__version__},
        "checkpoint_sha256": model.checkpoint_sha256,
        "seeds": args.seeds,
        "wall_s": time.perf_counter() - t0,
        "rows": pd.concat(frames).to_dict(orient="records"),
        "rows_text_numbers_categorical": pd.concat(text_categorical).to_dict(orient="records"),
        "zero_information": zero,
        "speed": speed(model),
    }
    atomic_write_text(Path(args.out), json.dumps(result, indent=1, default=float))
    print(f"wrote {args.out} in {result['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
