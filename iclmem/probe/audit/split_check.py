"""The user's split, checked before anything is probed (Sec. 4.1 "Data Pre-Processing", App. A.1 "Distributional
shift", App. A.2).

A membership attack reads any difference between members and non-members. The controlled chain draws its non-members
from the same pool as its members and validates the split (chapter 01: TVD, KS); a user's held-out file is rarely
drawn that way, and then an attack measures the shift, not memorization (Das, Zhang and Tramer 2024: model-free
"blind" classifiers beat published attacks on 8 evaluation sets; Duan et al. 2024, MIMIR, for LLMs). Before probing,
``iclmem audit`` therefore:

* builds one table of both files (:func:`combine_files`): rows whose features occur in both files are dropped and
  counted (a row the model trained on cannot be a non-member, and a conflicting copy has no one label), then the
  same deduplication as chapter 01 (:func:`iclmem.data.dedup.dedup_keep`); every kept row remembers its file and
  its line there;
* with ``--table`` (the full table the model was fine-tuned from), places both files in it
  (:func:`place_in_table`): the table is read and deduplicated as the controlled chain reads it
  (:func:`iclmem.data.tables.prepared_table`), every row of both files must be one of its rows (else a one-line
  error), and each member and non-member is probed as the row it is there, with its id there; the probe's encoder and
  target statistics are then the chain's, and so are the draws seeded by row id;
* measures every column's distance between the files (:func:`column_distances`): TVD for categorical columns and
  the KS statistic for numeric ones, as chapter 01 does for the target (:mod:`iclmem.data.stats`), each with a
  p-value (chi-square / KS) read at 5% over the columns (Bonferroni);
* flags a target that one feature determines (:func:`determining_feature`: check P5 of the table suite,
  :func:`iclmem.data.suite_select.determining_column`): the probe needs a target the features cannot deduce;
* trains a **model-free baseline** (:func:`baseline_check`): a gradient-boosted classifier (scikit-learn's
  ``HistGradientBoostingClassifier``) that tells member rows from non-member rows by their features alone, with its
  out-of-fold AUC in 5-fold stratified cross-validation and a bootstrap interval. If the interval's lower end is above
  :data:`SHIFT_AUC`, the files are separable without the model, and the audit cannot tell memorization from
  distribution shift;
* offers the fix, a matched subsample (:func:`matched_subsample`, ``--match``): one-to-one nearest-neighbour matching
  of members and non-members on the logit of the baseline's out-of-fold propensity, without replacement, within a
  caliper of 0.2 standard deviations of that logit (Austin 2011), after which the baseline is trained again on the
  matched rows.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...data.columns import as_numbers, is_numeric_column
from ...data.dataset import Dataset, DedupCounts
from ...data.dedup import dedup_keep, feature_groups
from ...data.stats import KS_THRESHOLD, TVD_THRESHOLD, ks_test, total_variation_distance
from ...stats.metrics import attack_metrics
from .inputs import MIN_ROWS, AuditInputError

#: The baseline separates the files when the lower end of its AUC's 95% interval lies above this.
SHIFT_AUC = 0.60
#: Folds of the baseline's cross-validation.
BASELINE_FOLDS = 5
#: The caliper of the matching, in standard deviations of the logit of the propensity (Austin 2011).
CALIPER_SD = 0.2
#: The level at which a column's distance is read as a difference (over all columns, Bonferroni).
COLUMN_ALPHA = 0.05


@dataclass(frozen=True)
class AuditTable:
    """Both files as one deduplicated table: members first, then non-members (their positions are the query ids).

    ``file_rows``: per row, its line among the data rows of its file (1 = the first row under the header). With
    ``--table`` (:func:`place_in_table`) the table is the full one, its other rows neither members nor non-members
    (their ``file_rows`` 0), and ``table_file`` says what was read from it; None without.
    """

    table: Dataset
    member_ids: np.ndarray
    non_member_ids: np.ndarray
    file_rows: np.ndarray
    in_both: dict[str, int]
    dedup: dict[str, int]
    table_file: dict[str, Any] | None = None


def combine_files(
    members: pd.DataFrame,
    non_members: pd.DataFrame,
    target: str,
    task: str = "",
    *,
    missing_target: str = "error",
    names: tuple[str, str] = ("members", "non-members"),
) -> AuditTable:
    """One table of both files (module docstring); fewer than :data:`~iclmem.probe.audit.inputs.MIN_ROWS` rows left in a
    file is an :class:`~iclmem.probe.audit.inputs.AuditInputError`."""
    from ...data.sources import load_frame

    parts, rows = [], []
    for frame, name in ((members, names[0]), (non_members, names[1])):
        missing = frame[target].isna().to_numpy()
        if missing.any() and missing_target != "drop":
            raise AuditInputError(
                f"{name}: the target {target!r} is missing in {int(missing.sum())} of {len(frame)} rows; drop those "
                "rows from the file, or pass --missing-target drop"
            )
        parts.append(frame[~missing])
        rows.append(np.flatnonzero(~missing) + 1)
    is_member = np.r_[np.ones(len(parts[0]), bool), np.zeros(len(parts[1]), bool)]
    both = load_frame(pd.concat(parts, ignore_index=True), target, task or None, name="audit", source=" + ".join(names))
    group = feature_groups(both.features)
    in_members, in_non = set(group[is_member].tolist()), set(group[~is_member].tolist())
    shared = np.isin(group, list(in_members & in_non))
    n_labels = both.target.groupby(group).transform("nunique").to_numpy()
    in_both = {
        "member_rows": int((shared & is_member).sum()),
        "non_member_rows": int((shared & ~is_member).sum()),
        "same_target_rows": int((shared & (n_labels == 1)).sum()),
        "conflicting_rows": int((shared & (n_labels > 1)).sum()),
    }
    rest = both.with_(
        features=both.features[~shared].reset_index(drop=True), target=both.target[~shared].reset_index(drop=True)
    )
    keep, counts = dedup_keep(rest)
    kept_member = is_member[~shared][keep]
    file_rows = np.concatenate(rows)[~shared][keep]
    counts = DedupCounts(
        len(is_member), counts.n_exact_duplicates_dropped, counts.n_conflicting_dropped, counts.n_output
    )
    table = rest.with_(
        features=rest.features[keep].reset_index(drop=True), target=rest.target[keep].reset_index(drop=True)
    ).with_(dedup=counts)
    dedup = {
        **counts.to_dict(),
        "n_in_both_dropped": int(shared.sum()),
        "n_members": int(kept_member.sum()),
        "n_non_members": int((~kept_member).sum()),
    }
    for name, n in ((names[0], dedup["n_members"]), (names[1], dedup["n_non_members"])):
        if n < MIN_ROWS:
            raise AuditInputError(
                f"too few rows: {name} keeps {n} rows after deduplication and removing rows in both files, fewer "
                f"than the {MIN_ROWS} the test can use; add rows to the file"
            )
    ids = np.arange(len(kept_member))
    return AuditTable(table, ids[kept_member], ids[~kept_member], file_rows, in_both, dedup)


def read_as_the_chain(
    full: pd.DataFrame, target: str, task: str, *, missing_target: str = "error", name: str = "table"
) -> tuple[Dataset, pd.DataFrame, np.ndarray]:
    """The full table as the controlled chain reads its file (:func:`iclmem.data.tables.prepared_table`: rows without
    a target an error, or left out with ``missing_target`` drop; then the deduplication of chapter 01), the rows it
    was built from, and per row of those its id in the deduplicated table (-1: a conflicting row, which it drops)."""
    from ...data.sources import load_frame

    missing = full[target].isna().to_numpy()
    if missing.any() and missing_target != "drop":
        raise AuditInputError(
            f"{name}: the target {target!r} is missing in {int(missing.sum())} of {len(full)} rows; drop those rows "
            "from the file, or pass --missing-target drop"
        )
    rows = full[~missing].reset_index(drop=True)
    raw = load_frame(rows, target, task, name="table", source=name)
    keep, counts = dedup_keep(raw)
    group = feature_groups(raw.features)
    ids = np.full(int(group.max()) + 1, -1, dtype=np.int64)
    ids[group[keep]] = np.arange(int(keep.sum()))
    table = raw.with_(
        features=raw.features[keep].reset_index(drop=True), target=raw.target[keep].reset_index(drop=True)
    ).with_(dedup=counts)
    return table, rows, ids[group]


def rows_in(rows: pd.DataFrame, frame: pd.DataFrame) -> np.ndarray:
    """Per row of ``frame``, the position of a row of ``rows`` with the same value in every column (the target too;
    missing values equal), -1 where there is none."""
    both = pd.concat([rows, frame[list(rows.columns)]], ignore_index=True)
    key = feature_groups(both)
    n = len(rows)
    first = pd.Series(np.arange(n)).groupby(key[:n]).first()
    return pd.Series(key[n:]).map(first).fillna(-1).to_numpy(np.int64)


def place_in_table(
    audit: AuditTable,
    frames: tuple[pd.DataFrame, pd.DataFrame],
    full: pd.DataFrame,
    target: str,
    *,
    missing_target: str = "error",
    names: tuple[str, str] = ("members", "non-members"),
    table_name: str = "table",
) -> AuditTable:
    """``audit`` (:func:`combine_files` of ``frames``) moved into the full table ``full`` (module docstring): the
    table read as the chain reads it (:func:`read_as_the_chain`), members and non-members its rows' ids (sorted, as
    the chain's split manifests hold them). A row of either file with a target that ``full`` lacks is an
    :class:`~iclmem.probe.audit.inputs.AuditInputError` that counts them; a row the table's deduplication drops (its
    features conflict there) is left out and counted."""
    table, rows, raw_id = read_as_the_chain(full, target, audit.table.task, missing_target=missing_target,
                                            name=table_name)  # fmt: skip
    where = [rows_in(rows, f) for f in frames]
    lost = [np.flatnonzero(f[target].notna().to_numpy() & (w < 0)) + 1 for f, w in zip(frames, where, strict=True)]
    if sum(map(len, lost)):
        first = next(f"line {rows_[0]} of {name}" for rows_, name in zip(lost, names, strict=True) if len(rows_))
        raise AuditInputError(
            f"{sum(map(len, lost))} rows of the two files are not in the table {table_name} ({len(lost[0])} of "
            f"{names[0]}, {len(lost[1])} of {names[1]}; the first: {first}); pass as --table the full table the model "
            "was fine-tuned from, holding every member and non-member row with the same values, or leave --table out"
        )
    ids = np.full(len(audit.file_rows), -1, dtype=np.int64)
    for kept, w in ((audit.member_ids, where[0]), (audit.non_member_ids, where[1])):
        ids[kept] = raw_id[w[audit.file_rows[kept] - 1]]
    members, non_members = np.sort(ids[audit.member_ids]), np.sort(ids[audit.non_member_ids])
    members, non_members = members[members >= 0], non_members[non_members >= 0]
    for name, kept in ((names[0], members), (names[1], non_members)):
        if len(kept) < MIN_ROWS:
            raise AuditInputError(
                f"too few rows: {name} keeps {len(kept)} rows that the table's deduplication keeps, fewer than the "
                f"{MIN_ROWS} the test can use; add rows to the file"
            )
    file_rows = np.zeros(table.n, dtype=np.int64)
    file_rows[ids[ids >= 0]] = audit.file_rows[ids >= 0]
    left_out = int((ids < 0).sum())
    found = {
        "path": table_name,
        "n_rows": int(len(full)),
        "n_rows_deduplicated": int(table.n),
        "n_file_rows_conflicting_in_table": left_out,
    }
    dedup = {**audit.dedup, "n_members": len(members), "n_non_members": len(non_members)}
    return AuditTable(table, members, non_members, file_rows, audit.in_both, dedup, found)


def _column_row(name: str, m: pd.Series, n: pd.Series) -> dict[str, Any]:
    """One column's distance between the files: KS on numbers, TVD (chi-square p) on categories."""
    from scipy import stats as st

    both = pd.concat([m, n])
    row: dict[str, Any] = {
        "column": name,
        "missing members": float(m.isna().mean()),
        "missing non-members": float(n.isna().mean()),
    }
    if is_numeric_column(both):
        a, b = as_numbers(m).dropna().to_numpy(float), as_numbers(n).dropna().to_numpy(float)
        stat, p = ks_test(a, b) if len(a) and len(b) else (np.nan, 1.0)
        return {**row, "kind": "numeric", "statistic": "KS", "value": stat, "p": p, "ch01 limit": KS_THRESHOLD}
    a, b = m.astype("string").fillna("<missing>"), n.astype("string").fillna("<missing>")
    tvd = total_variation_distance(a.to_numpy(), b.to_numpy())
    counts = pd.crosstab(np.r_[np.ones(len(a)), np.zeros(len(b))], pd.concat([a, b]).to_numpy())
    p = float(st.chi2_contingency(counts.to_numpy())[1]) if counts.shape[1] > 1 else 1.0
    return {**row, "kind": "categorical", "statistic": "TVD", "value": tvd, "p": p, "ch01 limit": TVD_THRESHOLD}


def column_distances(audit: AuditTable) -> pd.DataFrame:
    """One row per feature and the target: the statistic, its value and p-value, whether it exceeds chapter 01's
    limit (0.05) and whether it differs at :data:`COLUMN_ALPHA` over all columns (Bonferroni), widest first."""
    t = audit.table
    frame = pd.concat([t.features, t.target], axis=1)
    rows = [
        _column_row(str(c), frame[c].iloc[audit.member_ids], frame[c].iloc[audit.non_member_ids]) for c in frame.columns
    ]
    out = pd.DataFrame(rows)
    out["target"] = out.column == t.target_name
    out["over ch01 limit"] = out.value > out["ch01 limit"]
    out["differs"] = out.p < COLUMN_ALPHA / len(out)
    return out.sort_values(["differs", "value"], ascending=False, kind="stable").reset_index(drop=True)


def determining_feature(table: Dataset) -> dict[str, Any]:
    """Check P5 of the table suite on the audit's table: the feature that alone predicts the target best, its
    cross-validated score and whether it determines the target (score at least the suite rule's threshold)."""
    from ...data.suite import suite_rule
    from ...data.suite_select import determining_column

    rule = suite_rule()
    column, score = determining_column(table.features, table.target, table.task, rule)
    return {
        "column": column,
        "score": float(score),
        "measure": "balanced accuracy" if table.task == "classification" else "R^2",
        "threshold": float(rule.determining_score),
        "determines": bool(score >= rule.determining_score),
        "folds": int(rule.determining_folds),
    }


def feature_matrix(features: pd.DataFrame) -> np.ndarray:
    """The features as floats for the baseline: numbers as numbers, other values as the codes of their sorted values,
    missing as NaN (nothing depends on the rows' order)."""
    cols = []
    for c in features.columns:
        values = features[c]
        if is_numeric_column(values):
            cols.append(as_numbers(values).to_numpy(dtype=float))
        else:  # codes of the sorted values: codes in order of appearance would tell the files apart by position
            text = values.astype("string")
            categories = sorted(text.dropna().unique())
            codes = pd.Categorical(text, categories=categories).codes.astype(float)
            codes[codes < 0] = np.nan
            cols.append(codes)
    return np.column_stack(cols)


def baseline_propensity(
    table: Dataset, member_ids: np.ndarray, non_member_ids: np.ndarray, seed: int = 0
) -> np.ndarray:
    """Out-of-fold probability of "member" of every member then non-member row, by the features alone."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    from ...runtime.threads import THREADS_ENV, positive_int_env

    ids = np.r_[member_ids, non_member_ids]
    x = feature_matrix(table.features.iloc[ids])
    y = np.r_[np.ones(len(member_ids), int), np.zeros(len(non_member_ids), int)]
    folds = min(BASELINE_FOLDS, len(member_ids), len(non_member_ids))
    out = np.empty(len(y))
    threads = positive_int_env(THREADS_ENV, "for all cores")
    with threadpool_limits(limits=threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(x, y):
            model = HistGradientBoostingClassifier(max_iter=100, random_state=seed, early_stopping=False)
            out[test] = model.fit(x[train], y[train]).predict_proba(x[test])[:, 1]
    return out


def baseline_check(
    table: Dataset, member_ids: np.ndarray, non_member_ids: np.ndarray, *, n_boot: int = 1000, seed: int = 0
) -> tuple[dict[str, Any], np.ndarray]:
    """The model-free baseline's AUC with its 95% interval and whether it separates the files (its lower end above
    :data:`SHIFT_AUC`), and the propensities it gave (members first)."""
    p = baseline_propensity(table, member_ids, non_member_ids, seed)
    m = attack_metrics(p[: len(member_ids)], p[len(member_ids) :], n_boot=n_boot, seed=seed, fprs=())
    found = {
        "auc": m["auc"],
        "auc_lo": m["auc_lo"],
        "auc_hi": m["auc_hi"],
        "threshold": SHIFT_AUC,
        "separates": bool(m["auc_lo"] > SHIFT_AUC),
        "folds": min(BASELINE_FOLDS, len(member_ids), len(non_member_ids)),
        "classifier": "HistGradientBoostingClassifier(max_iter=100), features alone, out-of-fold",
        "n_members": len(member_ids),
        "n_non_members": len(non_member_ids),
    }
    return found, p


def matched_subsample(
    propensity: np.ndarray, member_ids: np.ndarray, non_member_ids: np.ndarray, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``(members, non-members)`` matched one to one on the logit of ``propensity`` (members first in it): each row
    of the smaller file, in a seeded random order, takes the nearest unmatched row of the other within the caliper
    (:data:`CALIPER_SD` standard deviations of the logit); rows without a partner are left out."""
    p = np.clip(np.asarray(propensity, float), 1e-6, 1 - 1e-6)
    logit = np.log(p / (1 - p))
    lm, ln = logit[: len(member_ids)], logit[len(member_ids) :]
    caliper = CALIPER_SD * float(np.std(logit))
    small, large = (lm, ln) if len(lm) <= len(ln) else (ln, lm)
    free = np.ones(len(large), bool)
    pairs = []
    for i in np.random.default_rng(seed).permutation(len(small)):
        gap = np.where(free, np.abs(large - small[i]), np.inf)
        j = int(np.argmin(gap))
        if gap[j] <= caliper:
            free[j] = False
            pairs.append((i, j))
    si = np.array([i for i, _ in pairs], dtype=np.int64)
    li = np.array([j for _, j in pairs], dtype=np.int64)
    m_idx, n_idx = (si, li) if len(lm) <= len(ln) else (li, si)
    return np.sort(member_ids[m_idx]), np.sort(non_member_ids[n_idx])


__all__ = [
    "BASELINE_FOLDS",
    "CALIPER_SD",
    "COLUMN_ALPHA",
    "SHIFT_AUC",
    "AuditTable",
    "baseline_check",
    "baseline_propensity",
    "column_distances",
    "combine_files",
    "determining_feature",
    "feature_matrix",
    "matched_subsample",
    "place_in_table",
    "read_as_the_chain",
    "rows_in",
]
