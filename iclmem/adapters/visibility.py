"""Does the query reach the model? Which of the 48 manipulations a preprocessing leaves blind to x_q (Sec. 4.2, App.
A.3).

A multiple-choice context is |Y| copies of the query's features; a context-fitted step (constant
removal, standard scaling) maps them to a constant, so the prediction can depend on the query's
true label (through the candidate slots) but never on its features. :func:`query_visibility`
measures it directly: for every manipulation, the largest spread of the probe loss among queries
with the same true label. A spread of (numerically) zero means the model cannot tell those
queries apart: the probe is blind to x_q under that manipulation, whatever the weights.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..probe.scoring import ProbeQuery, probe_scores

#: Below this loss spread (nats) the queries of one label are indistinguishable (float32 rounding is ~1e-7).
BLIND_SPREAD = 1e-5


def visibility_queries(n_queries: int = 12, n_features: int = 6, seed: int = 0) -> list[ProbeQuery]:
    """Binary probe queries with random standardized features, labels alternating 0/1."""
    rng = np.random.default_rng(seed)
    return [
        ProbeQuery(
            i, rng.normal(size=n_features).astype(np.float32), int(i % 2), bool(i < n_queries // 2), np.array([0, 1])
        )
        for i in range(n_queries)
    ]


def query_visibility(model, queries: list[ProbeQuery] | None = None, seed: int = 0) -> pd.DataFrame:
    """One row per manipulation: ``spread`` (max over labels of the loss range across queries) and ``blind``."""
    queries = queries or visibility_queries(seed=seed)
    scores = probe_scores(model, queries, seed=seed)
    scores["label"] = scores.query_id.map({q.query_id: q.y for q in queries})
    spread = scores.groupby(["manipulation", "label"], sort=False).loss.agg(lambda v: float(v.max() - v.min()))
    out = spread.groupby(level="manipulation", sort=False).max().rename("spread").reset_index()
    out["blind"] = out.spread < BLIND_SPREAD
    return out


__all__ = ["BLIND_SPREAD", "query_visibility", "visibility_queries"]
