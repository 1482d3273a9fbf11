"""FE, the first stage of HDR's memory consolidator (Algorithm 1, lines 2-10).

    F_0 <- {}
    for i = 1 to K:
        F_i <- FE(M_episodic, F_{i-1})
        if F_i = F_{i-1}: break
    F <- F_i

The loop makes at most K calls and stops at the first pass that returns the
factors it was given, compared as sets of normalised texts (case, whitespace and
trailing punctuation do not count). The prompt speaks of the task as its
``task_description`` does (:class:`memreason.signatures.TaskDescription`; any task by default).
"""

from __future__ import annotations

import dspy

from memreason.signatures import NEUTRAL_TASK, TaskDescription

from ..shared.checks import some_episodes, whole_number
from ..shared.episodes import as_episodes
from ..shared.normalise import distinct, normalise
from ..shared.steps import StepModule, Steps, call

__all__ = ["FactorExtractor"]


class FactorExtractor(StepModule):
    """Extract candidate factors from the episodes in at most ``K`` refinement passes."""

    def __init__(self, K: int = 2, *, task_description: TaskDescription = NEUTRAL_TASK):
        """
        Args:
            K: the most extraction passes, a whole number (each revises the last; 0 makes no call and finds no factor).
            task_description: how the prompt speaks of the task's episodes and attributes (default: any task).
        """
        super().__init__()
        self.K = whole_number("K", K, minimum=0)
        self.extract = dspy.Predict(task_description.factor_extraction_signature())

    def steps(self, episodes) -> Steps[dspy.Prediction]:
        """``factors``: the final set F; ``passes``: F_1, F_2, ... as returned by each call."""
        episodes = as_episodes(episodes)
        some_episodes(episodes, "FactorExtractor")
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
