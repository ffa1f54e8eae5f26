"""Checking a store's bundle (:mod:`iclmem.bundle.store_runs`): one draw is one run at one probed epoch (issue 55).

As for a design's task (:mod:`iclmem.bundle.recheck`), the drawn run is trained again from M_ref up to the drawn
epoch, from the split and configuration its bundle item keeps (``run.json.gz``), and M_ref and M_theta at that
epoch are probed again on a seeded subset of its queries (:func:`iclmem.bundle.sampling.recheck_queries`) under the
probe parameters its entry names. The training losses, the vanilla metrics and every recomputed score are compared
with the bundle's under the same tolerance. Strata: task kind x Q x plain or DP x trained or not.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from ..data import SplitManifest
from ..llm.backends import InProcessBackend
from ..llm.chat import ChatRequest, Decoding
from ..llm.pipeline import make_generator
from ..ltm import ReferenceLTM
from ..probe import probe_run
from ..probe.run import probe_params, reference_owner
from ..probe.settings import ProbeSettings
from ..store.keys import input_key
from . import completions, serve
from .layout import Bundle, read_bundle
from .recheck import Draw, Landing, Tolerance, _bundled_scores, _compare_run, _compare_scores, _table, train_single
from .sampling import last_recomputable_epoch, recheck_queries
from .store_runs import RUN_FILE, STORE_SOURCE, config_from_dict

#: A draw of a chapter-06 completion (:mod:`iclmem.bundle.completions`).
COMPLETION = "completion"


def store_draws(bundle: Bundle) -> list[Draw]:
    """Every (run, probed epoch) of a store's bundle that another machine can recompute
    (:func:`iclmem.bundle.sampling.last_recomputable_epoch`)."""
    out = completion_draws(bundle)
    for key, entry in sorted(bundle.items.items()):
        if entry["kind"] != "finetune" or entry.get("source") != STORE_SOURCE:
            continue
        last = last_recomputable_epoch(float(entry["learning_rate"]), False)
        for epoch in (e for e in entry["epochs"] if last is None or e <= last):
            out.append(
                Draw(key.split("/", 1)[1], entry["dataset"], entry["task"], int(entry["query_size"]), entry["regime"],
                     float(entry["learning_rate"]), int(epoch), STORE_SOURCE)
            )  # fmt: skip
    return out


def completion_draws(bundle: Bundle) -> list[Draw]:
    """Every chapter-06 completion of the bundle a check may decode again (:mod:`iclmem.bundle.completions`)."""
    return [
        Draw(f"{item}:{key}", "llm", "completion", 0, "inprocess", 0.0, 0, COMPLETION)
        for item, key in completions.completion_draws(bundle)
    ]


@lru_cache(maxsize=1)
def _generator() -> InProcessBackend:
    return make_generator("inprocess", batch_size=1)


def recompute_completion(bundle: Bundle, item: str, key: str) -> str:
    """The drawn completion decoded again by the in-process model: a problem, or '' when its text is the bundle's,
    exactly (greedy decoding)."""
    record = completions.bundled_records(bundle, item)[key]
    decoding = record["decoding"]
    request = ChatRequest(
        tuple((m["role"], m["content"]) for m in record["messages"]),
        Decoding(decoding["max_new_tokens"], tuple(decoding["stop"]), decoding["temperature"]),
        record["repeat"],
    )
    [done] = _generator().complete_batch([request])
    return "" if done.text == record["text"] else f"completion text {done.text!r}, bundled {record['text']!r}"


def recompute(draw: Draw, root: str, tol: Tolerance, reference: ReferenceLTM) -> Landing:
    """A store bundle's draw recomputed: a run (:func:`recompute_run`) or a completion, decoded again."""
    if draw.source != COMPLETION:
        return recompute_run(draw, root, tol, reference)
    started, landing = time.perf_counter(), Landing(draw)
    item, key = draw.task.split(":", 1)
    landing.problem = recompute_completion(read_bundle(root), item, key)
    landing.excess["completion text"], landing.max_abs["completion text"] = 0.0, 0.0
    landing.seconds = round(time.perf_counter() - started, 2)
    return landing


def _queries(max_queries: int | None) -> int:
    """The queries a draw probes again: a seeded subset when the bundle probed every query (the subset's scores are
    the full probe's), else the bundle's own cap (a smaller seeded subset would not be one of the bundle's)."""
    return recheck_queries(None) if max_queries is None else int(max_queries)


def recompute_run(draw: Draw, root: str, tol: Tolerance, reference: ReferenceLTM) -> Landing:
    """Train the drawn run to its epoch in a temporary store, probe it again, compare with the bundle."""
    started, bundle = time.perf_counter(), read_bundle(root)
    entry = bundle.items[f"finetune/{draw.task}"]
    stored = json.loads(gzip.decompress((bundle.item_dir("finetune", draw.task) / RUN_FILE).read_bytes()))
    manifest, config = SplitManifest.from_dict(stored["manifest"]), config_from_dict(stored["config"])
    table = _table(manifest.dataset, bundle.manifest.get("sources", {}))
    probe, landing = entry["probe"], Landing(draw)
    settings = ProbeSettings(
        n_candidates=probe["n_candidates"], max_queries=_queries(probe["max_queries"]), epochs=(draw.epoch,),
        seed=probe["seed"], manipulations=tuple(probe["manipulations"]),
    )  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="iclmem-recheck-"))
    try:
        with serve.bundles_off():
            run = train_single(manifest, table, config, draw.epoch, reference, work)
            scores = probe_run(run, table, reference, settings, results_dir=work, progress=False)
        if run.input_key != draw.task:
            landing.problem = "this code keys the run otherwise (its input key differs from the bundle's)"
            return landing
        _compare_run(landing, bundle, run, draw.epoch, tol)
        params = probe_params(probe["n_candidates"], probe["manipulations"], probe["seed"], probe["max_queries"])
        for name, which in (("M_ref", "ref"), ("M_theta", f"theta-{draw.epoch}")):
            owner = reference_owner(run) if which == "ref" else run.input_key
            bundled = _bundled_scores(bundle, input_key(owner, which, params, reference.store_identity), "", which)
            model, epoch = ("ref", -1) if which == "ref" else ("theta", draw.epoch)
            _compare_scores(landing, name, scores[(scores.model == model) & (scores.epoch == epoch)], bundled, tol)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    landing.seconds = round(time.perf_counter() - started, 2)
    return landing


__all__ = ["COMPLETION", "completion_draws", "recompute", "recompute_completion", "recompute_run", "store_draws"]
