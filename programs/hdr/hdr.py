"""Hypothesis-Driven Reasoning (HDR paper, Algorithm 1).

    M_semantic = MC(M_episodic)                      # once per run: MemoryConsolidator(K, N)
    y = R(T, M_episodic, M_semantic)                 # per scene:   Input = M_episodic + M_semantic + T

The reasoner thinks step by step by default (``cot=True``): the paper's Table 3
compares HDR with the CoT "Episodic + Semantic" oracle row.
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.signatures import NEUTRAL_TASK, Episode, TaskDescription

from ..registry import SCENES, register_program
from ..shared.memory_program import Consolidation, MemoryProgram
from ..shared.steps import Steps, call
from .memory_consolidator import MemoryConsolidator

__all__ = ["HDR"]


@register_program
class HDR(MemoryProgram):
    """Answer from the episodes and the hypotheses that survived N generate-verify rounds."""

    name = "hdr"
    kind = SCENES
    space = {"K": ("int", 1, 4), "N": ("int", 1, 5)}
    described = True  # the consolidators' prompts: the task's words
    on_problems = "signature"  # on a problem task: its reader signature and words
    summary = "episodes and verified hypotheses (knobs: K, N, cot, resample)"

    default_cot = True

    def __init__(
        self,
        *,
        K: int = 2,
        N: int = 3,
        resample: bool = False,
        task_description: TaskDescription = NEUTRAL_TASK,
        freeze_memory_writers: bool = True,
        **reader_knobs: Any,
    ):
        """
        Args:
            K: the most factor-extraction passes of the consolidator, a whole number.
            N: the consolidator's generate-verify rounds, a whole number.
            resample: the consolidator's later rounds propose afresh from reordered episodes
                (see :class:`MemoryConsolidator`; not the paper's).
            task_description: how the consolidator's prompts speak of the task (:class:`memreason.signatures.TaskDescription`;
                default: any task; the registry's ``hdr`` passes Experience-Transfer's).
            freeze_memory_writers: keep the consolidator's predictors out of optimizers' reach (they run once per
                memory, never on an optimizer's examples); ``save``, ``load`` and ``set_lm`` still cover them.
            **reader_knobs: the reasoner's knobs (:class:`ReaderKnobs`: ``cot``, default True here, ``signature``,
                ``per_object``, ``retrieve_k``).
        """
        super().__init__(freeze_memory_writers=freeze_memory_writers, **reader_knobs)
        self.consolidator = MemoryConsolidator(K=K, N=N, resample=resample, task_description=task_description)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        out = yield call(self.consolidator, episodes=episodes)
        return dspy.Prediction(hypotheses=out.hypotheses, record=out.record)
