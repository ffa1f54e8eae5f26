"""The paper-scale request count and its hours at a rate (iclmem/llm/plan.py), against a grid built and counted
request by request with the replication's own request builders."""

from __future__ import annotations

import pytest

from iclmem.llm.plan import RequestCount, paper_scale_hours, paper_scale_requests
from iclmem.llm.replication import ReplicationConfig, all_requests, build_experiment, memorization_requests


def test_the_papers_grid_is_36000_requests_a_third_each():
    count = paper_scale_requests()
    assert (count.memorization, count.classification, count.judge) == (12_000, 12_000, 12_000)
    assert count.total == 36_000 == 200 * 4 * 5 * (3 + 3 + 3)
    assert paper_scale_requests(judge=False).total == 24_000
    assert paper_scale_requests(ks=(0, 25, 25)).memorization == 200 * 4 * 2 * 3  # a k listed twice runs once


def test_the_count_matches_the_requests_a_run_builds():
    config = ReplicationConfig(n_instances=4, n_demonstrations=6, ks=(0, 3, 6), repeats=2, seed=1)
    exp = build_experiment(config)
    count = paper_scale_requests(
        n_instances=4, n_datasets=1, ks=config.ks, n_settings=len(config.settings), repeats=config.repeats
    )
    assert count.memorization == len(memorization_requests(exp, config.ks))
    assert count.memorization + count.classification == len(all_requests(exp, config.ks))
    assert count.judge == count.memorization


def test_hours_at_a_rate():
    assert paper_scale_hours(36_000, 0.5) == pytest.approx(20.0)  # one by one at 2 s per request: the 20 h
    assert paper_scale_hours(paper_scale_requests(), 4.0) == pytest.approx(2.5)
    assert paper_scale_hours(RequestCount(1, 2, 3), 6 / 3600) == pytest.approx(1.0)
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="requests_per_second"):
            paper_scale_hours(10, bad)
    with pytest.raises(ValueError, match="n_instances"):
        paper_scale_requests(n_instances=-1)
    with pytest.raises(ValueError, match="requests"):
        paper_scale_hours(-5, 1.0)
