"""ArcMemo programs: concept memory read by selection, written by abstraction (paper sections 3.2-3.5).

    arcmemo_oe            s_i = OE selection (caption, then top-k lessons)    write: OE abstraction
    arcmemo_ps            s_i = PS reasoning-based selection                  write: PS abstraction
    arcmemo_ps_noselect   s_i = the whole PS memory, in full (the ablation)   write: PS abstraction

A memory read whose answer cannot be parsed (a small model looping until ``max_tokens``)
does not forfeit the puzzle: the solver goes on without concepts and the read records why.
The memory is fixed unless ``continual_every`` is set (Algorithm 1, see
:mod:`memreason.programs.arc_program`). Knobs: the solver's (attempts, retries, cot,
temperature), ``top_k``, ``continual_every``, ``write_gate``, ``demos``, ``modality``.
"""

from __future__ import annotations

from typing import Any

from dspy.utils.exceptions import AdapterParseError

from memreason.datasets.arc import ArcTask

from .arc_program import ArcProgram
from .concept_abstractor import ConceptAbstractor
from .concept_memory import ConceptMemory
from .concept_selector import ConceptSelector


class ArcMemo(ArcProgram):
    """Read selected (or all) concepts before solving; abstract verified solutions into concepts."""

    def __init__(self, *, format: str = "ps", select: bool = True, top_k: int | None = None,
                 reasoning_selection: bool = True, modality: str = "text", demos: bool = True, **solver_knobs: Any):
        self.memory_format = format
        super().__init__(**solver_knobs)
        self.select_concepts = select
        self.selector = ConceptSelector(format, top_k=top_k, reasoning=reasoning_selection, modality=modality) if select else None
        self.abstractor = ConceptAbstractor(format, demos=demos)
        self.memory = ConceptMemory(format)

    def read(self, task: ArcTask) -> tuple[str, dict[str, Any]]:
        if not self.select_concepts:
            return self.memory.render(), {"selected": "all", "concepts": len(self.memory)}
        try:
            out = self.selector(task=task, memory=self.memory)
        except (AdapterParseError, RuntimeError) as exc:
            if not _unreadable_answer(exc):
                raise
            return "", {"selected": [], "failed": str(exc).splitlines()[0][:300]}
        return out.concepts, out.record

    def write(self, task: ArcTask, solution: str) -> dict[str, Any]:
        return self.abstractor(task=task, solution=solution, memory=self.memory).record


def _unreadable_answer(error: Exception) -> bool:
    """DSPy's parse error, or the harness's ``LMFailure`` of kind unparseable/empty (eval.faults)."""
    return isinstance(error, AdapterParseError) or getattr(error, "kind", None) in ("unparseable", "empty")


class ArcMemoOE(ArcMemo):
    def __init__(self, **knobs: Any):
        super().__init__(format="oe", **knobs)


class ArcMemoPS(ArcMemo):
    def __init__(self, **knobs: Any):
        super().__init__(format="ps", **knobs)
