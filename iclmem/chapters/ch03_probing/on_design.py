"""Chapter 3's claims read on the registered decision design (``grids/decide.yaml``; issue 57 item 4).

C12a-c (Sec. 5 "Perturbation Effectiveness", Fig. 4) with the same rules as on the book's grid
(:func:`.claims.perturbation_claims`), over the design's single-task fine-tuned configurations that are not collapsed
(label conditions N and All, where membership is exchangeable). The design's bundle keeps, per run, the rank sums
of every manipulation category (:meth:`iclmem.bundle.design.Design.group_ranks`) and the membership null from which
each permutation picks its own detectable configurations (:func:`.claims.replayed_selection`), drawn with the
bundle's own permutations and seed.
"""

from __future__ import annotations

import pandas as pd

from iclmem.adapters import load_model
from iclmem.bundle.design import Design
from iclmem.chapters.ch03_probing.claims import perturbation_claims, replayed_selection
from iclmem.probe.invariances import model_invariances
from iclmem.probe.same_context import same_as_baseline
from iclmem.probe.summary import membership_rows
from iclmem.stats.outcomes import Outcome, reclassify
from iclmem.training.regimes import SINGLE_TASK_FIXED


def design_configurations(design: Design, reading: str = "bound") -> pd.DataFrame:
    """The design's fine-tuned, non-collapsed single-task rows of label conditions N and All, outcomes under
    ``reading`` of Tab. 3: the configurations C12 averages over (the detectable ones when there are any)."""
    summary = design.summary
    summary = reclassify(summary[summary.regime == SINGLE_TASK_FIXED].reset_index(drop=True), reading)
    return membership_rows(summary[(summary.epoch > 0) & ~summary.collapsed.astype(bool)]).reset_index(drop=True)


def design_perturbation_claims(design: Design, reading: str = "bound") -> list[dict]:
    """C12a-c on the design (:func:`.claims.perturbation_claims`), with the invariances the probed model declares:
    the shipped reference LTM's, which every run of the design fine-tunes (its manifest's ``reference_sha256``)."""
    invariances = model_invariances(load_model("reference"))
    fine = design_configurations(design, reading)
    n_perm, seed = design.null_draws
    selected = replayed_selection(fine, design.null(reading, fine, ["outcome"]))
    configs = [design.group_ranks(run, int(epoch)) for run, epoch in zip(fine.run_key, fine.epoch, strict=True)]
    basis = "detectable-memorization" if (fine.outcome == Outcome.MEMORIZATION.value).any() else "non-collapsed"
    same_as_base = same_as_baseline(invariances)
    return perturbation_claims(
        configs, basis, invariances.row_order, n_perm=n_perm, seed=seed, selected=selected, same_as_base=same_as_base
    )


__all__ = ["design_configurations", "design_perturbation_claims"]
