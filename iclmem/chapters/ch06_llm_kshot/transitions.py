"""Golchin et al. 2024, Sec. 5.1 Observation 3, Tab. 1: near-exact -> exact transitions between consecutive ks,
per instance and setting (claim D3, notebook 06).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclmem.chapters.ch06_llm_kshot.matrices import Focus

MATCH_CODES = {"exact": 2, "near-exact": 1}  # any other judged label: 0; no row: -1


def match_cube(
    mem: pd.DataFrame, focus: Focus, ks: Sequence[int] | None = None, column: str = "match"
) -> tuple[pd.Index, list[list[tuple[int, int]]], np.ndarray]:
    """The focus's judged matches as codes (instances x settings x ks: 2 exact, 1 near-exact, 0 other, -1 none) and,
    per setting, the consecutive pairs of the ks it was run at (column positions), over the ``ks`` given (all:
    ``None``)."""
    df = focus.rows(mem)
    df = df[df[column].notna()]
    wide = df.pivot_table(index="instance_id", columns=["setting", "k"], values=column, aggfunc="first")
    settings = list(dict.fromkeys(wide.columns.get_level_values(0)))
    use = sorted(k for k in set(wide.columns.get_level_values(1)) if ks is None or k in set(ks))
    codes = np.full((len(wide), len(settings), len(use)), -1, dtype=np.int8)
    pairs: list[list[tuple[int, int]]] = []
    for s, setting in enumerate(settings):
        present = [k for k in sorted(wide[setting].columns) if k in use]
        for k in present:
            col = wide[(setting, k)]
            codes[:, s, use.index(k)] = np.where(col.isna(), -1, col.map(MATCH_CODES).fillna(0)).astype(np.int8)
        pairs.append([(use.index(a), use.index(b)) for a, b in zip(present, present[1:], strict=False)])
    return wide.index, pairs, codes


def transition_counts(codes: np.ndarray, pairs: Sequence[Sequence[tuple[int, int]]]) -> tuple[np.ndarray, np.ndarray]:
    """(up, down) over ``codes`` (... x settings x ks): near-exact -> exact and exact -> near-exact between the
    consecutive ks of each setting."""
    up = np.zeros(codes.shape[:-2], dtype=np.int64)
    down = np.zeros(codes.shape[:-2], dtype=np.int64)
    for s, setting_pairs in enumerate(pairs):
        for a, b in setting_pairs:
            ca, cb = codes[..., s, a], codes[..., s, b]
            up += (ca == 1) & (cb == 2)
            down += (ca == 2) & (cb == 1)
    return up, down


def transitions(
    mem: pd.DataFrame, focus: Focus, ks: Sequence[int] | None = None, column: str = "match"
) -> pd.DataFrame:
    """Per instance of the focus: ``up`` = (setting, consecutive k pair) where a near-exact match at the smaller k is
    an exact match at the larger k, ``down`` = the reverse; over the ``ks`` given (all when ``None``)."""
    index, pairs, codes = match_cube(mem, focus, ks, column)
    up, down = transition_counts(codes, pairs)
    return pd.DataFrame({"up": up, "down": down}, index=index)


__all__ = ["MATCH_CODES", "match_cube", "transition_counts", "transitions"]
