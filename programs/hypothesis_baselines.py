"""The ablations of the HDR paper's Table 5: hypotheses without HDR's full pipeline.

    Direct hypothesis:  M_semantic = HG(M_episodic, {}, {})                      no FE, no verification
    Simple two-stage:   F = FactorExtractor(K)(M_episodic); M_semantic = HG(M_episodic, F, {})   no verification
    both:               Input = M_episodic + M_semantic + T

They use HDR's own generator (same signature and prompt), so each differs from
HDR only in the stages it drops. The reasoner thinks step by step by default
(``cot=True``), like HDR's.
"""

from __future__ import annotations

from typing import Any

from memreason.signatures import Episode

from .factor_extractor import FactorExtractor
from .hypothesis_generator import HypothesisGenerator
from .memory_program import MemoryProgram


class DirectHypothesis(MemoryProgram):
    """Hypotheses generated once, straight from the episodes, kept unverified with the episodes."""

    def __init__(self, *, cot: bool = True):
        super().__init__(episodic=True, semantic=True, cot=cot)
        self.generate = HypothesisGenerator()

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> list[str]:
        return self.generate(episodes=episodes).hypotheses


class TwoStage(MemoryProgram):
    """Factors extracted (at most K passes), then hypotheses generated once, unverified."""

    def __init__(self, *, K: int = 2, cot: bool = True):
        super().__init__(episodic=True, semantic=True, cot=cot)
        self.extract_factors = FactorExtractor(K)
        self.generate = HypothesisGenerator()
        self.factor_record: dict[str, Any] = {}

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> list[str]:
        stage1 = self.extract_factors(episodes=episodes)
        self.factor_record = {"factors": stage1.factors, "factor_passes": stage1.passes}
        return self.generate(episodes=episodes, factors=stage1.factors).hypotheses

    def memory_record(self) -> dict[str, Any]:
        return {**super().memory_record(), **self.factor_record}
