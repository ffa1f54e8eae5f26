"""A bundle's draw is recomputed on the thread count its runs were computed with (one), whatever the process runs
on: a run near collapse amplifies the drift between thread counts past the check's tolerance (issue 55)."""

from __future__ import annotations

import torch

import iclmem.bundle.check as check
from iclmem.bundle.recheck import TOLERANCE, Draw


def test_a_draw_is_recomputed_on_one_thread_and_the_process_keeps_its_own(monkeypatch):
    seen = []
    monkeypatch.setattr(check, "recompute_task", lambda *a: seen.append(("sweep", torch.get_num_threads())) or "task")
    monkeypatch.setattr(check, "recompute", lambda *a: seen.append(("store", torch.get_num_threads())) or "run")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for source in ("sweep", "store"):
            draw = Draw("task", "table", "classification", 50, "single_task_fixed", 1e-3, 1, source)
            assert check._recompute(draw, "root", {}, {}, TOLERANCE, None) == ("task" if source == "sweep" else "run")
            assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(before)
    assert seen == [("sweep", check.CHECK_THREADS), ("store", check.CHECK_THREADS)] and check.CHECK_THREADS == 1
