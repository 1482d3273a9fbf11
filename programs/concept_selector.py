"""ConceptSelector, ArcMemo's memory read (paper section 3.4).

    OE:  caption  <- Caption(puzzle)                       # observations apart from speculation
         chosen   <- SelectOE(situations, caption, top_k)  # lesson numbers
    PS:  chosen   <- SelectPS(compressed memory, puzzle)   # reasoning over cues and types, then titles
    s = render(chosen, in full)

Names that do not exist in memory are dropped and counted (``hallucinated``);
repeats are dropped; at most ``top_k`` are kept (no cap for PS when ``top_k`` is
None). The caption reads the text grids, or the task rendered as an image with
``modality="image"`` (a vision model). An empty memory makes no call.
"""

from __future__ import annotations

import dspy

from memreason.datasets.arc import ArcTask, puzzle_text, task_image
from memreason.signatures import CaptionArcPuzzle, SelectOEConcepts, SelectPSConcepts

from .concept_memory import ConceptMemory
from .usage import usage


class ConceptSelector(dspy.Module):
    """Choose the concepts of a memory relevant to a task; return them rendered for the solver."""

    def __init__(self, format: str = "ps", *, top_k: int | None = None, reasoning: bool = True, modality: str = "text"):
        super().__init__()
        if format not in ("oe", "ps"):
            raise ValueError(f"format must be 'oe' or 'ps', got {format!r}")
        if modality not in ("text", "image"):
            raise ValueError(f"modality must be 'text' or 'image', got {modality!r}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        self.format, self.modality = format, modality
        self.top_k = top_k if top_k is not None or format == "ps" else 5
        if format == "oe":
            self.caption = dspy.Predict(CaptionArcPuzzle)
            self.select = dspy.Predict(SelectOEConcepts)
        else:
            self.select = dspy.ChainOfThought(SelectPSConcepts) if reasoning else dspy.Predict(SelectPSConcepts)

    def forward(self, task: ArcTask, memory: ConceptMemory) -> dspy.Prediction:
        """``concepts``: the chosen concepts in full; ``names``; ``record`` (asked, kept, hallucinated, tokens)."""
        if memory.format != self.format:
            raise ValueError(f"a {self.format.upper()} selector cannot read a {memory.format.upper()} memory")
        record: dict = {"asked": [], "selected": [], "hallucinated": [], "tokens": {"prompt": 0, "completion": 0, "calls": 0}}
        if not len(memory):
            return dspy.Prediction(concepts="", names=[], record=record)
        with usage() as spent:
            if self.format == "oe":
                puzzle = dspy.Image(task_image(task)) if self.modality == "image" else puzzle_text(task)
                caption = self.caption(puzzle=puzzle)
                asked = self.select(situations=memory.render(compressed=True), observations=caption.observations,
                                    speculation=caption.speculation, top_k=self.top_k).chosen
                record["caption"] = {"observations": caption.observations, "speculation": caption.speculation}
            else:
                asked = self.select(memory=memory.render(compressed=True), puzzle=puzzle_text(task)).selected
        known, unknown = memory.resolve(asked)
        names = known[: self.top_k] if self.top_k else known
        memory.use(names)
        record.update(asked=[str(a) for a in asked], selected=names, hallucinated=unknown, tokens=spent)
        return dspy.Prediction(concepts=memory.render(names), names=names, record=record)
