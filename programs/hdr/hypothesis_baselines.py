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

import dspy

from memreason.signatures import NEUTRAL_TASK, Episode, TaskDescription

from ..registry import SCENES, register_program
from ..shared.memory_program import Consolidation, MemoryProgram
from ..shared.steps import Steps, call
from .factor_extractor import FactorExtractor
from .hypothesis_generator import HypothesisGenerator

__all__ = ["DirectHypothesis", "TwoStage"]


@register_program
class DirectHypothesis(MemoryProgram):
    """Hypotheses generated once, straight from the episodes, kept unverified with the episodes."""

    name = "direct_hypothesis"
    kind = SCENES
    described = True  # the consolidator's prompt: the task's words
    summary = "episodes and unverified hypotheses, no factors (knob: cot)"

    default_cot = True

    def __init__(self, *, task_description: TaskDescription = NEUTRAL_TASK, **knobs: Any):
        """
        Args:
            task_description: how the generator's prompt speaks of the task (default: any task; the registry's
                ``direct_hypothesis`` passes Experience-Transfer's).
            **knobs: :class:`MemoryProgram`'s (the reader's knobs, ``cot`` default True here; ``freeze_memory_writers``).
        """
        super().__init__(**knobs)
        self.generate = HypothesisGenerator(task_description=task_description)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        out = yield call(self.generate, episodes=episodes)
        return out.hypotheses


@register_program
class TwoStage(MemoryProgram):
    """Factors extracted (at most K passes), then hypotheses generated once, unverified."""

    name = "two_stage"
    kind = SCENES
    space = {"K": ("int", 1, 4)}
    described = True  # the consolidator's prompt: the task's words
    summary = "episodes, factors, then unverified hypotheses (knobs: K, cot)"

    default_cot = True

    def __init__(self, *, K: int = 2, task_description: TaskDescription = NEUTRAL_TASK, **knobs: Any):
        """
        Args:
            K: the most factor-extraction passes, a whole number.
            task_description: how the prompts speak of the task (default: any task; the registry's
                ``two_stage`` passes Experience-Transfer's).
            **knobs: :class:`MemoryProgram`'s (the reader's knobs, ``cot`` default True here; ``freeze_memory_writers``).
        """
        super().__init__(**knobs)
        self.extract_factors = FactorExtractor(K, task_description=task_description)
        self.generate = HypothesisGenerator(task_description=task_description)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        stage1 = yield call(self.extract_factors, episodes=episodes)
        out = yield call(self.generate, episodes=episodes, factors=stage1.factors)
        record = {"factors": stage1.factors, "factor_passes": stage1.passes}
        return dspy.Prediction(hypotheses=out.hypotheses, record=record)
