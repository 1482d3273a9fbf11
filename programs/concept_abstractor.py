"""ConceptAbstractor, ArcMemo's memory write (paper section 3.3).

    OE:  derivation <- Derive(puzzle, solution)            # post-hoc observations and thoughts
         concepts   <- AbstractOE(puzzle, solution, derivation)
    PS:  pseudocode <- Pseudocode(solution)                 # higher-level operations first
         concepts   <- AbstractPS(compressed memory, pseudocode, solution)
    M <- M + concepts                                       # PS: new concepts added, existing ones revised by title

OE abstraction does not look at the memory (as in the paper); PS abstraction sees
it compressed and is encouraged to revise and to write higher-order routines.
Each step carries one hand-written few-shot demonstration (``demos=False`` drops them).
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.datasets.arc import ArcTask, puzzle_text
from memreason.signatures import AbstractOEConcepts, AbstractPSConcepts, DeriveSolutionTrace, WritePseudocode

from .abstraction_demos import OE_ABSTRACT_DEMOS, OE_DERIVE_DEMOS, PS_ABSTRACT_DEMOS, PS_PSEUDOCODE_DEMOS
from .concept_memory import ConceptMemory
from .usage import usage


class ConceptAbstractor(dspy.Module):
    """Abstract a verified solution into OE or PS concepts and write them to a concept memory."""

    def __init__(self, format: str = "ps", *, demos: bool = True):
        super().__init__()
        if format not in ("oe", "ps"):
            raise ValueError(f"format must be 'oe' or 'ps', got {format!r}")
        self.format = format
        if format == "oe":
            self.derive = dspy.Predict(DeriveSolutionTrace)
            self.abstract = dspy.Predict(AbstractOEConcepts)
            steps = [(self.derive, OE_DERIVE_DEMOS), (self.abstract, OE_ABSTRACT_DEMOS)]
        else:
            self.pseudocode = dspy.Predict(WritePseudocode)
            self.abstract = dspy.Predict(AbstractPSConcepts)
            steps = [(self.pseudocode, PS_PSEUDOCODE_DEMOS), (self.abstract, PS_ABSTRACT_DEMOS)]
        if demos:
            for predictor, examples in steps:
                predictor.demos = list(examples)

    def forward(self, task: ArcTask, solution: str, memory: ConceptMemory) -> dspy.Prediction:
        """Write the concepts of ``solution`` to ``memory``; ``record`` says what was added and revised."""
        if memory.format != self.format:
            raise ValueError(f"a {self.format.upper()} abstractor cannot write to a {memory.format.upper()} memory")
        with usage() as spent:
            if self.format == "oe":
                puzzle = puzzle_text(task, test_inputs=False)
                derivation = self.derive(puzzle=puzzle, solution=solution).derivation
                concepts = self.abstract(puzzle=puzzle, solution=solution, derivation=derivation).concepts
                trace: dict[str, Any] = {"derivation": derivation}
            else:
                pseudocode = self.pseudocode(solution=solution).pseudocode
                concepts = self.abstract(memory=memory.render(compressed=True) or "(empty)",
                                         pseudocode=pseudocode, solution=solution).concepts
                trace = {"pseudocode": pseudocode}
        changes = memory.add(concepts, source=task.id)
        record = {"task": task.id, **trace, "concepts": [c.model_dump() for c in concepts], **changes, "tokens": spent}
        return dspy.Prediction(concepts=concepts, record=record)
