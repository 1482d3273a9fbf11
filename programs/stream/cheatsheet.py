"""Dynamic Cheatsheet (Suzgun et al. 2025) over a stream of problems: cumulative and retrieval-synthesis.

``cheatsheet_cu`` (DC-Cu):

    read:   the whole cheatsheet (the newest version not written from this item)
    write:  cheatsheet <- Curate(cheatsheet, problem, attempt, outcome)      # rewritten whole, a new version

``cheatsheet_rs`` (DC-RS):

    read:   E <- the k earlier (problem, attempt, outcome) most like the problem, none from this item
            cheatsheet <- Synthesize(E, problem)                            # one LM call a problem
    write:  M <- M + (problem, attempt, outcome)

The cumulative sheet keeps every version with the items it was written from; an item is shown the newest
version none of whose writes came from it (the entries of the newer ones are counted as withheld). An attempt
is :meth:`Lesson.attempt`: the solver's reasoning then its answer, or the answer alone, as the run chose.
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.signatures.stream import CurateStreamCheatsheet, SynthesizeCheatsheet

from ..registry import register_program
from .base import Lesson, Read, StreamProgram
from .entries import Entry, EntryMemory, estimated_tokens

__all__ = ["CheatsheetCU", "CheatsheetRS"]


@register_program
class CheatsheetCU(StreamProgram):
    """One cheatsheet, curated after every problem and read whole."""

    name = "cheatsheet_cu"
    summary = "stream tasks: Dynamic Cheatsheet, cumulative: one cheatsheet curated after every problem, read whole"

    reads_attempts = True

    memory_format = "cheatsheet"

    def __init__(self, **solver: Any):
        """
        Args:
            **solver: :class:`StreamProgram`'s (answer, retries, cot, memory_first).
        """
        super().__init__(**solver)
        self.curate = dspy.Predict(CurateStreamCheatsheet)
        self.versions: list[dict[str, Any]] = []  # {"entries": [...], "sources": [...]}, oldest first

    def current(self, item_id: str = "") -> tuple[list[str], int]:
        """(the entries of the newest version not written from ``item_id``, the entries of newer ones withheld)."""
        for index in range(len(self.versions) - 1, -1, -1):
            if item_id not in self.versions[index]["sources"]:
                newest = self.versions[-1]["entries"]
                return list(self.versions[index]["entries"]), len(newest) if index < len(self.versions) - 1 else 0
        return [], len(self.versions[-1]["entries"]) if self.versions else 0

    def read(self, problem: str, item_id: str = "", check: Any = None) -> Read:
        entries, withheld = self.current(item_id)
        return Read("\n".join(f"- {e}" for e in entries), {"entries": len(entries), "withheld": withheld})

    def learn(self, lesson: Lesson) -> dict[str, Any]:
        entries, _ = self.current()
        sheet = "\n".join(entries) or "(empty)"
        updated = self.curate(cheatsheet=sheet, problem=lesson.problem, solution=lesson.attempt(), outcome=lesson.outcome())
        sources = [*(self.versions[-1]["sources"] if self.versions else []), lesson.item_id]
        new = [str(e).strip() for e in updated.updated_cheatsheet if str(e).strip()]
        self.versions.append({"entries": new, "sources": sources})
        return {"entries": len(new)}

    def memory_state(self) -> dict[str, Any]:
        return {"format": self.memory_format, "versions": self.versions}

    def load_memory(self, state: dict[str, Any]) -> None:
        self.versions = [{"entries": list(v["entries"]), "sources": list(v["sources"])} for v in state.get("versions", [])]

    def memory_size(self) -> int:
        return len(self.versions[-1]["entries"]) if self.versions else 0

    def fit_budget(self, tokens: int) -> list[str]:
        """Cut the newest version's last entries until the sheet fits in ``tokens`` (characters / 4); those cut."""
        if not self.versions:
            return []
        entries = self.versions[-1]["entries"]
        cut = []
        while entries and sum(map(estimated_tokens, entries)) > tokens:
            cut.insert(0, entries.pop())
        return cut


@register_program
class CheatsheetRS(StreamProgram):
    """A cheatsheet synthesised for each problem from the most similar earlier ones."""

    name = "cheatsheet_rs"
    summary = (
        "stream tasks: Dynamic Cheatsheet, retrieval and synthesis: a cheatsheet written for each problem from the "
        "k most similar earlier ones (knob: k)"
    )
    selects = True

    reads_attempts = True

    memory_format = "cheatsheet_rs"
    space = {"k": ("int", 1, 6)}  # its knob's Optuna search space

    def __init__(self, *, k: int = 3, **solver: Any):
        """
        Args:
            k: the most earlier problems a cheatsheet is synthesised from.
            **solver: :class:`StreamProgram`'s (answer, retries, cot, memory_first).
        """
        super().__init__(**solver)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.k = k
        self.synthesize = dspy.Predict(SynthesizeCheatsheet)
        self.solved = EntryMemory()

    def read(self, problem: str, item_id: str = "", check: Any = None) -> Read:
        shown, withheld = self.solved.visible(item_id)
        chosen = self.solved.nearest(problem, k=self.k, among=shown)
        record = {"shown": [e.sources for e in chosen], "ids": [e.id for e in chosen], "withheld": withheld}
        if not chosen:
            return Read("", record)
        solved = "\n\n".join(f"Problem {i}:\n{e.text}" for i, e in enumerate(chosen, 1))
        sheet = self.synthesize(solved=solved, problem=problem).cheatsheet
        return Read("\n".join(f"- {str(e).strip()}" for e in sheet), record)

    def learn(self, lesson: Lesson) -> dict[str, Any]:
        text = f"{lesson.problem.strip()}\nAnswer given: {lesson.attempt().strip()}\nOutcome: {lesson.outcome()}"
        kind = {True: "success", False: "failure", None: "unjudged"}[lesson.verdict]
        self.solved.add(Entry(text, [lesson.item_id], kind, lesson.problem))
        return {"kept": True}

    def memory_state(self) -> dict[str, Any]:
        return {"format": self.memory_format, "entries": self.solved.to_json()}

    def load_memory(self, state: dict[str, Any]) -> None:
        self.solved.load(state.get("entries", []))

    def memory_size(self) -> int:
        return len(self.solved)

    def entry_memory(self) -> EntryMemory:
        return self.solved
