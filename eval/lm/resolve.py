"""Turn what a user types after ``--lm`` into a ``dspy.LM``.

- nothing: the embedded model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M) in-process;
- ``local:/path/model.gguf``: any other GGUF, in-process;
- anything else: a DSPy/LiteLLM model string (``openai/gpt-4o-mini``,
  ``anthropic/...``, ``ollama_chat/...``, ``hosted_vllm/...`` with ``--api-base``),
  keys read from the provider's usual environment variables.

In-process engines are shared per model file, so the memory LM and the task LM
on the same file use one llama.cpp context behind one lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import dspy

from .bounded_json import BoundedJSONAdapter
from .local import LlamaCppEngine
from .weights import EmbeddedModelMissing, embedded_model_path

EMBEDDED = "embedded"


class LMConfigError(ValueError):
    """An LM that cannot be used as given (unknown, missing key, missing file)."""


@dataclass(frozen=True)
class LMChoice:
    """A resolved LM and how it should be driven."""

    spec: str
    lm: dspy.LM
    local: bool  # in-process llama.cpp: text only, serialised, grammar-constrained JSON

    def adapter(self) -> dspy.Adapter:
        """JSON under grammar for in-process models (always parses); DSPy's chat format otherwise."""
        return BoundedJSONAdapter() if self.local else dspy.ChatAdapter()


_engines: dict[str, LlamaCppEngine] = {}
_engines_lock = threading.Lock()


def local_engine(path: str | Path, **options) -> LlamaCppEngine:
    """The shared in-process engine for one GGUF file."""
    key = str(Path(path).resolve())
    with _engines_lock:
        if key not in _engines:
            _engines[key] = LlamaCppEngine(key, **options)
        return _engines[key]


def resolve_lm(
    spec: str | None,
    *,
    api_base: str | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    cache: bool = True,
    timeout: float | None = None,
) -> LMChoice:
    """Build the LM named by ``spec`` (``None`` means the embedded model).

    ``timeout`` (seconds) applies to API models; the harness retries timeouts, rate limits
    and server errors itself (``eval.faults``), so DSPy's own retries stay at its default
    here and are turned off only where the harness wraps the LM.
    """
    if spec is None or spec == EMBEDDED:
        try:
            path = embedded_model_path()
        except EmbeddedModelMissing as exc:
            raise LMConfigError(str(exc)) from None
        return _local_choice(EMBEDDED, path, temperature, max_tokens, cache)
    if spec.startswith("local:"):
        path = Path(spec.removeprefix("local:")).expanduser()
        if not path.is_file():
            raise LMConfigError(f"no GGUF file at {path}")
        return _local_choice(spec, path, temperature, max_tokens, cache)
    _check_provider(spec, api_base)
    kwargs = {"temperature": temperature, "cache": cache}
    if max_tokens:
        kwargs["max_tokens"] = max_tokens
    if api_base:
        kwargs["api_base"] = api_base
    if timeout:
        kwargs["timeout"] = timeout
    try:
        lm = dspy.LM(spec, **kwargs)
    except (ValueError, TypeError) as exc:
        raise LMConfigError(f"cannot use LM {spec!r}: {exc}") from None
    return LMChoice(spec, lm, local=False)


def _local_choice(spec: str, path: Path, temperature: float, max_tokens: int | None, cache: bool) -> LMChoice:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        raise LMConfigError("in-process models need llama-cpp-python: pip install -e '.[local]'") from None
    engine = local_engine(path)
    if max_tokens:
        engine.max_tokens = max_tokens
    lm = dspy.LM(f"local/{path.stem}", engine=engine, temperature=temperature, cache=cache)
    return LMChoice(spec, lm, local=True)


def _check_provider(spec: str, api_base: str | None) -> None:
    """Refuse unknown providers and missing keys before any call is made."""
    import litellm

    litellm.suppress_debug_info = True
    try:
        _, provider, _, _ = litellm.get_llm_provider(spec, api_base=api_base)
    except Exception:
        raise LMConfigError(
            f"unknown LM {spec!r}: give a provider/model string such as openai/gpt-4o-mini, "
            "or local:/path/model.gguf, or leave --lm out for the embedded model"
        ) from None
    if api_base:  # self-hosted servers often need no key
        return
    try:
        env = litellm.validate_environment(model=spec)
    except Exception:
        return
    missing = [key for key in env.get("missing_keys") or [] if not key.endswith("_API_BASE")]  # bases have defaults
    if missing:
        raise LMConfigError(f"LM {spec!r} ({provider}) needs {', '.join(missing)} in the environment")
