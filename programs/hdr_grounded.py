"""HDR with grounded hypothesis refinement (``hdr_grounded``): rules checked by code, not by an LM.

    M_semantic = GroundedConsolidator(K, N)(M_episodic)    # once per run: rules with no counterexample
    y = R(T, M_episodic, M_semantic)                        # per scene, as in HDR

Not the paper's method: the paper's ``hdr`` (an LM verifier) stays as it is. Here the
generator writes each hypothesis as a structured rule over the episodes' attributes, code
rejects every rule an episode contradicts, and the counterexamples go back to the
generator (:mod:`.grounded_consolidator`). The reasoner reads the verified rules in a fixed
wording (``Rule.statement``), so what it is told is exactly what was checked; the
generator's own sentences are kept in the record.

Episodes should carry ``attributes`` (their structured description); an episode without
them (an image) is described once by a perception call.
"""

from __future__ import annotations

from typing import Sequence

import dspy

from memreason.signatures import Episode

from .grounded_consolidator import PERCEIVED, GroundedConsolidator
from .memory_program import Consolidation, MemoryProgram
from .steps import Steps, call


class HDRGrounded(MemoryProgram):
    """Answer from the episodes and the rules that no episode contradicts."""

    def __init__(self, *, K: int = 2, N: int = 3, cot: bool = True, per_object: bool = False, retrieve_k: int | None = None,
                 perceive: Sequence[str] = PERCEIVED, signature: type[dspy.Signature] | str | None = None):
        """
        Args:
            K: the most factor-extraction passes.
            N: the most generate-check rounds (fewer once every episode is explained).
            cot: the reasoner thinks step by step before answering.
            per_object: label each object and count in code (see :class:`Reasoner`).
            retrieve_k: label each object against its k nearest memory entries (see :class:`Reasoner`).
            perceive: the attributes asked of an episode given without ``attributes``.
            signature: the task the reasoner answers (see :class:`Reasoner`); default Experience-Transfer's.
        """
        super().__init__(episodic=True, semantic=True, cot=cot, signature=signature, per_object=per_object, retrieve_k=retrieve_k)
        self.consolidator = GroundedConsolidator(K=K, N=N, perceive=perceive)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        out = yield call(self.consolidator, episodes=episodes)
        return dspy.Prediction(hypotheses=out.hypotheses, record=out.record)
