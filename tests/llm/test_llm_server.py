"""The OpenAI-compatible backend against a real server on loopback (`transformers serve` on the converted
SmolLM2 folder, not a mock): greedy outputs of both backends agree."""

from __future__ import annotations

import pytest
import torch

from iclmem.llm.backends import InProcessBackend, OpenAIBackend
from iclmem.llm.cache import CachedBackend
from iclmem.llm.model import ensure_model_dir
from iclmem.llm.replication import ReplicationConfig, build_experiment
from iclmem.llm.server import LoopbackServer, ServerError


@pytest.mark.slow
def test_openai_backend_against_loopback_transformers_serve(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "local")  # the server ignores it; the backend requires one
    exp = build_experiment(
        ReplicationConfig(
            n_instances=2, n_demonstrations=2, ks=(0, 2), max_new_tokens=12, performance_max_new_tokens=4, seed=2
        )
    )
    reqs = (
        exp.memorization_requests("full", 2)[:1]
        + exp.memorization_requests("pairs_only", 2)[1:]
        + exp.performance_requests(2)[:1]
    )
    with LoopbackServer(ensure_model_dir(), threads=1, startup_timeout=300) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        remote = CachedBackend(
            OpenAIBackend(model=server.model_name, base_url=server.base_url, timeout=120, retries=1), root=tmp_path
        )
        served = remote.complete_batch(reqs)
    assert all(c.ok for c in served), [c.error for c in served]
    local = InProcessBackend(batch_size=4)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    here = local.complete_batch(reqs)
    assert [c.text for c in served] == [c.text for c in here]
    assert any(c.text for c in here)
    assert remote.backend.calls == len(reqs)
    assert [c.text for c in remote.complete_batch(reqs)] == [c.text for c in served]  # cached: no server needed
    assert remote.backend.calls == len(reqs)


@pytest.mark.slow
def test_server_that_cannot_start_is_reported_within_the_bounded_wait(tmp_path):
    (tmp_path / "config.json").write_text("{}")  # not a model folder
    with pytest.raises(ServerError):
        with LoopbackServer(tmp_path, startup_timeout=60):
            pass
