"""The notebook-facing summary of split validation: our Tab. 6 beside the paper's (App. A.2, Tab. 6).

Helpers to resolve the notebook parameters, load and deduplicate several tables, draw (or read cached)
manifests for every (dataset, Q), and tabulate the statistics next to the values the paper reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from iclmem.data.dataset import Dataset
from iclmem.data.dedup import deduplicate
from iclmem.data.manifest import SplitManifest
from iclmem.data.sources import load_dataset
from iclmem.data.split import split_manifest

#: Tab. 6 of the paper: (dataset, task, Q) -> (KS stat, KS p, W, TVD); None where the paper prints "—"
PAPER_TAB6: dict[tuple[str, str, int], tuple[float | None, float | None, float | None, float | None]] = {
    ("anime_planet", "regression", 512): (0.029, 0.611, 0.025, None),
    ("babies_r_us", "regression", 512): (0.021, 0.968, 0.030, None),
    ("beer_ratings", "regression", 512): (0.021, 0.975, 0.021, None),
    ("bikedekho", "regression", 512): (0.025, 0.889, 0.014, None),
    ("bikewale", "regression", 512): (0.033, 0.595, 0.011, None),
    ("buy_buy_baby", "regression", 512): (0.035, 0.530, 0.065, None),
    ("cardekho", "regression", 512): (0.028, 0.763, 0.007, None),
    ("clear_corpus", "regression", 512): (0.023, 0.941, 0.032, None),
    ("chocolate_bar_ratings", "classification", 512): (None, None, None, 0.044),
    ("coffee_ratings", "classification", 512): (None, None, None, 0.056),
    ("anime_planet", "regression", 50): (0.026, 0.983, 0.024, None),
    ("babies_r_us", "regression", 50): (0.020, 1.000, 0.023, None),
    ("beer_ratings", "regression", 50): (0.025, 0.993, 0.016, None),
    ("bikedekho", "regression", 50): (0.027, 0.983, 0.012, None),
    ("bikewale", "regression", 50): (0.044, 0.622, 0.013, None),
    ("buy_buy_baby", "regression", 50): (0.027, 0.984, 0.041, None),
    ("cardekho", "regression", 50): (0.032, 0.921, 0.010, None),
    ("clear_corpus", "regression", 50): (0.027, 0.988, 0.038, None),
    ("chocolate_bar_ratings", "classification", 50): (None, None, None, 0.005),
    ("coffee_ratings", "classification", 50): (None, None, None, 0.043),
}
COLUMNS = ["KS stat", "KS p", "W", "TVD"]


def paper_table6() -> pd.DataFrame:
    """The paper's Tab. 6 as a DataFrame (values quoted from the paper text)."""
    rows = [{"dataset": d, "task": t, "Q": q, **dict(zip(COLUMNS, v, strict=True))} for (d, t, q), v in PAPER_TAB6.items()]
    return pd.DataFrame(rows).sort_values(["Q", "task", "dataset"], ascending=[False, False, True]).reset_index(drop=True)


def paper_reference(dataset: str, task: str, query_size: int) -> str:
    """What the paper reports for this row: its own values for its ten tables, else its range for the task."""
    values = PAPER_TAB6.get((dataset, task, query_size))
    if values:
        ks, p, w, tvd = values
        return f"TVD {tvd:.3f}" if tvd is not None else f"KS {ks:.3f}, p {p:.3f}, W {w:.3f}"
    paper = [v for (_, t, q), v in PAPER_TAB6.items() if t == task and q == query_size]
    if not paper:
        criterion = "TVD" if task == "classification" else "KS"
        return f"not in paper (Q = 50, 512 only); criterion {criterion} < 0.05"
    if task == "classification":
        return f"not in paper; its TVDs at Q={query_size}: {min(v[3] for v in paper):.3f}-{max(v[3] for v in paper):.3f}"
    return (f"not in paper; its KS at Q={query_size}: {min(v[0] for v in paper):.3f}-{max(v[0] for v in paper):.3f}, "
            f"p >= {min(v[1] for v in paper):.3f}")


def resolve_datasets(dataset: str = "", datasets: Sequence[str] = (), data_path: str = "") -> list[str]:
    """Notebook parameters -> table list: ``data_path`` wins, then ``dataset``, then ``datasets``."""
    if data_path:
        return [data_path]
    if dataset:
        return [dataset]
    return list(datasets)


def resolve_query_sizes(query_size: int = 0, query_sizes: Sequence[int] = (50, 512)) -> list[int]:
    """``query_size`` > 0 replaces the list ``query_sizes``."""
    return [int(query_size)] if query_size and query_size > 0 else [int(q) for q in query_sizes]


def load_tables(names: Iterable[str], *, target: str | None = None, task: str | None = None,
                carte_dir: str | Path | None = None) -> list[Dataset]:
    """Load and deduplicate each table (``target``/``task`` apply to every one; empty means the recipe's)."""
    return [deduplicate(load_dataset(n, target=target or None, task=task or None, carte_dir=carte_dir or None))
            for n in tqdm(list(names), desc="load + dedup", disable=None)]


def make_splits(tables: Sequence[Dataset], query_sizes: Sequence[int], seed: int = 0, label_condition: str = "none",
                *, max_redraws: int = 100, results_dir: str | Path | None = None) -> list[SplitManifest]:
    """The (cached) manifest of every (table, Q); splits that do not fit a table raise :class:`PoolSizeError`."""
    jobs = [(t, q) for t in tables for q in query_sizes]
    return [split_manifest(t, q, seed, label_condition, max_redraws=max_redraws, results_dir=results_dir)
            for t, q in tqdm(jobs, desc="splits", disable=None)]


def validation_table(manifests: Sequence[SplitManifest]) -> pd.DataFrame:
    """Our Tab. 6: per (dataset, Q) the KS statistic and p-value, Wasserstein and TVD, seeds, and the paper's values."""
    rows = []
    for m in manifests:
        s = m.statistics
        rows.append({
            "dataset": m.dataset, "task": m.task, "Q": m.query_size,
            "KS stat": s["ks_stat"], "KS p": s["ks_pvalue"], "W": s["wasserstein"], "TVD": s["tvd"],
            "seed": m.seed_requested, "seed used": m.seed_used, "draws": m.draws,
            "paper (Tab. 6)": paper_reference(m.dataset, m.task, m.query_size),
        })
    return pd.DataFrame(rows)


def randomization_table(manifests: Sequence[SplitManifest], tables: Sequence[Dataset]) -> pd.DataFrame:
    """Per randomized pool: its size and the share of rows whose label changed (Sec. 4.1 label randomization)."""
    by_name = {t.name: t for t in tables}
    rows = []
    for m in manifests:
        target = by_name[m.dataset].target.to_numpy()
        for pool, labels in m.randomized_labels.items():
            original = target[m.ids(pool)]
            rows.append({"dataset": m.dataset, "Q": m.query_size, "pool": pool, "rows": len(labels),
                         "labels changed": float((pd.Series(labels).to_numpy() != original).mean())})
    return pd.DataFrame(rows, columns=["dataset", "Q", "pool", "rows", "labels changed"])


class PlainText(str):
    """A string that displays without quotes (myst-nb ``{glue:text}`` shows the text/plain repr)."""

    def __repr__(self) -> str:
        return str.__str__(self)

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython's pretty printer
        p.text(str.__str__(self))


def summary_numbers(table6: pd.DataFrame, dedup: pd.DataFrame) -> dict[str, PlainText]:
    """Key numbers of the section as display strings ("-" where no table has that task), for myst-nb glue."""
    reg, cls = table6[table6.task == "regression"], table6[table6.task == "classification"]

    def fmt(values: pd.Series, how: str, digits: int) -> str:
        return f"{getattr(values.astype(float), how)():.{digits}f}" if len(values) else "-"

    numbers = {
        "n_datasets": str(len(dedup)),
        "rows_dropped_dedup": str(int(dedup[["n_exact_duplicates_dropped", "n_conflicting_dropped"]].to_numpy().sum())),
        "max_ks_stat": fmt(reg["KS stat"], "max", 4),
        "min_ks_p": fmt(reg["KS p"], "min", 3),
        "max_tvd": fmt(cls["TVD"], "max", 4),
        "max_redraws_used": str(int((table6["draws"] - 1).max())),
    }
    return {k: PlainText(v) for k, v in numbers.items()}
