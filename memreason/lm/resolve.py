"""Turn what a user types after ``--lm`` into a ``dspy.LM``.

- nothing: the embedded model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M), served by a
  ``llama-server`` this process starts on loopback (``memreason.lm.server``);
- ``local:/path/model.gguf``: any other GGUF, served the same way;
- anything else: a DSPy/LiteLLM model string (``openai/gpt-4o-mini``,
  ``anthropic/...``, ``ollama_chat/...``, ``hosted_vllm/...`` with ``--api-base``,
  ``llamacpp/NAME`` for a llama-server of your own), keys read from the provider's
  usual environment variables.

Servers are shared per model file, so the memory LM and the task LM on the same file
send their requests to one server, which decodes them together.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import dspy

from .bounded_json import BoundedJSONAdapter
from .llama_build import ServerBuildError
from .rate import RateLimit
from .server import CALL_TIMEOUT, PROVIDER, SLOTS, LlamaServerLM, ServerFailed, local_server, register_provider
from .weights import EmbeddedModelMissing, embedded_model_path

EMBEDDED = "embedded"


class LMConfigError(ValueError):
    """An LM that cannot be used as given (unknown, missing key, missing file)."""


@dataclass(frozen=True)
class LMChoice:
    """A resolved LM and how it should be driven."""

    spec: str
    lm: dspy.LM
    local: bool  # a GGUF on our own llama-server: text only, grammar-constrained JSON
    context: int | None = None  # tokens one request may hold (prompt and answer); None where not known (API models)
    limiter: RateLimit | None = None  # the role's rate limit (memreason.lm.rate), shared by every thread; None: none

    def adapter(self) -> dspy.Adapter:
        """JSON under grammar for local models (always parses); DSPy's chat format otherwise."""
        return BoundedJSONAdapter() if self.local else dspy.ChatAdapter()


def resolve_lm(
    spec: str | None,
    *,
    api_base: str | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    cache: bool = True,
    timeout: float | None = None,
    slots: int = SLOTS,
) -> LMChoice:
    """Build the LM named by ``spec`` (``None`` means the embedded model).

    A local model's server is started here (building ``llama-server`` first if this
    machine has none), so a file that is not a GGUF fails now, in one line. ``slots`` is
    how many requests it decodes together (at least; a later, larger request grows it).

    ``timeout`` (seconds) applies to API models; the harness retries timeouts, rate limits
    and server errors itself (``memreason.lm.faults``), so DSPy's own retries stay at its default
    here and are turned off only where the harness wraps the LM.
    """
    local = local_model_file(spec) if spec is not None and spec.startswith("local:") else None  # before LiteLLM's import
    import_litellm()
    if spec is None or spec == EMBEDDED:
        try:
            path = embedded_model_path()
        except EmbeddedModelMissing as exc:
            raise LMConfigError(str(exc)) from None
        return _local_choice(EMBEDDED, path, temperature, max_tokens, cache, slots)
    if local is not None:
        return _local_choice(spec, local, temperature, max_tokens, cache, slots)
    if spec.startswith(f"{PROVIDER}/"):  # a llama-server of the user's own
        if not api_base:
            raise LMConfigError(f"{spec} names a llama-server of your own: give its address with --api-base http://HOST:PORT/v1")
        register_provider()
    else:
        _check_provider(spec, api_base)
    kwargs = {"temperature": temperature, "cache": cache}
    if max_tokens:
        kwargs["max_tokens"] = max_tokens
    if api_base:
        kwargs["api_base"], key = split_credentials(api_base)
        if key:
            kwargs["api_key"] = key
    if timeout:
        kwargs["timeout"] = timeout
    try:
        lm = dspy.LM(spec, **kwargs)
    except (ValueError, TypeError, dspy.LMConfigurationError) as exc:  # the last: settings a reasoning model refuses
        raise LMConfigError(f"cannot use LM {spec!r}: {exc}") from None
    return LMChoice(spec, lm, local=False)


def import_litellm() -> None:
    """Import LiteLLM whole, in the calling thread, before any worker thread needs it.

    DSPy imports LiteLLM on first use and hands out whatever ``sys.modules`` holds; reading a
    cached answer can import it (DSPy turns a replay back into its response types). When a run's first
    tasks are answered from the cache, a worker thread can be importing LiteLLM that way while
    another makes the first live call and gets the half-imported module: "partially initialized
    module 'litellm' has no attribute 'completion'", and the task fails. Imported here first, it
    is whole before any thread starts."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: F401


def with_generation(choice: LMChoice, *, temperature: float, max_tokens: int | None) -> LMChoice:
    """``choice`` with a sampling temperature and generation cap of its own (``max_tokens=None`` keeps its cap).

    The LM is a copy (``dspy.LM.copy``): the same model, address, cache and timeout. A local
    model's copy starts no server: it finds the running one by its model file."""
    cap = "max_completion_tokens" if "max_completion_tokens" in choice.lm.kwargs else "max_tokens"  # OpenAI reasoning models
    if cap == "max_completion_tokens" and ((temperature and temperature != 1.0) or (max_tokens and max_tokens < 16000)):
        raise LMConfigError(
            f"cannot use LM {choice.spec!r} at temperature {temperature:g} with max tokens {max_tokens}: "
            "OpenAI's reasoning models take temperature 1 and max tokens of at least 16000"
        )
    changes: dict = {"temperature": temperature}
    if max_tokens is not None:
        changes[cap] = max_tokens
    return replace(choice, lm=choice.lm.copy(**changes))


def is_gguf(path: Path) -> bool:
    """Whether ``path`` starts like a GGUF file (llama.cpp's model format), read before any server starts."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"GGUF"
    except OSError:
        return False


def split_credentials(api_base: str) -> tuple[str, str | None]:
    """``api_base`` without its ``user:password@`` part, and the password (None without one).

    The address goes to the client as a host and path only (with the credentials in it, the client takes
    ``user:password@host`` for a host name); the password goes as the API key, sent in a header of its own
    (``Authorization: Bearer``, as llama-server, vLLM and LiteLLM's proxy check it)."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(api_base)
    if "@" not in parts.netloc:
        return api_base, None
    userinfo, _, host = parts.netloc.rpartition("@")
    password = userinfo.partition(":")[2] if ":" in userinfo else userinfo
    return urlunsplit(parts._replace(netloc=host)), unquote(password) or None


def local_model_file(spec: str) -> Path:
    """The GGUF file ``local:PATH`` names, or :class:`LMConfigError` at once (no import, no server) when there is none."""
    path = Path(spec.removeprefix("local:")).expanduser()
    if not path.is_file():
        raise LMConfigError(f"no GGUF file at {path}")
    if not is_gguf(path):
        raise LMConfigError(f"{path} is not a GGUF model file (it does not start with the GGUF magic bytes)")
    return path


def _local_choice(spec: str, path: Path, temperature: float, max_tokens: int | None, cache: bool, slots: int) -> LMChoice:
    server = local_server(path, slots=slots)
    try:
        server.ensure()
    except (ServerFailed, ServerBuildError) as exc:
        raise LMConfigError(str(exc)) from None
    kwargs = {"max_tokens": max_tokens} if max_tokens else {}
    lm = LlamaServerLM(f"llamacpp/{path.stem}", server, temperature=temperature, cache=cache, timeout=CALL_TIMEOUT, **kwargs)
    return LMChoice(spec, lm, local=True, context=server.context)


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
