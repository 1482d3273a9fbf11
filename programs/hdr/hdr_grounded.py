"""HDR with grounded hypothesis refinement (``hdr_grounded``): rules checked by code, not by an LM.

    M_semantic = GroundedConsolidator(K, N)(M_episodic)    # once per run: rules with no counterexample
    y = R(T, M_episodic, M_semantic)                        # per scene, as in HDR

Not the paper's method: the paper's ``hdr`` (an LM verifier) stays as it is. Here the
generator writes each hypothesis as a structured rule over the episodes' attributes, code
rejects every rule an episode contradicts, narrows it by its counterexamples, and the
counterexamples go back to the generator (:mod:`.grounded_consolidator`). The reasoner reads the verified rules in a fixed
wording (``Rule.statement``), so what it is told is exactly what was checked; the
generator's own sentences are kept in the record.

Episodes should carry ``attributes`` (their structured description); an episode without
them (an image) is described once by a perception call.
"""

from __future__ import annotations

from typing import Any, Sequence

import dspy

from memreason.signatures import NEUTRAL_TASK, Episode, TaskDescription

from ..registry import SCENES, register_program
from ..shared.memory_program import Consolidation, MemoryProgram
from ..shared.steps import Steps, call
from .grounded_consolidator import GroundedConsolidator

__all__ = ["HDRGrounded"]


@register_program(
    name="hdr_grounded_unrefined",
    knobs={"refine": False},
    space={},
    summary=(
        "hdr_grounded with refine=False: refuted rules never narrowed, no stop when a round brings nothing "
        "new (the earlier loop); a comparison row"
    ),
)
@register_program
class HDRGrounded(MemoryProgram):
    """Answer from the episodes and the rules that no episode contradicts."""

    name = "hdr_grounded"
    kind = SCENES
    space = {"K": ("int", 0, 4), "N": ("int", 1, 5)}
    described = True  # the consolidators' prompts: the task's words
    summary = (
        "episodes and rules checked by code against every episode, counterexamples fed back (knobs: K, N, "
        "cot, refine); not the paper's"
    )

    default_cot = True

    def __init__(
        self,
        *,
        K: int = 2,
        N: int = 3,
        perceive: Sequence[str] | None = None,
        task_description: TaskDescription = NEUTRAL_TASK,
        freeze_memory_writers: bool = True,
        refine: bool = True,
        **reader_knobs: Any,
    ):
        """
        Args:
            K: the most factor-extraction passes.
            N: the most generate-check rounds (fewer once every episode is explained or a round brings nothing new).
            perceive: the attributes asked of an episode given without ``attributes`` (default: the task
                description's).
            task_description: how the consolidator's prompts speak of the task (:class:`memreason.signatures.TaskDescription`;
                default: any task; the registry's ``hdr_grounded`` passes Experience-Transfer's).
            freeze_memory_writers: keep the consolidator's predictors out of optimizers' reach (they run once per
                memory, never on an optimizer's examples); ``save``, ``load`` and ``set_lm`` still cover them.
            refine: narrow refuted rules and stop when a round brings nothing new (:class:`GroundedConsolidator`);
                False gives the earlier loop, for comparison.
            **reader_knobs: the reasoner's knobs (:class:`ReaderKnobs`: ``cot``, default True here, ``signature``,
                ``per_object``, ``retrieve_k``).
        """
        super().__init__(freeze_memory_writers=freeze_memory_writers, **reader_knobs)
        self.consolidator = GroundedConsolidator(K=K, N=N, perceive=perceive, task_description=task_description, refine=refine)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        out = yield call(self.consolidator, episodes=episodes)
        return dspy.Prediction(hypotheses=out.hypotheses, record=out.record)
