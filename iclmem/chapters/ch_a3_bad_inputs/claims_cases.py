"""Appendix A3 (no paper section): bad claim records read back from an executed chapter (iclmem.report.glue)."""

from __future__ import annotations

from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
    tiny_glued,
)
from iclmem.report.glue import read_glued_claims
from iclmem.report.records import ClaimError

record = {
    "id": "C1",
    "paper": "0.8",
    "ours": "0.7",
    "interval": None,
    "verdict": "maybe",
    "reason": "a reason",
    "null": None,
    "observed": None,
    "null_range": None,
    "null_rate": None,
    "points": None,
}
CLAIMS_ENTRY = "iclmem.report.glue.read_glued_claims"
#: Mistakes in a chapter's glued claims, answered by :func:`iclmem.report.glue.read_glued_claims`.
CLAIMS_CASES: list[BadInput] = [
    BadInput(
        "claim-not-literal",
        "Read claims from a notebook whose glued record is cut off (not a Python literal).",
        CLAIMS_ENTRY,
        lambda d: read_glued_claims(tiny_glued(d, "{'id': 'C1', 'verdict': 'reproduced'")),
        ClaimError,
        r"glued 'claim-C1' is not a literal dict",
        r"re-execute the notebook that glued it",
    ),
    BadInput(
        "claim-fields",
        "Read claims from a notebook whose glued record lacks fields.",
        CLAIMS_ENTRY,
        lambda d: read_glued_claims(tiny_glued(d, "{'id': 'C1', 'verdict': 'reproduced'}")),
        ClaimError,
        r"has fields \['id', 'verdict'\], a claim record has",
        r"re-execute the chapter \(records come from "
        r"iclmem\.report\.glue\.glue_claim\)",
    ),
    BadInput(
        "claim-verdict",
        "Read claims from a notebook whose glued record has the verdict `maybe`.",
        CLAIMS_ENTRY,
        lambda d: read_glued_claims(tiny_glued(d, repr(record))),
        ClaimError,
        r"verdict 'maybe' is not one of",
        r"reproduced, differs, inconclusive, holds by construction, not comparable here, not testable here",
    ),
]


def claims_cases() -> list[BadInput]:
    """Mistakes in a chapter's glued claims, answered by :func:`iclmem.report.glue.read_glued_claims`."""
    return list(CLAIMS_CASES)


__all__ = ["CLAIMS_CASES", "claims_cases"]
