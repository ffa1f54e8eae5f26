"""CARTE preprocessing written as data (``recipes.yaml``) and the small interpreter that applies it.

App. A.2 / Tab. 5 of the paper take their ten tables from CARTE; this module reproduces CARTE's
``preprocess_raw.py`` from a recipe per table instead of per-table code. The recipe language is
documented at the top of ``recipes.yaml``.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
import yaml

from iclmem.data.errors import DataError, MissingColumnError, TargetError


@lru_cache(maxsize=1)
def recipes() -> dict[str, dict[str, dict[str, Any]]]:
    """The parsed ``recipes.yaml``: ``{"shipped": {name: entry}, "carte": {name: entry}}``."""
    text = resources.files("iclmem.data").joinpath("recipes.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def shipped_names() -> list[str]:
    """Tables shipped inside the ``carte-ai`` package."""
    return list(recipes()["shipped"])


def carte_names() -> list[str]:
    """The paper's ten CARTE tables (Tab. 5), read from a local folder."""
    return list(recipes()["carte"])


def normalize_raw(frame: pd.DataFrame) -> pd.DataFrame:
    """CARTE's loader clean-up: column names without spaces/newlines/%, newlines in values -> spaces."""
    frame = frame.copy()
    frame.columns = [str(c).replace(" ", "_").replace("\n", "_").replace("%", "Percentage") for c in frame.columns]
    for col in frame.columns:
        if pd.api.types.is_string_dtype(frame[col]) or frame[col].dtype == object:
            frame[col] = frame[col].replace("\n", " ", regex=True)
    return frame


def _log_base(base: Any) -> float:
    if base in ("e", None):
        return math.e
    return float(base)


def transform_target(values: pd.Series, spec: dict[str, Any] | None) -> pd.Series:
    """Apply a recipe's ``target_transform`` (log prices, binarized ratings; App. A.2, Tab. 5)."""
    if not spec:
        return values
    kind = spec.get("kind")
    if kind == "log":
        shifted = values + float(spec.get("offset", 0))
        if (shifted <= 0).any():
            raise TargetError(
                f"target {values.name!r} has {int((shifted <= 0).sum())} values <= 0 after adding the offset; "
                "a log transform needs positive values (add a target_filter {min: ...} to the recipe)"
            )
        return np.log(shifted) / math.log(_log_base(spec.get("base")))
    if kind == "binarize":
        threshold = float(spec["threshold"])
        rule = spec.get("positive_if", ">=")
        if rule not in (">=", ">"):
            raise DataError(f"binarize.positive_if must be '>=' or '>', not {rule!r}")
        positive = values >= threshold if rule == ">=" else values > threshold
        return positive.astype(float).rename(values.name)
    raise DataError(f"unknown target_transform kind {kind!r}; use 'log' or 'binarize'")


def _column_op(col: pd.Series, op: Any) -> pd.Series:
    missing = col.isna()
    if op == "str":
        out = col.astype(str).astype(object)
        out[missing] = np.nan
        return out
    if op == "float":
        return pd.to_numeric(col, errors="coerce").astype(float)
    if isinstance(op, dict) and len(op) == 1:
        ((key, arg),) = op.items()
        text = col.astype(str).astype(object)
        if key == "strip":
            out = text.str.replace("[" + re.escape(str(arg)) + "]", "", regex=True)
        elif key == "before":
            out = text.str.split(str(arg), regex=False).str[0]
        elif key == "map":
            mapping = {str(k): v for k, v in arg.items()}
            out = text.map(lambda v: mapping.get(v, v))
        else:
            raise DataError(f"unknown column op {key!r}; use str, float, strip, before or map")
        out[missing] = np.nan
        return out
    raise DataError(f"unknown column op {op!r}; use str, float, strip, before or map")


def apply_recipe(frame: pd.DataFrame, recipe: dict[str, Any], name: str) -> tuple[pd.DataFrame, list[str]]:
    """Turn a raw CARTE table into the preprocessed one, following ``recipe`` (steps 2-11 of recipes.yaml).

    Returns the frame (target column included) and notes on what was dropped.
    """
    notes: list[str] = []
    target = recipe["target"]
    frame = normalize_raw(frame).rename(columns=recipe.get("rename") or {})
    if target not in frame.columns:
        raise MissingColumnError(
            f"the {name} file has no target column {target!r} (columns: {', '.join(map(str, frame.columns))}); "
            f"check that the file is CARTE's raw {name} table"
        )
    if recipe.get("na_values"):
        frame = frame.replace(list(recipe["na_values"]), np.nan)
    if recipe.get("target_transform") or recipe.get("target_filter"):
        coerced = pd.to_numeric(frame[target], errors="coerce")
        bad = int((coerced.isna() & frame[target].notna()).sum())
        if bad:
            raise TargetError(f"{name}: {bad} target values in {target!r} are not numbers; the recipe needs numbers")
        frame[target] = coerced
    n_missing = int(frame[target].isna().sum())
    if n_missing:
        frame = frame[frame[target].notna()]
        notes.append(f"dropped {n_missing} rows with a missing target (as CARTE does)")
    bounds = recipe.get("target_filter") or {}
    keep = pd.Series(True, index=frame.index)
    if "min" in bounds:
        keep &= frame[target] >= float(bounds["min"])
    if "max" in bounds:
        keep &= frame[target] <= float(bounds["max"])
    if not keep.all():
        notes.append(f"dropped {int((~keep).sum())} rows outside target_filter {bounds}")
        frame = frame[keep]
    frame = frame.copy()
    frame[target] = transform_target(frame[target], recipe.get("target_transform"))
    for key in recipe.get("drop_duplicates_on") or []:
        before = len(frame)
        frame = frame.drop_duplicates(subset=[key], keep="first")
        if len(frame) < before:
            notes.append(f"kept the first of rows sharing {key!r}: dropped {before - len(frame)}")
    share = recipe.get("drop_high_null", 0.5)
    if share is not None:
        limit = int(len(frame) * float(share))
        high = [c for c in frame.columns if c != target and int(frame[c].isna().sum()) > limit]
        if high:
            frame = frame.drop(columns=high)
            notes.append(f"dropped columns more than {share:.0%} missing: {', '.join(high)}")
    if recipe.get("drop_single_unique", True):
        single = [c for c in frame.columns if c != target and frame[c].nunique() == 1]
        if single:
            frame = frame.drop(columns=single)
            notes.append(f"dropped single-valued columns: {', '.join(single)}")
    listed = list(recipe.get("drop_columns") or [])
    for part in recipe.get("drop_columns_containing") or []:
        listed += [c for c in frame.columns if part in c and c != target]
    absent = [c for c in listed if c not in frame.columns]
    if absent:
        notes.append(f"columns to drop already absent: {', '.join(absent)}")
    frame = frame.drop(columns=[c for c in dict.fromkeys(listed) if c in frame.columns])
    for col, ops in (recipe.get("column_ops") or {}).items():
        if col not in frame.columns:
            notes.append(f"column_ops skipped absent column {col!r}")
            continue
        for op in ops:
            frame[col] = _column_op(frame[col], op)
    return frame.reset_index(drop=True), notes
