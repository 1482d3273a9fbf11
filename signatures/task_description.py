"""How the memory consolidator's prompts speak of a task: what an episode is, which attributes matter.

The consolidator's signatures (:mod:`.hypotheses`, :mod:`.grounded_hypotheses`) are worded for
any task: an episode is a labelled observation, a factor an attribute of it. A
:class:`TaskDescription` rewords them for one task, and the consolidator's modules take it as a
constructor argument (``MemoryConsolidator(task_description=...)``; ``NEUTRAL_TASK`` by default)::

    fruit = dataclasses.replace(NEUTRAL_TASK, episodes="episodic memory: fruits, each labelled ripe or unripe",
                                factor_extraction=NEUTRAL_TASK.factor_extraction.replace(
                                    "an episode's label.", "a fruit's ripeness: for example skin colour or firmness."))
    MemoryConsolidator(K=2, N=3, task_description=fruit)

``EXPERIENCE_TRANSFER_TASK`` is the HDR paper's task (one object per episode; the attributes a
perception call asks of an image); the registry's Experience-Transfer programs pass it. The
instructions name no attribute values or labels, no attribute that decides a label (only the
paper's own example of factors, "colour and position") and no rule structure such as labels that
relate to each other: they must not leak a rule table into the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

import dspy

from .grounded_hypotheses import GeneralFirstRuleGeneration, GroundedHypothesisGeneration, PerceiveAttributes
from .hypotheses import FactorExtraction, HypothesisGeneration, HypothesisVerification

__all__ = ["EXPERIENCE_TRANSFER_TASK", "NEUTRAL_TASK", "TaskDescription"]


@dataclass(frozen=True)
class TaskDescription:
    """The task-specific words of the consolidator's prompts.

    Attributes:
        episodes: the description of the ``episodes`` input (factor extraction, generation, verification).
        factor_extraction: the factor extractor's instructions.
        hypothesis_generation: the hypothesis generator's instructions.
        grounded_generation: the rule generator's instructions (``hdr_grounded``).
        perception: the instructions of the call that describes an episode given without attributes.
        observation: the description of that call's ``observation`` input.
        perceived: the attributes that call asks for (none: every episode must carry its attributes).
        general_first_grounded_generation: the rule generator's instructions with ``generalise`` on: general rules
            first, then exceptions (empty: ``grounded_generation``).
    """

    episodes: str
    factor_extraction: str
    hypothesis_generation: str
    grounded_generation: str
    perception: str
    observation: str
    perceived: tuple[str, ...] = ()
    general_first_grounded_generation: str = ""

    def factor_extraction_signature(self) -> type[dspy.Signature]:
        return self._episodes(FactorExtraction.with_instructions(self.factor_extraction))

    def hypothesis_generation_signature(self) -> type[dspy.Signature]:
        return self._episodes(HypothesisGeneration.with_instructions(self.hypothesis_generation))

    def hypothesis_verification_signature(self) -> type[dspy.Signature]:
        return self._episodes(HypothesisVerification)

    def grounded_generation_signature(self, *, general_first: bool = False) -> type[dspy.Signature]:
        """The rule generator's signature; ``general_first``: asking for general rules first, then exceptions."""
        text = (self.general_first_grounded_generation or self.grounded_generation) if general_first else self.grounded_generation
        return GroundedHypothesisGeneration.with_instructions(text)

    def perception_signature(self) -> type[dspy.Signature]:
        return PerceiveAttributes.with_instructions(self.perception).with_updated_fields("observation", desc=self.observation)

    def _episodes(self, signature: type[dspy.Signature]) -> type[dspy.Signature]:
        return signature.with_updated_fields("episodes", desc=self.episodes)


def _desc(signature: type[dspy.Signature], field: str) -> str:
    return signature.fields[field].json_schema_extra["desc"]


# Any task: the signatures' own words.
NEUTRAL_TASK = TaskDescription(
    episodes=_desc(FactorExtraction, "episodes"),
    factor_extraction=FactorExtraction.instructions,
    hypothesis_generation=HypothesisGeneration.instructions,
    grounded_generation=GroundedHypothesisGeneration.instructions,
    perception=PerceiveAttributes.instructions,
    observation=_desc(PerceiveAttributes, "observation"),
    general_first_grounded_generation=GeneralFirstRuleGeneration.instructions,
)

# The HDR paper's Experience-Transfer task: its episodes are single objects, its factors found by the model.
EXPERIENCE_TRANSFER_TASK = TaskDescription(
    episodes="episodic memory: labelled observations, one object each",
    factor_extraction="""List the factors that may explain which label each episode carries.

A factor is an attribute of the observations, or a combination of attributes,
whose values could decide an object's label: for example colour and position.
Revise the current factors against the episodes: keep those that could matter,
drop those that cannot, add any that are missing, and return the whole revised
list, one short noun phrase per factor.""",
    hypothesis_generation="""Propose hypotheses that explain which label each episode carries.

A hypothesis is an explicit rule in natural language stating which objects carry
which label, in terms of the factors' values, definite enough to be checked
against every episode. One hypothesis may cover many objects. The previous
hypotheses passed verification: keep them, refine them (more general where the
episodes allow it, more precise where they demand it), and add new hypotheses
for the episodes they do not yet explain. With no previous hypotheses, start afresh; with no
factors, find the relevant attributes yourself.""",
    grounded_generation="""Write rules that explain which label each episode carries.

Each episode is given as its attributes and its label. A rule says which objects
carry which label: its conditions list, for each attribute it depends on, the values
it allows (an empty list allows any value), and every object that matches them must
carry the rule's label. Every rule is checked against every episode: a rule that
matches an episode with another label is rejected. The verified rules passed that
check and stay in memory. The rejected rules failed it, each shown with the episodes
that contradict it: never write them again; allow fewer values so that the rule no
longer matches those episodes. Write new rules for the episodes to explain: a rule
may describe one of them exactly (each attribute with its value) or several that
share a label.""",
    perception="""Describe the single object in the observation by the attributes named.

Give one short lowercase value per attribute, as seen in the observation.""",
    observation="one past observation of a single object",
    perceived=("shape", "color", "background"),
    general_first_grounded_generation="""Write rules that explain which label each episode carries.

Each episode is given as its attributes and its label. A rule says which objects
carry which label: its conditions list, for each attribute it depends on, the values
it allows (an empty list allows any value), and every object that matches them must
carry the rule's label. Every rule is checked against every episode: a rule that
matches an episode with another label is rejected. The verified rules passed that
check and stay in memory. The rejected rules failed it, each shown with the episodes
that contradict it: never write them again; add one condition, or allow fewer values,
so that the rule no longer matches those episodes. Write general rules first: rules
whose conditions name one attribute, then two, each explaining as many of the episodes
to explain as it can; then exceptions: more specific rules for the episodes the general
rules cannot explain. A rule may describe one episode exactly (each attribute with its
value) when nothing more general holds.""",
)
