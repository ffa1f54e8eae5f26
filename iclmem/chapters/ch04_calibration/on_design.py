"""Chapter 4's claims read on the registered decision design (``grids/decide.yaml``; issue 57 item 4).

The same rules as on the book's grid (:func:`.claims.calibration_claims`: C1-C9, C11, C15, C16), read on the
single-task runs of the design's results bundle (:class:`iclmem.bundle.design.Design`) with the membership null it
keeps (every run's permuted summaries, the same draws the notebooks would compute from the scores). What the
design bundle does not keep, this reading cannot give: the instrument's rows P1 and P3 need probe scores of control
runs outside the design (P1's control tables, P3's re-probed non-members), so they stay with the grid; P2 reads the
design's null halves in appendix A6 (:mod:`iclmem.chapters.ch_a6_instrument.on_design`). Sec. 4.2, Sec. 5, Fig. 2,
Fig. 5, Tab. 1, Tab. 3.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclmem.bundle.design import Design
from iclmem.bundle.layout import BundleError
from iclmem.chapters.ch04_calibration.claims import c1_hits, c3_hits, calibration_claims
from iclmem.chapters.ch04_calibration.nulls import STACK_COLUMNS, SummaryStack
from iclmem.probe.null import OUTCOME_INPUTS
from iclmem.probe.summary import membership_rows
from iclmem.report.design_glue import design_progress, load_design
from iclmem.stats.outcomes import Outcome, reclassify
from iclmem.training.regimes import SINGLE_TASK_FIXED


def design_summary(design: Design, reading: str = "bound") -> pd.DataFrame:
    """The design's single-task summary rows (one per run x probed epoch; the joint regimes are chapter 5's), with
    their outcomes under ``reading`` of Tab. 3."""
    summary = design.summary
    return reclassify(summary[summary.regime == SINGLE_TASK_FIXED].reset_index(drop=True), reading)


#: The registered extensions of a design, each a grid of its own registered before it ran, and the claims it serves:
#: only those claims read the design and the extension together; the others keep the design as registered.
EXTENSIONS: dict[str, tuple[str, tuple[str, ...]]] = {"decide": ("decide_c9", ("C9",))}


def _reading(design: Design, reading: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The design's single-task summary under ``reading`` and its kept membership null (the columns the rules read)."""
    summary = design_summary(design, reading)
    return summary, design.null(None, summary, [*STACK_COLUMNS, *OUTCOME_INPUTS])


def _with_extension(design: Design, records: list[dict], reading: str) -> list[dict]:
    """``records`` with the claims of the design's registered extension (:data:`EXTENSIONS`) read on the design and
    the extension together, once the extension is complete and its recomputed sample accepted here; before that
    those claims keep the design's reading and say where the extension stands (its bundle beside the design's)."""
    name, claims = EXTENSIONS.get(str(design.bundle.manifest["grid"]["name"]), ("", ()))
    if not name:
        return records
    try:
        extension = load_design(name, design.bundle.root.parent)
        progress = design_progress(extension)
    except BundleError as err:  # not bundled yet, or damaged: the design's own reading stands
        return [_noted(r, f"its registered extension {name} is not read ({err})", claims) for r in records]
    if not progress.decides:
        return [_noted(r, f"its registered extension is not read yet: {progress.text}", claims) for r in records]
    ours, theirs = _reading(design, reading), _reading(extension, reading)
    summary = pd.concat([ours[0], theirs[0]], ignore_index=True)
    null = pd.concat([ours[1], theirs[1]], ignore_index=True).sort_values(["perm", "run_key", "epoch"], kind="stable")
    joined = {r["id"]: r for r in calibration_claims(summary, null.reset_index(drop=True), reading)}
    note = f"read on the design and its registered extension ({progress.text})"
    return [_noted(joined[r["id"]], note, claims) if r["id"] in claims else r for r in records]


def _noted(record: dict, note: str, claims: tuple[str, ...]) -> dict:
    """``record`` with ``note`` appended to its reason when it is one of ``claims``."""
    return {**record, "reason": f"{record['reason']}; {note}"} if record["id"] in claims else record


def design_calibration_claims(design: Design, reading: str = "bound") -> list[dict]:
    """Claim records C1-C9, C11, C15, C16 on the design (:func:`.claims.calibration_claims` with the design's
    membership null under ``reading``); the claims of its registered extension (:data:`EXTENSIONS`, C9 of
    ``grids/decide_c9.yaml``) on the design and the extension together once the extension decides."""
    summary, null = _reading(design, reading)
    return _with_extension(design, calibration_claims(summary, null, reading), reading)


def _per_table(stack: SummaryStack, keep: np.ndarray, hit: np.ndarray) -> pd.Series:
    """Per table of ``stack``'s rows: 1.0 when one of its ``keep`` rows is a ``hit`` on the observed draw (draw 0),
    0.0 when none is, NaN when it has no ``keep`` row."""
    frame = pd.DataFrame({"dataset": stack.rows.dataset.to_numpy(), "keep": keep, "hit": hit[0] & keep})
    read = frame.groupby("dataset").agg(keep=("keep", "any"), hit=("hit", "any"))
    return read.hit.astype(float).where(read.keep)


def table_claim_grid(summary: pd.DataFrame) -> pd.DataFrame:
    """The table-by-claim grid (one row per table, sorted by task): per claim that counts tables, whether the table is
    one of its hits, by the claim's own row rule on the membership rows it reads (N and All): C1's
    (:func:`.claims.c1_hits`), C3's (:func:`.claims.c3_hits`), and for C6 a detectable configuration at each Q. 1.0:
    a hit, 0.0: read and no hit, NaN: the table has no row the claim reads. ``task`` and the card's ``k`` beside."""
    stack = SummaryStack.of([summary], membership_rows)
    rows = stack.rows
    detectable = stack.outcome == Outcome.MEMORIZATION.value
    columns = {"C1: detectable (N), TPR@10% > 0.1": c1_hits(stack), "C3: TPR@1% > 0.1": c3_hits(stack)}
    for q in sorted(rows.query_size.unique()):
        columns[f"C6: detectable at Q={int(q)}"] = ((rows.query_size == q).to_numpy(), detectable)
    grid = pd.DataFrame({name: _per_table(stack, keep, hit) for name, (keep, hit) in columns.items()})
    cards = summary.groupby("dataset")[["task", "k"]].first()
    return cards.join(grid, how="inner").sort_values(["task", "k"]).rename_axis("dataset")


def detectable_by_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per table and Q: fine-tuned rows, rows read detectable (the summary's outcome), and the AUC(Delta S) with its
    95% interval of the row whose interval's lower bound is the highest (on loss or entropy, whichever is higher
    there), for the table-by-table map of where the probe sees (Fig. 5 per table)."""
    fine = summary[summary.epoch > 0].reset_index(drop=True)
    entropy = fine.auc_entropy_lo.fillna(-1) > fine.auc_loss_lo.fillna(-1)
    frame = fine.assign(
        detectable=fine.outcome == Outcome.MEMORIZATION.value,
        auc=fine.auc_entropy.where(entropy, fine.auc_loss),
        auc_lo=fine.auc_entropy_lo.where(entropy, fine.auc_loss_lo),
        auc_hi=fine.auc_entropy_hi.where(entropy, fine.auc_loss_hi),
    )
    keys = ["dataset", "query_size"]
    best = frame.loc[
        frame.auc_lo.fillna(-1).groupby([frame[k] for k in keys]).idxmax(), [*keys, "auc", "auc_lo", "auc_hi"]
    ]
    counts = frame.groupby(keys).agg(task=("task", "first"), rows=("epoch", "size"), detectable=("detectable", "sum"))
    return counts.reset_index().merge(best, on=keys)


__all__ = ["EXTENSIONS", "design_calibration_claims", "design_summary", "detectable_by_table", "table_claim_grid"]
