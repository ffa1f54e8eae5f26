"""Notebooks 02-04 run with ``-p model tabicl:PATH`` on a tiny random TabICL checkpoint (issue 15).

The chain the reference runs (fine-tune, probe with the 48 manipulations, calibrate against M_ref)
runs through the same notebooks for another architecture: every run in the store starts from the
given checkpoint, 03 and 04 reuse 02's runs, and nothing is downloaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclmem.adapters.base import sha256_file
from iclmem.adapters.tiny import write_tiny_checkpoint
from iclmem.book.execute import notebook_parameters, read_notebook
from iclmem.cli import main

REPO = Path(__file__).resolve().parents[2]
CHAIN = ("02_controlled_finetuning", "03_multiple_choice_probing", "04_calibration", "A6_instrument")
#: spotify is a binary table (the checkpoint is a classifier); the smallest grid that runs every cell.
TINY = {
    "datasets": ["spotify"],
    "learning_rates": [0.1],
    "query_sizes": [50],
    "label_conditions": ["none"],
    "epochs": 2,
    "context_size": 32,
    "probe_epochs": [0, 2],
    "max_queries": 4,
    "n_boot": 10,
    "control_epochs": [2],
    "control_learning_rates": [0.001],
    "curve_datasets": ["spotify"],
    "curve_learning_rates": [0.001],
    "curve_epochs": [2],
}


def _args(stem: str, model: str, out: Path) -> list[str]:
    path = REPO / "notebooks" / f"{stem}.py"
    declared = notebook_parameters(read_notebook(path))
    args = ["run", str(path), "-o", str(out), "-p", "model", model]
    for name, value in TINY.items():
        if name in declared:
            args += ["-p", name, json.dumps(value)]
    return args


@pytest.mark.parametrize("stem", CHAIN)
def test_the_tabular_notebooks_declare_the_model_parameter(stem):
    declared = notebook_parameters(read_notebook(REPO / "notebooks" / f"{stem}.py"))
    assert declared["model"].default == "reference"


@pytest.mark.slow
def test_notebooks_02_to_04_and_a6_run_on_a_tabicl_checkpoint(tmp_path, monkeypatch):
    ckpt = write_tiny_checkpoint("tabicl", tmp_path / "my_tabicl.ckpt", seed=1)
    monkeypatch.setenv("ICLMEM_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runs_after = {}
    for stem in CHAIN:
        assert main(_args(stem, f"tabicl:{ckpt}", tmp_path / f"{stem}.ipynb")) == 0, stem
        runs_after[stem] = sorted(p.name for p in (tmp_path / "results" / "finetune").glob("*"))
    assert len(runs_after[CHAIN[0]]) == 1 and runs_after[CHAIN[1]] == runs_after[CHAIN[0]]  # 03 probed 02's run
    digest = sha256_file(ckpt)
    assert runs_after[CHAIN[2]] == runs_after[CHAIN[0]]  # 04 read them too
    for name in runs_after[CHAIN[3]]:  # A6's positive control too: every run starts from the TabICL checkpoint
        assert (
            json.loads((tmp_path / "results" / "finetune" / name / "run.json").read_text())["reference_sha256"]
            == digest
        )
    probes = [json.loads(p.read_text()) for p in (tmp_path / "results" / "probe").glob("*/params.json")]
    assert probes and all(len(p["manipulations"]) == 48 for p in probes)
