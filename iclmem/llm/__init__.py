"""LLM k-shot replication of "Memorization In In-Context Learning" (section 6 of the book).

Flow: instances -> segment pairs -> k-shot prompts in three settings -> completions -> judge -> rates,
accuracy, correlation. Modules: :mod:`~iclmem.llm.datasets` (WNLI, RTE, TREC, DBpedia, CARTE tables as
text; sampling), :mod:`~iclmem.llm.segments`, :mod:`~iclmem.llm.prompts`, :mod:`~iclmem.llm.chat` (the
chat interface), :mod:`~iclmem.llm.backends` (in-process and OpenAI-compatible), :mod:`~iclmem.llm.cache`
(disk cache of completions, keyed by backend, base URL, model, messages, decoding and repeat), :mod:`~iclmem.llm.judges`
(offline and LLM judges), :mod:`~iclmem.llm.judge_accuracy` (the offline judge's accuracy on held-out pairs),
:mod:`~iclmem.llm.judge_runs` (runs the judges over the completions: offline | llm | both), :mod:`~iclmem.llm.review`
(human review of borderline labels, claim D9), :mod:`~iclmem.llm.finetune` (controlled ground truth),
:mod:`~iclmem.llm.replication` (runs and tables), :mod:`~iclmem.llm.server` (a loopback
``transformers serve``), :mod:`~iclmem.llm.protocol` (the paper's protocol: its k regimes).
The paper's reference values, its claims D1-D9 and the figures are the chapter's, in
:mod:`iclmem.chapters.ch06_llm_kshot`.

Heavy dependencies (``torch``, ``transformers``, ``openai``) are imported inside the functions that use them.
"""

import warnings

from iclmem.llm.cache import CachedBackend, CompletionCache, cache_root, completion_key
from iclmem.llm.chat import (
    ChatBackend,
    ChatRequest,
    Completion,
    ContextOverflowError,
    Decoding,
    LLMError,
    MissingAPIKeyError,
    StreamingBackend,
)
from iclmem.llm.datasets import (
    DATASETS,
    DatasetUnavailableError,
    Instance,
    SamplingError,
    UnknownLLMDatasetError,
    assign_members,
    demonstrations_for_k,
    load_dataset,
    sample_instances,
)
from iclmem.llm.judges import LLMJudge, OfflineJudge, agreement
from iclmem.llm.prompts import SETTINGS, memorization_messages, performance_messages
from iclmem.llm.replication import ReplicationConfig, build_experiment
from iclmem.llm.segments import SegmentPair, split_instance

# transformers and datasets import tqdm.auto, which warns "IProgress not found" into a notebook kernel
# without widgets: a warning that says nothing to a reader (their bars are off or on the terminal).
warnings.filterwarnings("ignore", message="IProgress not found")

__all__ = [
    "DATASETS",
    "SETTINGS",
    "CachedBackend",
    "ChatBackend",
    "ChatRequest",
    "Completion",
    "CompletionCache",
    "ContextOverflowError",
    "DatasetUnavailableError",
    "Decoding",
    "Instance",
    "LLMError",
    "LLMJudge",
    "MissingAPIKeyError",
    "OfflineJudge",
    "ReplicationConfig",
    "SamplingError",
    "SegmentPair",
    "StreamingBackend",
    "UnknownLLMDatasetError",
    "agreement",
    "assign_members",
    "build_experiment",
    "cache_root",
    "completion_key",
    "demonstrations_for_k",
    "load_dataset",
    "memorization_messages",
    "performance_messages",
    "sample_instances",
    "split_instance",
]
