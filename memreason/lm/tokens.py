"""Token counts: by role (memory LM, task LM) and by program step, plus the faults met on the way.

    meter = Meter(root=program)
    with metering(meter):                 # every GuardedLM call inside is added to ``meter``
        program(...)
    meter.record()   # {"tokens": {...}, "usage": {"task": {"reasoner": {...}}}, "faults": {...}, "retries": {...},
                     #  "cut": {"hypothesis_generator": 2}, "lms": {"task": {"models": {"gpt-4o-2024-08-06": 3}, ...}}}

A step is the innermost component of the program that made the call (``reasoner``,
``factor_extractor``, ``hypothesis_generator``, ``hypothesis_verifier``, ...), or the
signature of a predictor the program calls directly (``reflect_on_episode``). A
component with ``steps_by_predictor = True`` also names its predictor that made the call
(``arc_solver.solve``, ``arc_solver.retry``).

``cut`` counts, by step, the answers that stopped at the generation cap (``--max-tokens``)
rather than ending by themselves: a small model that repeats one line until the cap shows
up there, where its parsed answer looks merely short.

``lms`` says, by role, which models answered (the ``model`` field of the responses, with how
many calls), the ``system_fingerprint`` of those that sent one, and the settings the program sent
with its calls on top of the LM's own (``temperature``, ``n``, ``seed``, ...: every value seen);
a run's manifest (:mod:`memreason.eval.harness.manifest`) is made of them.

Tokens are those the answers took, whether they came from the provider or from DSPy's
cache: a run resumed from its cache reports what an uninterrupted run reports. (What was
paid in this process is what a provider's bill says; the cache makes it smaller.)
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from .redact import is_credential

METER_KEY = "memreason_meter"
TALLY_KEY = "memreason_tallies"


@dataclass
class Tokens:
    """Tokens of LM calls. ``completion`` is every token the answers took, as providers bill them; ``reasoning`` is
    the part of it a reasoning model spent thinking (hidden, or shown apart from the answer), so the visible answer
    took ``completion - reasoning`` (:attr:`visible`)."""

    prompt: int = 0
    completion: int = 0
    calls: int = 0
    reasoning: int = 0

    def __add__(self, other: "Tokens") -> "Tokens":
        return Tokens(
            self.prompt + other.prompt,
            self.completion + other.completion,
            self.calls + other.calls,
            self.reasoning + other.reasoning,
        )

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    @property
    def visible(self) -> int:
        return self.completion - self.reasoning

    def as_dict(self) -> dict[str, int]:
        """The counts as records hold them; ``reasoning`` (of ``completion``) only where there was some."""
        out = {"prompt": self.prompt, "completion": self.completion, "total": self.total, "calls": self.calls}
        if self.reasoning:
            out["reasoning"] = self.reasoning
        return out

    @classmethod
    def of(cls, data: dict[str, Any] | None) -> "Tokens":
        data = data or {}
        return cls(
            int(data.get("prompt") or 0),
            int(data.get("completion") or 0),
            int(data.get("calls") or 0),
            int(data.get("reasoning") or 0),
        )


class Meter:
    """What one unit of work (an example, a memory build) spent, thread-safe.

    With ``trace=True`` it also keeps every call in full (:meth:`log`, :meth:`take_calls`):
    the messages, the raw completion, the parsed fields, tokens, latency and cache status
    (:mod:`memreason.lm.traces` makes them JSON-able; a run directory stores them).
    """

    def __init__(self, root: Any = None, *, trace: bool = False):
        self.root = root  # the program: its own name is not a step
        self.usage: dict[str, dict[str, Tokens]] = {}
        self.faults: Counter[str] = Counter()
        self.cut: Counter[str] = Counter()  # answers stopped by the generation cap, by step
        self.retries: Counter[str] = Counter()
        self.lms: dict[str, dict[str, Any]] = {}  # by role: models, fingerprints, settings sent (see :func:`merge_lms`)
        self.trace = trace
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add_call(
        self,
        role: str,
        prompt: int,
        completion: int,
        step: str | None = None,
        *,
        cut: bool = False,
        model: str | None = None,
        fingerprint: str | None = None,
        sent: dict[str, Any] | None = None,
        reasoning: int = 0,
    ) -> None:
        """One answered call; ``cut``: its answer stopped at the generation cap; ``model`` and ``fingerprint``: the
        model that answered and its ``system_fingerprint`` (None where not known); ``sent``: the settings the call
        carried on top of the LM's own (:func:`sent_settings`); ``reasoning``: of ``completion``."""
        step = step or current_step(self.root)
        seen = {"models": {model: 1} if model else {}, "fingerprints": {fingerprint: 1} if fingerprint else {}}
        seen["sent"] = {key: [value] for key, value in (sent or {}).items()}
        with self._lock:
            steps = self.usage.setdefault(role, {})
            steps[step] = steps.get(step, Tokens()) + Tokens(prompt, completion, 1, reasoning)
            if cut:
                self.cut[step] += 1
            self.lms = merge_lms(self.lms, {role: seen})

    def add_fault(self, kind: str, *, retried: bool) -> None:
        with self._lock:
            self.faults[kind] += 1
            if retried:
                self.retries[kind] += 1

    def log(self, call: dict[str, Any]) -> None:
        """Keep one call's trace (only when tracing)."""
        if self.trace:
            with self._lock:
                self.calls.append(call)

    def take_calls(self) -> list[dict[str, Any]]:
        """The calls traced since the last take, in the order they finished."""
        with self._lock:
            calls, self.calls = self.calls, []
        return calls

    def tokens(self, role: str | None = None) -> Tokens:
        roles = [role] if role else list(self.usage)
        return sum((t for r in roles for t in self.usage.get(r, {}).values()), Tokens())

    def record(self) -> dict[str, Any]:
        """The JSON-able summary stored with an example or a memory snapshot."""
        total = self.tokens()
        return {
            "tokens": {
                "prompt": total.prompt,
                "completion": total.completion,
                "calls": total.calls,
                **({"reasoning": total.reasoning} if total.reasoning else {}),
            },
            "usage": {
                role: {step: t.as_dict() for step, t in sorted(steps.items())} for role, steps in sorted(self.usage.items())
            },
            "faults": dict(sorted(self.faults.items())),
            "retries": dict(sorted(self.retries.items())),
            "cut": dict(sorted(self.cut.items())),
            "lms": merge_lms({}, self.lms),
        }

    def take(self) -> dict[str, Any]:
        """:meth:`record`, then start counting afresh (what was spent since the last take)."""
        with self._lock:
            spent = self.record()
            self.usage, self.faults, self.retries, self.cut, self.lms = {}, Counter(), Counter(), Counter(), {}
        return spent


@contextmanager
def metering(meter: Meter) -> Iterator[Meter]:
    """Send the accounting of every guarded LM call in the block (and in DSPy's own workers) to ``meter``."""
    import dspy  # here, as in each function below: counting tokens, pricing them and reading a run need no DSPy

    with dspy.context(**{METER_KEY: meter}):
        yield meter


def current_meter() -> Meter | None:
    import dspy

    return dspy.settings.get(METER_KEY, None)


class Tally:
    """The tokens of the guarded calls answered inside one :func:`tallying` block, replays from the cache included
    (DSPy's own ``track_usage`` sees no usage on a cache hit), thread-safe."""

    def __init__(self) -> None:
        self.tokens = Tokens()
        self._lock = threading.Lock()

    def add(self, prompt: int, completion: int, reasoning: int = 0) -> None:
        with self._lock:
            self.tokens = self.tokens + Tokens(prompt, completion, 1, reasoning)


@contextmanager
def tallying(tally: Tally) -> Iterator[Tally]:
    """Add every guarded LM call answered in the block (and in workers that copy its context) to ``tally``, as well
    as to the blocks around it and to the meter."""
    import dspy

    with dspy.context(**{TALLY_KEY: (*current_tallies(), tally)}):
        yield tally


def current_tallies() -> tuple[Tally, ...]:
    import dspy

    return dspy.settings.get(TALLY_KEY, None) or ()


def current_step(root: Any = None) -> str:
    """The program step making the current LM call, from DSPy's stack of calling modules."""
    import dspy

    stack = list(dspy.settings.caller_modules or [])
    for depth in range(len(stack) - 1, -1, -1):
        module = stack[depth]
        if module is root or type(module).__module__.startswith("dspy."):
            continue
        name = snake(type(module).__name__)
        if getattr(module, "steps_by_predictor", False) and depth + 1 < len(stack):
            # a module with several predictors (solve / retry, caption / select): name the one calling
            child = stack[depth + 1]
            attribute = next((key for key, value in vars(module).items() if value is child), None)
            if attribute:
                return f"{name}.{attribute}"
        return name
    for module in reversed(stack):
        signature = getattr(module, "signature", None)
        if signature is not None:
            return snake(getattr(signature, "__name__", "predict"))
    return "lm"


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def entry_usage(entry: dict[str, Any] | None) -> tuple[int, int, bool]:
    """(prompt tokens, completion tokens, from the cache) of one DSPy history entry.

    A cache hit reports no usage; its tokens are read from the cached response instead. An
    answer DSPy combined from several responses (``n`` > 1 on an engine that answers one at a
    time) is replayed as the tuple of those responses, each with its own usage: they are summed,
    as the live call's usage was.
    """
    if not entry:
        return 0, 0, False
    usage = entry.get("usage") or {}
    if usage:
        return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), False
    response = entry.get("response")
    parts = response if isinstance(response, (list, tuple)) else [response]
    prompt = completion = 0
    for part in parts:
        p, c = _response_usage(part, str(entry.get("model") or ""))
        prompt, completion = prompt + p, completion + c
    return prompt, completion, True


def _response_usage(response: Any, model: str = "") -> tuple[int, int]:
    cached_usage = getattr(response, "usage", None)
    if cached_usage is None and isinstance(response, dict):
        cached_usage = response.get("usage")
    if cached_usage is None:
        return 0, 0
    if isinstance(cached_usage, dict):
        return int(cached_usage.get("prompt_tokens") or 0), int(cached_usage.get("completion_tokens") or 0)
    prompt = getattr(cached_usage, "input_tokens", None) or getattr(cached_usage, "prompt_tokens", 0)
    completion = getattr(cached_usage, "output_tokens", None) or getattr(cached_usage, "completion_tokens", 0)
    if hasattr(cached_usage, "output_tokens") and model.partition("/")[0] in THINKING_APART:
        completion = (completion or 0) + (getattr(cached_usage, "reasoning_tokens", None) or 0)  # as the live call's usage
    return int(prompt or 0), int(completion or 0)


# Providers whose own output count leaves the thinking out (Gemini's candidatesTokenCount, xAI's): DSPy's live usage
# adds it, so an answer replayed from the cache adds it too.
THINKING_APART = ("gemini", "vertex_ai", "xai")


def entry_reasoning(entry: dict[str, Any] | None) -> int:
    """The reasoning tokens (part of the completion tokens) of one DSPy history entry, live or from the cache: OpenAI's
    ``completion_tokens_details.reasoning_tokens``, Gemini's ``thoughtsTokenCount`` (so DSPy and LiteLLM name it too),
    LiteLLM's count of Anthropic's thinking blocks; 0 where the provider reports none."""
    if not entry:
        return 0
    usage = entry.get("usage") or {}
    if usage:
        return _reasoning_of(usage)
    response = entry.get("response")
    parts = response if isinstance(response, (list, tuple)) else [response]
    total = 0
    for part in parts:
        cached = getattr(part, "usage", None)
        if cached is None and isinstance(part, dict):
            cached = part.get("usage")
        total += _reasoning_of(cached)
    return total


def _reasoning_of(usage: Any) -> int:
    if usage is None:
        return 0
    if isinstance(usage, dict):
        details = usage.get("completion_tokens_details") or {}
        found = details.get("reasoning_tokens") if isinstance(details, dict) else getattr(details, "reasoning_tokens", 0)
        return int(found or usage.get("reasoning_tokens") or 0)
    direct = getattr(usage, "reasoning_tokens", None)  # lm15's Usage
    if direct:
        return int(direct)
    details = getattr(usage, "completion_tokens_details", None)  # LiteLLM's Usage
    return int(getattr(details, "reasoning_tokens", None) or 0)


def entry_cut(entry: dict[str, Any] | None) -> bool:
    """Whether one DSPy history entry's answer stopped at the generation cap (finish reason ``length``),
    read from the response whether it came from the provider or from DSPy's cache."""
    response = (entry or {}).get("response")
    reason = response.get("finish_reason") if isinstance(response, dict) else getattr(response, "finish_reason", None)
    return reason == "length"


def entry_model(entry: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(the model that answered, its ``system_fingerprint``) of one DSPy history entry, read from the response
    whether it came from the provider or from DSPy's cache; None for what the provider did not say."""
    if not entry:
        return None, None
    response = entry.get("response")
    parts = response if isinstance(response, (list, tuple)) else [response]
    model = entry.get("response_model") or None
    fingerprint = None
    for part in parts:
        raw = _field(part, "provider_data")  # the provider's own body, on DSPy's native route
        model = model or _field(part, "model") or _field(raw, "model")
        fingerprint = fingerprint or _field(part, "system_fingerprint") or _field(raw, "system_fingerprint")
    return (str(model) if model else None), (str(fingerprint) if fingerprint else None)


def _field(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None) if value is not None else None


# Call settings that say nothing about the answer (cache keys, the client's plumbing), or are secret.
NOT_SETTINGS = frozenset({"rollout_id", "cache", "num_retries", "timeout", "api_base", "base_url", "headers", "extra_headers"})


def sent_settings(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The settings of one call's keywords (the predictor's ``config``, the adapter's ``response_format``) as
    JSON-able values, without what says nothing about the answer and without secrets."""
    return {key: setting_value(value) for key, value in kwargs.items() if key not in NOT_SETTINGS and not is_credential(key)}


def setting_value(value: Any) -> Any:
    """A setting as a short JSON value: numbers, text and flags as they are; a class by its name (a
    ``response_format`` model); anything else as JSON, or its digest when that is long."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, type):
        return value.__name__
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def merge_lms(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two ``lms`` records (by role: ``models`` and ``fingerprints`` with their call counts, ``sent``: every value
    of each setting seen) as one, keys sorted; neither is changed."""
    merged: dict[str, Any] = {}
    for role in sorted({*first, *second}):
        a, b = first.get(role) or {}, second.get(role) or {}
        entry = {}
        for part in ("models", "fingerprints"):
            counts = Counter(a.get(part) or {})
            counts.update(b.get(part) or {})
            entry[part] = dict(sorted(counts.items()))
        sent: dict[str, list] = {}
        for key in sorted({*(a.get("sent") or {}), *(b.get("sent") or {})}):
            values = [*(a.get("sent") or {}).get(key, []), *(b.get("sent") or {}).get(key, [])]
            unique = {json.dumps(v, sort_keys=True): v for v in values}
            sent[key] = [unique[k] for k in sorted(unique)]
        entry["sent"] = sent
        merged[role] = entry
    return merged
