"""Runs the judges over the memorization completions: ``offline``, ``llm`` or ``both`` (the notebook's ``judge``).

Paper Sec. 3.1 and Sec. 4: every completion is classified by GPT-4 with a few-shot prompt (App. A, Fig. 5), then
reviewed by hand. Here:

* ``offline`` -- the offline judge (:class:`~iclmem.llm.judges.OfflineJudge`) labels every completion and the
  rates come from it. When an LLM judge is given with ``subsample > 0`` it also labels that many completions,
  spread over the offline classes (:func:`~iclmem.llm.replication.judge_subsample`), for the two judges' agreement;
* ``llm`` -- the LLM judge labels every completion and the rates come from it (the paper's judge);
* ``both`` -- both label every completion; the rates come from the LLM judge, the offline labels give the
  agreement over all completions and, with the LLM labels, the borderline cases for a human review
  (:mod:`iclmem.llm.review`).

The frame gets ``match_offline`` and ``match_llm`` (``None`` where that judge did not label the row) and ``match``,
the label every rate and claim reads. A completion whose generator request failed, an LLM answer the parser cannot
read, and an LLM request that failed after retries are all *missing* (``None``), never "no": every rate's
denominator is the completions its judge labelled, and :meth:`Judged.counts` says per judge how many that is.
The LLM judge may run on its own server and model
(:func:`judge_backend`: ``ICLMEM_JUDGE_MODEL``, ``ICLMEM_JUDGE_BASE_URL``, ``ICLMEM_JUDGE_API_KEY``,
``ICLMEM_JUDGE_CONTEXT``), as the paper judged with gpt-4-0613 and generated with gpt-4-0613-32k (Sec. 4 "Model").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pandas as pd

from iclmem.llm.chat import ChatBackend, MissingAPIKeyError
from iclmem.llm.judges import agreement

JUDGE_MODES = ("offline", "llm", "both")
ENV_JUDGE_MODEL = "ICLMEM_JUDGE_MODEL"
ENV_JUDGE_BASE_URL = "ICLMEM_JUDGE_BASE_URL"
ENV_JUDGE_API_KEY = "ICLMEM_JUDGE_API_KEY"
ENV_JUDGE_CONTEXT = "ICLMEM_JUDGE_CONTEXT"


def check_judge_mode(mode: str) -> str:
    if mode not in JUDGE_MODES:
        raise ValueError(f"unknown judge {mode!r}; choose one of {', '.join(JUDGE_MODES)}")
    return mode


def judge_backend(generator: ChatBackend, **kwargs: Any) -> ChatBackend:
    """The LLM judge's backend (uncached; wrap it in :class:`~iclmem.llm.cache.CachedBackend`).

    With ``ICLMEM_JUDGE_MODEL`` set: an OpenAI-compatible backend on that model, at ``ICLMEM_JUDGE_BASE_URL``
    (else ``OPENAI_BASE_URL``, else OpenAI), with the key in ``ICLMEM_JUDGE_API_KEY`` (else ``OPENAI_API_KEY``) and
    the window in ``ICLMEM_JUDGE_CONTEXT`` (optional). Without it: the generator itself judges (the run's model).
    ``kwargs`` go to :class:`~iclmem.llm.backends.OpenAIBackend` (timeouts, retries).
    """
    model = os.environ.get(ENV_JUDGE_MODEL, "").strip()
    if not model:
        return generator
    from iclmem.llm.backends import ENV_API_KEY, ENV_BASE_URL, OpenAIBackend

    key = os.environ.get(ENV_JUDGE_API_KEY) or os.environ.get(ENV_API_KEY)
    if not key:
        raise MissingAPIKeyError(
            f"{ENV_JUDGE_MODEL} is set, so the LLM judge runs on its own server and needs a key: set "
            f"{ENV_JUDGE_API_KEY} (or {ENV_API_KEY}; any non-empty value for a local server)"
        )
    base_url = os.environ.get(ENV_JUDGE_BASE_URL) or os.environ.get(ENV_BASE_URL) or None
    context = os.environ.get(ENV_JUDGE_CONTEXT)
    try:
        window = int(context) if context else None
    except ValueError as e:
        raise ValueError(
            f"{ENV_JUDGE_CONTEXT}={context!r} is not a number of tokens; set it to the judge model's "
            "context window, e.g. 8192, or unset it"
        ) from e
    return OpenAIBackend(model=model, base_url=base_url, api_key=key, context_window=window, **kwargs)


@dataclass
class Judged:
    """The judged memorization frame and how it was judged."""

    frame: pd.DataFrame  # the rows with match_offline, match_llm, match
    mode: str
    agreement: dict[str, Any] | None  # offline vs LLM on the rows both labelled (None: no LLM judge ran)
    n_unparsed: int  # LLM answers naming no class, or two (missing, not "no")
    n_llm: int  # rows sent to the LLM judge
    n_failed: int = 0  # LLM judge requests that failed after retries (missing, not "no")

    @property
    def source(self) -> str:
        """The judge the rates come from, in words."""
        return "the offline judge" if self.mode == "offline" else "the LLM judge"

    def counts(self) -> pd.DataFrame:
        """Per judge: completions, those whose generator request failed, those sent to the judge, judged, unparsed and
        failed judge requests, and the denominator its rates use (the completions it judged)."""
        f = self.frame
        gen_failed = int(f["error"].notna().sum()) if "error" in f.columns else 0
        n_offline = int(f["match_offline"].notna().sum())
        rows = [
            {
                "judge": "offline",
                "completions": len(f),
                "generator failed": gen_failed,
                "sent to judge": n_offline if self.mode != "llm" else 0,
                "judged": n_offline,
                "unparsed": 0,
                "judge failed": 0,
            }
        ]
        if self.n_llm:
            rows.append(
                {
                    "judge": "LLM",
                    "completions": len(f),
                    "generator failed": gen_failed,
                    "sent to judge": self.n_llm,
                    "judged": int(f["match_llm"].notna().sum()),
                    "unparsed": self.n_unparsed,
                    "judge failed": self.n_failed,
                }
            )
        out = pd.DataFrame(rows)
        rates_from = "offline" if self.mode == "offline" else "LLM"
        out["rates use"] = [
            "denominator: the judged completions" if j == rates_from else "agreement only" for j in out["judge"]
        ]
        return out


def judge_completions(
    mem: pd.DataFrame, mode: str = "offline", offline: Any = None, llm: Any = None, subsample: int = 0, seed: int = 0
) -> Judged:
    """Label the completions of ``mem`` as ``mode`` says (module docstring). Rows with a generator error, unparsed
    LLM answers and failed LLM requests get ``None`` (missing), never "no".

    ``offline``: an :class:`~iclmem.llm.judges.OfflineJudge` (needed for ``offline`` and ``both``); ``llm``: an
    :class:`~iclmem.llm.judges.LLMJudge` (needed for ``llm`` and ``both``; optional for ``offline``, where it labels
    ``subsample`` rows for the agreement).
    """
    from iclmem.llm.replication import judge_subsample

    check_judge_mode(mode)
    if mode in ("offline", "both") and offline is None:
        raise ValueError(f"judge={mode!r} needs the offline judge; pass offline=OfflineJudge()")
    if mode in ("llm", "both") and llm is None:
        raise ValueError(f"judge={mode!r} needs an LLM judge; pass llm=LLMJudge(backend)")
    out = mem.copy()
    ok = out["error"].isna() if "error" in out.columns else pd.Series(True, index=out.index)
    out["match_offline"] = None
    out["match_llm"] = None
    if mode in ("offline", "both") and ok.any():
        out.loc[ok, "match_offline"] = offline.judge_many(
            list(out.loc[ok, "reference"]), list(out.loc[ok, "completion"])
        )
    if mode == "offline":
        rows = judge_subsample(out.assign(match=out["match_offline"]), subsample, seed).index if llm is not None else []
    else:
        rows = out.index[ok]
    n_unparsed = n_failed = 0
    if len(rows):
        labels = llm.judge_many(list(out.loc[rows, "reference"]), list(out.loc[rows, "completion"]))
        out.loc[rows, "match_llm"] = pd.Series(labels, index=rows, dtype=object)
        n_unparsed, n_failed = llm.n_unparsed, getattr(llm, "n_failed", 0)
    out["match"] = out["match_offline"] if mode == "offline" else out["match_llm"]
    both = out["match_offline"].notna() & out["match_llm"].notna()
    agree = agreement(list(out.loc[both, "match_offline"]), list(out.loc[both, "match_llm"])) if both.any() else None
    return Judged(out, mode, agree, n_unparsed, len(rows), n_failed)
