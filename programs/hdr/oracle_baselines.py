"""The memory baselines of the HDR paper's Table 2: raw episodes, oracle hypotheses, or both.

    Episodic memory:      M_semantic = {},    Input = M_episodic + T
    Semantic memory:      M_semantic = H_gt,  Input = M_semantic + T
    Episodic + Semantic:  M_semantic = H_gt,  Input = M_episodic + M_semantic + T

No LM call builds these memories: ``memorize`` stores the episodes and the oracle
hypotheses it is given.
"""

from __future__ import annotations

from memreason.signatures import Episode

from ..shared.memory_program import Consolidation, MemoryProgram

__all__ = ["EpisodicMemory", "EpisodicSemanticOracle", "SemanticOracle"]


class EpisodicMemory(MemoryProgram):
    """All raw episodes in context, no abstraction (knobs: :class:`MemoryProgram`'s)."""

    semantic = False


class SemanticOracle(MemoryProgram):
    """Only the oracle hypotheses derived from the rule table (knobs: :class:`MemoryProgram`'s)."""

    episodic = False

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Consolidation:
        return oracle_hypotheses


class EpisodicSemanticOracle(SemanticOracle):
    """The raw episodes and the oracle hypotheses together (knobs: :class:`MemoryProgram`'s)."""

    episodic = True
