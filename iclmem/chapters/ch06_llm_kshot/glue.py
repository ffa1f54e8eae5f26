"""Golchin et al. 2024, Sec. 3-5: notebook 06's glued values (myst-nb ``{glue:text}`` names read by the chapter's prose:
judges, controlled experiment, claims D1-D9, the run's size).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from iclmem.chapters.ch06_llm_kshot.basis import basis_glue
from iclmem.chapters.ch06_llm_kshot.judge_quality import kappa_reading
from iclmem.chapters.ch06_llm_kshot.rules import (
    CONFIDENCE,
    EQUIVALENCE_MARGIN,
    N_BOOT,
    NULL_BOOT,
)
from iclmem.chapters.ch06_llm_kshot.tables import (
    verdict_counts_text,
)
from iclmem.llm.prompts import SETTINGS
from iclmem.llm.replication import (
    Experiment,
)
from iclmem.report.records import ClaimResult
from iclmem.stats.permutation import N_PERMUTATIONS, NULL_LEVEL


def glue_values(values: Mapping[str, object]) -> None:
    """Glue every value under its name with myst-nb, not displayed, as the object itself (a string keeps its
    quoted ``repr``, a number its digits), for ``{glue:text}`` in the chapter's prose."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, value, display=False)


def judge_glue(agree: Mapping[str, Any] | None) -> dict[str, str]:
    """``judge_agreement`` (percent) and ``judge_kappa`` of the two judges; ``"n/a"`` when no LLM judge ran
    (``None``)."""
    if agree is None:
        return {"judge_agreement": "n/a", "judge_kappa": "n/a"}
    return {"judge_agreement": f"{agree['agreement']:.0%}", "judge_kappa": f"{agree['kappa']:.2f}"}


GROUND_TRUTH_NAMES = ("ft_members_kshot", "ft_nonmembers_kshot", "ft_members_zeroshot", "base_kshot", "ft_members_by_k")


def ground_truth_glue(rates: pd.DataFrame | None) -> dict[str, str]:
    """The summary's numbers of the controlled experiment, from ``rates`` by ``(model, member, setting, k)``.

    Each is a mean over the rows of ``rates`` (one per setting and k, as the tables show them), in percent:
    ``ft_members_kshot`` and ``ft_nonmembers_kshot`` (fine-tuned model, members / non-members, k > 0),
    ``ft_members_zeroshot`` (members, k = 0), ``base_kshot`` (the base model, all instances, k > 0) and
    ``ft_members_by_k`` (``"12% at k = 0, 40% at k = 25"``). All ``"n/a"`` without fine-tuning (``rates`` None).
    """
    if rates is None:
        return dict.fromkeys(GROUND_TRUTH_NAMES, "n/a")
    tuned = rates[rates.model == "fine-tuned"]
    base = rates[rates.model == "base"]
    by_k = tuned[tuned.member].groupby("k").memorized.mean()
    return {
        "ft_members_kshot": f"{tuned[tuned.member & (tuned.k > 0)].memorized.mean():.0f}%",
        "ft_nonmembers_kshot": f"{tuned[~tuned.member & (tuned.k > 0)].memorized.mean():.0f}%",
        "ft_members_zeroshot": f"{tuned[tuned.member & (tuned.k == 0)].memorized.mean():.0f}%",
        "base_kshot": f"{base[base.k > 0].memorized.mean():.0f}%",
        "ft_members_by_k": ", ".join(f"{v:.0f}% at k = {k}" for k, v in by_k.items()),
    }


def claims_glue(results: Sequence[ClaimResult], agree: Mapping[str, Any] | None) -> dict[str, object]:
    """The claims section's glued values: ``verdict-<ID>`` per claim, ``claims_verdicts`` (:func:`verdict_counts_text`),
    ``claims_n_boot``, ``claims_confidence``, ``equivalence_margin``, the null's ``claims_n_perm`` (draws per claim),
    ``claims_null_boot`` (bootstrap resamples per draw) and ``null_level`` (the largest null rate of a reproduced
    claim, percent), ``judge_reading`` (:func:`kappa_reading` of the two judges' kappa, ``"not measured"`` when no
    LLM judge ran: ``agree`` None), and the claims read net of non-members and on raw rates (``claims_basis_net``,
    ``claims_basis_raw``: :func:`~iclmem.chapters.ch06_llm_kshot.basis.basis_glue`, Sec. 5)."""
    values: dict[str, object] = {f"verdict-{r.claim_id}": r.verdict for r in results}
    values.update(
        {
            "claims_verdicts": verdict_counts_text(results),
            "claims_n_boot": N_BOOT,
            "claims_confidence": f"{CONFIDENCE:.0%}",
            "equivalence_margin": f"{EQUIVALENCE_MARGIN:g}",
            "claims_n_perm": N_PERMUTATIONS,
            "claims_null_boot": NULL_BOOT,
            "null_level": f"{NULL_LEVEL:.0%}",
            "judge_reading": kappa_reading(agree["kappa"]) if agree is not None else "not measured",
            **basis_glue(),
        }
    )
    return values


def protocol_glue() -> dict[str, object]:
    """The protocol's numbers the chapter's prose states, from the code that fixes them: ``judge_tokens`` (the LLM
    judge's answer budget, the paper's), ``completion_pairs`` (the labelled completions of
    ``judge_pairs_completions.csv``), ``very_strong_r`` (D7's floor of a "very strong" r) and ``chars_per_token``
    (characters per token in the lower estimate of a remote model's prompt tokens)."""
    from iclmem.chapters.ch06_llm_kshot.correlation import VERY_STRONG_R
    from iclmem.llm.backends import CHARS_PER_TOKEN_LOWER
    from iclmem.llm.judge_accuracy import load_completion_pairs
    from iclmem.llm.judges import JUDGE_MAX_NEW_TOKENS

    return {
        "judge_tokens": JUDGE_MAX_NEW_TOKENS,
        "completion_pairs": len(load_completion_pairs()),
        "very_strong_r": f"{VERY_STRONG_R:g}",
        "chars_per_token": CHARS_PER_TOKEN_LOWER,
    }


def run_glue(
    exp: Experiment, mem: pd.DataFrame, perf: pd.DataFrame, models: str, wall_minutes: float
) -> dict[str, object]:
    """The run's size for the chapter's introduction and summary: instances, members, settings (lower case),
    ``models`` (a phrase), max new tokens, wall minutes (one decimal), completions, how many came from the cache and
    how many failed (left out of every rate, and named in the summary)."""
    return {
        "run_instances": len(exp.instances),
        "run_members": len(exp.sample.members),
        "run_settings": ", ".join(SETTINGS[s].lower() for s in exp.config.settings),
        "run_models": models,
        "run_tokens": exp.config.max_new_tokens,
        "wall_minutes": f"{wall_minutes:.1f}",
        "n_completions": len(mem) + len(perf),
        "n_cached": int(mem.cached.sum() + perf.cached.sum()),
        "n_failed": int(mem["error"].notna().sum() + perf["error"].notna().sum()),
    }


__all__ = [
    "glue_values",
    "judge_glue",
    "GROUND_TRUTH_NAMES",
    "ground_truth_glue",
    "claims_glue",
    "protocol_glue",
    "run_glue",
]
