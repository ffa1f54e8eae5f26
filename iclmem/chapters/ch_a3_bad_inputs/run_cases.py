"""Appendix A3 (no paper section): bad sweep grids, LLM settings (paper 2) and claim records."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from iclmem.chapters.ch_a3_bad_inputs.kit import (
    BadInput,
    tiny_csv,
    tiny_environ,
    tiny_glued,
    tiny_grid,
    tiny_grid_file,
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
from iclmem.report.glue import read_glued_claims
from iclmem.report.records import ClaimError
from iclmem.sweep import SweepError, load_grid, parse_grid


def parse(folder: Path, **changes) -> object:
    return parse_grid(tiny_grid(**changes), "grid.yaml", folder)


SWEEP_ENTRY = "iclmem.sweep.parse_grid"
#: Mistakes in a sweep's grid file, answered by :mod:`iclmem.sweep`, in catalogue order.
SWEEP_CASES: list[BadInput] = [
    BadInput(
        "grid-file-missing",
        "Loaded a grid file that does not exist.",
        "iclmem.sweep.load_grid",
        lambda d: load_grid(d / "nope.yaml"),
        SweepError,
        r"no grid file at .*nope\.yaml",
        r"see grids/book\.yaml",
    ),
    BadInput(
        "grid-file-bad-yaml",
        "Loaded a grid file with broken YAML.",
        "iclmem.sweep.load_grid",
        lambda d: load_grid(tiny_grid_file(d, text="name: tiny\ndatasets: [wine_pl\n")),
        SweepError,
        r"not valid YAML",
        r"fix the syntax",
    ),
    BadInput(
        "grid-dataset-unknown",
        "Listed the dataset `wine_lp` in a grid.",
        SWEEP_ENTRY,
        lambda d: parse(d, datasets=["wine_lp"]),
        SweepError,
        r"unknown dataset 'wine_lp'",
        r"valid names: .*wine_pl.*or give a file as \{path: data\.csv",
    ),
    BadInput(
        "grid-axis-missing",
        "Wrote a grid without `query_sizes`.",
        SWEEP_ENTRY,
        lambda d: parse_grid({"name": "g", "datasets": ["wine_pl"], "learning_rates": [1e-3]}, "grid.yaml", d),
        SweepError,
        r"missing 'query_sizes'",
        r"every grid needs datasets, learning_rates and query_sizes",
    ),
    BadInput(
        "grid-axis-empty-in-file",
        "Wrote `learning_rates: []` in a grid.",
        SWEEP_ENTRY,
        lambda d: parse(d, learning_rates=[]),
        SweepError,
        r"axis 'learning_rates' is empty",
        r"give at least one value",
    ),
    BadInput(
        "grid-name-bad",
        "Named a grid `my grid` (with a space).",
        SWEEP_ENTRY,
        lambda d: parse(d, name="my grid"),
        SweepError,
        r"got 'my grid'",
        r"name must be a word of letters, digits",
    ),
    BadInput(
        "grid-learning-rate-text",
        "Wrote a learning rate as `fast`.",
        SWEEP_ENTRY,
        lambda d: parse(d, learning_rates=["fast"]),
        SweepError,
        r"got 'fast'",
        r"learning_rates must be a number",
    ),
    BadInput(
        "grid-dataset-file-missing",
        "Listed a dataset file that does not exist in a grid.",
        SWEEP_ENTRY,
        lambda d: parse(d, datasets=[{"path": "nope.csv", "target": "y"}]),
        SweepError,
        r"dataset file .*nope\.csv' does not exist",
        r"relative paths start at the grid file's folder",
    ),
    BadInput(
        "grid-probe-epoch-odd",
        "Asked to probe at epoch 3, which fine-tuning never keeps.",
        SWEEP_ENTRY,
        lambda d: parse(d, probe={"epochs": [3]}),
        SweepError,
        r"probe\.epochs \[3\] are not probing epochs",
        r"fine-tuning keeps the paper's \[0, 1, 2, 5",
    ),
    BadInput(
        "grid-probe-epochs-beyond",
        "Asked to probe at epoch 5 in a grid of 2 epochs.",
        SWEEP_ENTRY,
        lambda d: parse(d, probe={"epochs": [5]}),
        SweepError,
        r"are all beyond epochs=2",
        r"raise epochs or add earlier epochs",
    ),
    BadInput(
        "grid-random-pairs-labels",
        "Combined random pairs with randomized labels in one grid part.",
        SWEEP_ENTRY,
        lambda d: parse(d, regimes=["multi_task_random"], label_conditions=["members"]),
        SweepError,
        r"multi_task_random samples queries with their true labels",
        r"use label_conditions \[none\]",
    ),
]


def sweep_cases() -> list[BadInput]:
    """Mistakes in a sweep's grid file, answered by :mod:`iclmem.sweep`, in catalogue order."""
    return list(SWEEP_CASES)


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


record = {
    "id": "C1",
    "paper": "0.8",
    "ours": "0.7",
    "interval": None,
    "verdict": "maybe",
    "reason": "a reason",
    "null": None,
    "observed": None,
    "null_range": None,
    "null_rate": None,
    "points": None,
}
CLAIMS_ENTRY = "iclmem.report.glue.read_glued_claims"
#: Mistakes in a chapter's glued claims, answered by :func:`iclmem.report.glue.read_glued_claims`.
CLAIMS_CASES: list[BadInput] = [
    BadInput(
        "claim-not-literal",
        "Read claims from a notebook whose glued record is cut off (not a Python literal).",
        CLAIMS_ENTRY,
        lambda d: read_glued_claims(tiny_glued(d, "{'id': 'C1', 'verdict': 'reproduced'")),
        ClaimError,
        r"glued 'claim-C1' is not a literal dict",
        r"re-execute the notebook that glued it",
    ),
    BadInput(
        "claim-fields",
        "Read claims from a notebook whose glued record lacks fields.",
        CLAIMS_ENTRY,
        lambda d: read_glued_claims(tiny_glued(d, "{'id': 'C1', 'verdict': 'reproduced'}")),
        ClaimError,
        r"has fields \['id', 'verdict'\], a claim record has",
        r"re-execute the chapter \(records come from "
        r"iclmem\.report\.glue\.glue_claim\)",
    ),
    BadInput(
        "claim-verdict",
        "Read claims from a notebook whose glued record has the verdict `maybe`.",
        CLAIMS_ENTRY,
        lambda d: read_glued_claims(tiny_glued(d, repr(record))),
        ClaimError,
        r"verdict 'maybe' is not one of",
        r"reproduced, differs, inconclusive, holds by construction, not testable here",
    ),
]


def claims_cases() -> list[BadInput]:
    """Mistakes in a chapter's glued claims, answered by :func:`iclmem.report.glue.read_glued_claims`."""
    return list(CLAIMS_CASES)


__all__ = ["claims_cases", "llm_cases", "sweep_cases"]
