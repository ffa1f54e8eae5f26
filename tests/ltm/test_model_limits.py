"""A model's class limit is its own (the LTM protocol's ``max_classes``), not a literal of the reference (Sec. 4.1).

Fine-tuning, the probe and the chapters' table check all read the limit from the model they are
given: an adapter whose checkpoint predicts at most 3 classes refuses a 4-class table with an error
naming that limit, while the reference (10 classes) takes the same table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from iclmem.adapters import load_model
from iclmem.adapters.tiny import tiny_tabicl_network
from iclmem.book.table_parameters import TableFitError, fitting_query_sizes
from iclmem.data import deduplicate, load_dataset, split_manifest
from iclmem.ltm import MAX_CLASSES, LTMConfig, ReferenceLTM, TabularICLTransformer
from iclmem.probe import ProbeError
from iclmem.probe.run import run_queries
from iclmem.training.finetune import FinetuneConfig, FinetuneError, finetune, prepare_run_data

torch.set_num_threads(1)

TINY = LTMConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, n_bins=16, max_context=64)


class ThreeClassLTM(ReferenceLTM):
    """The tiny reference network declaring a smaller output head: at most 3 classes."""

    @property
    def max_classes(self) -> int:
        return 3


def _four_class_table(tmp_path):
    rng = np.random.default_rng(0)
    n = 160
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    frame["target"] = np.digitize(frame.a + 0.3 * rng.normal(size=n), [-0.7, 0.0, 0.7])  # 4 classes
    path = tmp_path / "four_classes.csv"
    frame.to_csv(path, index=False)
    table = deduplicate(load_dataset(str(path), target="target", task="classification"))
    assert table.target.nunique() == 4
    return table


@pytest.fixture()
def setup(tmp_path):
    table = _four_class_table(tmp_path)
    return table, split_manifest(table, query_size=20, seed=0, results_dir=tmp_path), tmp_path


def _networks():
    torch.manual_seed(0)
    return TabularICLTransformer(TINY).eval()


def test_the_reference_declares_its_head_as_its_limit():
    assert ReferenceLTM(_networks()).max_classes == TINY.max_classes == MAX_CLASSES


def test_a_three_class_model_refuses_a_four_class_table_before_training(setup):
    table, manifest, tmp = setup
    config = FinetuneConfig(1e-3, epochs=1, probe_epochs=(0, 1), context_size=40)
    with pytest.raises(FinetuneError, match=r"4 classes; the model takes at most max_classes=3"):
        finetune(manifest, table, config, ThreeClassLTM(_networks(), checkpoint_sha256="three"), tmp, progress=False)
    run = finetune(manifest, table, config, ReferenceLTM(_networks(), checkpoint_sha256="ten"), tmp, progress=False)
    assert run is not None and list(run.metrics.epoch) == [0, 1]  # the same table fits the 10-class reference


def test_the_probe_and_the_table_check_take_the_limit_they_are_given(setup):
    table, manifest, tmp = setup
    config = FinetuneConfig(1e-3, epochs=1, probe_epochs=(0, 1), context_size=40)
    run = finetune(manifest, table, config, ReferenceLTM(_networks(), checkpoint_sha256="ten"), tmp, progress=False)
    data = prepare_run_data(manifest, table, run.config)
    assert {len(q.candidates) for q in run_queries(data, table, run)} == {4}
    with pytest.raises(ProbeError, match=r"4 classes; the model takes at most max_classes=3"):
        run_queries(data, table, run, max_classes=3)
    assert fitting_query_sizes({table.name: table}, [20]) == [20]
    with pytest.raises(TableFitError, match=r"4 classes, the model takes at most max_classes=3"):
        fitting_query_sizes({table.name: table}, [20], max_classes=3)


def test_an_adapter_checkpoint_sets_the_limit(setup, tmp_path):
    """A TabICL checkpoint with a 3-class head: the adapter reports 3, and fine-tuning holds it to that."""
    table, manifest, tmp = setup
    net, kwargs = tiny_tabicl_network(0, max_classes=3)
    path = tmp_path / "tabicl_3.ckpt"
    torch.save({"config": kwargs, "state_dict": net.state_dict()}, path)
    model = load_model(f"tabicl:{path}")
    assert model.max_classes == 3
    with pytest.raises(FinetuneError, match=r"max_classes=3"):
        finetune(
            manifest,
            table,
            FinetuneConfig(1e-3, epochs=1, probe_epochs=(0, 1), context_size=40),
            model,
            tmp,
            progress=False,
        )
