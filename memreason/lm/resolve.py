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

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import dspy

from .bounded_json import BoundedJSONAdapter
from .config_error import LMConfigError
from .llama_build import ServerBuildError
from .rate import RateLimit
from .reasoning import Adapted, fit_settings
from .redact import credential_refused, credentials_in
from .server import CALL_TIMEOUT, PROVIDER, SLOTS, LlamaServerLM, ServerFailed, local_server, register_provider
from .weights import EmbeddedModelMissing, embedded_model_path

EMBEDDED = "embedded"
# Keyword settings DSPy's native OpenAI-chat route leaves out of the request unless they travel in ``extra_body``:
# an OpenAI-compatible server (vLLM, llama-server) takes them at the top level of the body.
BODY_EXTRAS = ("top_k",)
# Providers whose servers speak OpenAI's chat format and take such extras.
OPENAI_COMPATIBLE = ("openai", "hosted_vllm", "llamacpp")
# An LM's keywords that are no generation settings (its client, its cache, its cap under either name).
CLIENT_KEYWORDS = (
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "api_base",
    "api_key",
    "cache",
    "timeout",
    "num_retries",
    "extra_body",
    "rollout_id",
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LMChoice:
    """A resolved LM and how it should be driven."""

    spec: str
    lm: dspy.LM
    local: bool  # a GGUF on our own llama-server: text only, grammar-constrained JSON
    context: int | None = None  # tokens one request may hold (prompt and answer); None where not known (API models)
    adapted: tuple[Adapted, ...] = ()  # defaults changed to what the model's provider takes (memreason.lm.reasoning)
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
    extra: Mapping[str, Any] | None = None,
    given: Mapping[str, str] | None = None,
    role: str = "task LM",
    deterministic: bool = False,
) -> LMChoice:
    """Build the LM named by ``spec`` (``None`` means the embedded model).

    ``deterministic``: a local model's server in its deterministic mode (one request at a time, no cached prompt
    prefix: :class:`memreason.lm.server.LlamaServer`); refused for any other model.

    ``extra``: any other keyword the provider takes (``reasoning_effort``, ``top_p``, ``thinking``, ``seed``, ...),
    sent with every call. ``given``: setting -> where the user gave it (``--temperature``, ``--lm-arg top_p``); the
    settings a reasoning model refuses are refused in one line naming it and ``role``, while defaults it would refuse
    are adapted (:mod:`memreason.lm.reasoning`; ``choice.adapted`` says what changed). Without ``given``, a setting is
    given when it differs from this function's default (and every ``extra`` is).

    A local model's server is started here (building ``llama-server`` first if this
    machine has none), so a file that is not a GGUF fails now, in one line. ``slots`` is
    how many requests it decodes together (at least; a later, larger request grows it).

    ``timeout`` (seconds) applies to API models; the harness retries timeouts, rate limits
    and server errors itself (``memreason.lm.faults``), so DSPy's own retries stay at its default
    here and are turned off only where the harness wraps the LM.
    """
    local = local_model_file(spec) if spec is not None and spec.startswith("local:") else None  # before LiteLLM's import
    extra = dict(extra or {})
    check_extra(extra, role)
    if given is None:
        given = {key: key for key in extra}
        given.update({"temperature": "temperature"} if temperature != 0.0 else {})
        given.update({"max_tokens": "max_tokens"} if max_tokens is not None else {})
    on_server = spec is None or spec == EMBEDDED or local is not None
    if deterministic and not on_server:
        raise LMConfigError(f"--deterministic is a mode of the embedded model's server (or local:PATH.gguf), not of {spec}")
    fitted = fit_settings(
        None if on_server else spec, {"temperature": temperature, "max_tokens": max_tokens, **extra}, given=given, role=role
    )
    _log_adapted(fitted.adapted)
    settings = fitted.settings
    temperature, max_tokens = settings.pop("temperature"), settings.pop("max_tokens")
    import_litellm()
    if spec is None or spec == EMBEDDED:
        try:
            path = embedded_model_path()
        except EmbeddedModelMissing as exc:
            raise LMConfigError(str(exc)) from None
        _say_embedded(path)
        return _local_choice(EMBEDDED, path, temperature, max_tokens, cache, slots, settings, deterministic)
    if local is not None:
        return _local_choice(spec, local, temperature, max_tokens, cache, slots, settings, deterministic)
    if spec.startswith(f"{PROVIDER}/"):  # a llama-server of the user's own
        if not api_base:
            raise LMConfigError(f"{spec} names a llama-server of your own: give its address with --api-base http://HOST:PORT/v1")
        register_provider()
    else:
        _check_provider(spec, api_base)
    kwargs = {"temperature": temperature, "cache": cache, **wire_extras(spec, settings)}
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
    return LMChoice(spec, lm, local=False, adapted=tuple(fitted.adapted))


def check_extra(extra: Mapping[str, Any], role: str) -> None:
    """Refuse, in one line, a credential among the keyword settings, at any depth (``api_key``, ``API_KEY``,
    ``extra_headers.Authorization``, ``extra_body.api_key``: :func:`memreason.lm.redact.credentials_in`)."""
    found = credentials_in(dict(extra))
    if found:
        raise LMConfigError(credential_refused(found[0], role))


def wire_extras(spec: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` as ``dspy.LM`` keywords for ``spec``: on an OpenAI-compatible server, :data:`BODY_EXTRAS` travel in
    ``extra_body`` (DSPy's native route would leave them out of the request)."""
    out = dict(settings)
    if spec.partition("/")[0] in OPENAI_COMPATIBLE:
        moved = {key: out.pop(key) for key in BODY_EXTRAS if key in out}
        if moved:
            out["extra_body"] = {**moved, **(out.get("extra_body") or {})}
    return out


_SAID: set[str] = set()


def _say_embedded(path: Path) -> None:
    """Say once a process, before its first call, that the embedded model answers (no --lm named another)."""
    if str(path) not in _SAID:
        _SAID.add(str(path))
        log.info("no --lm given: the embedded model answers (%s, on llama-server at loopback)", path.name)


def _log_adapted(adapted: list[Adapted]) -> None:
    for change in adapted:
        log.info("note: %s", change.line())


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


def with_generation(
    choice: LMChoice,
    *,
    temperature: float,
    max_tokens: int | None,
    extra: Mapping[str, Any] | None = None,
    given: Mapping[str, str] | None = None,
    role: str = "memory LM",
) -> LMChoice:
    """``choice`` with a sampling temperature, generation cap and keyword settings of its own (``max_tokens=None``
    keeps its cap; ``extra`` adds to its keywords).

    The settings are fitted to the model as :func:`resolve_lm` fits them; without ``given`` every one counts as
    given (refused, not adapted, where the model's provider refuses it). A temperature of 0 is a temperature: an
    OpenAI reasoning model's copy at 0 is refused, or adapted to 1 where ``given`` leaves it out.

    The LM is a copy (``dspy.LM.copy``): the same model, address, cache and timeout. A local
    model's copy starts no server: it finds the running one by its model file."""
    extra = dict(extra or {})
    check_extra(extra, role)
    if given is None:
        given = {"temperature": "temperature", "max_tokens": "max_tokens", **{key: key for key in extra}}
    kept = {k: v for k, v in choice.lm.kwargs.items() if k not in CLIENT_KEYWORDS and k not in extra}  # the copy keeps them
    fitted = fit_settings(
        None if choice.local else choice.spec,
        {"temperature": temperature, "max_tokens": max_tokens, **kept, **extra},
        given={**{key: key for key in kept}, **given},
        role=role,
    )
    _log_adapted(fitted.adapted)
    settings = {k: v for k, v in fitted.settings.items() if k not in kept}
    cap = "max_completion_tokens" if "max_completion_tokens" in choice.lm.kwargs else "max_tokens"  # OpenAI reasoning models
    changes: dict = {"temperature": settings.pop("temperature")}
    if (tokens := settings.pop("max_tokens")) is not None:
        changes[cap] = tokens
    changes.update(wire_extras("llamacpp/" if choice.local else choice.spec, settings))
    return replace(choice, lm=choice.lm.copy(**changes), adapted=tuple(fitted.adapted))


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


def _local_choice(
    spec: str,
    path: Path,
    temperature: float,
    max_tokens: int | None,
    cache: bool,
    slots: int,
    extra: Mapping[str, Any],
    deterministic: bool = False,
) -> LMChoice:
    server = local_server(path, slots=slots, **({"deterministic": True} if deterministic else {}))
    try:
        server.ensure()
    except (ServerFailed, ServerBuildError) as exc:
        raise LMConfigError(str(exc)) from None
    kwargs = {"max_tokens": max_tokens} if max_tokens else {}
    kwargs.update(wire_extras("llamacpp/", extra))
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
