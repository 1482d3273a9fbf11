"""What one evaluation on a stream task asks for, as its ``config.json`` records it, and what decides its results.

    config = config_of(options, task="rg:puzzle24", learn_from="check", knobs={})   # StreamConfig, unchecked
    IDENTITY                                     # the config keys a continued run must hold the same values of

Light on purpose (no DSPy, no reasoning-gym): a command reads a run directory's identity before any model loads.
:func:`memreason.eval.stream.evaluate.stream_config` checks the options and builds the program first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from ..harness.resume import identity_field, identity_keys
from .options import StreamOptions

__all__ = ["DEFAULTS", "IDENTITY", "StreamConfig", "config_of"]


@dataclass
class StreamConfig:
    """What one evaluation on a stream task asks for (written to ``config.json``)."""

    program: str = identity_field()
    task: str = identity_field()
    task_config: str = identity_field("{}")  # the dataset's own config: a JSON object, as text
    seed: int = identity_field(0)
    size: int = identity_field(50)
    seed_size: int = identity_field(10)
    answer: str = identity_field("text")
    retries: int = identity_field(2)
    learn_from: str = identity_field("check")
    lesson: str = identity_field("reasoning")
    batch: int = identity_field(10)
    order_seed: int = identity_field(0)
    orders: int = identity_field(1)
    verify: int = identity_field(0)
    verify_margin: int = identity_field(1)
    candidates: int = identity_field(1)
    memory_tokens: int = identity_field(0)
    threads: int = 1
    knobs: dict[str, Any] = identity_field(default_factory=dict)


IDENTITY = identity_keys(StreamConfig, StreamOptions, extra=("knobs",))
# The values of identity keys missing from configs saved before they existed: writes then read answers alone, and
# were neither verified nor held to a budget.
DEFAULTS: dict[str, Any] = {"lesson": "answer", "verify": 0, "verify_margin": 1, "candidates": 1, "memory_tokens": 0}


def config_of(options: StreamOptions, *, task: str, learn_from: str, knobs: dict[str, Any]) -> StreamConfig:
    """The config of a run of ``options`` on the task named ``task``, writes learning from ``learn_from`` (resolved:
    never None) and the program built with ``knobs``; nothing is checked here. Every other field is the option of
    its name (the dataset's config normalised: keys sorted)."""
    given = {"task": task, "learn_from": learn_from, "knobs": knobs}
    given["task_config"] = json.dumps(json.loads(options.task_config or "{}"), sort_keys=True)
    return StreamConfig(**{f.name: getattr(options, f.name) for f in fields(StreamConfig) if f.name not in given}, **given)
