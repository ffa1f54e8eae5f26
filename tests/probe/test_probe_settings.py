"""One ProbeSettings for every caller (issue 54 item 4): keyword-only, its epochs filter, its fields' order."""

from dataclasses import asdict

import pytest

from iclmem.probe.settings import GRID_PROBE, PROBE_DEFAULTS, ProbeSettings


def test_probe_settings_take_keywords_only_so_a_call_cannot_set_the_wrong_field():
    with pytest.raises(TypeError):
        ProbeSettings(10, 50)  # type: ignore[misc]
    assert ProbeSettings(max_queries=50).max_queries == 50


def test_the_probed_epochs_are_those_the_run_kept_in_the_run_order():
    assert ProbeSettings().epochs_for([0, 5, 10]) == [0, 5, 10]
    assert ProbeSettings(epochs=(10, 7, 0)).epochs_for([0, 5, 10]) == [10, 0]


def test_the_fields_keep_the_order_every_sweep_key_hashes():
    assert list(asdict(PROBE_DEFAULTS)) == ["n_candidates", "max_queries", "epochs", "seed", "n_boot", "manipulations"]
    assert GRID_PROBE == ProbeSettings(n_boot=200)
