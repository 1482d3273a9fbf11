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

from .memory_program import Consolidation, MemoryProgram
from .steps import Steps, call


class ReflexionIndividual(MemoryProgram):
    """One reflection per episode (one call each), kept with all the episodes."""

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


class ReflexionAll(MemoryProgram):
    """One global reflection over all episodes, kept with the episodes."""

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
        self.reflect = dspy.Predict(ReflectOnEpisodes)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        out = yield call(self.reflect, episodes=episodes)
        return [out.reflection]
