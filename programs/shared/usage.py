"""Token usage of the LM calls made inside a block, for records kept by programs.

Nested inside the harness's own counting (``dspy.track_usage`` rolls child
trackers up into their parent), so both see every call.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import dspy

from memreason.lm.tokens import Tally, tallying

__all__ = ["inside", "usage"]


@contextmanager
def usage() -> Iterator[dict[str, int]]:
    """``{"prompt", "completion", "calls"}`` of the calls made in the block (this thread), filled on exit, and
    ``reasoning`` (part of ``completion``) where a reasoning model spent some.

    Calls through the harness's guarded LMs count what their answers took, from the cache too (a resumed run's
    records match an uninterrupted one's); calls on a bare ``dspy.LM`` are read from DSPy's usage tracker, which
    sees no usage on a cache hit."""
    spent = {"prompt": 0, "completion": 0, "calls": 0}
    tally = Tally()
    try:
        with dspy.track_usage() as tracker, tallying(tally):
            yield spent
    finally:
        if tally.tokens.calls:
            spent.update(prompt=tally.tokens.prompt, completion=tally.tokens.completion, calls=tally.tokens.calls)
            if tally.tokens.reasoning:  # of the completion: a reasoning model's thinking
                spent["reasoning"] = tally.tokens.reasoning
        else:
            for entries in tracker.usage_data.values():
                for entry in entries:
                    spent["prompt"] += entry.get("prompt_tokens") or 0
                    spent["completion"] += entry.get("completion_tokens") or 0
                    spent["calls"] += 1
                    details = entry.get("completion_tokens_details") or {}
                    if isinstance(details, dict) and details.get("reasoning_tokens"):
                        spent["reasoning"] = spent.get("reasoning", 0) + int(details["reasoning_tokens"])


@contextmanager
def inside(module: dspy.Module) -> Iterator[None]:
    """Calls made in the block count as ``module``'s, as if it had been called (``module(...)``) rather
    than one of its methods: DSPy's stack of calling modules names the step that spent the tokens."""
    with dspy.context(caller_modules=[*(dspy.settings.caller_modules or []), module]):
        yield
