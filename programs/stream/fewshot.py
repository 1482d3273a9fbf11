"""``fewshot``: retrieval of solved problems as worked examples (no embeddings: lexical similarity).

write:  if the solution is known right: M <- M + (problem, solution)       # learn_from none: kept as "not judged"
read:   E <- the k entries of M most like the problem, none written from this item
        memory <- E rendered as "Problem / Answer" pairs
"""

from __future__ import annotations

from typing import Any

from ..registry import register_program
from .base import Lesson, Read, StreamProgram
from .entries import Entry, EntryMemory

__all__ = ["FewShot"]


@register_program
class FewShot(StreamProgram):
    """Solved problems retrieved by similarity and shown as examples."""

    name = "fewshot"
    summary = "stream tasks: the k solved problems most like this one as examples (knob: k)"

    memory_format = "examples"
    space = {"k": ("int", 1, 8)}  # its knob's Optuna search space

    def __init__(self, *, k: int = 3, keep_unjudged: bool = True, **solver: Any):
        """
        Args:
            k: the most examples shown.
            keep_unjudged: keep solutions nobody judged (``learn_from="none"``), marked so; wrong ones are never kept.
            **solver: :class:`StreamProgram`'s (answer, retries, cot).
        """
        super().__init__(**solver)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.k, self.keep_unjudged = k, keep_unjudged
        self.examples = EntryMemory()

    def read(self, problem: str, item_id: str = "", check: Any = None) -> Read:
        shown, withheld = self.examples.visible(item_id)
        chosen = self.examples.nearest(problem, k=self.k, among=shown)
        text = "\n\n".join(f"Example {i}:\n{e.text}" for i, e in enumerate(chosen, 1))
        return Read(text, {"shown": [e.sources for e in chosen], "ids": [e.id for e in chosen], "withheld": withheld})

    def learn(self, lesson: Lesson) -> dict[str, Any]:
        if lesson.verdict is False or (lesson.verdict is None and not self.keep_unjudged):
            return {"kept": False}
        note = "" if lesson.verdict else "\n(not judged)"
        text = f"Problem: {lesson.problem.strip()}\nAnswer: {lesson.solution.strip()}{note}"
        self.examples.add(Entry(text, [lesson.item_id], "success" if lesson.verdict else "unjudged", lesson.problem))
        return {"kept": True}

    def memory_state(self) -> dict[str, Any]:
        return {"format": self.memory_format, "entries": self.examples.to_json()}

    def load_memory(self, state: dict[str, Any]) -> None:
        self.examples.load(state.get("entries", []))

    def memory_size(self) -> int:
        return len(self.examples)

    def entry_memory(self) -> EntryMemory:
        return self.examples
