"""HDR with grounded hypothesis refinement (``hdr_grounded``): rules checked by code, not by an LM.

    M_semantic = GroundedConsolidator(K, N)(M_episodic)    # once per run: rules with no counterexample
    y = R(T, M_episodic, M_semantic)                        # per scene, as in HDR

Not the paper's method: the paper's ``hdr`` (an LM verifier) stays as it is. Here the
generator writes each hypothesis as a structured rule over the episodes' attributes, code
rejects every rule an episode contradicts, narrows it by its counterexamples, and the
counterexamples go back to the generator (:mod:`.grounded_consolidator`); among the rules no
episode contradicts, with ``generalise`` the most general is kept, so that rules reach
combinations no episode shows (Level 3). The reasoner reads the verified rules in a fixed
wording (``Rule.statement``), so what it is told is exactly what was checked; the generator's
own sentences are kept in the record. Read per object with retrieval (``per_object=True,
retrieve_k=k``), each object is shown the rules nearest to it by words, or with
``apply_rules`` the checked rules that apply to it, matched in code by the check's own
matcher, in precedence order (:mod:`.rule_reader`). Both knobs are off by default until
measured on a model.

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
from .rule_reader import reader_of_rules, recall_with_rules

__all__ = ["HDRGrounded"]


@register_program(
    name="hdr_grounded_general",
    knobs={"generalise": True, "apply_rules": True},
    summary=(
        "hdr_grounded with generalise and apply_rules on: the most general rule no episode contradicts, each "
        "object shown the checked rules that apply to it (Level 3); a comparison row until measured"
    ),
)
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
        "cot, refine, generalise, apply_rules; the last two off until measured); not the paper's"
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
        generalise: bool = False,
        apply_rules: bool = False,
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
            generalise: keep the most general consistent form of each rule, repair a refuted rule by one added
                condition, record the combinations the episodes leave open, and ask the generator for general rules
                first, then exceptions (:class:`GroundedConsolidator`). Off by default: not yet measured on a model.
            apply_rules: with ``per_object`` and ``retrieve_k``, show each object the checked rules that apply to it,
                matched in code, instead of the rules nearest to it by words (:class:`.rule_reader.RuleReader`).
                Off by default: not yet measured on a model. Without ``retrieve_k`` the reader sees every rule
                either way.
            **reader_knobs: the reasoner's knobs (:class:`ReaderKnobs`: ``cot``, default True here, ``signature``,
                ``per_object``, ``retrieve_k``).
        """
        super().__init__(freeze_memory_writers=freeze_memory_writers, **reader_knobs)
        self.consolidator = GroundedConsolidator(
            K=K, N=N, perceive=perceive, task_description=task_description, refine=refine, generalise=generalise
        )
        self.apply_rules = bool(apply_rules)
        if self.apply_rules:
            self.reasoner = reader_of_rules(self.reasoner)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        out = yield call(self.consolidator, episodes=episodes)
        return dspy.Prediction(hypotheses=out.hypotheses, record=out.record)

    def _recall(self) -> dict[str, Any]:
        """The memory as the reasoner takes it; a :class:`RuleReader` also gets the checked rules and the values."""
        return recall_with_rules(super()._recall(), self.reasoner, self.memory.consolidation)
