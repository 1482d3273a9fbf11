"""The ablations of the HDR paper's Table 5: hypotheses without HDR's full pipeline.

    Direct hypothesis:  M_semantic = HG(M_episodic, {}, {})                      no FE, no verification
    Simple two-stage:   F = FactorExtractor(K)(M_episodic); M_semantic = HG(M_episodic, F, {})   no verification
    both:               Input = M_episodic + M_semantic + T

They use HDR's own generator (same signature and prompt), so each differs from
HDR only in the stages it drops. The reasoner thinks step by step by default
(``cot=True``), like HDR's.
"""

from __future__ import annotations

import dspy

from memreason.signatures import Episode

from .factor_extractor import FactorExtractor
from .hypothesis_generator import HypothesisGenerator
from .memory_program import Consolidation, MemoryProgram
from .steps import Steps, call


class DirectHypothesis(MemoryProgram):
    """Hypotheses generated once, straight from the episodes, kept unverified with the episodes."""

    def __init__(self, *, cot: bool = True,
                 signature: type[dspy.Signature] | str | None = None, per_object: bool = False,
                 retrieve_k: int | None = None):
        """
        Args:
            cot: the reasoner thinks step by step before answering.
            signature: the task the reasoner answers (see :class:`Reasoner`); default Experience-Transfer's.
            per_object: label each object and count in code (see :class:`Reasoner`).
            retrieve_k: label each object against its k nearest memory entries (see :class:`Reasoner`).
        """
        super().__init__(episodic=True, semantic=True, cot=cot, signature=signature, per_object=per_object, retrieve_k=retrieve_k)
        self.generate = HypothesisGenerator()

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        out = yield call(self.generate, episodes=episodes)
        return out.hypotheses


class TwoStage(MemoryProgram):
    """Factors extracted (at most K passes), then hypotheses generated once, unverified."""

    def __init__(self, *, K: int = 2, cot: bool = True,
                 signature: type[dspy.Signature] | str | None = None, per_object: bool = False,
                 retrieve_k: int | None = None):
        """
        Args:
            K: the most factor-extraction passes.
            cot: the reasoner thinks step by step before answering.
            signature: the task the reasoner answers (see :class:`Reasoner`); default Experience-Transfer's.
            per_object: label each object and count in code (see :class:`Reasoner`).
            retrieve_k: label each object against its k nearest memory entries (see :class:`Reasoner`).
        """
        super().__init__(episodic=True, semantic=True, cot=cot, signature=signature, per_object=per_object, retrieve_k=retrieve_k)
        self.extract_factors = FactorExtractor(K)
        self.generate = HypothesisGenerator()

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        stage1 = yield call(self.extract_factors, episodes=episodes)
        out = yield call(self.generate, episodes=episodes, factors=stage1.factors)
        record = {"factors": stage1.factors, "factor_passes": stage1.passes}
        return dspy.Prediction(hypotheses=out.hypotheses, record=record)
