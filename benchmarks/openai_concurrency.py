"""Benchmark: requests per second of the OpenAI-compatible backend, one request in flight vs a window (issue 28).

A loopback OpenAI-compatible server (:class:`iclmem.llm.server.EchoServer`: stdlib ``ThreadingHTTPServer`` in a
thread, no model) answers every ``/v1/chat/completions`` request after a fixed ``--delay`` (a remote API's latency).
The same ``--requests`` requests go through the real :class:`~iclmem.llm.backends.OpenAIBackend` and its
:class:`~iclmem.llm.cache.CachedBackend` (each completion written to a fresh disk cache as it arrives), at each
``--concurrency`` in one run. The ideal ratio is the concurrency itself (the server's latency does not grow with
the requests in flight); what is below it is the client's own cost per request. Also reported: the paper's grid
(:func:`iclmem.llm.plan.paper_scale_requests`) in hours at each measured rate, for this latency.
Writes ``benchmarks/results/openai_concurrency.json``.

    python benchmarks/openai_concurrency.py [--requests 64] [--delay 0.2] [--concurrency 1 8]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from iclmem.llm.backends import OpenAIBackend
from iclmem.llm.cache import CachedBackend
from iclmem.llm.chat import ChatRequest, Decoding
from iclmem.llm.plan import paper_scale_hours, paper_scale_requests
from iclmem.llm.server import EchoServer
from iclmem.store.atomic import atomic_write_text


def measure(base_url: str, requests: list[ChatRequest], concurrency: int) -> dict:
    """Send ``requests`` at ``concurrency`` through a fresh cache; wall time, rate and checks of the results."""
    with tempfile.TemporaryDirectory() as root:
        backend = OpenAIBackend(
            model="echo", base_url=base_url, api_key="sk-local", concurrency=concurrency, retries=0, timeout=30
        )
        cached = CachedBackend(backend, root=root)
        t0 = time.perf_counter()
        out = cached.complete_batch(requests)
        wall = time.perf_counter() - t0
        records = sum(1 for _ in Path(root).rglob("*.json"))
    return {
        "concurrency": concurrency,
        "requests": len(requests),
        "wall_s": wall,
        "requests_per_s": len(requests) / wall,
        "all_ok": all(c.ok for c in out),
        "in_request_order": [c.text for c in out] == [r.messages[-1][1] for r in requests],
        "cached_records": records,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the server takes per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--out", default="benchmarks/results/openai_concurrency.json")
    args = parser.parse_args()

    requests = [
        ChatRequest.user(f"instance {i}: the first segment of a dataset row", Decoding(8)) for i in range(args.requests)
    ]
    rows = []
    with EchoServer(delay=args.delay) as server:
        measure(server.base_url, requests[:2], 1)  # warm-up: imports, the first connection
        for concurrency in args.concurrency:
            server.max_in_flight = 0
            row = measure(server.base_url, requests, concurrency)
            rows.append({**row, "server_max_in_flight": server.max_in_flight})
    paper = paper_scale_requests()
    for row in rows:
        row["paper_scale_hours"] = paper_scale_hours(paper, row["requests_per_s"])
    base, best = rows[0], rows[-1]
    result = {
        "server_delay_s": args.delay,
        "requests": args.requests,
        "cpus": os.cpu_count(),
        "paper_scale_requests": paper.total,
        "rows": rows,
        "ratio": best["requests_per_s"] / base["requests_per_s"],
        "ratio_of": f"concurrency {best['concurrency']} over {base['concurrency']}",
        "ideal_ratio": best["concurrency"] / base["concurrency"],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
