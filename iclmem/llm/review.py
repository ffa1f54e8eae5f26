"""Human review of the judge's labels: export the borderline cases to a CSV, import the reviewed labels.

Paper Sec. 4 "Human Evaluation": after GPT-4 labelled the completions, a human review changed 5% of the labels,
all borderline cases between near-exact and inexact matches (claim D9). Here the cases worth a reviewer's time are
those where the offline and LLM judges disagree, or where the label the rates use (or either judge) says
near-exact (:func:`borderline`). :func:`export_review` writes them to a CSV with an empty ``human`` column;
a reviewer fills in ``exact``, ``near-exact`` or ``inexact`` (``no`` also accepted; blank = not reviewed);
:func:`import_review` applies the reviewed labels and reports the share of labels changed, over all judged
completions (the paper's measure) and over the rows reviewed.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from iclmem.llm.chat import LLMError
from iclmem.store.atomic import atomic_write_text

KEY = ("model", "setting", "k", "instance_id")
COLUMNS = ("review_id", *KEY, "member", "reference", "completion", "match_offline", "match_llm", "match", "human")
HUMAN_LABELS = {"exact": "exact", "near-exact": "near-exact", "near exact": "near-exact", "inexact": "no", "no": "no"}


class ReviewFileError(LLMError, ValueError):
    """A reviewed CSV that cannot be applied (missing columns, unknown rows or labels)."""


def review_id(row: pd.Series | dict) -> str:
    """``model|setting|k|instance_id``: the row a review line belongs to."""
    return "|".join(str(row[c]) for c in KEY)


def borderline(frame: pd.DataFrame) -> pd.DataFrame:
    """Judged rows where the two judges disagree (both labelled) or any label says near-exact."""
    df = frame[frame["match"].notna()]
    off, llm = df.get("match_offline"), df.get("match_llm")
    disagree = pd.Series(False, index=df.index)
    near = df["match"] == "near-exact"
    if off is not None and llm is not None:
        disagree = off.notna() & llm.notna() & (off != llm)
    for col in (off, llm):
        if col is not None:
            near |= col == "near-exact"
    return df[disagree | near]


def export_review(frame: pd.DataFrame, path: str | Path) -> int:
    """Write the :func:`borderline` rows to ``path`` (CSV, atomically) with an empty ``human`` column; their count."""
    df = borderline(frame).copy()
    for col in COLUMNS:
        if col not in df.columns and col not in KEY:
            df[col] = None
    df["review_id"] = [review_id(r) for _, r in df.iterrows()]
    df["human"] = ""
    buf = io.StringIO()
    df[list(COLUMNS)].to_csv(buf, index=False)
    atomic_write_text(Path(path), buf.getvalue())
    return len(df)


@dataclass(frozen=True)
class ReviewResult:
    """The frame with the reviewed labels applied, and what the review changed."""

    frame: (
        pd.DataFrame
    )  # ``match`` replaced by the reviewed label where one was given; ``match_judge`` keeps the judge's
    n_judged: int  # judged completions (the denominator of the paper's 5%)
    n_reviewed: int  # rows with a human label
    n_changed: int  # of those, rows whose label changed
    changes: pd.DataFrame  # judge label -> human label counts of the changed rows

    @property
    def share_changed(self) -> float:
        """Changed labels over all judged completions (the paper's measure, Sec. 4), 0-1."""
        return self.n_changed / self.n_judged if self.n_judged else float("nan")

    @property
    def share_of_reviewed(self) -> float:
        return self.n_changed / self.n_reviewed if self.n_reviewed else float("nan")

    def text(self) -> str:
        return (
            f"the review changed {self.n_changed} of {self.n_judged} judge labels ({self.share_changed:.1%}); "
            f"{self.n_reviewed} borderline cases were reviewed ({self.share_of_reviewed:.0%} of them changed)"
        )


def import_review(frame: pd.DataFrame, path: str | Path) -> ReviewResult:
    """Apply the ``human`` labels of a reviewed CSV (:func:`export_review`'s format) to ``frame``."""
    path = Path(path)
    if not path.exists():
        raise ReviewFileError(
            f"review file {path} does not exist; export one with export_review and fill in its 'human' column"
        )
    reviewed = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in ("review_id", "human") if c not in reviewed.columns]
    if missing:
        raise ReviewFileError(f"{path} lacks the columns {missing}; keep the columns export_review wrote")
    reviewed = reviewed[reviewed["human"].str.strip() != ""]
    labels = reviewed["human"].str.strip().str.lower().map(HUMAN_LABELS)
    bad = sorted(set(reviewed.loc[labels.isna(), "human"]))
    if bad:
        raise ReviewFileError(f"{path}: unknown labels {bad} in column 'human'; use exact, near-exact or inexact")
    out = frame.copy()
    ids = pd.Series([review_id(r) for _, r in out.iterrows()], index=out.index)
    unknown = sorted(set(reviewed["review_id"]) - set(ids))
    if unknown:
        raise ReviewFileError(
            f"{path}: {len(unknown)} rows belong to no completion of this run (e.g. {unknown[0]!r}); "
            "review the file exported by this run's configuration"
        )
    human = dict(zip(reviewed["review_id"], labels, strict=True))
    out["match_judge"] = out["match"]
    judged = out["match"].notna()
    has = ids.isin(human) & judged
    out.loc[has, "match"] = ids[has].map(human)
    changed = has & (out["match"] != out["match_judge"])
    changes = out[changed].groupby(["match_judge", "match"]).size().rename("n").reset_index()
    return ReviewResult(out, int(judged.sum()), int(has.sum()), int(changed.sum()), changes)
