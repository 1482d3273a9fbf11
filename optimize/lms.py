"""LMs for the optimize commands: whatever ``python -m eval`` accepts, plus scripted engines for tests.

``scripted:MODULE:FUNCTION`` names a function returning a responder for
:class:`memreason.lm.ScriptedEngine`; it is honoured only when the environment sets
``MEMREASON_SCRIPTED_LMS=1`` (the test suite does, to drive the CLI in subprocesses),
and is an unknown LM otherwise.
"""

from __future__ import annotations

import importlib
import os

from memreason.lm import LMChoice, LMConfigError, ScriptedEngine, resolve_lm

SCRIPTED = "scripted:"
SCRIPTED_ENV = "MEMREASON_SCRIPTED_LMS"

_engines: dict[str, ScriptedEngine] = {}


def resolve(spec: str | None, **choose) -> LMChoice:
    if spec and spec.startswith(SCRIPTED) and os.environ.get(SCRIPTED_ENV) == "1":
        cap = {"max_tokens": choose["max_tokens"]} if choose.get("max_tokens") else {}  # the engine cuts answers there
        return LMChoice(spec, scripted_engine(spec).lm(cache=choose.get("cache", False), **cap), local=False)
    return resolve_lm(spec, **choose)


def scripted_engine(spec: str) -> ScriptedEngine:
    """The one engine per spec in this process (tests read its ``calls``)."""
    if spec not in _engines:
        module, _, function = spec.removeprefix(SCRIPTED).partition(":")
        try:
            factory = getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError, ValueError) as exc:
            raise LMConfigError(f"cannot load scripted LM {spec!r}: {exc}") from None
        _engines[spec] = ScriptedEngine(factory(), model=function)
    return _engines[spec]
