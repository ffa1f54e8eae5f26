"""How many requests the paper's full grid takes, and how long at a measured rate.

Paper Sec. 4 ("Data", "Model"): 200 instances from the train split of each of four datasets (WNLI, RTE, TREC,
DBpedia), k in {0, 25, 50, 100, 200} (Fig. 1), three prompt settings for memorization (Sec. 3.3), classification
repeated three times and averaged, and GPT-4 judging each memorization completion (Sec. 3.2, App. A). That is
12,000 memorization, 12,000 classification and 12,000 judge requests: 36,000. :func:`paper_scale_hours` turns a
count into hours at a rate in requests per second (e.g. ``benchmarks/results/openai_concurrency.json``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: The paper's grid (Sec. 4).
PAPER_DATASETS: tuple[str, ...] = ("wnli", "rte", "trec", "dbpedia")
PAPER_INSTANCES = 200
PAPER_KS: tuple[int, ...] = (0, 25, 50, 100, 200)
PAPER_SETTINGS = 3
PAPER_REPEATS = 3


@dataclass(frozen=True)
class RequestCount:
    """Requests of a grid by kind; :attr:`total` is their sum."""

    memorization: int
    classification: int
    judge: int

    @property
    def total(self) -> int:
        return self.memorization + self.classification + self.judge


def _count(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return value


def paper_scale_requests(
    n_instances: int = PAPER_INSTANCES,
    n_datasets: int = len(PAPER_DATASETS),
    ks: Sequence[int] = PAPER_KS,
    n_settings: int = PAPER_SETTINGS,
    repeats: int = PAPER_REPEATS,
    judge: bool = True,
) -> RequestCount:
    """The requests of the grid: per dataset, instance and k, one memorization request per setting, ``repeats``
    classification requests, and (``judge``) one LLM-judge request per memorization completion. The defaults are the
    paper's (36,000 in all); ``judge=False`` for an offline judge."""
    n_ks = len(set(ks))
    cells = _count(n_instances, "n_instances") * _count(n_datasets, "n_datasets") * n_ks
    memorization = cells * _count(n_settings, "n_settings")
    return RequestCount(memorization, cells * _count(repeats, "repeats"), memorization if judge else 0)


def paper_scale_hours(requests: int | RequestCount, requests_per_second: float) -> float:
    """Hours to send ``requests`` (a count or a :class:`RequestCount`) at ``requests_per_second``."""
    n = requests.total if isinstance(requests, RequestCount) else _count(requests, "requests")
    if not requests_per_second > 0:
        raise ValueError(
            f"requests_per_second must be > 0, got {requests_per_second!r}; measure it with "
            "benchmarks/openai_concurrency.py"
        )
    return n / requests_per_second / 3600


__all__ = [
    "PAPER_DATASETS",
    "PAPER_INSTANCES",
    "PAPER_KS",
    "PAPER_REPEATS",
    "PAPER_SETTINGS",
    "RequestCount",
    "paper_scale_hours",
    "paper_scale_requests",
]
