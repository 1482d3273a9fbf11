"""HG, the generator of HDR's iterative hypothesis refinement (Algorithm 1, line 14).

    H <- HG(M_episodic, F, H_{j-1})

With no factors and no previous hypotheses it is the "direct hypothesis" baseline's
generator: one signature serves both, so the ablation changes the pipeline only.
"""

from __future__ import annotations

from typing import Sequence

import dspy

from memreason.signatures import Episode, HypothesisGeneration

from .normalise import distinct


class HypothesisGenerator(dspy.Module):
    """Propose hypotheses from the episodes, the factors and the previous survivors."""

    def __init__(self):
        super().__init__()
        self.generate = dspy.Predict(HypothesisGeneration)

    def forward(
        self, episodes: list[Episode], factors: Sequence[str] = (), previous: Sequence[str] = ()
    ) -> dspy.Prediction:
        """``hypotheses``: the proposals, without empty ones or repeats."""
        out = self.generate(episodes=episodes, factors=list(factors), previous_hypotheses=list(previous))
        return dspy.Prediction(hypotheses=distinct(out.hypotheses))
