"""Both papers' claims C1-C16 (IclMem) and D1-D9 (Golchin et al.): one claim's record, checked once (notebook 00 and
every chapter that records a claim).

The record's fields (:data:`RECORD_FIELDS`), its verdict words (:data:`VERDICTS`), its numeric points
(:data:`POINT_KEYS`) and the one shape every chapter returns, :class:`ClaimResult`, whose :meth:`~ClaimResult.record`
is what :func:`claim_record` and :func:`record_from` return. What the verdicts and null fields mean is the contract
of :mod:`iclmem.report.glue`, which re-exports everything here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from iclmem.report.registry import comparison
from iclmem.user_errors import UserError


class PlainText(str):
    """A string that displays without quotes (myst-nb ``{glue:text}`` shows the text/plain repr)."""

    def __repr__(self) -> str:
        return str.__str__(self)

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython's pretty printer
        p.text(str.__str__(self))


VERDICTS: tuple[str, ...] = (
    "reproduced",
    "differs",
    "inconclusive",
    "holds by construction",
    "not comparable here",
    "not testable here",
)
#: The record's fields, in the order the scorecard shows them.
RECORD_FIELDS: tuple[str, ...] = (
    "id",
    "paper",
    "ours",
    "interval",
    "verdict",
    "reason",
    "null",
    "observed",
    "null_range",
    "null_rate",
    "null_draws",
    "points",
)
# : The keys of one numeric point of a record (the scorecard's figure): the paper's value and this build's with its
# interval.
POINT_KEYS: tuple[str, ...] = ("label", "paper", "build", "lo", "hi")
#: The largest null "reproduce" rate a reproduced claim may have (equals :data:`iclmem.stats.permutation.NULL_LEVEL`).
MAX_NULL_RATE = 0.05


class ClaimError(UserError, ValueError):
    """A claim record is malformed: the message names the field and the fix."""


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def _points(claim_id: str, points: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    if points is None:
        return None
    out = []
    for point in points:
        if set(point) != set(POINT_KEYS):
            raise ClaimError(f"claim {claim_id}: a point has keys {sorted(point)}, it needs {list(POINT_KEYS)}.")
        out.append({"label": str(point["label"]), **{k: float(point[k]) for k in POINT_KEYS[1:]}})
    return out


@dataclass(frozen=True)
class ClaimResult:
    """One claim's result, the one shape every chapter returns (its :meth:`record` is what :func:`glue_claim` stores).

    Checked once, here: the verdict is one of :data:`VERDICTS`, the id and reason are non-empty, ``null_rate`` lies
    in [0, 1], and a ``reproduced`` verdict states its null (``null``: what the evidence assumes exchangeable, or
    why no null applies) and has a null rate of at most :data:`MAX_NULL_RATE`. ``observed``: the statistic the
    rule reads; ``null_range``: its central 95% under the null; ``points``: values for the scorecard's figure.
    """

    claim_id: str
    paper: str
    ours: str
    verdict: str
    reason: str
    interval: str | None = None
    null: str | None = None
    observed: str | None = None
    null_range: str | None = None
    null_rate: float | None = None
    points: tuple[Mapping[str, Any], ...] | None = None
    null_draws: int | None = None

    def __post_init__(self) -> None:
        claim_id, verdict, null = self.claim_id, self.verdict, self.null
        how, why = comparison(str(claim_id))
        if how == "not comparable" and verdict in ("reproduced", "differs", "inconclusive"):
            # the registry's declaration decides, once for every chapter: the value rule's answer stays in the reason
            object.__setattr__(
                self,
                "reason",
                f"not comparable here: {why}. The rule on the paper's value reads {verdict}: {self.reason}",
            )
            object.__setattr__(self, "verdict", "not comparable here")
            verdict = "not comparable here"
        if verdict not in VERDICTS:
            raise ClaimError(f"claim {claim_id}: verdict {verdict!r} is not one of {', '.join(VERDICTS)}.")
        if not str(claim_id).strip() or not str(self.reason).strip():
            raise ClaimError(f"claim {claim_id!r}: the id and the reason must be non-empty.")
        rate = None if self.null_rate is None else float(self.null_rate)
        if rate is not None and not 0.0 <= rate <= 1.0:
            raise ClaimError(f"claim {claim_id}: null_rate {rate} is not a share in [0, 1].")
        if verdict == "reproduced":
            if not null or not str(null).strip():
                raise ClaimError(
                    f"claim {claim_id}: a reproduced verdict needs its null (what the evidence assumes exchangeable, "
                    "or why no null applies); pass null=..."
                )
            if rate is not None and rate > MAX_NULL_RATE + 1e-12:
                raise ClaimError(
                    f"claim {claim_id}: the rule says 'reproduced' in {rate:.0%} of null draws "
                    f"(> {MAX_NULL_RATE:.0%}): chance alone gives that verdict; call it 'inconclusive' "
                    "(iclmem.report.verdicts.evidence_verdict)."
                )
        if self.null_draws is not None and (int(self.null_draws) != self.null_draws or self.null_draws < 1):
            raise ClaimError(f"claim {claim_id}: null_draws {self.null_draws!r} is not a positive count of draws.")
        object.__setattr__(self, "null_rate", rate)
        object.__setattr__(self, "null_draws", None if self.null_draws is None else int(self.null_draws))
        object.__setattr__(self, "points", None if self.points is None else tuple(_points(claim_id, self.points)))

    def record(self) -> dict[str, Any]:
        """The plain dict that is glued, tabled and read back by the scorecard."""
        return {
            "id": str(self.claim_id),
            "paper": str(self.paper),
            "ours": str(self.ours),
            "interval": _optional_text(self.interval),
            "verdict": self.verdict,
            "reason": str(self.reason),
            "null": _optional_text(self.null),
            "observed": _optional_text(self.observed),
            "null_range": _optional_text(self.null_range),
            "null_rate": self.null_rate,
            "null_draws": self.null_draws,
            "points": None if self.points is None else [dict(p) for p in self.points],
        }


def claim_record(
    claim_id: str,
    paper: str,
    ours: str,
    verdict: str,
    reason: str,
    interval: str | None = None,
    *,
    null: str | None = None,
    observed: str | None = None,
    null_range: str | None = None,
    null_rate: float | None = None,
    points: Iterable[Mapping[str, Any]] | None = None,
    null_draws: int | None = None,
) -> dict[str, Any]:
    """The record of a :class:`ClaimResult` with these fields (checked there)."""
    return ClaimResult(
        claim_id,
        paper,
        ours,
        verdict,
        reason,
        interval,
        null,
        observed,
        null_range,
        null_rate,
        None if points is None else tuple(points),
        null_draws,
    ).record()


def record_from(fields: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`claim_record` from a mapping with the record's fields (``interval`` and the null fields optional)."""
    return claim_record(
        fields["id"],
        fields["paper"],
        fields["ours"],
        fields["verdict"],
        fields["reason"],
        fields.get("interval"),
        null=fields.get("null"),
        observed=fields.get("observed"),
        null_range=fields.get("null_range"),
        null_rate=fields.get("null_rate"),
        points=fields.get("points"),
        null_draws=fields.get("null_draws"),
    )
