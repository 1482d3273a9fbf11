"""The reasoning module R of the HDR paper: answer a task from episodic and/or semantic memory.

    y = R(T, M_episodic, M_semantic)

Which memories it reads, and whether it thinks step by step first (CoT), are
constructor arguments; the signature keeps only the memory fields it uses.
"""

from __future__ import annotations

import dspy

from memreason.signatures import Episode, ReasonWithMemory


class Reasoner(dspy.Module):
    """Answer ``query`` about ``scene`` from the memories given."""

    def __init__(self, *, episodic: bool, semantic: bool, cot: bool = False):
        super().__init__()
        if not (episodic or semantic):
            raise ValueError("a Reasoner reads at least one memory: episodic, semantic or both")
        self.episodic, self.semantic = episodic, semantic
        signature = ReasonWithMemory
        if not episodic:
            signature = signature.delete("episodes")
        if not semantic:
            signature = signature.delete("hypotheses")
        self.answer = dspy.ChainOfThought(signature) if cot else dspy.Predict(signature)

    def forward(
        self,
        query: str,
        scene,
        episodes: list[Episode] | None = None,
        hypotheses: list[str] | None = None,
    ) -> dspy.Prediction:
        memory = {}
        if self.episodic:
            memory["episodes"] = episodes or []
        if self.semantic:
            memory["hypotheses"] = hypotheses or []
        return self.answer(**memory, query=query, scene=scene)
