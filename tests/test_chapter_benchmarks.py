"""Appendix A2's tables from benchmark result files the test writes."""

import json

import pytest

from iclmem.chapters.benchmarks import (
    finetune_speed_table,
    openai_concurrency_table,
    other_results,
    probe_speed_tables,
    read_results,
    settings,
)


def _write(folder, name, payload):
    (folder / f"{name}.json").write_text(json.dumps(payload))


def test_results_are_read_by_name_and_shaped_into_tables(tmp_path):
    _write(
        tmp_path,
        "finetune_speed",
        {"threads": 2, "rows": [{"context": 64, "steps_per_s": 4.0}, {"context": 256, "steps_per_s": 0.5}]},
    )
    _write(
        tmp_path,
        "probe_speed",
        {
            "batched": {"probes_per_cpu_s": 10, "probes_per_wall_s": 20, "wall_s": 1, "extra": 0},
            "naive": {"probes_per_cpu_s": 5, "probes_per_wall_s": 8, "wall_s": 2, "extra": 0},
            "ratio_cpu": 2.0,
            "max_abs_difference": 1e-7,
            "note": "not a ratio",
        },
    )
    _write(tmp_path, "sweep_scaling", {"workers": {"1": 1.0, "2": 1.8}})
    results = read_results(tmp_path)
    assert sorted(results) == ["finetune_speed", "probe_speed", "sweep_scaling"]
    assert finetune_speed_table(results["finetune_speed"]).seconds_per_step.tolist() == [0.25, 2.0]
    assert settings(results["finetune_speed"]).to_dict()["value"] == {"threads": 2}
    table, ratios = probe_speed_tables(results["probe_speed"])
    assert list(table.index) == ["batched", "naive"]
    assert list(table.columns) == ["probes_per_cpu_s", "probes_per_wall_s", "wall_s"]
    assert set(ratios.index) == {"ratio_cpu", "max_abs_difference"}
    assert list(other_results(results)) == ["sweep_scaling"]


def test_openai_concurrency_has_a_section_with_speed_ups_over_the_first_row(tmp_path):
    rows = [
        {
            "concurrency": c,
            "requests": 64,
            "wall_s": 64 / r,
            "requests_per_s": r,
            "server_max_in_flight": c,
            "paper_scale_hours": 36000 / r / 3600,
            "in_request_order": True,
            "all_ok": True,
        }
        for c, r in ((1, 4.0), (8, 30.0))
    ]
    _write(tmp_path, "openai_concurrency", {"server_delay_s": 0.2, "rows": rows, "ratio": 7.5})
    results = read_results(tmp_path)
    table = openai_concurrency_table(results["openai_concurrency"])
    assert table["speed-up"].tolist() == [1.0, 7.5] and table.concurrency.tolist() == [1, 8]
    assert table.paper_scale_hours.tolist() == [2.5, 36000 / 30 / 3600] and "all_ok" not in table
    assert other_results(results) == {}  # a section of its own, not among the others


def test_a_missing_results_folder_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="run the scripts in benchmarks/"):
        read_results(tmp_path / "absent")


def test_decoding_table_relates_every_way_to_the_cascade_decoder():
    from iclmem.chapters.benchmarks import decoding_table

    result = {
        "plain": {"seconds": 10.0, "generated_tokens": 100, "tokens_per_s": 10.0},
        "cascade": {"seconds": 5.0, "generated_tokens": 100, "tokens_per_s": 20.0},
        "llama_cpp": "not installed (pip install '.[bench]')",
    }
    table = decoding_table(result)
    assert list(table.index) == ["plain", "cascade"]  # a way that did not run has no row
    assert table.loc["plain", "time / cascade"] == 2.0 and table.loc["cascade", "time / cascade"] == 1.0
