"""HG, the generator of HDR's iterative hypothesis refinement (Algorithm 1, line 14).

    H <- HG(M_episodic, F, H_{j-1})

With no factors and no previous hypotheses it is the "direct hypothesis" baseline's
generator: one signature serves both, so the ablation changes the pipeline only.
"""

from __future__ import annotations

from typing import Sequence

import dspy

from memreason.signatures import HypothesisGeneration

from .episodes import as_episodes
from .normalise import distinct
from .steps import Steps, arun, call, run


class HypothesisGenerator(dspy.Module):
    """Propose hypotheses from the episodes, the factors and the previous survivors."""

    def __init__(self):
        """No knobs: one call per use (the loop around it is :class:`MemoryConsolidator`'s)."""
        super().__init__()
        self.generate = dspy.Predict(HypothesisGeneration)

    def forward(self, episodes, factors: Sequence[str] = (), previous: Sequence[str] = ()) -> dspy.Prediction:
        """``hypotheses``: the proposals, without empty ones or repeats."""
        return run(self.steps(episodes, factors, previous))

    async def aforward(self, episodes, factors: Sequence[str] = (), previous: Sequence[str] = ()) -> dspy.Prediction:
        return await arun(self.steps(episodes, factors, previous))

    def steps(self, episodes, factors: Sequence[str] = (), previous: Sequence[str] = ()) -> Steps[dspy.Prediction]:
        out = yield call(self.generate, episodes=as_episodes(episodes), factors=list(factors),
                         previous_hypotheses=list(previous))
        return dspy.Prediction(hypotheses=distinct(out.hypotheses))
