"""Appendix A3 (no paper section): bad fine-tuning configurations, probes, regimes, predictions and checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
    tiny_checkpoint,
    tiny_config,
    tiny_csv,
    tiny_environ,
    tiny_frame,
    tiny_manifest,
    tiny_reference,
    tiny_run,
    tiny_table,
    tiny_task,
)
from iclmem.ltm import CheckpointError, LTMInputError, load_checkpoint
from iclmem.probe import ProbeError, get_manipulation, probe_run, resolve_manipulations
from iclmem.probe.settings import ProbeSettings
from iclmem.runtime.device import DeviceError
from iclmem.training.finetune import FinetuneError, finetune
from iclmem.training.grid import GridAxes, RunSpec, expand_grid, probe_grid, run_spec
from iclmem.training.regimes import RegimeError, train_joint


def tune(folder: Path, classes: int = 2, n: int = 80, **changes) -> object:
    table = tiny_table(folder, n, classes)
    return finetune(
        tiny_manifest(folder, table),
        table,
        tiny_config(**changes),
        tiny_reference(),
        folder / "results",
        progress=False,
    )


def joint(folder: Path, regime: str, tables: int = 1, label_condition: str = "none") -> object:
    table = tiny_table(folder)
    return train_joint(
        [tiny_manifest(folder, table, label_condition=label_condition)],
        [table] * tables,
        tiny_config(),
        regime,
        tiny_reference(),
        folder / "results",
        progress=False,
    )


def probe_grid_case(folder: Path) -> object:
    table, run, reference = tiny_run(folder)
    spec = RunSpec(run.manifest.dataset, 1e-3, 10, epochs=1)
    return probe_grid([spec], [run], reference, ProbeSettings(epochs=(5,)), progress=False)


def probe_other_reference(folder: Path) -> object:
    table, run, _ = tiny_run(folder)
    return probe_run(run, table, reference=tiny_reference("another-model"), progress=False)


def probe_no_manipulations(folder: Path) -> object:
    table, run, reference = tiny_run(folder)
    return probe_run(run, table, reference, ProbeSettings(manipulations=()), progress=False)


def predict(task) -> object:
    return tiny_reference().predict([task])


def tune_frame(folder: Path, frame, task: str = "classification", query_size: int = 10, **changes) -> object:
    """Fine-tune on ``frame`` (target ``y``); regression needs Q > 20 to pass split validation."""
    from iclmem.data import deduplicate, load_dataset

    table = deduplicate(load_dataset(tiny_csv(folder, frame), target="y", task=task))
    manifest = tiny_manifest(folder, table, query_size)
    return table, finetune(manifest, table, tiny_config(**changes), tiny_reference(), folder / "results", False)


def probe_few_values(folder: Path) -> object:
    table, run = tune_frame(folder, tiny_frame().assign(y=lambda f: (f.index % 5) * 1.5), "regression", 21)
    return probe_run(run, table, tiny_reference(), ProbeSettings(n_candidates=10), progress=False)


def card(folder: Path) -> object:
    (folder / "tiny.json").write_text(json.dumps({"sha256": "0" * 64}))
    return load_checkpoint(tiny_checkpoint(folder), folder / "tiny.json")


ft, grid, probe, ltm = "iclmem.training.finetune.finetune", "iclmem.training.grid", "iclmem.probe", "iclmem.ltm"


def load_on(device: str, folder: Path) -> object:
    """Load a tiny checkpoint with ``$ICLMEM_DEVICE`` set to ``device``."""
    from iclmem.ltm import load_checkpoint

    with tiny_environ(ICLMEM_DEVICE=device):
        return load_checkpoint(tiny_checkpoint(folder))


#: Mistakes in fine-tuning, probing, prediction and checkpoints, in catalogue order.
MODEL_CASES: list[BadInput] = [
    BadInput(
        "learning-rate-zero",
        "Fine-tuned with learning_rate=0.",
        ft,
        lambda d: tune(d, learning_rate=0.0),
        FinetuneError,
        r"learning_rate must be positive, got 0\.0",
        r"the paper uses \(0\.1, 0\.01, 0\.001, 0\.0001\)",
    ),
    BadInput(
        "epochs-negative",
        "Fine-tuned with epochs=-1.",
        ft,
        lambda d: tune(d, epochs=-1, probe_epochs=()),
        FinetuneError,
        r"epochs must be >= 0, got -1",
        r"use 0 \(M_ref only\) or the number of AdamW steps",
    ),
    BadInput(
        "context-over-model",
        "Asked for a 1000-row training context from a model that takes 64.",
        ft,
        lambda d: tune(d, context_size=1000),
        FinetuneError,
        r"context_size 1000 is outside 1\.\.64",
        r"use at most 64 rows",
    ),
    BadInput(
        "probe-epochs-beyond-epochs",
        "Fine-tuned for 5 epochs, keeping the paper's probing epochs up to 500.",
        ft,
        lambda d: tune(d, epochs=5, probe_epochs=(0, 1, 2, 5, 10, 50)),
        FinetuneError,
        r"probe epochs \[10, 50\] lie outside 0\.\.5",
        r"raise epochs or drop them \(e\.g\. probe_epochs_up_to\(5\)\)",
    ),
    BadInput(
        "more-classes-than-model",
        "Fine-tuned on a classification target with 12 classes.",
        ft,
        lambda d: tune(d, classes=12, n=120),
        FinetuneError,
        r"has 12 classes; the model takes at most max_classes=10",
        r"treat it as regression \(set task: regression",
    ),
    BadInput(
        "grid-axis-empty",
        "Expanded a grid with no learning rates.",
        f"{grid}.expand_grid",
        lambda d: expand_grid(GridAxes(["wine_pl"], [], [50], ["none"]), 10),
        ValueError,
        r"grid axis 'learning_rates' is empty",
        r"give at least one value",
    ),
    BadInput(
        "grid-joined-name",
        "Named a dataset `a+b` in a grid with a multi-task regime.",
        f"{grid}.expand_grid",
        lambda d: expand_grid(GridAxes(["a+b", "c"], [1e-3], [50], ["none"], ["multi_task_fixed"]), 10),
        ValueError,
        r"dataset names \['a\+b'\] contain '\+'",
        r"rename them",
    ),
    BadInput(
        "regime-unknown",
        "Ran a RunSpec with regime `multitask`.",
        f"{grid}.run_spec",
        lambda d: run_spec(RunSpec("wine_pl", 1e-3, 50, regime="multitask")),
        RegimeError,
        r"unknown regime 'multitask'",
        r"use one of single_task_fixed, multi_task_fixed, multi_task_random",
    ),
    BadInput(
        "epochs-not-kept",
        "Probed a 1-epoch run at epoch 5, which it did not keep.",
        f"{grid}.probe_grid",
        probe_grid_case,
        ProbeError,
        r"probing epochs \[5\] were kept by none of the runs \(kept: \[0, 1\]\)",
        r"choose epochs among those",
    ),
    BadInput(
        "epochs-not-kept-probe-run",
        "Probed a 1-epoch run directly at epoch 5.",
        "iclmem.probe.probe_run",
        lambda d: (lambda t, r, ref: probe_run(r, t, ref, ProbeSettings(epochs=(5,)), progress=False))(*tiny_run(d)),
        ProbeError,
        r"epochs \[5\] were not kept by the run; kept: \[0, 1\]",
        r"Probe those epochs, or fine-tune with more epochs",
    ),
    BadInput(
        "model-epoch-not-kept",
        "Asked a 1-epoch run for its model at epoch 5.",
        "iclmem.training.finetune.FinetuneRun.model",
        lambda d: (lambda t, r, ref: r.model(5, ref))(*tiny_run(d)),
        FinetuneError,
        r"epoch 5 was not kept; kept epochs: \(0, 1\)",
        r"fine-tune again with it among probe_epochs",
    ),
    BadInput(
        "joint-single-task",
        "Called train_joint with the single-task regime.",
        "iclmem.training.regimes.train_joint",
        lambda d: joint(d, "single_task_fixed"),
        RegimeError,
        r"'single_task_fixed' is iclmem\.training\.finetune\.finetune",
        r"train_joint runs the multi-task regimes",
    ),
    BadInput(
        "joint-tables-mismatch",
        "Gave train_joint one manifest and two tables.",
        "iclmem.training.regimes.train_joint",
        lambda d: joint(d, "multi_task_fixed", tables=2),
        RegimeError,
        r"got 1 manifests and 2 tables",
        r"give one table per manifest",
    ),
    BadInput(
        "joint-random-pairs-randomized",
        "Ran random pairs on a manifest with randomized member labels.",
        "iclmem.training.regimes.train_joint",
        lambda d: joint(d, "multi_task_random", label_condition="members"),
        RegimeError,
        r"have label_condition != 'none'",
        r"use label_condition 'none'",
    ),
    BadInput(
        "manipulation-unknown",
        "Asked for the manipulation `shuffle_frist`.",
        f"{probe}.get_manipulation",
        lambda d: get_manipulation("shuffle_frist"),
        ProbeError,
        r"unknown manipulation 'shuffle_frist'",
        r"valid names: baseline, .*shuffle_first",
    ),
    BadInput(
        "manipulation-twice",
        "Listed the manipulation `baseline` twice.",
        f"{probe}.resolve_manipulations",
        lambda d: resolve_manipulations(["baseline", "baseline"]),
        ProbeError,
        r"\['baseline'\] are given twice",
        r"pass each once",
    ),
    BadInput(
        "manipulations-empty",
        "Probed a run with an empty list of manipulations.",
        f"{probe}.probe_run",
        probe_no_manipulations,
        ProbeError,
        r"no manipulations given",
        r"pass None for the full suite of 48",
    ),
    BadInput(
        "probe-other-reference",
        "Probed a run with another M_ref than the one it was fine-tuned from.",
        f"{probe}.probe_run",
        probe_other_reference,
        ProbeError,
        r"was fine-tuned from reference tiny-bad-inp\.\.\., not another-mode\.\.\.",
        r"probe it with the same M_ref it started from",
    ),
    BadInput(
        "more-features-than-model",
        "Predicted with 40 feature columns on a model that takes 32.",
        f"{ltm}.ReferenceLTM.predict",
        lambda d: predict(tiny_task(features=40)),
        LTMInputError,
        r"40 features exceed the model's 32",
        r"subsample them with iclmem\.ltm\.encoding\.subsample_features",
    ),
    BadInput(
        "more-context-than-model",
        "Predicted with a 100-row context on a model that takes 64.",
        f"{ltm}.ReferenceLTM.predict",
        lambda d: predict(tiny_task(context_rows=100)),
        LTMInputError,
        r"context has 100 rows, more than the model's 64",
        r"draw a smaller context",
    ),
    BadInput(
        "more-classes-in-context",
        "Predicted with 12 classes in the context.",
        f"{ltm}.ReferenceLTM.predict",
        lambda d: predict(tiny_task(context_rows=24, classes=12)),
        LTMInputError,
        r"holds 12 classes, more than the model's 10",
        r"merge rare classes or choose another dataset",
    ),
    BadInput(
        "query-label-not-in-context",
        "Asked for the loss of a query whose label no context row has.",
        f"{ltm}.ReferenceLTM.predict",
        lambda d: predict(tiny_task(query_labels=[0, 7])),
        LTMInputError,
        r"query labels \[7\] do not occur in the context",
        r"every query label must be a context label",
    ),
    BadInput(
        "checkpoint-missing",
        "Loaded a checkpoint file that does not exist.",
        f"{ltm}.load_checkpoint",
        lambda d: load_checkpoint(d / "nope.pt"),
        CheckpointError,
        r"checkpoint .*nope\.pt does not exist",
        r"reinstall iclmem or run `iclmem pretrain`",
    ),
    BadInput(
        "checkpoint-corrupt",
        "Loaded a checkpoint file that holds garbage.",
        f"{ltm}.load_checkpoint",
        lambda d: (d / "bad.pt").write_bytes(b"garbage") and load_checkpoint(d / "bad.pt"),
        CheckpointError,
        r"checkpoint .*bad\.pt cannot be read",
        r"pass a checkpoint written by iclmem pretrain",
    ),
    BadInput(
        "checkpoint-hash-mismatch",
        "Loaded a checkpoint whose model card records another sha256.",
        f"{ltm}.load_checkpoint",
        card,
        CheckpointError,
        r"its model card says 000000000000\.\.\.: the file is corrupted or was replaced",
        r"restore the shipped one \(git checkout -- .*\) or pass a checkpoint whose card matches",
    ),
    BadInput(
        "device-unknown",
        "Set `ICLMEM_DEVICE=gpu` (not a torch device name).",
        f"{ltm}.load_checkpoint",
        lambda d: load_on("gpu", d),
        DeviceError,
        r"ICLMEM_DEVICE='gpu' is not a device",
        r"use cpu, cuda, cuda:N or auto",
    ),
    # found by tests/data/test_generated_inputs.py (generated tables), each shrunk to its smallest table
    BadInput(
        "feature-inf",
        "Fine-tuned on a table with an infinite value in a feature column.",
        ft,
        lambda d: tune_frame(d, tiny_frame().assign(a=lambda f: f.a.where(f.index > 0, np.inf))),
        FinetuneError,
        r"table: TableEncoder: column 'a' holds inf values",
        r"replace them with NaN \(missing\) or finite numbers",
    ),
    BadInput(
        "context-smaller-than-classes",
        "Fine-tuned a 2-class table with a training context of 1 row.",
        ft,
        lambda d: tune(d, context_size=1),
        FinetuneError,
        r"the training context \(1 rows of the context pool\) holds no row of the class\(es\) \d that",
        r"raise context_size \(now 1\) to at least the number of classes \(2\)",
    ),
    BadInput(
        "target-overflows",
        "Fine-tuned for regression on a target of magnitude 1e300.",
        ft,
        lambda d: tune_frame(d, tiny_frame().assign(y=lambda f: f.a * 1e300), "regression", 21),
        FinetuneError,
        r"the target 'y' reaches \d\.\d+e\+300 in magnitude: its mean or spread overflows",
        r"rescale the column in the file",
    ),
    BadInput(
        "probe-pool-few-values",
        "Probed with 10 candidates a regression run whose context pool holds 5 distinct target values.",
        f"{probe}.probe_run",
        probe_few_values,
        ProbeError,
        r"the context pool holds 5 distinct target value\(s\) in 38 rows, fewer than n_candidates=10",
        r"lower n_candidates to at most 5, or use a smaller query size",
    ),
    *(
        []
        if __import__("torch").cuda.is_available()
        else [
            BadInput(
                "device-no-gpu",
                "Set `ICLMEM_DEVICE=cuda` on a machine without a CUDA GPU.",
                f"{ltm}.load_checkpoint",
                lambda d: load_on("cuda", d),
                DeviceError,
                r"ICLMEM_DEVICE=cuda but this machine has no CUDA GPU",
                r"unset it \(or set cpu, or auto\) to compute on the CPU",
            )
        ]
    ),
]


def model_cases() -> list[BadInput]:
    """Mistakes in fine-tuning, probing, prediction and checkpoints, in catalogue order."""
    return list(MODEL_CASES)


__all__ = ["MODEL_CASES", "load_on", "model_cases"]
