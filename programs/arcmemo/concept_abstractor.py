"""ConceptAbstractor, ArcMemo's memory write (paper section 3.3), for any solved problem.

    OE:  derivation <- Derive(problem, solution)            # post-hoc observations and thoughts
         concepts   <- AbstractOE(problem, solution, derivation)
    PS:  pseudocode <- Pseudocode(solution)                 # higher-level operations first
         concepts   <- AbstractPS(compressed memory, pseudocode, solution)
    M <- M + concepts                                       # PS: new concepts added, existing ones revised by title
                                                            #     (revise=False: kept apart, no memory shown)
                                                            # each keeps ``program``, the verified code, if given

A concept that repeats one of the abstraction's demonstrations (OE: the same situation; PS: the same
title and first implementation note) is not written: it is what the model was shown, not what the
solution says (a small model tends to copy the one example it is given); the record lists it under
``copied_from_demos``.

OE abstraction does not look at the memory (as in the paper); PS abstraction sees
it compressed and is encouraged to revise and to write higher-order routines. A solution
is any text: a program, or a program in a library of primitives followed by a reference
of those it uses (re-ARC's verifiers, :mod:`memreason.datasets.arc.rearc_solutions`); the
concepts are asked for in plain words, since a later solver may not have that library.
What reads no memory (OE's two steps, PS's pseudocode, and PS's concepts when kept apart) is
also :meth:`ConceptAbstractor.draft`, so a caller writing many solutions in order
(``build_memory``) can draft them side by side and write each in turn. The
module carries no demonstrations; the ARC programs give each step one hand-written ARC
example (:mod:`memreason.programs.arcmemo.abstraction_demos`), and any caller may set
``abstractor.abstract.demos`` (and ``derive`` / ``pseudocode``) to its own.
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.signatures import AbstractOEConcepts, AbstractPSConcepts, DeriveSolutionTrace, WritePseudocode

from ..shared.normalise import normalise
from ..shared.steps import StepModule, Steps, call, run
from ..shared.usage import inside, usage
from .concept_memory import ConceptMemory, require_memory

__all__ = ["ConceptAbstractor", "repeats_demonstration"]


class ConceptAbstractor(StepModule):
    """Abstract a verified solution into OE or PS concepts and write them to a concept memory."""

    #: The most characters of compressed memory a PS write shows (``None``: all of it); see
    #: :meth:`ConceptMemory.shown`. A small model's context sets it (:meth:`ArcProgram.show_memory_within`).
    memory_chars: int | None = None

    def __init__(self, format: str = "ps", *, revise: bool = True):
        """
        Args:
            format: the memory's concept format, ``"oe"`` (situation/suggestion lessons, via a
                derivation) or ``"ps"`` (typed concepts, via pseudocode, revising by title).
            revise: PS only: the abstraction sees the memory and may revise a concept by reusing its
                title (the paper's write). False: it sees no memory and each solution's concepts are
                kept apart (a title already taken gets a number), so no concept mixes the notes of
                several solutions; a small model tends to reuse one title for everything.
        """
        super().__init__()
        if format not in ("oe", "ps"):
            raise ValueError(f"format must be 'oe' or 'ps', got {format!r}")
        self.format, self.revise = format, revise
        if format == "oe":
            self.derive = dspy.Predict(DeriveSolutionTrace)
            self.abstract = dspy.Predict(AbstractOEConcepts)
        else:
            self.pseudocode = dspy.Predict(WritePseudocode)
            self.abstract = dspy.Predict(AbstractPSConcepts)

    def draft_steps(self, problem: str, solution: str) -> Steps[dict[str, Any]]:
        """The part of a write that reads no memory, so it may run apart from (and before) the write: OE's
        derivation and concepts; PS's pseudocode, and its concepts too when kept apart (``revise=False``).
        Returns a draft for :meth:`steps` (``concepts`` is ``None`` where the memory must be read first)."""
        with usage() as spent:
            if self.format == "oe":
                derivation = (yield call(self.derive, problem=problem, solution=solution)).derivation
                abstracted = yield call(self.abstract, problem=problem, solution=solution, derivation=derivation)
                draft: dict[str, Any] = {"trace": {"derivation": derivation}, "concepts": abstracted.concepts}
            else:
                pseudocode = (yield call(self.pseudocode, solution=solution)).pseudocode
                concepts = None
                if not self.revise:
                    concepts = (yield call(self.abstract, memory="(empty)", pseudocode=pseudocode, solution=solution)).concepts
                draft = {"trace": {"pseudocode": pseudocode}, "concepts": concepts}
        return {**draft, "tokens": spent}

    def draft(self, problem: str, solution: str) -> dict[str, Any]:
        """:meth:`draft_steps`, run; its calls count as the abstractor's, as a write's do."""
        with inside(self):
            return run(self.draft_steps(problem, solution))

    def steps(
        self,
        problem: str,
        solution: str,
        memory: ConceptMemory,
        source: str = "",
        program: str | None = None,
        draft: dict[str, Any] | None = None,
    ) -> Steps[dspy.Prediction]:
        """Write the concepts of ``solution`` to ``memory``, crediting ``source`` (e.g. the problem's id);
        ``record`` says what was added and revised. ``program``: the verified program behind ``solution``
        (runnable code; ``solution`` may be another text of it), kept by each concept added or revised and
        shown to no LM; ``None`` for a solution not verified. ``draft``: this solution's :meth:`draft`, made
        earlier (its calls are not made again and its tokens count in the record)."""
        require_memory(memory, "ConceptAbstractor")
        if memory.format != self.format:
            raise ValueError(f"a {self.format.upper()} abstractor cannot write to a {memory.format.upper()} memory")
        if draft is None:
            draft = yield from self.draft_steps(problem, solution)
        with usage() as spent:
            concepts = draft["concepts"]
            if concepts is None:  # PS revising: the concepts are abstracted in view of the memory as it is now
                shown, how = memory.shown(self.memory_chars)
                if how != "whole":
                    draft = {**draft, "trace": {**draft["trace"], "memory_shown": how}}
                pseudocode = draft["trace"]["pseudocode"]
                concepts = (
                    yield call(self.abstract, memory=shown or "(empty)", pseudocode=pseudocode, solution=solution)
                ).concepts
        tokens = {k: draft["tokens"].get(k, 0) + spent[k] for k in spent}
        demonstrated = [c for demo in self.abstract.demos for c in (demo.get("concepts") or [])]
        copies = [c for c in concepts if any(repeats_demonstration(c, d, self.format) for d in demonstrated)]
        kept = [c for c in concepts if c not in copies]
        changes = memory.add(kept, source=source or None, revise=self.revise, program=program)
        record = {"source": source, **draft["trace"], "concepts": [c.model_dump() for c in concepts], **changes, "tokens": tokens}
        if copies:
            record["copied_from_demos"] = [c.situation if self.format == "oe" else c.title for c in copies]
        return dspy.Prediction(concepts=concepts, record=record)


def repeats_demonstration(concept: Any, demo: Any, format: str) -> bool:
    """Whether ``concept`` repeats the demonstration's concept ``demo`` (either a concept or its dict): OE, the same
    situation; PS, the same title and first implementation note (a title alone may be honestly reused)."""

    def field(c: Any, name: str) -> Any:
        return c.get(name) if isinstance(c, dict) else getattr(c, name, None)

    if format == "oe":
        return normalise(field(concept, "situation") or "") == normalise(field(demo, "situation") or "")
    notes, demo_notes = field(concept, "implementation_notes") or [""], field(demo, "implementation_notes") or [""]
    return normalise(field(concept, "title") or "") == normalise(field(demo, "title") or "") and normalise(notes[0]) == normalise(
        demo_notes[0]
    )
