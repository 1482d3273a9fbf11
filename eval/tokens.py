"""Token counts, gathered with ``dspy.track_usage`` and summed by role."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import dspy


@dataclass
class Tokens:
    prompt: int = 0
    completion: int = 0
    calls: int = 0

    def __add__(self, other: "Tokens") -> "Tokens":
        return Tokens(self.prompt + other.prompt, self.completion + other.completion, self.calls + other.calls)

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def as_dict(self) -> dict[str, int]:
        return {"prompt": self.prompt, "completion": self.completion, "total": self.total, "calls": self.calls}


@contextmanager
def counting() -> Iterator[Tokens]:
    """Count the tokens of every LM call made inside the block (in this thread)."""
    tokens = Tokens()
    with dspy.track_usage() as tracker:
        yield tokens
    for entries in tracker.usage_data.values():
        for entry in entries:
            tokens.prompt += entry.get("prompt_tokens") or 0
            tokens.completion += entry.get("completion_tokens") or 0
            tokens.calls += 1
