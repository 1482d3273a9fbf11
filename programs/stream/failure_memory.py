"""``failure_memory``: ReasoningBank-style memory (Ouyang et al. 2025): lessons distilled from failures as
well as successes, retrieved by similarity.

    write:  items <- Distil(problem, attempt, outcome)      # success: the strategy; failure: the pitfall
            M <- M + items                                  # not judged: nothing is written
    read:   the k items of M from problems most like this one, none written from this item
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.signatures.stream import DistillMemoryItems

from ..registry import register_program
from .base import Lesson, Read, StreamProgram
from .entries import Entry, EntryMemory

__all__ = ["FailureMemory"]


@register_program
class FailureMemory(StreamProgram):
    """Strategies from successes and pitfalls from failures."""

    name = "failure_memory"
    summary = "stream tasks: ReasoningBank-style lessons from failures as well as successes, the k nearest read (knob: k)"

    memory_format = "lessons"
    space = {"k": ("int", 1, 8)}  # its knob's Optuna search space
    reads_attempts = True

    def __init__(self, *, k: int = 4, **solver: Any):
        """
        Args:
            k: the most lessons shown.
            **solver: :class:`StreamProgram`'s (answer, retries, cot, memory_first).
        """
        super().__init__(**solver)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.k = k
        self.distil = dspy.Predict(DistillMemoryItems)
        self.lessons = EntryMemory()

    def read(self, problem: str, item_id: str = "", check: Any = None) -> Read:
        shown, withheld = self.lessons.visible(item_id)
        chosen = self.lessons.nearest(problem, k=self.k, among=shown)
        return Read(
            "\n".join(f"- {e.text}" for e in chosen),
            {"shown": [e.sources for e in chosen], "ids": [e.id for e in chosen], "withheld": withheld},
        )

    def learn(self, lesson: Lesson) -> dict[str, Any]:
        if lesson.verdict is None:
            return {"items": 0}
        items = self.distil(problem=lesson.problem, attempt=lesson.attempt(), outcome=lesson.outcome()).lessons
        kind = "strategy" if lesson.verdict else "pitfall"
        for item in items:
            self.lessons.add(Entry(f"{kind.title()}: {item.title}: {item.content}", [lesson.item_id], kind, lesson.problem))
        return {"items": len(items), "kind": kind}

    def memory_state(self) -> dict[str, Any]:
        return {"format": self.memory_format, "entries": self.lessons.to_json()}

    def load_memory(self, state: dict[str, Any]) -> None:
        self.lessons.load(state.get("entries", []))

    def memory_size(self) -> int:
        return len(self.lessons)

    def entry_memory(self) -> EntryMemory:
        return self.lessons
