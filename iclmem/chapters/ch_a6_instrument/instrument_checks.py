"""Paper 1, Sec. 4.2 "Multiple-Choice Protocol" (the probe's construction): where the signal is lost (appendix A6).

The code follows Sec. 4.2 as written: members are scored on the labels they were trained on, among
all classes, with a base context C_base of |Y| copies of x_q. Two checks place the loss of the
signal between the training context C' and that construction:

* :func:`own_context_sanity`: fine-tune the members with their *own* multiple-choice contexts as
  training contexts, then probe them with the 48 manipulations. The probe then asks exactly what
  the model was trained on, so AUC(Delta S) must come out near 1; if it does not, the probing code
  has a defect. (A check that can fail: with no training step it gives 0.5.)
* :func:`context_ladder`: on a cached run, the calibrated loss attack
  ``-(L(M_theta, q | C) - L(M_ref, q | C))`` with the same queries and a ladder of contexts C from
  C' to the probe's: C' with its labels permuted; C' plus the query's MC rows; the MC rows plus k
  random C' rows (k = 32, 8, 2); the MC rows alone (the probe's baseline manipulation). Each rung
  for all queries and for the queries whose trained label differs from the true one. The rung
  where the AUC drops names the cause: the copies of x_q, the tiny context (a binary MC context
  has 2 rows; the model was pretrained on at least 16) or the missing C' labels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from iclmem.chapters.ch_a6_instrument.instrument import auc_interval
from iclmem.data import Dataset
from iclmem.ltm import ICLTask
from iclmem.probe.contexts import mc_context
from iclmem.probe.label_control import run_probe_tasks
from iclmem.probe.run import run_queries
from iclmem.probe.scoring import ProbeQuery, score_tasks
from iclmem.probe.settings import ProbeSettings
from iclmem.probe.theta_outputs import theta_outputs
from iclmem.stats.metrics import auc
from iclmem.training.finetune import FinetuneRun, RunData, prepare_run_data

#: The ladder's k (random C' rows added to the MC rows), largest first.
LADDER_KS: tuple[int, ...] = (32, 8, 2)
#: The checks' default probe: every query, 200 bootstrap draws, seed 0, all 48 manipulations.
CHECK_PROBE = ProbeSettings(n_boot=200)


def _mc_task(q: ProbeQuery, data: RunData, extra_x: np.ndarray | None = None, extra_y: np.ndarray | None = None):
    """The query's base MC context (Sec. 4.2), with ``extra`` rows of C' before it when given, as an ICLTask."""
    ctx = mc_context(q.x, q.y, q.candidates)
    cx, cy = ctx.context_x, ctx.context_y
    if extra_x is not None and len(extra_x):
        cx = np.vstack([np.asarray(extra_x, dtype=np.float32), cx])
        cy = np.concatenate([np.asarray(extra_y, dtype=cy.dtype), cy])
    return ICLTask(cx, cy, ctx.query_x, ctx.query_y, data.task, data.target_center, data.target_scale)


def ladder_tasks(
    data: RunData, queries: Sequence[ProbeQuery], seed: int = 0, ks: Sequence[int] = LADDER_KS
) -> dict[str, list[ICLTask]]:
    """Per rung, one task per query (in the order of ``queries``): see the module docstring."""
    rng = np.random.default_rng([seed, 0x1ADE])
    cx, cy = data.context_x, data.context_y
    permuted = cy[rng.permutation(len(cy))]
    rungs: dict[str, list[ICLTask]] = {
        "C'": [data.task_for(q.x[None, :], np.asarray([q.y])) for q in queries],
        "C' labels permuted": [data.task_for(q.x[None, :], np.asarray([q.y]), cx, permuted) for q in queries],
        "C' + MC rows": [_mc_task(q, data, cx, cy) for q in queries],
    }
    for k in ks:
        picks = [
            np.random.default_rng([seed, int(q.query_id), k]).choice(len(cy), min(k, len(cy)), False) for q in queries
        ]
        rungs[f"MC rows + {k} C' rows"] = [_mc_task(q, data, cx[p], cy[p]) for q, p in zip(queries, picks, strict=True)]
    rungs["MC rows alone"] = [_mc_task(q, data) for q in queries]
    return rungs


def context_ladder(
    run: FinetuneRun,
    table: Dataset,
    epoch: int,
    reference,
    probe: ProbeSettings = CHECK_PROBE,
    ks: Sequence[int] = LADDER_KS,
) -> pd.DataFrame:
    """The ladder on one run at ``epoch``: per rung, the calibrated loss attack's AUC with its interval, for all
    queries and for those whose trained label differs from the true one (columns ``... AUC``, ``... lo``, ``... hi``
    and ``n ...``); ``probe``: the candidates, seed and bootstrap draws (every query probed)."""
    n_candidates, seed, n_boot = probe.n_candidates, probe.seed, probe.n_boot
    data = prepare_run_data(run.manifest, table, run.config, reference.max_classes)
    queries = run_queries(data, table, run, n_candidates, seed, None, reference.max_classes)
    truth = table.target.to_numpy()
    changed = np.array([truth[q.query_id] != q.y for q in queries])
    member = np.array([q.is_member for q in queries])
    rows = []
    for rung, tasks in ladder_tasks(data, queries, seed, ks).items():
        theta = theta_outputs(run, epoch, reference, tasks, "score")["scores"]  # from the store or a bundle
        score = -(theta[:, 0] - score_tasks(reference, tasks)[:, 0])
        row: dict = {"context": rung, "rows": int(np.mean([len(t.context_y) for t in tasks]))}
        for name, keep in (("all queries", np.ones_like(member)), ("label changed", changed)):
            m, n = score[keep & member], score[keep & ~member]
            row[f"n {name}"] = f"{len(m)} + {len(n)}"
            if len(m) >= 2 and len(n) >= 2:
                out = auc_interval(m, n, n_boot, seed)
                row.update({f"{name} AUC": out["auc"], f"{name} lo": out["lo"], f"{name} hi": out["hi"]})
            else:
                row.update({f"{name} AUC": np.nan, f"{name} lo": np.nan, f"{name} hi": np.nan})
        rows.append(row)
    return pd.DataFrame(rows)


def pretraining_min_context(model: str) -> str:
    """The fewest context rows the named model's pretraining showed it, as the ladder's prose states it: from the
    shipped reference's model card (``reference``, ``reference-v1``), "not stated" for another architecture."""
    import json

    from iclmem.adapters import parse_model
    from iclmem.ltm.reference import reference_files, smallest_pretraining_context

    kind, version = parse_model(model)
    if kind != "reference":
        return f"a number {kind} does not state"
    card = json.loads(reference_files(version)[1].read_text())
    return str(smallest_pretraining_context(card))


def ladder_drop(ladder: pd.DataFrame, column: str = "all queries") -> str:
    """The first rung (from C' down) whose interval reaches 0.5, named for the page; "none" if every rung clears."""
    for row in ladder.to_dict("records"):
        if not row[f"{column} lo"] > 0.5:
            return row["context"]
    return "none"


def own_context_sanity(
    data: RunData,
    queries: Sequence[ProbeQuery],
    reference,
    learning_rate: float = 1e-3,
    epochs: int = 50,
    probe: ProbeSettings = CHECK_PROBE,
) -> dict[str, float]:
    """Fine-tune a copy of ``reference`` on the members' own MC contexts, then probe.

    One AdamW step per epoch on the batch of every member's base MC context (Sec. 4.2: |Y| copies of x_q, one per
    candidate) with its trained label as the query's target. Returns ``auc``, ``lo``, ``hi``: the probe's calibrated
    Delta S on the mean loss over ``probe.manipulations`` (all 48 by default), members against non-members (``probe``'s
    seed and bootstrap draws);
    ``baseline_auc``: the probe's baseline manipulation alone; ``direct_auc``: the same contexts built here, not by
    the probe (the training tasks, and the non-members' alike), scored directly; ``max_gap``: the largest difference
    between the two per query (0 up to float32 rounding unless the probe builds other contexts than it should).
    ``epochs = 0`` trains nothing (every AUC is then 0.5: the check can fail).
    """
    import torch

    seed, n_boot, manipulations = probe.seed, probe.n_boot, probe.manipulations
    torch.manual_seed(seed)
    model = reference.clone()
    train = [_mc_task(q, data) for q in queries if q.is_member]
    opt = torch.optim.AdamW(model.trainable_parameters(), lr=learning_rate, weight_decay=0.01)
    for _ in range(int(epochs)):
        opt.zero_grad()
        loss = torch.stack([p.loss().mean() for p in model.predict(train, grad=True)]).mean()
        loss.backward()
        opt.step()
    tasks, frame = run_probe_tasks(data, queries, manipulations, seed, reference)
    frame = frame.assign(delta=score_tasks(model, tasks)[:, 0] - score_tasks(reference, tasks)[:, 0])
    per_query = frame.groupby(["query_id", "is_member"]).delta.mean().reset_index()
    member = per_query.is_member.astype(bool).to_numpy()
    out = auc_interval(-per_query.delta[member].to_numpy(), -per_query.delta[~member].to_numpy(), n_boot, seed)
    direct = [_mc_task(q, data) for q in queries]
    own = -(score_tasks(model, direct)[:, 0] - score_tasks(reference, direct)[:, 0])
    is_member = np.array([q.is_member for q in queries])
    out["direct_auc"] = auc(own[is_member], own[~is_member])
    base = frame[frame.manipulation == "baseline"].set_index("query_id").delta
    if len(base):
        probed = -base.reindex([q.query_id for q in queries]).to_numpy()
        out["baseline_auc"] = auc(probed[is_member], probed[~is_member])
        out["max_gap"] = float(np.max(np.abs(probed - own)))
    return out


__all__ = ["LADDER_KS", "context_ladder", "ladder_drop", "ladder_tasks", "own_context_sanity"]
