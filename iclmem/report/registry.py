"""Both papers' claims C1-C16 (IclMem) and D1-D9 (Golchin et al.), the instrument rows P1-P3 and claims M1, M2
beyond the papers: the registry, in scorecard order (notebook 00).

One :class:`Claim` per claim of ``shared/claims.md``: its id, its paper, a one-line paraphrase and the page that
records it. Re-exported by :mod:`iclmem.report.glue`.
"""

from __future__ import annotations

from dataclasses import dataclass

ICLMEM = "IclMem (Capano & Böhler 2026)"
GOLCHIN = "Golchin et al. 2024"
INSTRUMENT = "this book (the instrument)"
BEYOND_PAPERS = "this book (beyond the papers)"
SCORECARD_PAGE = "notebooks/00_scorecard"  # toc name of the page that renders the scorecard
_SPLITS = "notebooks/01_split_validation"
_FINETUNE = "notebooks/02_controlled_finetuning"
_PROBING = "notebooks/03_multiple_choice_probing"
_CALIBRATION = "notebooks/04_calibration"
_REGIMES = "notebooks/05_realistic_regimes"
_LLM = "notebooks/06_llm_kshot_replication"
_MITIGATION = "notebooks/07_mitigation"
_INSTRUMENT = "notebooks/A6_instrument"


@dataclass(frozen=True)
class Claim:
    """One quantitative claim of a paper: its id, a one-line paraphrase, and the toc page recording it.

    The statement carries no values: the paper's value and this build's come from the chapter's
    glued record, so nothing on the scorecard is typed twice.
    """

    id: str
    paper: str
    statement: str
    chapter: str


#: How each claim is compared with the paper when our models are not the paper's (issue 53, item 4): ``value`` (the
#: paper's number itself is the test), ``direction`` (the sign of an effect), ``shape`` (an ordering or a form that
#: does not depend on the model's scale), ``not comparable`` (a value on ConTextTab's or GPT-4's own scale and no
#: direction stated; shown beside ours, no verdict). Claims not listed are compared by value. The reason is shown on
#: the scorecard beside the verdict.
COMPARISON: dict[str, tuple[str, str]] = {
    "C2": (
        "not comparable",
        "the peak AUC is a value of ConTextTab's memorization; a 0.2M-parameter model fine-tuned on another grid has "
        "its own scale, and 'a peak above chance' is C1's claim",
    ),
    "C4": (
        "direction",
        "collapse rises with the learning rate (lr >= 1e-2 against below, beyond its learning-rate null); the "
        "collapse shares themselves measure how fragile ConTextTab is and are shown, not judged",
    ),
    "C7": (
        "not comparable",
        "shares of all runs: with collapse taking 55% of ConTextTab's runs and a fraction of ours, the remaining "
        "outcomes are shares of different remainders",
    ),
    "C10": (
        "shape",
        "bimodal by learning rate: stable rates near 1x and every aggressive rate's median above every stable one "
        "(beyond a learning-rate null); the 8x and 5x values are ConTextTab's",
    ),
    "C12a": ("direction", "a positive AUC change from true-label skew"),
    "C12b": ("value", "about 0, an equivalence within a margin"),
    "C12c": ("value", "about 0, an equivalence within a margin"),
    "D1": ("direction", "memorization rises with k, judged net of non-members; the paper's raw reading shown beside"),
    "D2": ("direction", "a sharp rise by k = 25"),
    "D3": ("direction", "near-exact turns exact as k grows"),
    "D4": ("direction", "segment pairs alone reach about the highest rate"),
    "D5": ("value", "equal within a margin from k >= 25, different at zero-shot"),
    "D6": ("direction", "ICL beats zero-shot where memorization reaches about 40%"),
    "D7": ("direction", "a positive correlation between performance and memorization"),
    "D8": ("direction", "memorized instances perform better"),
}


def comparison(claim_id: str) -> tuple[str, str]:
    """(how the claim is compared, why) from :data:`COMPARISON`; unlisted claims are compared by value."""
    return COMPARISON.get(claim_id, ("value", "the paper's value is the test"))


#: The claims of ``shared/claims.md``: IclMem C1-C16 (ConTextTab on 10 CARTE tasks) and
#: Golchin et al. 2024 D1-D9 (GPT-4 on WNLI, RTE, TREC, DBpedia), in scorecard order. C12 is judged
#: as its three sub-claims (C12a-c), each of which can come out differently. P1-P3 are the book's
#: instrument rows: the positive and the negative control of the probe and the member-only shuffling control
#: (notebook 04). M1 and M2 go beyond
#: the papers: DP-SGD, the mitigation IclMem's Sec. 6 names (notebook 07), under their own scorecard heading.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "C1",
        ICLMEM,
        "Most tasks show detectable memorization (AUC(ΔS) > 0.5, TPR > 0.1) under controlled fine-tuning",
        _CALIBRATION,
    ),
    Claim("C2", ICLMEM, "The largest AUC(ΔS) and the per-task AUC / TPR@10% / TPR@1% of Tab. 1", _CALIBRATION),
    Claim("C3", ICLMEM, "TPR at 1% FPR exceeds 0.1 in only a few tasks", _CALIBRATION),
    Claim(
        "C4",
        ICLMEM,
        "Representational collapse is the most frequent outcome, at high learning rates (lr ≥ 1e-2)",
        _CALIBRATION,
    ),
    Claim(
        "C5",
        ICLMEM,
        "Share of runs with loss inversion (non-members score the lower loss), at Q = 50 and Q = 512",
        _CALIBRATION,
    ),
    Claim(
        "C6", ICLMEM, "Detectable memorization is much more frequent at query size Q = 50 than at Q = 512", _CALIBRATION
    ),
    Claim("C7", ICLMEM, "Shares of context overfitting and of no signal, at Q = 50 and Q = 512", _CALIBRATION),
    Claim(
        "C8",
        ICLMEM,
        "Binary tasks are the most vulnerable; label density n/k drives the signal at Q = 50",
        _CALIBRATION,
    ),
    Claim(
        "C9",
        ICLMEM,
        "Over epochs the Q = 50 signal grows, while the Q = 512 signal peaks mid-training and vanishes",
        _CALIBRATION,
    ),
    Claim(
        "C10",
        ICLMEM,
        "The loss ratio L_FT / L_Base is bimodal: near 1x at low lr, far above the 5x collapse threshold "
        "at aggressive lr",
        _FINETUNE,
    ),
    Claim(
        "C11",
        ICLMEM,
        "Calibration against the reference model exposes most raw TPR@10% signals as difficulty artifacts",
        _CALIBRATION,
    ),
    Claim("C12a", ICLMEM, "True-label skew and mixing true with other labels raise AUC(ΔS) slightly", _PROBING),
    Claim("C12b", ICLMEM, "Positional shuffling of the context changes AUC(ΔS) by about 0", _PROBING),
    Claim("C12c", ICLMEM, "Feature reduction and distractor columns change AUC(ΔS) negligibly", _PROBING),
    Claim("C13", ICLMEM, "Realistic regimes (multi-task pairs, few epochs) remove most of the signal", _REGIMES),
    Claim(
        "C14", ICLMEM, "Member and non-member splits are distribution-matched (KS, TVD below the thresholds)", _SPLITS
    ),
    Claim("C15", ICLMEM, "Leakage can be localized: a modest AUC can come with a high TPR@10%", _CALIBRATION),
    Claim(
        "C16",
        ICLMEM,
        "High-cardinality targets leak only with high query coverage Q/n and a target not deducible from features",
        _CALIBRATION,
    ),
    Claim(
        "P1",
        INSTRUMENT,
        "The probe detects memorization known to be there (positive control, at the curve's cell chosen by a stated "
        "rule on the vanilla attack)",
        _INSTRUMENT,
    ),
    Claim(
        "P2",
        INSTRUMENT,
        "The probe does not detect what is not there (negative control: halves of the non-members)",
        _INSTRUMENT,
    ),
    Claim(
        "P3",
        INSTRUMENT,
        "Detections under member-only shuffling (M) are membership, not label type (non-members scored on a shuffled "
        "label too)",
        _INSTRUMENT,
    ),
    Claim("D1", GOLCHIN, "Memorization rises from zero-shot to few-shot to many-shot prompts", _LLM),
    Claim("D2", GOLCHIN, "25 demonstrations already raise memorization sharply; its level differs by dataset", _LLM),
    Claim("D3", GOLCHIN, "Near-exact matches turn into exact matches as the number of shots k grows", _LLM),
    Claim("D4", GOLCHIN, "Segment pairs alone (no labels, no instruction) surface about the most memorization", _LLM),
    Claim(
        "D5",
        GOLCHIN,
        "Full information and segment pairs with labels agree from k ≥ 25 and differ only at zero-shot",
        _LLM,
    ),
    Claim("D6", GOLCHIN, "In-context learning beats zero-shot once memorization reaches about 40%", _LLM),
    Claim(
        "D7",
        GOLCHIN,
        "Where ICL improves performance, it correlates very strongly with memorization across k (Pearson)",
        _LLM,
    ),
    Claim("D8", GOLCHIN, "Performance on memorized instances exceeds performance on non-memorized ones", _LLM),
    Claim("D9", GOLCHIN, "Human review changes few of the GPT-4 judge's labels", _LLM),
    Claim(
        "M1",
        BEYOND_PAPERS,
        "DP-SGD at ε ≤ 4 removes the vanilla-attack signal (an equivalence to AUC 0.5; IclMem Sec. 6's mitigation)",
        _MITIGATION,
    ),
    Claim(
        "M2",
        BEYOND_PAPERS,
        "... at a held-out accuracy cost of at most the chapter's stated budget, where fine-tuning helps",
        _MITIGATION,
    ),
)


def claims_by_id() -> dict[str, Claim]:
    """The registry keyed by claim id."""
    return {claim.id: claim for claim in CLAIMS}
