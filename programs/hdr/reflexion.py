"""The HDR paper's Reflexion baselines (Shinn et al. 2023): reflections as semantic memory.

    Reflection (Individual): M_semantic = {Reflect(e_i) for each episode}
    Reflection (All):        M_semantic = {Reflect(M_episodic)}
    both:                    Input = M_episodic + M_semantic + T

The reasoner thinks step by step by default (``cot=True``), like HDR, so Table 3's
rows differ only in their semantic memory.
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.signatures import Episode, ReflectOnEpisode, ReflectOnEpisodes

from ..registry import SCENES, register_program
from ..shared.memory_program import Consolidation, MemoryProgram
from ..shared.steps import Steps, call

__all__ = ["ReflexionAll", "ReflexionIndividual"]


@register_program
class ReflexionIndividual(MemoryProgram):
    """One reflection per episode (one call each), kept with all the episodes."""

    name = "reflexion_individual"
    kind = SCENES
    summary = "episodes and one reflection per episode (knob: cot)"

    default_cot = True

    def __init__(self, **knobs: Any):
        """``knobs``: :class:`MemoryProgram`'s (the reader's knobs, ``cot`` default True here; ``freeze_memory_writers``)."""
        super().__init__(**knobs)
        self.reflect = dspy.Predict(ReflectOnEpisode)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        reflections = []
        for episode in episodes:
            reflections.append((yield call(self.reflect, episode=episode)).reflection)
        return reflections

    def memory_record(self) -> dict[str, Any]:
        reflections = [
            {"episode": i, "label": episode.label, "reflection": reflection}
            for i, (episode, reflection) in enumerate(zip(self.episodes or [], self.hypotheses or []))
        ]
        return {**super().memory_record(), "reflections": reflections}


@register_program
class ReflexionAll(MemoryProgram):
    """One global reflection over all episodes, kept with the episodes."""

    name = "reflexion_all"
    kind = SCENES
    summary = "episodes and one reflection on all episodes (knob: cot)"

    default_cot = True

    def __init__(self, **knobs: Any):
        """``knobs``: :class:`MemoryProgram`'s (the reader's knobs, ``cot`` default True here; ``freeze_memory_writers``)."""
        super().__init__(**knobs)
        self.reflect = dspy.Predict(ReflectOnEpisodes)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        out = yield call(self.reflect, episodes=episodes)
        return [out.reflection]
