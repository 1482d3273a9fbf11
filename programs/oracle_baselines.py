"""The memory baselines of the HDR paper's Table 2: raw episodes, oracle hypotheses, or both.

    Episodic memory:      M_semantic = {},    Input = M_episodic + T
    Semantic memory:      M_semantic = H_gt,  Input = M_semantic + T
    Episodic + Semantic:  M_semantic = H_gt,  Input = M_episodic + M_semantic + T
"""

from __future__ import annotations

from memreason.signatures import Episode

from .memory_program import MemoryProgram


class EpisodicMemory(MemoryProgram):
    """All raw episodes in context, no abstraction."""

    def __init__(self, *, cot: bool = False):
        super().__init__(episodic=True, semantic=False, cot=cot)


class SemanticOracle(MemoryProgram):
    """Only the oracle hypotheses derived from the rule table."""

    def __init__(self, *, cot: bool = False):
        super().__init__(episodic=False, semantic=True, cot=cot)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> list[str]:
        return oracle_hypotheses


class EpisodicSemanticOracle(SemanticOracle):
    """The raw episodes and the oracle hypotheses together."""

    def __init__(self, *, cot: bool = False):
        MemoryProgram.__init__(self, episodic=True, semantic=True, cot=cot)
