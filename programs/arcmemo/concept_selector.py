"""ConceptSelector, ArcMemo's memory read (paper section 3.4), for any problem given as text or an image.

    OE:  caption  <- Caption(problem)                      # observations apart from speculation
         chosen   <- SelectOE(situations, caption, top_k)  # lesson numbers
    PS:  chosen   <- SelectPS(compressed memory, problem)  # reasoning over cues and types, then titles
    s = render(chosen, in full)

    retry (``reselect``): chosen <- Reselect(compressed memory, problem, previous program, feedback, k)  # OE: numbers

Names that do not exist in memory are dropped and counted (``hallucinated``; a PS title is matched
on its letters and digits, so ``slide_cells`` names "slide cells");
repeats are dropped; at most ``top_k`` are kept (no cap for PS when ``top_k`` is
None). An empty memory makes no call. The caller states the problem: the ARC programs
pass the puzzle's grids as text (or drawn as an image) after a line on the format
(:mod:`memreason.programs.arcmemo.arc_problem`).
"""

from __future__ import annotations

from typing import Sequence

import dspy

from memreason.signatures import CaptionProblem, ReselectConcepts, ReselectOEConcepts, SelectOEConcepts, SelectPSConcepts

from ..shared.steps import StepModule, Steps, call
from ..shared.usage import inside, usage
from .concept_memory import ConceptMemory, require_memory

__all__ = ["ConceptSelector"]


class ConceptSelector(StepModule):
    """Choose the concepts of a memory relevant to a problem; return them rendered in full."""

    #: The most characters of compressed memory a selection shows (``None``: all of it); see
    #: :meth:`ConceptMemory.shown`. A small model's context sets it (:meth:`ArcProgram.show_memory_within`).
    memory_chars: int | None = None

    def __init__(self, format: str = "ps", *, top_k: int | None = None, reasoning: bool = True, reselect: bool = False):
        """
        Args:
            format: the memory's concept format, ``"oe"`` (situation/suggestion lessons) or ``"ps"`` (typed concepts).
            top_k: the most concepts kept (OE default 5; PS default None, no cap).
            reasoning: PS only: think step by step before naming titles (``dspy.ChainOfThought``).
            reselect: also hold the predictor :meth:`reselect` uses (a retry's re-selection).
        """
        super().__init__()
        if format not in ("oe", "ps"):
            raise ValueError(f"format must be 'oe' or 'ps', got {format!r}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        self.format = format
        self.top_k = top_k if top_k is not None or format == "ps" else 5
        if format == "oe":
            self.caption = dspy.Predict(CaptionProblem)
            self.select = dspy.Predict(SelectOEConcepts)
        else:
            self.select = dspy.ChainOfThought(SelectPSConcepts) if reasoning else dspy.Predict(SelectPSConcepts)
        if reselect:
            self.reselect_with = dspy.Predict(ReselectOEConcepts if format == "oe" else ReselectConcepts)  # OE: lesson numbers

    def steps(self, problem: str | dspy.Image, memory: ConceptMemory) -> Steps[dspy.Prediction]:
        """``concepts``: the chosen concepts in full; ``names``; ``record`` (asked, kept, hallucinated, tokens)."""
        require_memory(memory, "ConceptSelector")
        if memory.format != self.format:
            raise ValueError(f"a {self.format.upper()} selector cannot read a {memory.format.upper()} memory")
        if not len(memory):
            return _nothing()
        record: dict = {}
        shown, how = memory.shown(self.memory_chars)
        if how != "whole":
            record["memory_shown"] = how
        with usage() as spent:
            if self.format == "oe":
                caption = yield call(self.caption, problem=problem)
                chosen = yield call(
                    self.select,
                    situations=shown,
                    top_k=self.top_k,
                    observations=caption.observations,
                    speculation=caption.speculation,
                )
                asked = chosen.chosen
                record["caption"] = {"observations": caption.observations, "speculation": caption.speculation}
            else:
                asked = (yield call(self.select, memory=shown, problem=problem)).selected
        return _chosen(memory, asked, spent, record, top_k=self.top_k, chars=self.memory_chars)

    def reselect(
        self,
        problem: str,
        memory: ConceptMemory,
        *,
        previous_program: str,
        feedback: str,
        top_k: int | None = None,
        exclude: Sequence[str] = (),
    ) -> dspy.Prediction:
        """Choose concepts again for a retry, in view of the last program and its feedback; as :meth:`forward`,
        leaving out the names in ``exclude`` (what the solver has already), at most ``top_k`` (default: the
        selector's; 5 when it has none)."""
        if not hasattr(self, "reselect_with"):
            raise ValueError("this selector was built without reselect=True")
        require_memory(memory, "ConceptSelector.reselect")
        if not len(memory):
            return _nothing()
        k = top_k or self.top_k or 5
        shown, how = memory.shown(self.memory_chars)
        record = {"memory_shown": how} if how != "whole" else {}
        with inside(self), usage() as spent:
            asked = self.reselect_with(
                memory=shown,
                problem=problem,
                previous_program=previous_program,
                feedback=feedback,
                top_k=k,
            ).chosen
        return _chosen(memory, asked, spent, record, top_k=k, exclude=exclude, chars=self.memory_chars)


def _nothing() -> dspy.Prediction:
    """What a read of an empty memory gives (no call is made)."""
    record = {"asked": [], "selected": [], "hallucinated": [], "tokens": {"prompt": 0, "completion": 0, "calls": 0}}
    return dspy.Prediction(concepts="", names=[], record=record)


def _chosen(
    memory: ConceptMemory,
    asked,
    spent: dict[str, int],
    record: dict,
    *,
    top_k: int | None,
    exclude: Sequence[str] = (),
    chars: int | None = None,
) -> dspy.Prediction:
    """The names ``asked`` that memory holds, less ``exclude``, at most ``top_k`` (None: all), rendered in full
    within ``chars`` characters (:meth:`ConceptMemory.render_within`)."""
    known, unknown = memory.resolve(asked)
    left_out = set(exclude)
    names = [n for n in known if n not in left_out]
    names = names[:top_k] if top_k else names
    memory.use(names)
    record.update(asked=[str(a) for a in asked], selected=names, hallucinated=unknown, tokens=spent)
    concepts, how = memory.render_within(names, chars)
    if how != "whole":
        record["concepts_shown"] = how
    return dspy.Prediction(concepts=concepts, names=names, record=record)
