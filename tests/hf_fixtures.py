"""Miniature copies of the paper's Hugging Face dataset repositories, in the layout ``datasets`` reads offline.

Each is what a local copy of the Hub repository holds (a ``README.md`` whose YAML ``configs`` block names the parquet
files per split, and the parquet files), with a few rows of invented text in the real columns: ``nyu-mll/glue``
(configs ``wnli`` and ``rte``), ``fancyzhx/dbpedia_14`` and ``CogComp/trec`` as its parquet conversion (the Hub's
``refs/convert/parquet`` branch: ``default/<split>/0000.parquet``, no README).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def _readme(configs: dict[str, dict[str, str]]) -> str:
    lines = ["---", "configs:"]
    for name, splits in configs.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        lines += [f"  - split: {split}\n    path: {path}" for split, path in splits.items()]
    return "\n".join([*lines, "---", ""])


def _nli(n: int, offset: int) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "sentence1": f"The {WORDS[i % 19]} met the {WORDS[(i + 3) % 19]} because it was late {i}.",
                "sentence2": f"The {WORDS[i % 19]} was late {i}.",
                "label": i % 2,
                "idx": offset + i,
            }
            for i in range(n)
        ]
    )


def write_hf_mirror(root: Path, n: int = 12) -> Path:
    """Write the four miniature repositories under ``root`` (``root/<owner>/<name>``); returns ``root``."""
    glue = root / "nyu-mll" / "glue"
    for config in ("wnli", "rte"):
        (glue / config).mkdir(parents=True, exist_ok=True)
        _nli(n, 0).to_parquet(glue / config / "train-00000-of-00001.parquet")
        _nli(4, 1000).to_parquet(glue / config / "validation-00000-of-00001.parquet")
    (glue / "README.md").write_text(
        _readme({c: {"train": f"{c}/train-*", "validation": f"{c}/validation-*"} for c in ("wnli", "rte")})
    )
    trec = root / "CogComp" / "trec" / "default" / "train"
    trec.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        [
            {
                "text": f"What {WORDS[i % 19]} is the {WORDS[(i + 5) % 19]} number {i} ?",
                "coarse_label": i % 6,
                "fine_label": i % 50,
            }
            for i in range(n)
        ]
    ).to_parquet(trec / "0000.parquet")
    db = root / "fancyzhx" / "dbpedia_14"
    (db / "dbpedia_14").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        [
            {
                "label": i % 14,
                "title": f"Title {i}",
                "content": f"The {WORDS[i % 19]} is a thing number {i} in a place.",
            }
            for i in range(n)
        ]
    ).to_parquet(db / "dbpedia_14" / "train-00000-of-00001.parquet")
    (db / "README.md").write_text(_readme({"dbpedia_14": {"train": "dbpedia_14/train-*"}}))
    return root
