"""A deterministic DSPy engine for tests: no network, no model, every call recorded.

    engine = ScriptedEngine(lambda call: {"count": 2})
    lm = engine.lm()              # a dspy.LM backed by the script, cache off
    with dspy.context(lm=lm): ...
    engine.calls[0].user_text     # what the program sent

The responder gets a :class:`ScriptedCall` (the request's text, image count and
schema) and returns the output fields as a dict (or a raw string, sent verbatim).
The engine writes the dict in the format the adapter asked for: JSON when the
request carries a ``response_format``, DSPy's ``[[ ## field ## ]]`` markers otherwise.
Token counts are whitespace-separated words, so usage is deterministic too; an answer
longer than the request's ``max_tokens`` is cut there and reported as stopped by the cap
(finish reason ``length``), as a real server does.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import dspy
from dspy.lm15 import ImagePart, Message, Response, TextPart, Usage, response_to_events

Answer = dict[str, Any] | str
Responder = Callable[["ScriptedCall"], Answer]


@dataclass(frozen=True)
class ScriptedCall:
    """What one request carried, in forms tests can assert on."""

    system: str
    user_text: str
    images: int
    response_format: dict | None = field(default=None, repr=False)
    temperature: float | None = None  # the sampling temperature the call asked for

    @property
    def text(self) -> str:
        return f"{self.system}\n{self.user_text}"


class ScriptedEngine:
    """A custom DSPy engine (``complete(Request) -> Response``) that answers from a script."""

    supports_response_schema = True
    supported_params = frozenset({"response_format", "max_tokens", "temperature", "top_p", "stop", "seed"})

    def __init__(self, respond: Responder | Iterable[Answer], *, model: str = "scripted"):
        if callable(respond):
            self._respond = respond
        else:
            answers = iter(list(respond))
            self._respond = lambda call: next(answers)
        self.model = model
        self.calls: list[ScriptedCall] = []
        self._lock = threading.Lock()

    def lm(self, **kwargs: Any) -> dspy.LM:
        """A ``dspy.LM`` on this engine, for ``module(...)`` and ``module.acall(...)`` alike
        (DSPy's response cache off unless asked for)."""
        kwargs.setdefault("cache", False)
        kwargs.setdefault("async_engine", _AsyncScripted(self))
        return dspy.LM(f"scripted/{self.model}", engine=self, **kwargs)

    def complete(self, request) -> Response:
        call = _read(request)
        with self._lock:
            self.calls.append(call)
            answer = self._respond(call)
        text = answer if isinstance(answer, str) else _format(answer, json_mode=call.response_format is not None)
        words, cap = text.split(), request.config.max_tokens
        finish = "stop"
        if cap and len(words) > cap:  # a real server stops at the cap too, mid-answer
            text, words, finish = " ".join(words[:cap]), words[:cap], "length"
        usage = Usage(input_tokens=len(call.text.split()), output_tokens=len(words))
        return Response(id=None, model=self.model, message=Message.assistant([TextPart(text)]), finish_reason=finish, usage=usage)

    def stream(self, request):
        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


class _AsyncScripted:
    """The async counterpart DSPy wants beside a custom engine: the same script, awaited."""

    def __init__(self, engine: ScriptedEngine):
        self.engine = engine

    async def complete(self, request) -> Response:
        return self.engine.complete(request)

    async def stream(self, request):
        for event in self.engine.stream(request):
            yield event

    async def aclose(self) -> None:
        pass


def _read(request) -> ScriptedCall:
    system = (
        request.system if isinstance(request.system, str) else "".join(getattr(p, "text", "") for p in (request.system or ()))
    )
    texts, images = [], 0
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, ImagePart):
                images += 1
    config = request.config
    return ScriptedCall(
        system=system,
        user_text="\n".join(texts),
        images=images,
        response_format=config.response_format,
        temperature=getattr(config, "temperature", None),
    )


def _format(fields: dict[str, Any], *, json_mode: bool) -> str:
    if json_mode:
        return json.dumps(fields)
    body = "\n\n".join(f"[[ ## {name} ## ]]\n{_plain(value)}" for name, value in fields.items())
    return f"{body}\n\n[[ ## completed ## ]]"


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
