"""``reflexion_stream``: Reflexion's verbal reflections (Shinn et al. 2023), kept across a stream of problems.

write:  r <- Reflect(problem, attempt, outcome);  M <- M + r      # after every attempt, right or wrong
read:   the k reflections of M on problems most like this one, none written from this item
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.signatures.stream import ReflectOnAttempt

from ..registry import register_program
from .base import Lesson, Read, StreamProgram
from .entries import Entry, EntryMemory

__all__ = ["ReflexionStream"]


@register_program
class ReflexionStream(StreamProgram):
    """Reflections on earlier attempts, retrieved by similarity."""

    name = "reflexion_stream"
    summary = "stream tasks: a reflection written after every attempt, the k nearest read (knob: k)"

    memory_format = "reflections"
    space = {"k": ("int", 1, 6)}  # its knob's Optuna search space
    reads_attempts = True

    def __init__(self, *, k: int = 3, **solver: Any):
        """
        Args:
            k: the most reflections shown.
            **solver: :class:`StreamProgram`'s (answer, retries, cot, memory_first).
        """
        super().__init__(**solver)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.k = k
        self.reflect = dspy.Predict(ReflectOnAttempt)
        self.reflections = EntryMemory()

    def read(self, problem: str, item_id: str = "", check: Any = None) -> Read:
        shown, withheld = self.reflections.visible(item_id)
        chosen = self.reflections.nearest(problem, k=self.k, among=shown)
        return Read(
            "\n".join(f"- {e.text}" for e in chosen),
            {"shown": [e.sources for e in chosen], "ids": [e.id for e in chosen], "withheld": withheld},
        )

    def learn(self, lesson: Lesson) -> dict[str, Any]:
        reflection = self.reflect(problem=lesson.problem, attempt=lesson.attempt(), outcome=lesson.outcome()).reflection
        kind = {True: "success", False: "failure", None: "unjudged"}[lesson.verdict]
        self.reflections.add(Entry(str(reflection).strip(), [lesson.item_id], kind, lesson.problem))
        return {"reflection": reflection}

    def memory_state(self) -> dict[str, Any]:
        return {"format": self.memory_format, "entries": self.reflections.to_json()}

    def load_memory(self, state: dict[str, Any]) -> None:
        self.reflections.load(state.get("entries", []))

    def memory_size(self) -> int:
        return len(self.reflections)

    def entry_memory(self) -> EntryMemory:
        return self.reflections
