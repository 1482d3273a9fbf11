"""An in-process llama.cpp engine for DSPy 3.4 (``dspy.LM(model, engine=LlamaCppEngine(...))``).

- JSON-schema requests (``response_format``, as DSPy's JSONAdapter sends them) are
  decoded under llama.cpp's grammar, so typed outputs always parse.
- One lock serialises calls: a llama.cpp context is not thread-safe.
- llama-cpp-python keeps the KV cache of the previous prompt and evaluates only
  the tokens after the longest shared prefix; prompts that put what repeats
  (instructions, episodes, memory) first therefore pay only for their tail. The
  engine reports the reused tokens as ``cached_tokens`` and in :attr:`stats`.
  ``reuse_prefix=False`` turns this off (used by the benchmark as its baseline).
- The embedded model reads text only: a request with an image part is refused.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dspy.lm15 import ImagePart, Response, TextPart, response_from_openai_chat, response_to_events


class TextOnlyModel(ValueError):
    """A request with images reached a model that reads only text."""


@dataclass
class EngineStats:
    """Running totals over every call this engine served."""

    calls: int = 0
    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class LlamaCppEngine:
    """Serve a GGUF model in-process with llama-cpp-python."""

    supports_response_schema = True
    supported_params = frozenset({"response_format", "max_tokens", "temperature", "top_p", "top_k", "stop", "seed"})

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        seed: int = 0,
        max_tokens: int = 1024,
        reuse_prefix: bool = True,
        verbose: bool = False,
    ):
        self.model_path = str(model_path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self.seed = seed
        self.max_tokens = max_tokens
        self.reuse_prefix = reuse_prefix
        self.verbose = verbose
        self.stats = EngineStats()
        self._lock = threading.Lock()
        self._llm = None

    # -- the engine protocol ------------------------------------------------------------

    def complete(self, request) -> Response:
        messages = _chat_messages(request)
        config = request.config
        kwargs: dict[str, Any] = {
            "max_tokens": config.max_tokens or self.max_tokens,
            "temperature": 0.0 if config.temperature is None else config.temperature,
            "seed": self.seed if config.seed is None else config.seed,
        }
        if config.top_p is not None:
            kwargs["top_p"] = config.top_p
        if config.top_k is not None:
            kwargs["top_k"] = config.top_k
        if config.stop:
            kwargs["stop"] = list(config.stop)
        response_format = _grammar_format(config.response_format)
        if response_format is not None:
            kwargs["response_format"] = response_format
        with self._lock:
            llm = self._load()
            if not self.reuse_prefix:
                llm.reset()
            previous = llm._input_ids[: llm.n_tokens].copy()
            started = time.perf_counter()
            body = llm.create_chat_completion(messages=messages, **kwargs)
            elapsed = time.perf_counter() - started
            usage = body.setdefault("usage", {})
            prompt = llm._input_ids[: usage.get("prompt_tokens", 0)]
            reused = _shared_prefix(previous, prompt) if self.reuse_prefix else 0
            usage["prompt_tokens_details"] = {"cached_tokens": reused}
            self.stats.calls += 1
            self.stats.prompt_tokens += usage.get("prompt_tokens", 0)
            self.stats.reused_prompt_tokens += reused
            self.stats.completion_tokens += usage.get("completion_tokens", 0)
            self.stats.seconds += elapsed
        return response_from_openai_chat(body, model=Path(self.model_path).name)

    def stream(self, request):
        return response_to_events(self.complete(request))

    def close(self) -> None:
        with self._lock:
            if self._llm is not None:
                self._llm.close()
                self._llm = None

    # -- saving with a program (dspy.LM state) -------------------------------------------

    def dump_state(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "n_ctx": self.n_ctx, "seed": self.seed, "max_tokens": self.max_tokens}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> "LlamaCppEngine":
        return cls(state["model_path"], n_ctx=state["n_ctx"], seed=state["seed"], max_tokens=state["max_tokens"])

    # -- internals ----------------------------------------------------------------------

    def _load(self):
        if self._llm is None:
            from llama_cpp import Llama

            self._llm = Llama(
                model_path=self.model_path,
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                seed=self.seed,
                verbose=self.verbose,
            )
        return self._llm


def _chat_messages(request) -> list[dict[str, str]]:
    """DSPy's canonical request as llama-cpp-python's OpenAI-style messages (text only)."""
    messages = []
    if request.system:
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system)
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        texts = []
        for part in message.parts:
            if isinstance(part, ImagePart):
                raise TextOnlyModel("this model reads text only; use --modality text, or a vision model with --lm")
            if isinstance(part, TextPart):
                texts.append(part.text)
        role = "user" if message.role == "developer" else message.role
        messages.append({"role": role, "content": "".join(texts)})
    return messages


def _grammar_format(response_format: dict | None) -> dict | None:
    """DSPy asks ``{"type": "json_schema", "schema": ...}``; llama-cpp-python wants ``json_object`` + schema."""
    if not response_format:
        return None
    kind = response_format.get("type")
    if kind == "json_schema":
        schema = response_format.get("schema") or response_format.get("json_schema", {}).get("schema")
        return {"type": "json_object", "schema": schema} if schema else {"type": "json_object"}
    if kind == "json_object":
        return dict(response_format)
    return None


def _shared_prefix(a, b) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    mismatch = (a[:n] != b[:n]).nonzero()[0]
    return int(mismatch[0]) if len(mismatch) else n
