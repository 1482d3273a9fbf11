"""The memory baselines of the HDR paper's Table 2: raw episodes, oracle hypotheses, or both.

    Episodic memory:      M_semantic = {},    Input = M_episodic + T
    Semantic memory:      M_semantic = H_gt,  Input = M_semantic + T
    Episodic + Semantic:  M_semantic = H_gt,  Input = M_episodic + M_semantic + T

No LM call builds these memories: ``memorize`` stores the episodes and the oracle
hypotheses it is given.
"""

from __future__ import annotations

import dspy

from memreason.signatures import Episode

from .memory_program import Consolidation, MemoryProgram


class EpisodicMemory(MemoryProgram):
    """All raw episodes in context, no abstraction."""

    def __init__(self, *, cot: bool = False,
                 signature: type[dspy.Signature] | str | None = None, per_object: bool = False,
                 retrieve_k: int | None = None):
        """
        Args:
            cot: the reasoner thinks step by step before answering.
            signature: the task the reasoner answers (see :class:`Reasoner`); default Experience-Transfer's.
            per_object: label each object and count in code (see :class:`Reasoner`).
            retrieve_k: label each object against its k nearest memory entries (see :class:`Reasoner`).
        """
        super().__init__(episodic=True, semantic=False, cot=cot, signature=signature, per_object=per_object, retrieve_k=retrieve_k)


class SemanticOracle(MemoryProgram):
    """Only the oracle hypotheses derived from the rule table."""

    def __init__(self, *, cot: bool = False,
                 signature: type[dspy.Signature] | str | None = None, per_object: bool = False,
                 retrieve_k: int | None = None):
        """
        Args:
            cot: the reasoner thinks step by step before answering.
            signature: the task the reasoner answers (see :class:`Reasoner`); default Experience-Transfer's.
            per_object: label each object and count in code (see :class:`Reasoner`).
            retrieve_k: label each object against its k nearest memory entries (see :class:`Reasoner`).
        """
        super().__init__(episodic=False, semantic=True, cot=cot, signature=signature, per_object=per_object, retrieve_k=retrieve_k)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Consolidation:
        return oracle_hypotheses


class EpisodicSemanticOracle(SemanticOracle):
    """The raw episodes and the oracle hypotheses together."""

    def __init__(self, *, cot: bool = False,
                 signature: type[dspy.Signature] | str | None = None, per_object: bool = False,
                 retrieve_k: int | None = None):
        """
        Args:
            cot: the reasoner thinks step by step before answering.
            signature: the task the reasoner answers (see :class:`Reasoner`); default Experience-Transfer's.
            per_object: label each object and count in code (see :class:`Reasoner`).
            retrieve_k: label each object against its k nearest memory entries (see :class:`Reasoner`).
        """
        MemoryProgram.__init__(self, episodic=True, semantic=True, cot=cot, signature=signature, per_object=per_object, retrieve_k=retrieve_k)
