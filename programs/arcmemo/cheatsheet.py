"""The Dynamic Cheatsheet baseline (Suzgun et al. 2025, cumulative "DC-Cu"), as ArcMemo compares with it.

    s_i = the whole cheatsheet                             # no selection
    write: cheatsheet <- Curate(cheatsheet, puzzle, solution)

Frozen by default, as in the paper's comparison (the cheatsheet is built from the
seed solutions by ``build_memory --format cheatsheet``); ``continual_every=k``
makes it update during evaluation.
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.datasets.arc import ArcTask, puzzle_text
from memreason.signatures import CurateCheatsheet

from ..shared.usage import usage
from .arc_program import ArcProgram
from .cheatsheet_memory import CheatsheetMemory

__all__ = ["Cheatsheet"]


class Cheatsheet(ArcProgram):
    memory_format = "cheatsheet"
    memory_writer_names = ("curate",)

    def __init__(self, **solver_knobs: Any):
        """``solver_knobs``: :class:`ArcProgram`'s (attempts, retries, cot, temperature, seed,
        continual_every, write_gate, sandbox, freeze_memory_writers: the curator kept from optimizers)."""
        super().__init__(**solver_knobs)
        self.curate = dspy.Predict(CurateCheatsheet)
        self.memory = CheatsheetMemory()

    def read_steps(self, task: ArcTask) -> tuple[str, dict[str, Any]]:
        return self.memory.text, {"cheatsheet_chars": len(self.memory.text)}

    def write(self, task: ArcTask, solution: str, program: str | None = None, draft: Any = None) -> dict[str, Any]:
        """Curate the cheatsheet with ``solution`` (``program`` is not kept: a cheatsheet is text alone; the
        curation reads the cheatsheet, so there is no ``draft``)."""
        with usage() as spent:
            text = self.curate(
                cheatsheet=self.memory.text, puzzle=puzzle_text(task, test_inputs=False), solution=solution
            ).updated_cheatsheet
        self.memory.text = text
        if task.id not in self.memory.sources:
            self.memory.sources.append(task.id)
        return {"task": task.id, "cheatsheet_chars": len(text), "tokens": spent}
