"""Hypothesis-Driven Reasoning (HDR paper, Algorithm 1).

    M_semantic = MC(M_episodic)                      # once per run: MemoryConsolidator(K, N)
    y = R(T, M_episodic, M_semantic)                 # per scene:   Input = M_episodic + M_semantic + T

The reasoner thinks step by step by default (``cot=True``): the paper's Table 3
compares HDR with the CoT "Episodic + Semantic" oracle row.
"""

from __future__ import annotations

from typing import Any

from memreason.signatures import Episode

from .memory_consolidator import MemoryConsolidator
from .memory_program import MemoryProgram


class HDR(MemoryProgram):
    """Answer from the episodes and the hypotheses that survived N generate-verify rounds."""

    def __init__(self, *, K: int = 2, N: int = 3, cot: bool = True):
        super().__init__(episodic=True, semantic=True, cot=cot)
        self.consolidator = MemoryConsolidator(K=K, N=N)
        self.consolidation: dict[str, Any] = {}

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> list[str]:
        out = self.consolidator(episodes=episodes)
        self.consolidation = out.record
        return out.hypotheses

    def memory_record(self) -> dict[str, Any]:
        return {**super().memory_record(), **self.consolidation}
