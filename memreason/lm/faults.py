"""Surviving LM faults: classify them, retry what is worth retrying, and count every one.

    policy = RetryPolicy(retries=3, backoff=1.0)
    lm = GuardedLM(choice.lm, role="task", policy=policy)     # transport faults and empty answers
    adapter = ResilientAdapter.around(choice.adapter(), policy)  # unparseable answers
    with dspy.context(lm=lm, adapter=adapter), metering(meter):
        program(...)                                          # meter.faults / meter.retries by kind

Kinds: ``rate_limit`` (HTTP 429), ``server_error`` (5xx), ``timeout``, ``connection``,
``engine_died`` (the local llama-server died during the call and was restarted),
``empty`` (an answer with no text), ``unparseable`` (no adapter could read it). The first
five are retried by :class:`GuardedLM` after an exponential backoff with a little jitter
(or what the provider's ``retry-after`` / ``retry-after-ms`` says); an empty answer is asked again at once.
A rate limit pauses the whole role, not only the call that met it: the LM's
:class:`~memreason.lm.rate.RateLimit` (shared by every thread, and capping requests and tokens per
minute when given ``--rpm`` / ``--tpm``) lets no request of that role start before the wait is over. An
unparseable answer is asked again at once by :class:`ResilientAdapter`, alternating DSPy's
chat and JSON formats (a new prompt helps a model that broke the format). Repeats of an
answer the DSPy cache already holds would return the same bad answer, so every repeat
carries a fresh ``rollout_id``, which DSPy puts in its cache key and never sends.

Other errors (a bad request, a refused key) are not retried. When the retries run out,
:class:`LMFailure` says which kind of fault won; the harness records it with the example
(and stops the run on the :data:`FATAL` kinds, which no later example can escape).

With DSPy's cache on, one request is asked once at a time: a thread asking what another is
asking at that moment waits for that answer, which the cache then hands it.

The DSPy cache makes a resumed run replay answers without calling the provider; for the
counts to replay too, a :class:`GuardedLM` that needed retries notes their kinds in the
same cache, keyed by the request, and a later cache hit adds them back.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import dspy
from dspy.utils.exceptions import (
    AdapterParseError,
    ContextWindowExceededError,
    LMAuthError,
    LMBillingError,
    LMInvalidRequestError,
    LMProviderError,
    LMRateLimitError,
    LMServerError,
    LMTimeoutError,
    LMTransportError,
)

from .bounded_json import BoundedJSONAdapter
from .rate import RateLimit, estimate_tokens
from .redact import redact
from .server import EngineDied
from .spend import Spend
from .tokens import (
    Meter,
    current_meter,
    current_step,
    current_tallies,
    entry_cut,
    entry_model,
    entry_reasoning,
    entry_usage,
    sent_settings,
)
from .traces import answer_of_predictor, call_trace, jsonable, note_answer

TRANSPORT = ("rate_limit", "server_error", "timeout", "connection", "engine_died")
KINDS = (*TRANSPORT, "empty", "unparseable")
FATAL = ("auth", "billing")  # no later example can succeed either: the harness stops the run


class RunAborted(RuntimeError):
    """The run stopped early (too many failures, a refused key, memory that could not be built, its spending limit
    reached); its work is kept."""


class BudgetReached(RunAborted):
    """An LM call refused because the spending limit was reached (a :class:`Spend` with ``refuse``)."""


@dataclass
class ErrorBudget:
    """How many examples may fail in this process (``--max-errors``) before the harness stops the run.

    A failure of a :data:`FATAL` kind stops it at once. ``unit`` names the examples in
    :meth:`why` ("scenes", "tasks"). ``spend``: the run's spending limit, which stops it too
    once reached (:attr:`budget_reached`). Safe to share between answering threads.
    """

    max_errors: int | None
    unit: str = "examples"
    failed: int = 0
    last_failure: str = ""
    fatal: bool = False
    spend: Spend | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def fail(self, failure: dict[str, str]) -> None:
        """Count one failed example; ``failure`` is ``{"kind": ..., "reason": ...}``."""
        with self.lock:
            self.failed += 1
            self.last_failure = f"{failure['kind']}: {failure['reason']}"
            self.fatal = self.fatal or failure["kind"] in FATAL

    @property
    def stopping(self) -> bool:
        """Whether no new item may start: the run failed too often, or spent its budget."""
        return self.failing or self.budget_reached

    @property
    def failing(self) -> bool:
        return self.fatal or (self.max_errors is not None and self.failed > self.max_errors)

    @property
    def budget_reached(self) -> bool:
        """The spending limit is reached (and the run is not failing besides)."""
        return self.spend is not None and self.spend.reached and not self.failing

    def why(self) -> str:
        """Why the run stops, for :class:`RunAborted`."""
        if self.budget_reached:
            return self.spend.why()
        if self.fatal:
            reason = f"the provider refused the calls ({self.last_failure})"
        else:
            reason = (
                f"{self.failed} {self.unit} failed in this process (--max-errors {self.max_errors}); last: {self.last_failure}"
            )
        return f"{reason}. The work so far is kept: rerun the same command to continue"


class LMFailure(RuntimeError):
    """An LM call that still failed after its retries; ``kind`` is one of :data:`KINDS`."""

    def __init__(self, kind: str, reason: str, attempts: int):
        super().__init__(f"{kind} after {attempts} attempt{'s' if attempts != 1 else ''}: {reason}")
        self.kind, self.reason, self.attempts = kind, reason, attempts


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to repeat a failed LM call."""

    retries: int = 3  # repeats after the first attempt
    backoff: float = 1.0  # seconds before the first repeat of a transport fault; doubles each time
    cap: float = 30.0  # longest wait of the backoff
    jitter: float = 0.1  # up to this fraction added at random, so threads do not retry in step
    hint_cap: float = 600.0  # longest wait a provider's retry-after is followed for

    @property
    def attempts(self) -> int:
        return self.retries + 1

    def delay(self, attempt: int, error: BaseException | None = None) -> float:
        """Seconds to wait before repeat number ``attempt + 1``."""
        if isinstance(error, EngineDied):
            return 0.0  # a new server is already up
        hint = retry_after(error)
        if hint is not None:
            return min(hint, self.hint_cap)
        base = min(self.cap, self.backoff * 2**attempt)
        return base * (1 + self.jitter * random.random())


def retry_after(error: BaseException | None) -> float | None:
    """Seconds the provider asked to wait before the next request: a 429's ``retry-after`` or ``retry-after-ms``
    header, as DSPy read it, or read here from the headers along the error's causes (LiteLLM's route reads
    ``retry-after`` alone); None when it said nothing."""
    hint = getattr(error, "retry_after", None)
    if isinstance(hint, (int, float)) and not isinstance(hint, bool) and 0 <= hint < float("inf"):
        return float(hint)
    seen, cause = 0, error
    while cause is not None and seen < 8:
        for headers in (
            getattr(cause, "rate_limit_headers", None),
            getattr(cause, "headers", None),
            getattr(getattr(cause, "response", None), "headers", None),
        ):
            found = _header_hint(headers)
            if found is not None:
                return found
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return None


def _header_hint(headers: Any) -> float | None:
    if not headers or not hasattr(headers, "items"):
        return None
    lowered = {str(k).lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after", 1.0), ("retry-after-ms", 0.001), ("x-ms-retry-after-ms", 0.001)):
        try:
            value = float(lowered[name]) * scale
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= value < float("inf"):
            return value
    return None


def fault_kind(error: BaseException) -> str | None:
    """The retryable kind of ``error``, or None when repeating it cannot help."""
    if isinstance(error, LMFailure):
        return None  # already retried below us
    if isinstance(error, EngineDied):
        return "engine_died"
    if isinstance(error, LMRateLimitError):
        return "rate_limit"
    if isinstance(error, LMTimeoutError):
        return "timeout"
    if isinstance(error, LMServerError):
        return "server_error"
    if isinstance(error, LMProviderError) and "is not JSON" in str(error):
        return "server_error"  # a 200 whose body is an HTML page or nothing: a gateway's fault, worth repeating
    if isinstance(error, LMTransportError):
        text = str(error).lower()
        return "timeout" if "timed out" in text or "timeout" in text else "connection"
    if isinstance(error, (TimeoutError, ConnectionError)):
        return "timeout" if isinstance(error, TimeoutError) else "connection"
    return None


def context_exceeded(error: BaseException) -> bool:
    """Whether ``error`` says the prompt and answer do not fit the model's context (DSPy's own error, or
    llama-server's 400 "request (N tokens) exceeds the available context size"): repeating cannot help."""
    if isinstance(error, ContextWindowExceededError):
        return True
    text = str(error).lower()
    return isinstance(error, LMInvalidRequestError) and "exceeds" in text and "context" in text


def failure_of(error: BaseException) -> dict[str, str]:
    """``{"kind", "reason"}`` for an example that failed with ``error``."""
    if isinstance(error, LMFailure):
        return {"kind": error.kind, "reason": error.reason}
    if isinstance(error, AdapterParseError):
        return {"kind": "unparseable", "reason": _first_line(error)}
    if isinstance(error, (LMAuthError, LMBillingError)):
        return {"kind": "auth" if isinstance(error, LMAuthError) else "billing", "reason": _first_line(error)}
    kind = fault_kind(error)
    return {"kind": kind or "error", "reason": f"{type(error).__name__}: {_first_line(error)}"}


def _first_line(error: BaseException) -> str:
    """The error's first line, cut to 300 characters, with no credentials in its URLs."""
    text = redact(str(error)).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


# -- below the adapter: one LM call -----------------------------------------------------------

_entries: contextvars.ContextVar[list | None] = contextvars.ContextVar("memreason_lm_entries", default=None)


class AnswerCount:
    """A thread-safe count of LM calls that returned an answer."""

    def __init__(self) -> None:
        self.value, self._lock = 0, threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.value += 1


class GuardedLM(dspy.BaseLM):
    """A ``dspy.LM`` wrapper that retries transport faults and empty answers, and meters every call.

    It wraps a private copy of the LM with DSPy's own retries off (they wait 1-60 s and
    count nothing), and reads each call's history entry for its tokens and cache status.
    ``spend``: each answered call adds its tokens there (at ``price``, the model's per-token
    price or None), and with ``spend.refuse`` a call past the cap raises :class:`BudgetReached`.
    ``limiter``: the role's rate limit (:mod:`memreason.lm.rate`), which every call waits for and every rate limit
    fault pauses (default: one of this LM's own, shared with its copies, that caps nothing).
    Guarding a guarded LM guards its LM once, counting into the same ``spend`` (and waiting for the same ``limiter``)
    unless given another.
    """

    def __init__(
        self,
        lm: dspy.BaseLM,
        *,
        role: str,
        policy: RetryPolicy | None = None,
        answered: "AnswerCount | None" = None,
        spend: Spend | None = None,
        price=None,
        limiter: RateLimit | None = None,
    ):
        if isinstance(lm, GuardedLM):  # one guard, not two (retries would multiply): it counts where the other did
            spend, price = spend if spend is not None else lm.spend, price if price is not None else lm.price
            limiter = limiter if limiter is not None else lm.limiter
            lm = lm.inner
        inner = lm.copy(num_retries=0) if hasattr(lm, "num_retries") else lm.copy()
        inner.update_history = _capture(inner)  # our copy only: the caller's LM is untouched
        inner._warned_zero_temp_rollout = True  # our rollout ids are cache keys, meant for temperature 0 too
        # ``answered``: calls that returned an answer (cache hits included), shared with this LM's copies
        self.__dict__.update(
            inner=inner,
            role=role,
            policy=policy or RetryPolicy(),
            answered=answered or AnswerCount(),
            spend=spend,
            price=price,
            limiter=limiter if limiter is not None else RateLimit(name=role),
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["inner"], name)

    # BaseLM answers these at class level; the wrapped LM knows better.
    supports_function_calling = property(lambda self: self.inner.supports_function_calling)
    supports_reasoning = property(lambda self: self.inner.supports_reasoning)
    supports_response_schema = property(lambda self: self.inner.supports_response_schema)
    supported_params = property(lambda self: self.inner.supported_params)

    def copy(self, **kwargs) -> "GuardedLM":
        return GuardedLM(
            self.inner.copy(**kwargs),
            role=self.role,
            policy=self.policy,
            answered=self.answered,
            spend=self.spend,
            price=self.price,
            limiter=self.limiter,
        )

    def __call__(self, prompt=None, *, messages=None, **kwargs):
        spend = self.spend
        if spend is not None and spend.refusing():
            raise BudgetReached(spend.why())
        with _in_flight(self._request_digest(prompt, messages, kwargs)):
            return self._call(prompt, messages, kwargs, spend)

    def _call(self, prompt, messages, kwargs: dict, spend: Spend | None):
        meter = current_meter()
        pending: list[str] = []  # transport faults since the last answer
        attempt = empties = 0
        base = kwargs.get("rollout_id", self.inner.kwargs.get("rollout_id"))
        limiter, estimate = self.limiter, estimate_tokens(prompt, messages)
        while True:
            entries: list = []
            slot = limiter.acquire(estimate)  # the role's rate limits and the provider's pauses
            token = _entries.set(entries)
            started = time.perf_counter()
            try:
                outputs = self.inner(prompt, messages=messages, **kwargs)
            except BaseException as exc:  # Ctrl-C and SIGTERM too: no slot is left held
                limiter.release(slot)  # the provider saw it: it stays in the window, at its estimate
                kind = fault_kind(exc) if isinstance(exc, Exception) else None
                if kind is None:
                    raise
                pending.append(kind)
                self._note(meter, kind, retried=attempt < self.policy.retries)
                delay = self.policy.delay(attempt, exc)
                if kind == "rate_limit":
                    limiter.pause(delay)  # every thread of this role waits it out (its next acquire waits), this call or not
                if attempt >= self.policy.retries:
                    raise LMFailure(kind, _first_line(exc), attempt + 1) from exc
                if kind != "rate_limit":
                    time.sleep(delay)
                attempt += 1
                continue
            finally:
                _entries.reset(token)
            latency = time.perf_counter() - started
            entry = entries[-1] if entries else None
            prompt_tokens, completion_tokens, cached = entry_usage(entry)
            reasoning_tokens = min(entry_reasoning(entry), completion_tokens)
            limiter.release(slot, tokens=(prompt_tokens + completion_tokens) or None, cached=cached)
            ledger = self._ledger(prompt, messages, kwargs) if cached else {}
            if cached and not (prompt_tokens or completion_tokens):  # DSPy's cache dropped this answer's usage
                remembered = list(ledger.get("usage") or (0, 0))
                prompt_tokens, completion_tokens = remembered[:2]
                reasoning_tokens = remembered[2] if len(remembered) > 2 else 0
            if spend is not None:
                spend.add_call(prompt_tokens, completion_tokens, self.price, reasoning=reasoning_tokens)
            for tally in current_tallies():
                tally.add(prompt_tokens, completion_tokens, reasoning_tokens)
            if meter is not None:
                step = current_step(meter.root)
                model, fingerprint = entry_model(entry)
                meter.add_call(
                    self.role,
                    prompt_tokens,
                    completion_tokens,
                    step=step,
                    cut=entry_cut(entry),
                    model=model,
                    fingerprint=fingerprint,
                    sent=sent_settings(kwargs),
                    reasoning=reasoning_tokens,
                )
                if meter.trace:
                    call = call_trace(
                        role=self.role,
                        step=step,
                        model=str(self.inner.model),
                        messages=messages,
                        prompt=prompt,
                        outputs=outputs,
                        usage=(prompt_tokens, completion_tokens),
                        latency=latency,
                        cache_hit=cached,
                        attempt=attempt,
                    )
                    meter.log(call)
                    note_answer(call)
            if cached:  # the faults this answer once took, so a replay counts them again
                for kind in ledger.get("kinds", []):
                    self._note(meter, kind, retried=True)
            elif entry is not None or pending:  # an answer seen live (with DSPy's history off, none is)
                usage = (prompt_tokens, completion_tokens, *((reasoning_tokens,) if reasoning_tokens else ()))
                self._remember(prompt, messages, kwargs, pending, usage)
            pending = []
            if _empty(outputs):
                self._note(meter, "empty", retried=attempt < self.policy.retries)
                if attempt >= self.policy.retries:
                    raise LMFailure("empty", "the LM answered with no text", attempt + 1)
                attempt, empties = attempt + 1, empties + 1
                rollout = 1000 + empties if base is None else f"{base}/empty{empties}"
                kwargs = {**kwargs, "rollout_id": rollout}  # the same ids on a replay from the cache
                continue
            self.answered.add()
            return outputs

    async def acall(self, prompt=None, *, messages=None, **kwargs):
        import asyncio

        return await asyncio.to_thread(self.__call__, prompt, messages=messages, **kwargs)

    @staticmethod
    def _note(meter: Meter | None, kind: str, *, retried: bool) -> None:
        if meter is not None:
            meter.add_fault(kind, retried=retried)

    # -- the ledger, kept in DSPy's cache next to the answers -------------------------------
    # What a replay from the cache cannot read from the cached answer: the faults the answer took
    # before it came, and its usage (DSPy's cache drops the usage of a LiteLLM response, the kind
    # a call with n > 1 to llama-server gets).

    def _request_digest(self, prompt, messages, kwargs) -> str | None:
        """A digest of the request as DSPy's cache tells requests apart, or None when the cache is off."""
        if not kwargs.get("cache", getattr(self.inner, "cache", False)):
            return None
        settings = {k: v for k, v in {**self.inner.kwargs, **kwargs}.items() if not k.startswith("api_") and k != "timeout"}
        text = json.dumps(
            {"model": self.inner.model, "prompt": prompt, "messages": messages, "kwargs": settings}, sort_keys=True, default=str
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def _ledger_key(self, prompt, messages, kwargs) -> dict[str, str] | None:
        digest = self._request_digest(prompt, messages, kwargs)
        return None if digest is None else {"memreason_fault_ledger": digest}

    def _remember(self, prompt, messages, kwargs, kinds: list[str], usage: tuple[int, ...]) -> None:
        key = self._ledger_key(prompt, messages, kwargs)
        if key is not None:
            dspy.cache.put(key, {"kinds": kinds, "usage": list(usage)})

    def _ledger(self, prompt, messages, kwargs) -> dict[str, Any]:
        """``{"kinds": [...], "usage": [prompt, completion(, reasoning)]}`` as remembered (older records hold kinds
        only; the reasoning tokens, part of the completion, where there were some)."""
        key = self._ledger_key(prompt, messages, kwargs)
        record = dspy.cache.get(key) if key is not None else None
        return record if isinstance(record, dict) else {}


_flights: dict[str, list] = {}  # request digest -> [its lock, the calls holding or awaiting it]
_flights_lock = threading.Lock()


@contextmanager
def _in_flight(digest: str | None):
    """One call at a time per cached request: a thread asking what another is already asking waits for that
    answer, which DSPy's cache then hands it, instead of asking the LM the same thing twice (threads
    answering scenes that share objects otherwise do). ``None`` (the cache off): no waiting."""
    if digest is None:
        yield
        return
    with _flights_lock:
        flight = _flights.setdefault(digest, [threading.RLock(), 0])
        flight[1] += 1
    try:
        with flight[0]:
            yield
    finally:
        with _flights_lock:
            flight[1] -= 1
            if not flight[1]:
                del _flights[digest]


def _capture(lm: dspy.BaseLM):
    """An ``update_history`` for ``lm`` that also hands each entry to the GuardedLM call in progress."""
    record = type(lm).update_history

    def update_history(entry):
        entries = _entries.get()
        if entries is not None:
            entries.append(entry)
        record(lm, entry)

    return update_history


def _empty(outputs) -> bool:
    if not outputs:
        return True
    texts = [o.get("text") if isinstance(o, dict) else o for o in outputs]
    has_tools = any(isinstance(o, dict) and o.get("tool_calls") for o in outputs)
    return not has_tools and all(not (t or "").strip() for t in texts if isinstance(t, str) or t is None)


# -- above the LM: one predictor call ---------------------------------------------------------


class ResilientAdapter(dspy.Adapter):
    """Repeat a predictor call whose answer no adapter could parse, alternating formats."""

    def __init__(self, formats: list[dspy.Adapter], policy: RetryPolicy | None = None):
        super().__init__()
        self.formats, self.policy = list(formats), policy or RetryPolicy()

    @classmethod
    def around(cls, adapter: dspy.Adapter, policy: RetryPolicy | None = None) -> "ResilientAdapter":
        """Chat format first, then JSON, and so on; a JSON adapter (the local grammar route) stays alone."""
        if isinstance(adapter, (dspy.JSONAdapter, ResilientAdapter)) or not isinstance(adapter, dspy.ChatAdapter):
            formats = adapter.formats if isinstance(adapter, ResilientAdapter) else [adapter]
        else:
            formats = [dspy.ChatAdapter(use_json_adapter_fallback=False), BoundedJSONAdapter()]
        return cls(formats, policy)

    def __call__(self, lm, lm_kwargs, signature, demos, inputs):
        meter = current_meter()
        for attempt in range(self.policy.attempts):
            adapter, kwargs = self._attempt(lm, attempt, lm_kwargs)
            with answer_of_predictor() as calls:
                try:
                    return _parsed(calls, signature, adapter(lm, kwargs, signature, demos, inputs))
                except AdapterParseError as exc:
                    _unparsed(calls, signature, exc)
                    self._failed(meter, attempt, exc)

    async def acall(self, lm, lm_kwargs, signature, demos, inputs):
        meter = current_meter()
        for attempt in range(self.policy.attempts):
            adapter, kwargs = self._attempt(lm, attempt, lm_kwargs)
            with answer_of_predictor() as calls:
                try:
                    return _parsed(calls, signature, await adapter.acall(lm, kwargs, signature, demos, inputs))
                except AdapterParseError as exc:
                    _unparsed(calls, signature, exc)
                    self._failed(meter, attempt, exc)

    def _attempt(self, lm, attempt: int, lm_kwargs: dict) -> tuple[dspy.Adapter, dict]:
        kwargs = dict(lm_kwargs)
        if attempt:  # a fresh cache key; kept apart from the rollouts of BestOfN, Refine, ...
            base = kwargs.get("rollout_id", (getattr(lm, "kwargs", None) or {}).get("rollout_id"))
            kwargs["rollout_id"] = attempt if base is None else f"{base}/retry{attempt}"
        return self.formats[attempt % len(self.formats)], kwargs

    def _failed(self, meter: Meter | None, attempt: int, error: AdapterParseError) -> None:
        last = attempt + 1 >= self.policy.attempts
        if meter is not None:
            meter.add_fault("unparseable", retried=not last)
        if last:
            reason = _first_line(error)
            if error.lm_response:
                reason = f"{reason} Answer: {str(error.lm_response).strip()[:120]!r}"
            raise LMFailure("unparseable", reason, attempt + 1) from error

    # What callers outside a predictor call ask of an adapter comes from the first format.
    def format(self, signature, demos, inputs):
        return self.formats[0].format(signature, demos, inputs)

    def parse(self, signature, completion):
        return self.formats[0].parse(signature, completion)

    def __getattr__(self, name: str) -> Any:
        formats = self.__dict__.get("formats")
        if not formats:
            raise AttributeError(name)
        return getattr(formats[0], name)


def _parsed(calls: list[dict[str, Any]], signature, outputs):
    """Note on the call that answered (when traced) the signature it answered and the fields it was read as."""
    if calls:
        calls[-1]["signature"] = getattr(signature, "__name__", str(signature))
        calls[-1]["outputs"] = jsonable(outputs[0] if len(outputs) == 1 else outputs)
    return outputs


def _unparsed(calls: list[dict[str, Any]], signature, error: AdapterParseError) -> None:
    if calls:
        calls[-1]["signature"] = getattr(signature, "__name__", str(signature))
        calls[-1]["parse_error"] = _first_line(error)
