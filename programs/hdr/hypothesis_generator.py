"""HG, the generator of HDR's iterative hypothesis refinement (Algorithm 1, line 14).

    H <- HG(M_episodic, F, H_{j-1})

With no factors and no previous hypotheses it is the "direct hypothesis" baseline's
generator: one signature serves both, so the ablation changes the pipeline only. The
prompt speaks of the task as its ``task_description`` does (any task by default).
"""

from __future__ import annotations

from typing import Sequence

import dspy

from memreason.signatures import NEUTRAL_TASK, TaskDescription

from ..shared.checks import some_episodes, texts
from ..shared.episodes import as_episodes
from ..shared.normalise import distinct
from ..shared.steps import StepModule, Steps, call

__all__ = ["HypothesisGenerator"]


class HypothesisGenerator(StepModule):
    """Propose hypotheses from the episodes, the factors and the previous survivors."""

    def __init__(self, *, task_description: TaskDescription = NEUTRAL_TASK):
        """One call per use (the loop around it is :class:`MemoryConsolidator`'s).

        Args:
            task_description: how the prompt speaks of the task's episodes and attributes (default: any task).
        """
        super().__init__()
        self.generate = dspy.Predict(task_description.hypothesis_generation_signature())

    def steps(self, episodes, factors: Sequence[str] = (), previous: Sequence[str] = ()) -> Steps[dspy.Prediction]:
        """``hypotheses``: the proposals, without empty ones or repeats."""
        episodes = as_episodes(episodes)
        some_episodes(episodes, "HypothesisGenerator")
        out = yield call(
            self.generate, episodes=episodes, factors=texts("factors", factors), previous_hypotheses=texts("previous", previous)
        )
        return dspy.Prediction(hypotheses=distinct(out.hypotheses))
