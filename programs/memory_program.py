"""The shape every Experience-Transfer program shares: consolidate memory once, then answer scenes.

    program.memorize(episodes, oracle_hypotheses)   # once per run: M_semantic = MC(M_episodic)
    program(query=..., scene=...)                   # per scene:   y = R(T, M_episodic, M_semantic)

Subclasses decide what semantic memory is (nothing, the oracle rules, reflections,
verified hypotheses) by overriding :meth:`consolidate`.
"""

from __future__ import annotations

from typing import Any, Sequence

import dspy

from memreason.signatures import Episode

from .reasoner import Reasoner


class MemoryProgram(dspy.Module):
    """Answer Experience-Transfer scenes from episodic and/or semantic memory."""

    def __init__(self, *, episodic: bool, semantic: bool, cot: bool = False):
        super().__init__()
        self.reasoner = Reasoner(episodic=episodic, semantic=semantic, cot=cot)
        self.episodes: list[Episode] = []
        self.hypotheses: list[str] = []

    def memorize(self, episodes: Sequence[Episode], oracle_hypotheses: Sequence[str] = ()) -> dict[str, Any]:
        """Store the episodes, consolidate semantic memory, and return it as a JSON-able record."""
        self.episodes = list(episodes)
        self.hypotheses = list(self.consolidate(self.episodes, list(oracle_hypotheses)))
        return self.memory_record()

    def restore(self, episodes: Sequence[Episode], record: dict[str, Any]) -> None:
        """Take back the memory a :meth:`memorize` call returned as ``record``, without any LM call.

        A resumed run uses the saved snapshot instead of consolidating again (which costs
        calls and, at a temperature above zero, could build a different memory).
        """
        self.episodes = list(episodes)
        self.hypotheses = [str(h) for h in record.get("hypotheses", [])]

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> list[str]:
        """The semantic memory built from ``episodes``; none by default."""
        return []

    def memory_record(self) -> dict[str, Any]:
        return {"hypotheses": list(self.hypotheses)}

    def forward(self, query: str, scene) -> dspy.Prediction:
        return self.reasoner(query=query, scene=scene, episodes=self.episodes, hypotheses=self.hypotheses)
