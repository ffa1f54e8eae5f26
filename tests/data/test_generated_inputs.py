"""Generated tables (Hypothesis) driven through the data and model entry points the tabular notebooks use.

The strategies write tables nobody wrote by hand: mixed dtypes (int, float, bool, text, dates,
categoricals), NaN and inf, constant and all-missing columns, unicode and look-alike column names,
targets with one class, two text classes, more than 10 classes, numeric-looking text and extreme
magnitudes, and 0 to a few dozen rows, as CSV or parquet. Each one goes through loading,
deduplication, the query-size check, split validation, one tiny fine-tuning step and one probe.
Every case ends in success (whose result is checked) or in a user error (:data:`USER_ERRORS`) whose
message names the problem and proposes a fix (:func:`assert_user_error`); any other exception is a
bug of the engine, and a results folder never holds a half-written artifact (:func:`leftovers`).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iclmem.book.execute import UsageError
from iclmem.book.table_parameters import TableFitError, fitting_query_sizes, max_query_size
from iclmem.data import DataError, Dataset, SplitManifest, deduplicate, load_dataset, manifest_path, split_manifest
from iclmem.data.dedup import feature_groups
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.probe import ProbeError, probe_run
from iclmem.probe.settings import ProbeSettings
from iclmem.training.finetune import FinetuneConfig, FinetuneError, finetune

torch.set_num_threads(1)  # tiny models: one thread is fastest and shares the machine well

#: The errors the package raises for a user's mistake (the catalogue of appendix A3 raises these too).
USER_ERRORS: tuple[type[BaseException], ...] = (DataError, TableFitError, UsageError, FinetuneError, ProbeError)
#: A message proposes a fix when it holds one of these verbs (as every data and notebook case of the catalogue does).
FIX_HINT = re.compile(
    r"\b(set|use|drop|pass|rename|choose|check|convert|give|raise|fix|delete|rebuild|treat|replace|add|put|remove|"
    r"keep|group|expects|valid|install|probe|draw|name|write|must|rescale|lower)\b",
    re.IGNORECASE,
)
#: Column names that look alike, are empty-ish, unicode, or numeric-looking.
NAMES = ["a", "a ", "A", " a", "é", "é", "日本", "", " ", "_", "0", "1.5", "nan", "None", "Unnamed: 0", "a.1", "x,y"]
TARGET_NAMES = ["y", "target", "A", "é", " ", "0", "class label"]
EXTREMES = [1e-300, -1e-300, 1e300, -1e300, 5e-324, 0.0, -0.0, 1.7976931348623157e308]
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
NUMERIC_TEXT = st.sampled_from(["1", "2.5", " 3", "1e300", "-0", "0x1F", "N.V.", "inf", "1,000", "1e-300", "", " "])
FEATURE_KINDS = ["int", "float", "extreme", "bool", "text", "numeric_text", "date", "category", "constant", "missing"]
TARGET_KINDS = ["one_class", "two_text", "many_classes", "numeric_text", "float", "extreme", "bool", "int"]
SETTINGS = {"derandomize": True, "database": None, "deadline": None, "suppress_health_check": list(HealthCheck)}


# --- strategies ------------------------------------------------------------------------------------------------------


def _with_missing(values: list, draw: st.DrawFn) -> list:
    """``values`` with a drawn set of cells made missing (often none)."""
    if not values or not draw(st.booleans()):
        return values
    holes = set(draw(st.lists(st.integers(0, len(values) - 1), max_size=len(values))))
    return [None if i in holes else v for i, v in enumerate(values)]


@st.composite
def feature_column(draw: st.DrawFn, n: int) -> pd.Series:
    """One feature column of ``n`` rows of a drawn kind (see the module docstring)."""
    kind = draw(st.sampled_from(FEATURE_KINDS))
    rows = {"min_size": n, "max_size": n}
    if kind == "int":
        return pd.Series(draw(st.lists(st.integers(-(2**63), 2**63 - 1), **rows)), dtype="int64")
    if kind == "float":
        return pd.Series(draw(st.lists(st.floats(allow_nan=True, allow_infinity=True), **rows)), dtype="float64")
    if kind == "extreme":
        return pd.Series(_with_missing(draw(st.lists(st.sampled_from(EXTREMES), **rows)), draw), dtype="float64")
    if kind == "bool":
        return pd.Series(draw(st.lists(st.booleans(), **rows)), dtype="bool")
    if kind == "text":
        return pd.Series(_with_missing(draw(st.lists(TEXT, **rows)), draw), dtype="object")
    if kind == "numeric_text":
        return pd.Series(_with_missing(draw(st.lists(NUMERIC_TEXT, **rows)), draw), dtype="object")
    if kind == "date":
        return pd.Series(pd.to_datetime(_with_missing(draw(st.lists(st.dates(), **rows)), draw)))
    if kind == "category":
        values = draw(st.lists(st.sampled_from(["lo", "hi", "é"]), **rows))
        return pd.Series(pd.Categorical(_with_missing(values, draw)))
    if kind == "constant":
        return pd.Series([draw(st.sampled_from([0, 1.5, "same", True]))] * n)
    return pd.Series([np.nan] * n, dtype="float64")


@st.composite
def target_column(
    draw: st.DrawFn, n: int, kinds: tuple[str, ...] = tuple(TARGET_KINDS), missing: bool = True
) -> pd.Series:
    """A target of ``n`` rows: one class, two text classes, many classes, numeric text, extreme floats, ..."""
    kind = draw(st.sampled_from(kinds))
    rows = {"min_size": n, "max_size": n}
    if kind == "one_class":
        return pd.Series([draw(st.sampled_from(["red", 3, 2.5]))] * n)
    if kind == "two_text":
        values = draw(st.lists(st.sampled_from(["yes", "no"]), **rows))
    elif kind == "many_classes":
        k = draw(st.integers(11, 40))
        values = [(i * 7) % k for i in range(n)]
    elif kind == "numeric_text":
        values = draw(st.lists(st.sampled_from(["1", "2", "3.0", " 4", "N.V."]), **rows))
    elif kind == "float":
        values = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), **rows))
    elif kind == "extreme":
        values = draw(st.lists(st.sampled_from(EXTREMES + [np.inf, 2.0, 3.0]), **rows))
    elif kind == "bool":
        values = draw(st.lists(st.booleans(), **rows))
    else:
        values = draw(st.lists(st.integers(0, 4), **rows))
    return pd.Series(_with_missing(values, draw) if missing and draw(st.integers(0, 4)) == 0 else values)


@dataclass(frozen=True)
class Table:
    """A generated table: the frame to write, the target to ask for, the task and the file format."""

    frame: pd.DataFrame
    target: str | None
    task: str | None
    fmt: str

    def write(self, folder: Path) -> Path:
        """Write the frame as CSV or parquet (CSV where parquet cannot hold it: duplicate column names)."""
        if self.fmt == "parquet" and self.frame.columns.is_unique:
            path = folder / "gentable.parquet"
            self.frame.to_parquet(path, index=False)
        else:
            path = folder / "gentable.csv"
            self.frame.to_csv(path, index=False)
        return path


@st.composite
def tables(
    draw: st.DrawFn,
    min_rows: int = 0,
    max_rows: int = 12,
    max_features: int = 4,
    min_features: int = 0,
    target_kinds: tuple[str, ...] = tuple(TARGET_KINDS),
    tasks: tuple[str | None, ...] = (None, "classification", "regression", "", "classify"),
    other_targets: bool = True,
    missing_targets: bool = True,
    target_names: tuple[str, ...] = tuple(TARGET_NAMES),
) -> Table:
    """A table of ``min_rows``..``max_rows`` rows, 0..``max_features`` features and a target column."""
    n = draw(st.integers(min_rows, max_rows))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=min_features, max_size=max_features))
    columns = [draw(feature_column(n)).rename(i) for i in range(len(names))]
    target_name = draw(st.sampled_from(target_names))
    frame = pd.concat([*columns, draw(target_column(n, target_kinds, missing_targets)).rename(len(names))], axis=1)
    frame.columns = [*names, target_name]
    asked = draw(st.sampled_from([None, *NAMES])) if other_targets and not draw(st.integers(0, 3)) else target_name
    task = draw(st.sampled_from(tasks[:3])) if draw(st.integers(0, 4)) else draw(st.sampled_from(tasks))
    return Table(frame, asked, task, draw(st.sampled_from(["csv", "parquet"])))


# --- checks ----------------------------------------------------------------------------------------------------------


def assert_user_error(exc: BaseException, names: Iterable[object] = ()) -> None:
    """``exc`` is a user error whose message names the problem (one of ``names``, if given) and proposes a fix."""
    assert isinstance(exc, USER_ERRORS), f"not a user error: {type(exc).__name__}: {exc}"
    message = str(exc.args[0]) if exc.args else ""
    assert message.strip(), f"{type(exc).__name__} with an empty message"
    assert "Traceback" not in message
    named = [str(n) for n in names if n is not None and str(n).strip()]
    if named:
        assert any(n in message for n in named), f"the message names none of {named}: {message}"
    assert FIX_HINT.search(message), f"the message proposes no fix: {message}"


def leftovers(results: Path) -> list[Path]:
    """Half-written artifacts under ``results``: temporary files, and store folders without their completion marker."""
    found = [p for p in results.rglob("*") if p.name.endswith(".tmp")]
    for kind, marker in (("finetune", "complete.json"), ("probe", "complete.json")):
        if (results / kind).is_dir():
            found += [d for d in (results / kind).iterdir() if not (d / marker).is_file()]
    return found


def load(table: Table, folder: Path) -> Dataset | None:
    """Load the generated table; None after a user error (checked), re-raising anything else."""
    path = table.write(folder)
    try:
        return load_dataset(path, target=table.target, task=table.task)
    except USER_ERRORS as exc:
        event(f"load: {type(exc).__name__}")
        assert_user_error(exc, [path.name, path.stem, table.target, table.task])
        return None


def check_loaded(ds: Dataset, table: Table) -> None:
    """What a loaded table promises: the target aligned with the features, no missing target, two values at least."""
    assert ds.task in ("classification", "regression")
    assert ds.target_name == table.target
    assert ds.target_name not in ds.features.columns
    assert len(ds.features) == ds.n <= len(table.frame)  # a CSV row left blank (all cells empty) is no row
    assert ds.n == len(table.frame) or table.fmt == "csv"
    assert ds.features.shape[1] >= 1
    assert ds.target.notna().all()
    assert ds.target.nunique() >= 2
    if ds.task == "regression":
        assert pd.api.types.is_numeric_dtype(ds.target) and not pd.api.types.is_bool_dtype(ds.target)


def check_deduplicated(ds: Dataset, dd: Dataset) -> None:
    """Deduplication's counts add up and no two kept rows share their features; a second call changes nothing."""
    assert dd.dedup is not None
    counts = dd.dedup
    assert counts.n_input == ds.n and counts.n_output == dd.n == len(dd.features)
    assert counts.n_input == counts.n_output + counts.n_exact_duplicates_dropped + counts.n_conflicting_dropped
    assert len(np.unique(feature_groups(dd.features))) == dd.n
    assert list(dd.features.index) == list(range(dd.n))
    assert deduplicate(dd) is dd


# --- tests -----------------------------------------------------------------------------------------------------------


@settings(max_examples=400, **SETTINGS)
@given(table=tables())
@pytest.mark.slow
def test_generated_tables_load_and_deduplicate_or_name_the_problem(table: Table) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ds = load(table, Path(tmp))
    if ds is None:
        return
    check_loaded(ds, table)
    check_deduplicated(ds, deduplicate(ds))


@settings(max_examples=250, **SETTINGS)
@given(
    table=tables(
        min_rows=0,
        max_rows=50,
        min_features=1,
        max_features=3,
        target_kinds=("two_text", "two_text", "int", "int", "numeric_text", "many_classes", "float"),
        other_targets=False,
        missing_targets=False,
    ),
    query_sizes=st.lists(st.sampled_from([1, 2, 3, 5, 8, 1, 2, 4, 0, -1, 21, 24]), min_size=1, max_size=3),
    drop_unfit=st.booleans(),
    label_condition=st.sampled_from(["none", "members", "non-members", "all", "none", "random"]),
    max_redraws=st.integers(0, 3),
)
def test_generated_tables_split_or_name_the_problem(
    table: Table, query_sizes: list[int], drop_unfit: bool, label_condition: str, max_redraws: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ds = load(table, folder)
        if ds is None:
            return
        dd = deduplicate(ds)
        try:
            fit = fitting_query_sizes({dd.name: dd}, query_sizes, drop_unfit=drop_unfit)
        except TableFitError as exc:
            event(f"fit: TableFitError {str(exc)[:40]}")
            assert_user_error(exc, [dd.name, "query_sizes", *query_sizes])
            fit = []
        else:
            assert fit and set(fit) <= set(query_sizes)
            assert all(0 < q <= max_query_size(dd) for q in fit)
            assert drop_unfit or fit == [int(q) for q in query_sizes]
        results = folder / "results"
        for q in fit[:1] or query_sizes[:1]:
            try:
                m = split_manifest(dd, q, 0, label_condition, results_dir=results, max_redraws=max_redraws)
            except DataError as exc:
                event(f"split: {type(exc).__name__}")
                assert_user_error(exc, [dd.name, q, label_condition])
                continue
            event(f"split: {dd.task}")
            check_manifest(m, dd, q)
            stored = SplitManifest.load(manifest_path(dd.name, q, 0, m.label_condition, results))
            assert stored.pools == m.pools and stored.table_fingerprint == m.table_fingerprint
            again = split_manifest(dd, q, 0, label_condition, results_dir=results, max_redraws=max_redraws)
            assert again.pools == m.pools
        assert not leftovers(results)


def check_manifest(m: SplitManifest, dd: Dataset, q: int) -> None:
    """Disjoint pools of Q members and Q non-members inside the table, drawn to pass Sec. 4.1's criteria."""
    members, non_members, context = (set(m.ids(p).tolist()) for p in ("members", "non_members", "context"))
    assert len(members) == len(non_members) == q == m.query_size
    assert not members & non_members and not (members | non_members) & context
    assert members | non_members | context <= set(range(dd.n)) and context
    if dd.task == "classification":
        assert m.statistics["tvd"] < 0.05
    else:
        assert m.statistics["ks_stat"] < 0.05 and m.statistics["ks_pvalue"] > 0.05


TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)


@pytest.fixture(scope="module")
def reference() -> ReferenceLTM:
    torch.manual_seed(0)
    return ReferenceLTM(TabularICLTransformer(TINY).eval(), checkpoint_sha256="tiny-generated-inputs")


@settings(max_examples=40, **SETTINGS)
@given(
    table=tables(
        min_rows=8,
        max_rows=40,
        max_features=4,
        target_kinds=("two_text", "many_classes", "numeric_text", "float", "extreme", "bool", "int"),
        min_features=1,
        tasks=(None, "classification", "regression"),
        other_targets=False,
        missing_targets=False,
        target_names=("y", "target", "class label"),
    ),
    query_size=st.integers(1, 6),
    context_size=st.integers(1, 64),
    n_candidates=st.integers(2, 12),
)
def test_generated_tables_finetune_and_probe_or_name_the_problem(
    reference: ReferenceLTM, table: Table, query_size: int, context_size: int, n_candidates: int
) -> None:
    """One AdamW step of the tiny LTM and one probe of it, on a generated table (validation thresholds opened)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ds = load(table, folder)
        if ds is None:
            return
        dd, results = deduplicate(ds), folder / "results"
        opened = {"tvd_threshold": 1.01, "ks_threshold": 1.01, "ks_alpha": -1.0, "max_redraws": 0}
        config = FinetuneConfig(1e-3, epochs=1, probe_epochs=(0, 1), context_size=context_size)
        try:
            manifest = split_manifest(dd, query_size, results_dir=results, **opened)
            run = finetune(manifest, dd, config, reference, results, progress=False)
            manips = ["baseline", "shuffle_first", "skew_true_3"]
            settings = ProbeSettings(n_candidates=n_candidates, max_queries=3, manipulations=tuple(manips))
            scores = probe_run(run, dd, reference, settings, progress=False)
        except USER_ERRORS as exc:
            event(f"finetune: {type(exc).__name__} {str(exc)[:40]}")
            assert_user_error(exc, [dd.name, "query_size", "context_size", "n_candidates"])
            assert not leftovers(results)
            return
        event(f"finetune: {dd.task}")
        assert (run.path / "metrics.csv").is_file() and list(run.metrics.epoch) == [0, 1]
        assert np.isfinite(run.metrics[["theta_loss_members", "ref_loss_members"]].to_numpy()).all()
        n_queries = 2 * min(query_size, 3)
        assert len(scores) == 3 * n_queries * len(manips)
        assert scores.query_id.nunique() == n_queries
        assert np.isfinite(scores.loss).all() and (scores.loss >= 0).all()
        assert scores.confidence.between(0, 1).all()
        assert not leftovers(results)
