"""One LM call as a JSON-able trace: what was sent, what came back, what it was read as, what it cost.

    call = call_trace(role="task", step="reasoner", model=..., messages=..., outputs=..., usage=(812, 64),
                      latency=1.9, cache_hit=False)
    with answer_of_predictor() as calls:     # the adapter's parsed fields go onto the call that answered
        ...
    calls[-1]["outputs"] = jsonable(parsed)

:class:`memreason.lm.faults.GuardedLM` makes one trace per answered call and hands it to
the unit's :class:`memreason.lm.tokens.Meter` (when it traces) and to the predictor call in
progress; :class:`memreason.lm.faults.ResilientAdapter` adds the fields it parsed (or why it
could not). Sizes are bounded here: an inline image becomes a note of its size, and a text
longer than :data:`MAX_TEXT` characters is cut with a note of what was left out.
"""

from __future__ import annotations

import contextvars
import re
import time
from contextlib import contextmanager
from typing import Any, Iterator

MAX_TEXT = 100_000  # characters kept of one message or completion
_DATA_URL = re.compile(r"data:image/[a-zA-Z0-9.+-]+;base64,[A-Za-z0-9+/=]+")

_predictor_calls: contextvars.ContextVar[list | None] = contextvars.ContextVar("memreason_predictor_calls", default=None)


def call_trace(
    *,
    role: str,
    step: str,
    model: str,
    messages: Any,
    prompt: Any,
    outputs: Any,
    usage: tuple[int, int],
    latency: float,
    cache_hit: bool,
    attempt: int,
) -> dict[str, Any]:
    """The trace of one answered call (``attempt``: 0 for the first try, more after retried faults)."""
    return {
        "time": round(time.time(), 3),
        "role": role,
        "step": step,
        "model": model,
        "messages": _messages(messages, prompt),
        "completion": _completion(outputs),
        "prompt_tokens": usage[0],
        "completion_tokens": usage[1],
        "latency_s": round(latency, 3),
        "cache_hit": cache_hit,
        "attempt": attempt,
    }


def note_answer(call: dict[str, Any]) -> None:
    """Hand ``call`` to the predictor call in progress in this context, if any."""
    calls = _predictor_calls.get()
    if calls is not None:
        calls.append(call)


@contextmanager
def answer_of_predictor() -> Iterator[list[dict[str, Any]]]:
    """The traces of the calls made inside the block (one predictor call), in order."""
    calls: list[dict[str, Any]] = []
    token = _predictor_calls.set(calls)
    try:
        yield calls
    finally:
        _predictor_calls.reset(token)


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON: pydantic models dumped, images as a note, anything else as text."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return bounded(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return jsonable(dump(mode="json"))
        except Exception:
            pass
    return bounded(str(value))


def bounded(text: str) -> str:
    """``text`` with inline images replaced by their size and cut at :data:`MAX_TEXT` characters."""
    text = _DATA_URL.sub(lambda m: f"<inline image, {len(m.group(0)):,} characters>", text)
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"... <{len(text) - MAX_TEXT:,} more characters>"
    return text


def _messages(messages: Any, prompt: Any) -> list[dict[str, Any]]:
    if messages is None:
        return [{"role": "user", "content": jsonable(prompt)}] if prompt is not None else []
    out = []
    for message in messages:
        if isinstance(message, dict):
            out.append({"role": message.get("role", "user"), "content": jsonable(message.get("content"))})
        else:
            out.append({"role": "user", "content": jsonable(message)})
    return out


def _completion(outputs: Any) -> Any:
    """The text of the first answer (a list when the call asked for several)."""
    texts = []
    for output in outputs or []:
        if isinstance(output, dict):
            text = output.get("text")
            reasoning = output.get("reasoning_content")
            texts.append(jsonable(text if not reasoning else {"text": text, "reasoning_content": reasoning}))
        else:
            texts.append(jsonable(output))
    return texts[0] if len(texts) == 1 else texts
