"""Two backends behind :class:`iclmem.llm.chat.ChatBackend`.

* :class:`InProcessBackend`: a ``transformers`` causal LM in this process, greedy decoding written out
  token by token. Within one (k, setting) the demonstrations are identical for every instance, so the
  prompts of a batch share a long token prefix: it is computed once and its KV cache reused for every
  instance (cropped back after each generation). ``prefix_cache=False`` recomputes it per instance.
  Decoding is memory-bound on a CPU (every step reads all weights), so ``batch_size`` instances are
  decoded together, each attending to the shared prefix and its own suffix; for Llama-family models the
  prefix's keys and values are read once per step for the whole batch and a row that has ended is refilled
  from the queue at once (:mod:`iclmem.llm.decoding`; ``continuous=False`` for static batches,
  ``cascade=False`` for the model's own forward). ``complete_iter`` hands over each completion as soon as it
  is done (the model's own forward: each decoding batch).
* :class:`OpenAIBackend`: the ``openai`` client against any OpenAI-compatible server (OpenAI for GPT-4 as
  in the paper, Sec. 4 "Model"; vLLM, ``transformers serve``, Ollama). Base URL, model and key come from
  environment variables; up to ``ICLMEM_OPENAI_CONCURRENCY`` requests (default 8) are in flight at once;
  errors are retried with exponential backoff, or as long as the server's ``Retry-After`` asks, and then
  reported per request. ``complete_iter`` hands over each completion as soon as its response arrives (in
  arrival order), so the cache stores it at once; ``complete_batch`` returns them in request order.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from itertools import islice
from typing import Any

from iclmem.llm.chat import ChatRequest, Completion, ContextOverflowError, MissingAPIKeyError, apply_stop
from iclmem.llm.decoding import Row, SharedPrefixDecoder, continuous_greedy
from iclmem.llm.decoding import supports as supports_cascade
from iclmem.llm.pacing import Pacer, concurrency_from_env, positive_int, retry_after_seconds, rpm_from_env


def _common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class InProcessBackend:
    """Greedy chat completions from a local model (default: SmolLM2-135M-Instruct, see :mod:`iclmem.llm.model`).

    ``model_id`` names the weights in cache keys: a fine-tuned copy must get its own id. The model is
    built lazily (``model_factory``) on the first request that the disk cache cannot answer, so a fully
    cached re-run loads no weights; the tokenizer is loaded eagerly to count tokens.
    """

    name = "inprocess"
    base_url: str | None = None  # no server: the cache keys on backend and model_id alone

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        model_id: str | None = None,
        prefix_cache: bool = True,
        min_prefix: int = 16,
        model_factory: Callable[[], Any] | None = None,
        context_window: int | None = None,
        batch_size: int = 48,  # benchmarks/llm_decoding.py: the fastest measured on the book's prompts
        cascade: bool = True,
        continuous: bool = True,
    ) -> None:
        if model is None and model_factory is None and tokenizer is None:
            from iclmem.llm.model import MODEL_ID, ensure_model_dir, load_model, load_tokenizer

            folder = ensure_model_dir()
            tokenizer = load_tokenizer(folder)
            model_factory = lambda: load_model(folder)[0]  # noqa: E731
            model_id = model_id or MODEL_ID
            if context_window is None:
                context_window = json.loads((folder / "config.json").read_text()).get("max_position_embeddings")
        if tokenizer is None or model_id is None or (model is None and model_factory is None):
            raise ValueError("pass a tokenizer, a model_id and a model (or a model_factory)")
        self._model = model.eval() if model is not None else None
        self._model_factory = model_factory
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.prefix_cache = prefix_cache
        self.min_prefix = min_prefix
        self.batch_size = max(1, batch_size)
        self.cascade = cascade  # shared-prefix attention (iclmem.llm.decoding) where the model supports it
        self.continuous = continuous  # cascade: refill a row that has ended from the queue (else static batches)
        if context_window is None and model is not None:
            context_window = getattr(model.config, "max_position_embeddings", None)
        self.context_window: int | None = context_window
        stops = (tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|endoftext|>"))
        self.stop_token_ids = {t for t in stops if t is not None}
        self._prefix_ids: list[int] = []
        self._prefix_cache: Any = None
        self.prefill_tokens = 0  # tokens run through the model to build prompts (benchmark counter)
        self.generated_tokens = 0

    @property
    def model(self) -> Any:
        if self._model is None:
            assert self._model_factory is not None
            self._model = self._model_factory().eval()
        return self._model

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    # -- prompts ---------------------------------------------------------------------------------------
    def prompt_ids(self, request: ChatRequest) -> list[int]:
        """Token ids of the chat-templated prompt, ending with the assistant turn opener."""
        out = self.tokenizer.apply_chat_template(request.message_dicts(), add_generation_prompt=True, tokenize=True)
        if hasattr(out, "keys") and "input_ids" in out:
            out = out["input_ids"]
        return list(out)

    def count_tokens(self, request: ChatRequest) -> int:
        return len(self.prompt_ids(request))

    def check_fits(self, n_prompt: int, max_new_tokens: int) -> None:
        if self.context_window is not None and n_prompt + max_new_tokens > self.context_window:
            raise ContextOverflowError(
                f"prompt of {n_prompt} tokens + {max_new_tokens} new tokens exceeds the context window of "
                f"{self.context_window} tokens of {self.model_id}; use a smaller k or fewer new tokens "
                "(prompts are never truncated)"
            )

    # -- KV cache --------------------------------------------------------------------------------------
    def _forward(self, ids: list[int], cache: Any) -> Any:
        import torch

        x = torch.tensor([ids], dtype=torch.long)
        self.prefill_tokens += len(ids)
        return self.model(input_ids=x, cache=cache, use_cache=True, logits_to_keep=1)

    def _set_prefix(self, prefix: list[int]) -> None:
        """Make the stored KV cache hold exactly ``prefix`` (reusing what it shares with the stored one)."""
        from transformers import DynamicCache

        shared = _common_prefix_len(self._prefix_ids, prefix)
        if self._prefix_cache is None or shared == 0:
            self._prefix_cache, self._prefix_ids, shared = DynamicCache(config=self.model.config), [], 0
        elif shared < len(self._prefix_ids):
            self._prefix_cache.crop(shared - len(self._prefix_ids))
            self._prefix_ids = self._prefix_ids[:shared]
        if shared < len(prefix):
            self._forward(prefix[shared:], self._prefix_cache)
            self._prefix_ids = list(prefix)

    def _batch_cache(self, batch: int, prefix_len: int) -> Any:
        """A cache for ``batch`` rows: the stored prefix itself (one row) or a copy repeated per row."""
        from transformers import DynamicCache

        if prefix_len == 0:
            return DynamicCache(config=self.model.config)
        if batch == 1:
            return self._prefix_cache
        cache = DynamicCache(config=self.model.config)
        for i, layer in enumerate(self._prefix_cache.layers):
            keys, values = (t.expand(batch, -1, -1, -1).contiguous() for t in (layer.keys, layer.values))
            cache.update(keys, values, i)
        return cache

    def _generate(self, all_ids: list[list[int]], prefix_len: int, decodings: list[Any]) -> list[tuple[str, int]]:
        """Greedy decoding of a batch of prompts whose first ``prefix_len`` tokens are in the stored prefix cache.

        Suffixes are left-padded between the shared prefix and the prompt ends (masked, with explicit
        positions), so every row attends exactly to its own prompt.
        """
        suffixes = [ids[prefix_len:] for ids in all_ids]
        self.prefill_tokens += sum(len(suf) for suf in suffixes)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        return self._generate_plain(suffixes, prefix_len, decodings, pad)

    def _generate_cascade(
        self, todo: list[int], all_ids: list[list[int]], requests: Sequence[ChatRequest], prefix_len: int
    ) -> Iterator[tuple[int, Completion]]:
        """Requests ``todo`` through :func:`iclmem.llm.decoding.continuous_greedy`, ``batch_size`` slots over the
        stored prefix; each completion is handed over as soon as its row ends."""
        import torch

        rows = [
            Row(all_ids[i][prefix_len:], requests[i].decoding.max_new_tokens, requests[i].decoding.stop) for i in todo
        ]
        self.prefill_tokens += sum(len(r.suffix) for r in rows)
        capacity = max(len(r.suffix) for r in rows) + max(1, max(r.max_new_tokens for r in rows))
        with torch.inference_mode():
            prefix = [(layer.keys, layer.values) for layer in self._prefix_cache.layers] if prefix_len else None
            decoder = SharedPrefixDecoder(self.model, prefix, prefix_len, min(self.batch_size, len(rows)), capacity)
        decode = lambda ids: self.tokenizer.decode(ids, skip_special_tokens=True)  # noqa: E731
        for j, text, new in continuous_greedy(
            decoder, rows, self.stop_token_ids, decode, apply_stop, refill=self.continuous
        ):
            self.generated_tokens += len(new)
            yield todo[j], Completion(text, len(all_ids[todo[j]]), len(new))

    def _greedy(self, logits: Any, step: Callable[[Any], Any], decodings: list[Any]) -> list[tuple[str, int]]:
        """The greedy loop: argmax per row, stop tokens and stop strings, until every row is done."""
        batch = len(decodings)
        new: list[list[int]] = [[] for _ in range(batch)]
        texts = [""] * batch
        done = [False] * batch
        for _ in range(max(d.max_new_tokens for d in decodings)):
            nxt = logits.argmax(-1)
            for r in range(batch):
                if done[r]:
                    continue
                tok = int(nxt[r])
                if tok in self.stop_token_ids:
                    done[r] = True
                    continue
                new[r].append(tok)
                self.generated_tokens += 1
                texts[r] = self.tokenizer.decode(new[r], skip_special_tokens=True)
                if len(new[r]) >= decodings[r].max_new_tokens or apply_stop(texts[r], decodings[r].stop)[1]:
                    done[r] = True
            if all(done):
                break
            logits = step(nxt)
        return [(apply_stop(t, d.stop)[0], len(n)) for t, d, n in zip(texts, decodings, new, strict=True)]

    def _generate_plain(
        self, suffixes: list[list[int]], prefix_len: int, decodings: list[Any], pad: int
    ) -> list[tuple[str, int]]:
        """The model's own forward, the prefix cache copied per row (for models the cascade decoder does not drive)."""
        import torch

        batch = len(suffixes)
        width = max(len(x) for x in suffixes)
        x = torch.full((batch, width), pad, dtype=torch.long)
        mask = torch.zeros((batch, prefix_len + width), dtype=torch.long)
        mask[:, :prefix_len] = 1
        pos = torch.zeros((batch, width), dtype=torch.long)
        for r, suf in enumerate(suffixes):
            x[r, width - len(suf) :] = torch.tensor(suf)
            mask[r, prefix_len + width - len(suf) :] = 1
            pos[r, width - len(suf) :] = torch.arange(prefix_len, prefix_len + len(suf))
        state = {"mask": mask, "pos": torch.tensor([prefix_len + len(suf) for suf in suffixes])}
        cache = self._batch_cache(batch, prefix_len)

        def step(nxt: Any) -> Any:
            state["mask"] = torch.cat([state["mask"], torch.ones((batch, 1), dtype=torch.long)], 1)
            out = self.model(
                input_ids=nxt[:, None],
                attention_mask=state["mask"],
                position_ids=state["pos"][:, None],
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            state["pos"] = state["pos"] + 1
            return out.logits[:, -1]

        try:
            out = self.model(
                input_ids=x, attention_mask=mask, position_ids=pos, cache=cache, use_cache=True, logits_to_keep=1
            )
            return self._greedy(out.logits[:, -1], step, decodings)
        finally:
            if prefix_len and batch == 1:
                cache.crop(prefix_len - cache.get_seq_length())  # the stored prefix again

    # -- interface -------------------------------------------------------------------------------------
    def complete_batch(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Greedy completions; prompts that overflow the context window get an error, never a truncation."""
        out: list[Completion | None] = [None] * len(requests)
        for i, completion in self.complete_iter(requests):
            out[i] = completion
        return [c for c in out if c is not None]

    def complete_iter(self, requests: Sequence[ChatRequest]) -> Iterator[tuple[int, Completion]]:
        """``(index, completion)`` per request: overflow errors first, then each decoding batch as it is done."""
        import torch

        all_ids = [self.prompt_ids(r) for r in requests]
        todo = []
        for i, (request, ids) in enumerate(zip(requests, all_ids, strict=True)):
            try:
                self.check_fits(len(ids), request.decoding.max_new_tokens)
                todo.append(i)
            except ContextOverflowError as e:
                yield i, Completion("", len(ids), 0, error=str(e))
        prefix_len = 0
        if self.prefix_cache and todo:
            first = all_ids[todo[0]]
            prefix_len = min(len(all_ids[i]) for i in todo) - 1  # at least one prompt token is fed per request
            for i in todo[1:]:
                prefix_len = min(prefix_len, _common_prefix_len(first, all_ids[i]))
            if len(todo) == 1:  # a lone request shares with the stored prefix only
                prefix_len = min(prefix_len, _common_prefix_len(self._prefix_ids, first))
            if prefix_len < self.min_prefix:
                prefix_len = 0
        if todo:
            _ = self.model  # build a lazy model (which may fine-tune) outside inference mode
        if prefix_len:
            with torch.inference_mode():
                self._set_prefix(all_ids[todo[0]][:prefix_len])
        if todo and self.cascade and supports_cascade(self.model):
            yield from self._generate_cascade(todo, all_ids, requests, prefix_len)
            return
        for start in range(0, len(todo), self.batch_size):
            idx = todo[start : start + self.batch_size]
            with torch.inference_mode():  # entered per batch: the consumer runs between yields outside it
                results = self._generate([all_ids[i] for i in idx], prefix_len, [requests[i].decoding for i in idx])
            for i, (text, n_new) in zip(idx, results, strict=True):
                yield i, Completion(text, len(all_ids[i]), n_new)


# ---------------------------------------------------------------------------------------------------------
#: Characters per token of :func:`lower_token_estimate`: more than any common BPE tokenizer averages on English or
#: on serialized table rows (GPT-4's cl100k averages about 4), so the estimate stays below the true count.
CHARS_PER_TOKEN_LOWER = 6


def lower_token_estimate(request: ChatRequest) -> int:
    """A lower estimate of a remote model's prompt tokens: one token per :data:`CHARS_PER_TOKEN_LOWER` characters
    plus 3 per message (OpenAI's chat format adds 3-4). Used to leave out only the ks that cannot fit: an upper
    estimate would drop a k = 200 that fits GPT-4's 32k window (Sec. 4 "Model")."""
    return sum(len(c) // CHARS_PER_TOKEN_LOWER + 3 for _, c in request.messages)


ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = "ICLMEM_OPENAI_MODEL"
ENV_CONTEXT = "ICLMEM_OPENAI_CONTEXT"
DEFAULT_BASE_URL = "https://api.openai.com/v1"  # the openai client's default when OPENAI_BASE_URL is unset
#: HTTP statuses of a request the server refuses as such (malformed, over its window): retrying fails the same way.
_NOT_RETRIED = frozenset(range(400, 500)) - {408, 409, 429}


class OpenAIBackend:
    """Greedy chat completions from an OpenAI-compatible server, up to ``concurrency`` requests in flight.

    Configuration comes from the environment (never from notebook parameters): ``OPENAI_API_KEY``
    (required; any non-empty value for local servers), ``OPENAI_BASE_URL`` (default: OpenAI),
    ``ICLMEM_OPENAI_MODEL`` (required; the paper's generator was ``gpt-4-32k`` in its 0613 snapshot, Azure's
    ``gpt-4-0613-32k``, with ``ICLMEM_OPENAI_CONTEXT=32768``; its judge ``gpt-4-0613``), ``ICLMEM_OPENAI_CONTEXT``
    (context window in tokens, optional; without it :meth:`adopt_reported_window` reads the window a server such
    as vLLM reports, and with neither the window is unknown and no prompt is checked against it),
    ``ICLMEM_OPENAI_CONCURRENCY`` (requests in flight, default 8) and ``ICLMEM_OPENAI_RPM`` (request starts per
    minute, default unpaced); see :mod:`iclmem.llm.pacing`. :attr:`base_url` is always set (OpenAI's when none
    is given), as it is part of the cache key; the API key is never stored by this class, keyed on, logged or put
    in an error (the client holds it; :meth:`_redact` removes it from any message a server echoes).

    **Retries are this class's, not the client's** (the ``openai`` client runs with ``max_retries=0``, so one
    budget applies, not two multiplied). ``timeout`` bounds each HTTP request; a request that fails is retried
    ``retries`` times, waiting ``backoff * 2**attempt`` seconds or, when the response carries ``Retry-After``
    (seconds or an HTTP date) or ``retry-after-ms``, at least that long (capped at ``max_retry_after``), and the
    whole window waits with it (:class:`~iclmem.llm.pacing.Pacer`). A request the server refuses (HTTP 4xx other
    than 408, 409, 429) is not retried. The last error is reported in :attr:`Completion.error`, never raised.
    """

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 2.0,
        context_window: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        concurrency: int | None = None,
        rpm: int | None = None,
        max_retry_after: float = 600.0,
    ) -> None:
        api_key = api_key or os.environ.get(ENV_API_KEY)
        if not api_key:
            raise MissingAPIKeyError(
                f"the OpenAI-compatible backend needs an API key: set the environment variable {ENV_API_KEY} "
                "(any non-empty value for a local server such as vLLM or `transformers serve`)"
            )
        model = model or os.environ.get(ENV_MODEL)
        if not model:
            raise MissingAPIKeyError(
                f"the OpenAI-compatible backend needs a model name: set the environment variable "
                f"{ENV_MODEL} to the model the server serves (the paper's generator: gpt-4-32k, 32k window)"
            )
        try:
            from openai import OpenAI
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(
                "the OpenAI-compatible backend needs the `openai` package: pip install 'iclmem[llm]'"
            ) from e
        self.base_url: str = base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL
        self.model_id = model
        if context_window is None and os.environ.get(ENV_CONTEXT):
            context_window = int(os.environ[ENV_CONTEXT])
        self.context_window = context_window
        self.concurrency = (
            concurrency_from_env()
            if concurrency is None
            else positive_int(concurrency, "concurrency", "the number of requests in flight", 8)
        )
        rpm = rpm_from_env() if rpm is None else positive_int(rpm, "rpm", "the requests per minute allowed", 500)
        self.client = OpenAI(api_key=api_key, base_url=self.base_url, timeout=timeout, max_retries=0)
        self.retries = retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.sleep = sleep
        self.pacer = Pacer(rpm, sleep=sleep)
        self._lock = threading.Lock()
        self.calls = 0
        self._token_counts: dict[str, int] = {}
        self._tokenize_ok: bool | None = None

    def reported_context_window(self) -> int | None:
        """The context window the server reports for :attr:`model_id` in ``/v1/models`` (vLLM: ``max_model_len``;
        also read: ``context_length``, ``context_window``, ``max_context_length``), or ``None`` when it reports
        none or cannot be asked. One request, not retried; OpenAI's own API reports no window (set
        ``ICLMEM_OPENAI_CONTEXT``)."""
        try:
            models = self.client.models.list().data
        except Exception:  # noqa: BLE001 - a server without /models, or offline: the window stays unknown
            return None
        for m in models:
            if getattr(m, "id", None) != self.model_id:
                continue
            extra = {**(getattr(m, "model_extra", None) or {})}
            for key in ("max_model_len", "context_length", "context_window", "max_context_length"):
                value = extra.get(key)
                if isinstance(value, int) and value > 0:
                    return value
        return None

    def adopt_reported_window(self) -> int | None:
        """Set :attr:`context_window` from :meth:`reported_context_window` when ``ICLMEM_OPENAI_CONTEXT`` gave none."""
        if self.context_window is None:
            self.context_window = self.reported_context_window()
        return self.context_window

    def count_tokens(self, request: ChatRequest) -> int:
        """Prompt tokens of ``request``: exact from the server's tokenizer where it has one (vLLM's ``/tokenize``,
        asked once and then remembered), else :func:`lower_token_estimate`, which never leaves out a k that fits
        (a prompt over the window despite it is refused by the server, reported per request, never retried)."""
        key = request.prompt_hash()
        if key not in self._token_counts:
            exact = self._server_count(request)
            self._token_counts[key] = exact if exact is not None else lower_token_estimate(request)
        return self._token_counts[key]

    @property
    def exact_token_counts(self) -> bool | None:
        """Whether :meth:`count_tokens` reads the server's tokenizer (None: not asked yet)."""
        return self._tokenize_ok

    def _server_count(self, request: ChatRequest) -> int | None:
        """The prompt's token count from the server's ``/tokenize`` endpoint (vLLM: ``{"count": n}`` for
        chat messages, with the chat template), or None when the server has none (asked once)."""
        if self._tokenize_ok is False:
            return None
        import urllib.request

        root = self.base_url.rstrip("/").removesuffix("/v1")
        body = {"model": self.model_id, "messages": request.message_dicts(), "add_generation_prompt": True}
        req = urllib.request.Request(
            f"{root}/tokenize",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.client.api_key}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10.0) as resp:  # noqa: S310 - the user's own server URL
                count = json.loads(resp.read()).get("count")
        except Exception:  # noqa: BLE001 - no such endpoint (OpenAI), offline: the estimate is used
            count = None
        self._tokenize_ok = isinstance(count, int)
        return count if isinstance(count, int) else None

    def _once(self, request: ChatRequest) -> Completion:
        with self._lock:
            self.calls += 1
        resp = self.client.chat.completions.create(
            model=self.model_id,
            messages=request.message_dicts(),  # type: ignore[arg-type]
            max_tokens=request.decoding.max_new_tokens,
            temperature=0.0,
            stop=list(request.decoding.stop) or None,
        )
        text = resp.choices[0].message.content or ""
        usage = resp.usage
        return Completion(
            apply_stop(text, request.decoding.stop)[0],
            getattr(usage, "prompt_tokens", None),
            getattr(usage, "completion_tokens", None),
        )

    def _redact(self, text: str) -> str:
        """``text`` without the API key (a server may echo the key it refused)."""
        key = getattr(self.client, "api_key", "")
        return text.replace(key, "***") if key else text

    def complete_one(self, request: ChatRequest) -> Completion:
        """One request, retried with exponential backoff or as long as ``Retry-After`` asks (see the class); the
        last error is reported, never raised. A request the server refuses as malformed (HTTP 4xx other than 408,
        409 and 429, e.g. a prompt over its context window) is not retried: it would fail the same way."""
        error = ""
        for attempt in range(self.retries + 1):
            self.pacer.wait()
            try:
                return self._once(request)
            except Exception as e:  # noqa: BLE001 - every API error is reported per instance
                error = self._redact(f"{type(e).__name__}: {e}")
                status = getattr(e, "status_code", None)
                if isinstance(status, int) and status in _NOT_RETRIED:
                    return Completion("", error=f"refused by the server (HTTP {status}), not retried: {error}")
                if attempt < self.retries:
                    asked = retry_after_seconds(getattr(getattr(e, "response", None), "headers", None))
                    delay = self.backoff * 2**attempt
                    if asked is not None:
                        asked = min(asked, self.max_retry_after)
                        self.pacer.hold(asked)  # the whole window waits, not only this request
                        delay = max(delay, asked)
                    self.sleep(delay)
        return Completion("", error=f"failed after {self.retries + 1} attempts: {error}")

    def complete_iter(self, requests: Sequence[ChatRequest]) -> Iterator[tuple[int, Completion]]:
        """``(index, completion)`` for each request as soon as its response arrives, up to :attr:`concurrency`
        requests in flight (a bounded window: the next request is sent when one returns, before the completion is
        handed over, so the window stays full while the consumer writes it to the cache). Arrival order, not
        request order; :meth:`complete_batch` puts them in request order. Closing the iterator early cancels the
        requests not yet sent (those in flight finish in the background and are dropped)."""
        if self.concurrency == 1 or len(requests) <= 1:
            for i, request in enumerate(requests):
                yield i, self.complete_one(request)
            return
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests)), thread_name_prefix="iclmem-openai")
        queue = iter(enumerate(requests))
        pending: dict[Future[Completion], int] = {}
        try:
            for i, request in islice(queue, self.concurrency):
                pending[pool.submit(self.complete_one, request)] = i
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=pending.__getitem__):
                    i = pending.pop(future)
                    following = next(queue, None)
                    if following is not None:
                        pending[pool.submit(self.complete_one, following[1])] = following[0]
                    yield i, future.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def complete_batch(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Every completion, in request order (sent :attr:`concurrency` at a time)."""
        out: list[Completion | None] = [None] * len(requests)
        for i, completion in self.complete_iter(requests):
            out[i] = completion
        return [c for c in out if c is not None]


def make_backend(kind: str, **kwargs: Any) -> InProcessBackend | OpenAIBackend:
    """``"inprocess"`` or ``"openai"`` (the notebook's ``backend`` parameter)."""
    if kind == "inprocess":
        return InProcessBackend(**kwargs)
    if kind == "openai":
        return OpenAIBackend(**kwargs)
    raise ValueError(f"unknown backend {kind!r}; choose 'inprocess' or 'openai'")
