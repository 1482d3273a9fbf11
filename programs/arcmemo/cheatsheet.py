"""The Dynamic Cheatsheet baseline (Suzgun et al. 2025, cumulative "DC-Cu"), as ArcMemo compares with it.

    s_i = the whole cheatsheet                             # no selection
    write: cheatsheet <- Curate(cheatsheet, puzzle, solution)   # its entries, one a line

An entry that holds a DSPy field marker (``[[ ## cheatsheet ## ]]``: the curator copying its own
prompt) or repeats an earlier one is dropped; a curation left with no entry is refused
(:class:`CurationRefused`, recorded as the write's error) and the cheatsheet stays as it was.

Frozen by default, as in the paper's comparison (the cheatsheet is built from the
seed solutions by ``build_memory --format cheatsheet``); ``continual_every=k``
makes it update during evaluation.
"""

from __future__ import annotations

import re
from typing import Any

import dspy

from memreason.datasets.arc import ArcTask, puzzle_text
from memreason.signatures import CurateCheatsheet

from ..registry import register_program
from ..shared.usage import usage
from .arc_program import ArcProgram
from .cheatsheet_memory import CheatsheetMemory

__all__ = ["Cheatsheet", "CurationRefused", "curated_entries"]

BULLET = re.compile(r"^[-*•]\s+")  # a list bullet before an entry
FIELD_MARKER = "[[ ##"  # how DSPy marks a field in a prompt: never part of a strategy


@register_program
class Cheatsheet(ArcProgram):
    name = "cheatsheet"
    summary = "Dynamic Cheatsheet (cumulative), whole cheatsheet in context, frozen unless continual_every"

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
        curation reads the cheatsheet, so there is no ``draft``). Raises :class:`CurationRefused` when the
        curator gave no usable entry (the cheatsheet is left as it was)."""
        with usage() as spent:
            answer = self.curate(
                cheatsheet=self.memory.text, puzzle=puzzle_text(task, test_inputs=False), solution=solution
            ).updated_cheatsheet
        entries, dropped = curated_entries(answer)
        if not entries:
            raise CurationRefused(f"the curator gave no usable entry ({dropped} dropped: its prompt's field markers, repeats)")
        self.memory.text = "\n".join(f"- {entry}" for entry in entries)
        if task.id not in self.memory.sources:
            self.memory.sources.append(task.id)
        return {
            "task": task.id,
            "cheatsheet_chars": len(self.memory.text),
            "entries": len(entries),
            "dropped": dropped,
            "tokens": spent,
        }


class CurationRefused(ValueError):
    """A curation with no usable entry: the cheatsheet is not replaced."""


def curated_entries(answer: list[str] | str) -> tuple[list[str], int]:
    """The entries of a curated cheatsheet worth keeping, in order, and how many were dropped: an entry is
    dropped when it is empty, holds a DSPy field marker, or repeats an earlier one (after its bullet and
    spaces). A plain string (a model that ignored the list) counts a line an entry."""
    items = answer.splitlines() if isinstance(answer, str) else [str(item) for item in answer]
    kept: dict[str, str] = {}
    dropped = 0
    for item in items:
        entry = BULLET.sub("", item.strip()).strip()
        key = " ".join(entry.lower().split())
        if not entry or FIELD_MARKER in entry or key in kept:
            dropped += bool(item.strip())
            continue
        kept[key] = entry
    return list(kept.values()), dropped
