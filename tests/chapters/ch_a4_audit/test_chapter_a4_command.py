"""Notebook A4's ``iclmem audit`` section (issue 56): the command run on a controlled run's checkpoint and files, as a
user runs it, on a tiny random-weight reference LTM (fast; the page runs the shipped one). Given the run's whole table
(``--table``) its AUC is the book's probe's (:func:`iclmem.probe.probe_run`, :func:`iclmem.probe.summarize_run`) on
the same run, exactly: the same float32 forward passes on the same inputs, so no tolerance is needed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from iclmem.chapters.ch_a4_audit import command_table, command_texts, report_frame, run_audit_command
from iclmem.data import deduplicate, load_dataset, split_manifest
from iclmem.ltm import LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.probe import probe_run, summarize_run
from iclmem.probe.settings import ProbeSettings
from iclmem.training.finetune import FinetuneConfig, finetune

torch.set_num_threads(1)


def test_the_command_on_a_runs_checkpoint_reports_and_glues(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=80), "b": rng.normal(size=80), "c": rng.choice(["x", "y"], 80)})
    frame["y"] = np.arange(80) % 2
    frame.to_csv(tmp_path / "t.csv", index=False)
    table = deduplicate(load_dataset(str(tmp_path / "t.csv"), target="y", task="classification"))
    torch.manual_seed(0)
    cfg = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)
    reference = ReferenceLTM(TabularICLTransformer(cfg).eval(), checkpoint_sha256="tiny-a4")
    base = reference.save(tmp_path / "base.pt")
    manifest = split_manifest(table, 12, 0, results_dir=tmp_path / "results")
    config = FinetuneConfig(1e-2, epochs=2, probe_epochs=(0, 2), context_size=16)
    run = finetune(manifest, table, config, reference, tmp_path / "results", progress=False)
    scores = probe_run(
        run,
        table,
        reference,
        ProbeSettings(max_queries=12, epochs=(2,)),
        results_dir=tmp_path / "results",
        progress=False,
    )
    summary = summarize_run(scores, run, n_boot=20).assign(run_key=run.key)  # the chain's attack (notebooks 03-04)
    command = run_audit_command(
        run, reference, table, f"reference:{base}", max_queries=12, n_boot=20, n_permutations=20
    )
    assert command.status in (0, 1, 3) and command.result["verdict"]["exit_status"] == command.status
    assert command.command.startswith("iclmem audit --model reference:<folder>/theta.pt --base reference:")
    assert "report: <folder>/report/audit.html" in command.summary
    assert command.result["attack"]["n_members"] == 12 and command.result["control"]["n_members"] == 6
    assert "<!DOCTYPE html>" in command.html and "srcdoc=" in report_frame(command.html)
    texts = command_texts(command, summary, run)
    assert texts["audit_verdict"] == command.result["verdict"]["word"] and texts["audit_percentile"] == "99th"
    assert "positive control" in texts["audit_control_sentence"]
    shown = command_table(command, summary, run)
    assert list(shown.columns) == ["", "chain (02-04), epoch 2", "iclmem audit"]
    chain = summary[summary.epoch == 2].iloc[0]
    assert command.result["attack"]["auc"] == chain.auc_loss and command.result["encoding"]["lower_bound"] is False
    assert shown.iloc[1, 1] == shown.iloc[1, 2]  # the page's row: the same AUC and interval
    assert texts["audit_chain_sentence"].startswith("With the run's whole table")
