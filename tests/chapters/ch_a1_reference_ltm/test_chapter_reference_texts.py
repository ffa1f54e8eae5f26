"""Appendix A1's prose numbers come from the model card, the benchmark file and the quality targets (issue 53
item 5)."""

from __future__ import annotations

from iclmem.chapters.ch_a1_reference_ltm.tables import benchmark_texts, card_texts
from iclmem.chapters.ch_a1_reference_ltm.targets import QUALITY_TARGETS, target_texts
from iclmem.ltm.reference import parameter_count_text

CARD = {
    "n_parameters": 230_538,
    "architecture": {"max_classes": 10, "n_bins": 64},
    "prior": {"min_context": 16, "max_context": 512, "min_features": 1, "max_features": 32, "max_categories": 48},
}


def test_card_texts_read_the_model_card():
    texts = card_texts(CARD)
    assert texts["card_parameters"] == "231k" and parameter_count_text({"n_parameters": 2_400_000}) == "2.4M"
    assert (texts["card_contexts"], texts["card_features"], texts["card_max_classes"]) == ("16-512", "1-32", "10")
    assert (texts["card_n_bins"], texts["card_max_context"], texts["card_max_categories"]) == ("64", "512", "48")


def test_benchmark_texts_read_the_result_file_and_the_engines_defaults():
    texts = benchmark_texts({"seeds": 5, "speed": {"n_context": 512, "n_query": 256, "n_features": 32}})
    assert (texts["quality_seeds"], texts["quality_seed_range"]) == ("5", "0-4")
    assert (texts["speed_context"], texts["speed_queries"], texts["speed_features"]) == ("512", "256", "32")
    assert texts["numeric_text_share"].endswith("%") and int(texts["quality_max_test"]) > 0
    assert target_texts() == {f"target_{task}": f"{margin:.2f}" for task, (_, margin) in QUALITY_TARGETS.items()}
