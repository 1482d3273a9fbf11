"""ArcMemo's concept memory (Ho et al. 2025) on text problems: ``arcmemo_oe_stream`` and ``arcmemo_ps_stream``.

    write (a solution known right):  ConceptAbstractor(problem, attempt) -> M       # OE or PS concepts
    read:                             s <- ConceptSelector(problem, M')              # M' = M less entries from this item
                                      memory <- s rendered in full

The modules are ArcMemo's own (:mod:`memreason.programs.arcmemo`): they take the problem and the attempt as
text (:meth:`Lesson.attempt`: the solver's reasoning then its solution, or the solution alone). Only solutions known right are abstracted (a seed problem's reference answer; in the stream, those
the chosen ``learn_from`` judged right); with ``learn_from="none"`` nothing is written past the seeds.
"""

from __future__ import annotations

from typing import Any

from ..arcmemo.concept_abstractor import ConceptAbstractor
from ..arcmemo.concept_memory import ConceptMemory
from ..arcmemo.concept_selector import ConceptSelector
from ..registry import register_program
from .base import Lesson, Read, StreamProgram

__all__ = ["ConceptStream"]


@register_program(
    name="arcmemo_ps_stream",
    knobs={"format": "ps"},
    memory_format="ps",
    summary="stream tasks: ArcMemo's program-synthesis concepts abstracted from solved problems, reasoning-based "
    "selection (knob: top_k)",
)
@register_program(
    name="arcmemo_oe_stream",
    knobs={"format": "oe"},
    memory_format="oe",
    summary="stream tasks: ArcMemo's open-ended concepts abstracted from solved problems, caption + top-k selection",
)
class ConceptStream(StreamProgram):
    """OE or PS concepts abstracted from solved problems, selected by the LM for each new one."""

    selects = True  # the selector reads memory with an LM call of its own
    space = {"top_k": ("int", 1, 6)}  # its knob's Optuna search space

    reads_attempts = True

    def __init__(self, *, format: str = "ps", top_k: int | None = None, **solver: Any):
        """
        Args:
            format: ``"oe"`` (situation/suggestion lessons) or ``"ps"`` (typed concepts).
            top_k: the most concepts selected (OE default 5; PS default no cap).
            **solver: :class:`StreamProgram`'s (answer, retries, cot).
        """
        super().__init__(**solver)
        self.format = format
        self.memory = ConceptMemory(format)
        self.abstractor = ConceptAbstractor(format)
        self.selector = ConceptSelector(format, top_k=top_k)

    @property
    def memory_format(self) -> str:  # type: ignore[override]
        return self.format

    def read(self, problem: str, item_id: str = "", check: Any = None) -> Read:
        memory = self.memory
        visible = [e for e in memory.entries if item_id not in e.sources]
        withheld = len(memory.entries) - len(visible)
        if withheld:
            memory = ConceptMemory(self.format, visible)
        chosen = self.selector(problem=problem, memory=memory)
        return Read(chosen.concepts, {"selected": list(chosen.names), "withheld": withheld, "select": chosen.record})

    def learn(self, lesson: Lesson) -> dict[str, Any]:
        if lesson.verdict is not True:
            return {"abstracted": False}
        out = self.abstractor(problem=lesson.problem, solution=lesson.attempt(), memory=self.memory, source=lesson.item_id)
        return {"abstracted": True, "added": out.record.get("added", []), "revised": out.record.get("revised", [])}

    def memory_state(self) -> dict[str, Any]:
        return self.memory.to_json()

    def load_memory(self, state: dict[str, Any]) -> None:
        if state:
            self.memory.load_state(state)

    def memory_size(self) -> int:
        return len(self.memory)
