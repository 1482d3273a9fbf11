"""FE, the first stage of HDR's memory consolidator (Algorithm 1, lines 2-10).

    F_0 <- {}
    for i = 1 to K:
        F_i <- FE(M_episodic, F_{i-1})
        if F_i = F_{i-1}: break
    F <- F_i

The loop makes at most K calls and stops at the first pass that returns the
factors it was given, compared as sets of normalised texts (case, whitespace and
trailing punctuation do not count).
"""

from __future__ import annotations

import dspy

from memreason.signatures import FactorExtraction

from .episodes import as_episodes
from .normalise import distinct, normalise
from .steps import Steps, arun, call, run


class FactorExtractor(dspy.Module):
    """Extract candidate factors from the episodes in at most ``K`` refinement passes."""

    def __init__(self, K: int = 2):
        """
        Args:
            K: the most extraction passes (each revises the last; 0 makes no call and finds no factor).
        """
        super().__init__()
        if K < 0:
            raise ValueError(f"K must be >= 0, got {K}")
        self.K = K
        self.extract = dspy.Predict(FactorExtraction)

    def forward(self, episodes) -> dspy.Prediction:
        """``factors``: the final set F; ``passes``: F_1, F_2, ... as returned by each call."""
        return run(self.steps(episodes))

    async def aforward(self, episodes) -> dspy.Prediction:
        return await arun(self.steps(episodes))

    def steps(self, episodes) -> Steps[dspy.Prediction]:
        episodes = as_episodes(episodes)
        factors: list[str] = []
        passes: list[list[str]] = []
        for _ in range(self.K):
            out = yield call(self.extract, episodes=episodes, current_factors=factors)
            revised = distinct(out.factors)
            passes.append(revised)
            unchanged = _as_set(revised) == _as_set(factors)
            factors = revised
            if unchanged:
                break
        return dspy.Prediction(factors=factors, passes=passes)


def _as_set(factors: list[str]) -> set[str]:
    return {normalise(f) for f in factors}
