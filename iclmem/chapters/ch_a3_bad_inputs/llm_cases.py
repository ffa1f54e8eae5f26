"""Appendix A3 (no paper section): bad LLM k-shot settings (paper 2, iclmem.llm)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
    tiny_csv,
    tiny_environ,
)
from iclmem.llm import (
    ChatRequest,
    ContextOverflowError,
    DatasetUnavailableError,
    Decoding,
    MissingAPIKeyError,
    ReplicationConfig,
    SamplingError,
    UnknownLLMDatasetError,
    build_experiment,
)
from iclmem.llm.backends import InProcessBackend, make_backend


def overflow(folder: Path) -> None:
    backend = InProcessBackend()  # the tokenizer only: nothing is generated
    request = ChatRequest((("user", "word " * 9000),), Decoding(max_new_tokens=24))
    backend.check_fits(backend.count_tokens(request), request.decoding.max_new_tokens)


def openai(**env: str | None) -> object:
    with tiny_environ(**env):
        return make_backend("openai")


def experiment(folder: Path, **kw) -> object:
    return build_experiment(ReplicationConfig(**{"n_instances": 4, "n_demonstrations": 4, "ks": (0, 2), **kw}))


wrong_columns = pd.DataFrame({"text": ["a b c d", "e f g h"], "label": [0, 1]})
replication = "iclmem.llm.build_experiment"
#: Mistakes in an LLM k-shot run: keys, endpoints, prompts over the context window, in catalogue order.
LLM_CASES: list[BadInput] = [
    BadInput(
        "api-key-missing",
        "Chose the OpenAI-compatible backend without setting OPENAI_API_KEY.",
        "iclmem.llm.backends.make_backend",
        lambda d: openai(OPENAI_API_KEY=None),
        MissingAPIKeyError,
        r"needs an API key",
        r"set the environment variable OPENAI_API_KEY",
    ),
    BadInput(
        "api-model-missing",
        "Chose the OpenAI-compatible backend without naming the model.",
        "iclmem.llm.backends.make_backend",
        lambda d: openai(OPENAI_API_KEY="local", ICLMEM_OPENAI_MODEL=None),
        MissingAPIKeyError,
        r"needs a model name",
        r"set the environment variable ICLMEM_OPENAI_MODEL",
    ),
    BadInput(
        "backend-unknown",
        "Chose the backend `gpt4`.",
        "iclmem.llm.backends.make_backend",
        lambda d: make_backend("gpt4"),
        ValueError,
        r"unknown backend 'gpt4'",
        r"choose 'inprocess' or 'openai'",
    ),
    BadInput(
        "prompt-over-window",
        "Sent a prompt of about 9000 tokens to the in-process model (window 8192).",
        "iclmem.llm.backends.InProcessBackend",
        overflow,
        ContextOverflowError,
        r"prompt of \d+ tokens \+ 24 new tokens exceeds the context window of 8192",
        r"use a smaller k or fewer new tokens",
    ),
    BadInput(
        "llm-dataset-unknown",
        "Asked for the LLM dataset `wnli2`.",
        replication,
        lambda d: experiment(d, dataset="wnli2"),
        UnknownLLMDatasetError,
        r"unknown dataset 'wnli2'",
        r"known: .*wnli",
    ),
    BadInput(
        "llm-data-file-missing",
        "Gave data_files a path that does not exist.",
        replication,
        lambda d: experiment(d, dataset="wnli", data_files=str(d / "wnli.csv")),
        DatasetUnavailableError,
        r"data file .*wnli\.csv does not exist",
        r"check the path given as data_files",
    ),
    BadInput(
        "llm-data-file-columns",
        "Gave data_files a table without the dataset's columns.",
        replication,
        lambda d: experiment(d, dataset="wnli", data_files=str(tiny_csv(d, wrong_columns))),
        DatasetUnavailableError,
        r"lacks the columns \['sentence1', 'sentence2'\]",
        r"rename its columns to these",
    ),
    BadInput(
        "k-over-pool",
        "Asked for k=25 demonstrations from a pool of 10.",
        "iclmem.llm.ReplicationConfig",
        lambda d: ReplicationConfig(ks=(0, 25), n_demonstrations=10),
        SamplingError,
        r"k=25 is larger than the demonstration pool \(n_demonstrations=10\)",
        r"raise n_demonstrations to at least 25",
    ),
    BadInput(
        "setting-unknown",
        "Asked for the prompt setting `pairs`.",
        "iclmem.llm.ReplicationConfig",
        lambda d: ReplicationConfig(settings=("full", "pairs")),
        ValueError,
        r"unknown settings \['pairs'\]",
        r"choose from \['full', 'pairs_labels', 'pairs_only'\]",
    ),
    BadInput(
        "temperature-nonzero",
        "Asked for sampling at temperature 0.7.",
        "iclmem.llm.Decoding",
        lambda d: Decoding(temperature=0.7),
        ValueError,
        r"temperature 0\.7: only greedy decoding",
        r"leave temperature at 0",
    ),
]


def llm_cases() -> list[BadInput]:
    """Mistakes in an LLM k-shot run: keys, endpoints, prompts over the context window, in catalogue order."""
    return list(LLM_CASES)


__all__ = ["LLM_CASES", "llm_cases"]
