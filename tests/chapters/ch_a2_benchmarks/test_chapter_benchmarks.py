"""Appendix A2's tables from benchmark result files the test writes."""

import json

import pytest

from iclmem.chapters.ch_a2_benchmarks import (
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


def test_decoding_table_shows_every_way_against_llama_cpp():
    from iclmem.chapters.ch_a2_benchmarks import decoding_table, plot_decoding_curve

    def way(seconds: float, **extra) -> dict:
        return {
            "seconds": seconds,
            "generated_tokens": 100,
            "tokens_per_s": 100 / seconds,
            "completions_per_s": 10 / seconds,
            **extra,
        }

    result = {
        "instances": 10,
        "book_batch_before": 8,
        "one_at_a_time": way(20.0),
        "plain": way(10.0, differs_from_one_at_a_time=[3]),
        "ways": {
            "continuous 8": way(5.0, over_llama_cpp=1.5, differs_from_one_at_a_time=[]),
            "continuous 16": way(4.0, over_llama_cpp=2.0, differs_from_one_at_a_time=[]),
            "static 8": way(6.0, over_llama_cpp=1.2, differs_from_one_at_a_time=[1, 2]),
        },
        "llama_cpp": {**way(8.0), "same_text": 7},
        "chosen_batch": 16,
    }
    table = decoding_table(result)
    assert list(table.index) == ["one at a time", "plain 8", "continuous 8", "continuous 16", "static 8", "llama.cpp"]
    assert table.loc["continuous 16", "speed / llama.cpp"] == 2.0 and table.loc["llama.cpp", "speed / llama.cpp"] == 1.0
    assert table["speed / llama.cpp"].isna().tolist() == [True, True, False, False, False, False]  # ran once, unpaired
    assert table.differs.tolist() == [0, 1, 0, 0, 2, 3]
    fig = plot_decoding_curve(result)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert list(lines["continuous"].get_xdata()) == [8, 16] and list(lines["static"].get_ydata()) == [1.2]
    result["llama_cpp"] = "not installed (pip install '.[bench]')"
    assert "llama.cpp" not in decoding_table(result).index  # a way that did not run has no row


def test_kernel_ceiling_tables_rate_each_kernel_against_the_peak():
    from iclmem.chapters.ch_a2_benchmarks import kernel_ceiling_tables

    step = {
        "gflop_by_kind": {"linear": 6.0, "row attention (flash)": 4.0},
        "kernel_gflop_per_s": {"linear": 50.0, "row attention (flash)": 20.0, "feature attention (bmm)": 5.0},
        "step_fraction_of_peak": 0.3,
        "ceiling_fraction_of_peak": 0.5,
    }
    result = {
        "peak_gflop_per_s": 100.0,
        "ceiling": {"context 256, Q 50": step},
        "batched_runs": {
            "context 256, Q 50": {"seconds_per_task": {"1": 1.0, "2": 0.8}, "speedup_vs_one": {"1": 1.0, "2": 1.25}}
        },
    }
    ceiling, batched = kernel_ceiling_tables(result)
    by_kernel = ceiling.set_index("kernel")
    assert by_kernel.loc["linear", "kernel fraction of peak"] == 0.5
    assert by_kernel.loc["feature attention (bmm)", "GFLOP per step"] == 0.0  # counted under no kind of its own
    assert list(batched["tasks per forward (G)"]) == [1, 2] and batched["speed-up vs G = 1"].iloc[1] == 1.25


def test_the_softmax_benchmark_has_one_row_per_measurement_with_its_ratio(tmp_path):
    from iclmem.chapters.ch_a2_benchmarks import softmax_keys_table

    pair = {"before_s": 2.0, "after_s": 1.0, "speedup": 2.0}
    _write(
        tmp_path,
        "softmax_keys",
        {
            "vector_keys": 16,
            "kernel": {"10": {"forward": pair, "forward_backward": pair}},
            "probing": {"wine_pl": {**pair, "probes": 96, "max_abs_score_difference": 1e-6}},
            "finetuning": {"spotify": {**pair, "features": 18}},
        },
    )
    results = read_results(tmp_path)
    assert "softmax_keys" not in other_results(results)  # it has a section of its own
    table = softmax_keys_table(results["softmax_keys"])
    assert table.shape == (4, 6)
    assert table["shape"].tolist() == [
        "10 keys, forward",
        "10 keys, forward + backward",
        "wine_pl, 96 probes",
        "spotify, 18 features",
    ]
    assert table.max_abs_score_difference.notna().tolist() == [False, False, True, False]


def test_roofline_table_has_the_book_probing_workload_beside_the_synthetic_one():
    from iclmem.chapters.ch_a2_benchmarks import roofline_table

    row = {"gflop_per_s": 60.0, "fraction": 0.5}
    run = {
        "peak_gflop_per_s": 120.0,
        "probing": {"spotify-like": {**row, "probes_per_s": 3000.0}},
        "probing_book": {"wine_pl": {**row, "contexts_per_s": 1000.0}},
        "finetuning": {"context 256, Q 512": {**row, "steps_per_s": 3.0}},
    }
    table = roofline_table({"runs": {"current": {"1": run}}}).set_index("stage")
    assert table.loc["probing, a Q=512 run: wine_pl", "unit"] == "contexts/s"
    assert table.loc["probing, a Q=512 run: wine_pl", "rate"] == 1000.0
    assert table.loc["probing, 16 synthetic queries: spotify-like", "unit"] == "probes/s"
    assert table.loc["fine-tuning: context 256, Q 512", "fraction of peak"] == 0.5
    old = {k: v for k, v in run.items() if k != "probing_book"}  # a file written before the book rows existed
    assert len(roofline_table({"runs": {"before": {"1": old}}})) == 2


def test_prose_texts_read_the_result_files_and_say_dash_for_an_absent_one():
    from iclmem.chapters.ch_a2_benchmarks import read_results
    from iclmem.chapters.ch_a2_benchmarks.prose import MISSING, prose_texts

    results = read_results("benchmarks/results")
    texts = prose_texts(results, {"n_heads": 4, "d_model": 64})
    null = results["null_speed"]
    assert texts["null_permutations"] == f"{null['permutations']:,}"
    assert texts["null_resamples"] == str(null["resamples"])
    assert texts["rank_path_pairs"] == "128 x 128" or null["rank_path_pairs"] != 128 * 128
    assert texts["vector_keys"] == str(results["softmax_keys"]["vector_keys"]) and texts["head_dim"] == "16"
    assert texts["paper_requests"] == f"{results['openai_concurrency']['paper_scale_requests']:,}"
    assert all(value != MISSING for value in texts.values())  # every file the page reads is committed
    bare = prose_texts({})
    assert bare["peak_1"] == MISSING and bare["kill_setting"] == MISSING and bare["n_manipulations"] != MISSING
