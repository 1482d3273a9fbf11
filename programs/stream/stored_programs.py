"""``stored_programs``: a memory of working ``solve(problem)`` programs, read by running them on the new problem
(as ArcMemo's execution-ranked reads run stored programs on a puzzle's train pairs; as Dynamic Cheatsheet's
Game-of-24 sheet came to hold a working solver).

    write (a solution known right, answer mode "function"):  P <- P + solve            # the newest first, at most `keep`
    read:  for each stored solve in P: run it on the problem in the sandbox; check what it returns
           rank: passes the check > returns an answer > fails; show the `top_k` best, each with what it returned
           (never a program written from this item)

Without a check (a task that has none), a program that returns an answer ranks above one that fails. The
solver then writes its own ``solve`` with the ranked programs in memory, and may reuse one as it is.
"""

from __future__ import annotations

from typing import Any

from ..registry import register_program
from .base import Lesson, Read, StreamProgram
from .entries import Entry, EntryMemory
from .print_runner import PrintRunner
from .solver import applied

__all__ = ["StoredPrograms"]


@register_program
class StoredPrograms(StreamProgram):
    """Working ``solve(problem)`` programs, ranked by running them on each new problem."""

    name = "stored_programs"
    summary = (
        "stream tasks, --answer function: working solve(problem) programs kept, ranked by running them on the new "
        "problem and checking what they return, the top_k shown (knobs: top_k, keep); not a paper's"
    )

    memory_format = "programs"
    space = {"top_k": ("int", 1, 4)}  # its knob's Optuna search space

    def __init__(self, *, top_k: int = 2, keep: int = 8, runner: PrintRunner | None = None, **solver: Any):
        """
        Args:
            top_k: the most stored programs shown to the solver.
            keep: the most programs stored (the newest kept).
            runner: runs programs (default: the shared sandbox).
            **solver: :class:`StreamProgram`'s; ``answer`` must be ``"function"`` (a program that can run on
                another problem).
        """
        solver.setdefault("answer", "function")
        if solver["answer"] != "function":
            raise ValueError("stored_programs keeps solve(problem) programs: give --answer function")
        super().__init__(**solver)
        if top_k < 1 or keep < 1:
            raise ValueError(f"top_k and keep must be >= 1, got {top_k} and {keep}")
        self.top_k, self.keep = top_k, keep
        self.runner = runner
        self.programs = EntryMemory()

    def read(self, problem: str, item_id: str = "", check: Any = None) -> Read:
        shown, withheld = self.programs.visible(item_id)
        ranked = []
        for rank, entry in enumerate(reversed(shown)):  # the newest first among equals
            printed = self._runner().run(applied(entry.text, problem))
            passed = None if printed.answer is None or check is None else bool(check(printed.answer).ok)
            score = 2 if passed else (1 if printed.answer is not None and passed is None else 0)
            ranked.append((-score, rank, entry, printed, passed))
        ranked.sort(key=lambda t: t[:2])
        blocks, record = [], []
        for _, _, entry, printed, passed in ranked[: self.top_k]:
            said = printed.feedback().replace("the program", "it")
            verdict = {True: "passes the check", False: "fails the check", None: ""}[passed]
            blocks.append(
                f"A stored solve(problem), run on this problem: {said}{'; ' + verdict if verdict else ''}\n{entry.text}"
            )
            record.append({"sources": entry.sources, "id": entry.id, "answer": printed.answer, "passed": passed})
        ids = [shown["id"] for shown in record]
        return Read("\n\n".join(blocks), {"ran": len(ranked), "shown": record, "ids": ids, "withheld": withheld})

    def learn(self, lesson: Lesson) -> dict[str, Any]:
        if lesson.verdict is not True or "def solve" not in lesson.solution:
            return {"kept": False}
        if any(e.text == lesson.solution for e in self.programs.entries):
            for entry in self.programs.entries:
                if entry.text == lesson.solution and lesson.item_id not in entry.sources:
                    entry.sources.append(lesson.item_id)
            return {"kept": False, "known": True}
        self.programs.add(Entry(lesson.solution, [lesson.item_id], "program", lesson.problem))
        self.programs.entries[:] = self.programs.entries[-self.keep :]
        return {"kept": True}

    def _runner(self) -> PrintRunner:
        if self.runner is None:
            self.runner = self.solver._runner()
        return self.runner

    def memory_state(self) -> dict[str, Any]:
        return {"format": self.memory_format, "entries": self.programs.to_json()}

    def load_memory(self, state: dict[str, Any]) -> None:
        self.programs.load(state.get("entries", []))

    def memory_size(self) -> int:
        return len(self.programs)

    def entry_memory(self) -> EntryMemory:
        return self.programs
