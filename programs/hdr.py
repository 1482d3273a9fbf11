"""Hypothesis-Driven Reasoning (HDR paper, Algorithm 1).

    M_semantic = MC(M_episodic)                      # once per run: MemoryConsolidator(K, N)
    y = R(T, M_episodic, M_semantic)                 # per scene:   Input = M_episodic + M_semantic + T

The reasoner thinks step by step by default (``cot=True``): the paper's Table 3
compares HDR with the CoT "Episodic + Semantic" oracle row.
"""

from __future__ import annotations

import dspy

from memreason.signatures import Episode

from .memory_consolidator import MemoryConsolidator
from .memory_program import Consolidation, MemoryProgram
from .steps import Steps, call


class HDR(MemoryProgram):
    """Answer from the episodes and the hypotheses that survived N generate-verify rounds."""

    def __init__(self, *, K: int = 2, N: int = 3, cot: bool = True,
                 signature: type[dspy.Signature] | str | None = None, per_object: bool = False,
                 retrieve_k: int | None = None, resample: bool = False):
        """
        Args:
            K: the most factor-extraction passes of the consolidator.
            N: the consolidator's generate-verify rounds.
            cot: the reasoner thinks step by step before answering.
            signature: the task the reasoner answers (see :class:`Reasoner`); default Experience-Transfer's.
            per_object: label each object and count in code (see :class:`Reasoner`).
            retrieve_k: label each object against its k nearest memory entries (see :class:`Reasoner`).
            resample: the consolidator's later rounds propose afresh from reordered episodes
                (see :class:`MemoryConsolidator`; not the paper's).
        """
        super().__init__(episodic=True, semantic=True, cot=cot, signature=signature, per_object=per_object, retrieve_k=retrieve_k)
        self.consolidator = MemoryConsolidator(K=K, N=N, resample=resample)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        out = yield call(self.consolidator, episodes=episodes)
        return dspy.Prediction(hypotheses=out.hypotheses, record=out.record)
