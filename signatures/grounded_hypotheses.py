"""Signatures of grounded hypothesis refinement (``hdr_grounded``): rules code can check.

    attributes_i = Perceive(observation_i, names)                 # image episodes only, once each
    R = RG(F, verified, rejected with counterexamples, the episodes no verified rule explains yet)
    label = LabelObjectByRules(nearest episodes, the checked rules that apply to the object, labels, object)

A rule is its structure (for each attribute, the values it allows, none listed meaning any
value, and the label every matching object carries) and then its sentence: structure first,
so a small model copies attributes and labels from the episodes before it writes prose. The generator's
output types are narrowed on every call to the attributes, values and labels the episodes
show (a ``Literal`` per attribute), so a model decoding under a JSON schema cannot name
anything else. As in :mod:`.hypotheses`, the instructions name no attribute value or label,
and no task: a :class:`TaskDescription` (:mod:`.task_description`) rewords them for one.
With ``generalise`` on, the generator's instructions are :class:`GeneralFirstRuleGeneration`'s:
rules over one attribute, then two, then exceptions, and a refuted rule mended by one condition.
"""

from __future__ import annotations

import dspy
from pydantic import BaseModel, Field

from .experience_transfer import LabelObject
from .memory import Observation

__all__ = [
    "EpisodeGroup",
    "GeneralFirstRuleGeneration",
    "GroundedHypothesisGeneration",
    "GroundedRule",
    "LabelObjectByRules",
    "PerceiveAttributes",
    "Rejection",
]


class GroundedRule(BaseModel):
    """One hypothesis as a checkable rule (``conditions`` and ``label`` are narrowed per call)."""

    conditions: dict[str, list[str]] = Field(
        description="for each attribute, the values the rule allows; an empty list means any value"
    )
    label: str = Field(description="the label every object matching the conditions carries")
    sentence: str = Field(description="the rule in one plain sentence")


class Rejection(BaseModel):
    """A rule the check rejected, and why."""

    rule: str = Field(description="the rejected rule")
    reason: str = Field(description="why it was rejected")
    counterexamples: list[dict[str, str]] = Field(description="episodes it matches whose label is not the rule's")


class EpisodeGroup(BaseModel):
    """Episodes to explain that carry one label and share some attribute values."""

    label: str = Field(description="the label every episode of the group carries")
    shared: dict[str, str] = Field(description="the attribute values every episode of the group has")
    episodes: list[dict[str, str]] = Field(description="each episode's attributes")


class GroundedHypothesisGeneration(dspy.Signature):
    """Write rules that explain which label each episode carries.

    Each episode is given as its attributes and its label. A rule says which observations
    carry which label: its conditions list, for each attribute it depends on, the values
    it allows (an empty list allows any value), and every observation that matches them
    must carry the rule's label. Every rule is checked against every episode: a rule that
    matches an episode with another label is rejected. The verified rules passed that
    check and stay in memory. The rejected rules failed it, each shown with the episodes
    that contradict it: never write them again; allow fewer values so that the rule no
    longer matches those episodes. Write new rules for the episodes to explain: a rule
    may describe one of them exactly (each attribute with its value) or several that
    share a label."""

    factors: list[str] = dspy.InputField(desc="candidate factors that may explain the labels; may be empty")
    verified: list[str] = dspy.InputField(desc="rules that passed the check; they stay in memory")
    rejected: list[Rejection] = dspy.InputField(desc="rules that failed the check, with the episodes that contradict them")
    to_explain: list[dict[str, str]] = dspy.InputField(
        desc="the labelled episodes no verified rule matches yet (all of them at first), as attributes and label"
    )
    rules: list[GroundedRule] = dspy.OutputField(
        desc="new rules, one per hypothesis, at most 8 (more can follow in the next round)"
    )


class GeneralFirstRuleGeneration(GroundedHypothesisGeneration):
    """Write rules that explain which label each episode carries.

    Each episode is given as its attributes and its label. A rule says which observations
    carry which label: its conditions list, for each attribute it depends on, the values
    it allows (an empty list allows any value), and every observation that matches them
    must carry the rule's label. Every rule is checked against every episode: a rule that
    matches an episode with another label is rejected. The verified rules passed that
    check and stay in memory. The rejected rules failed it, each shown with the episodes
    that contradict it: never write them again; add one condition, or allow fewer values,
    so that the rule no longer matches those episodes. Write general rules first: rules
    whose conditions name one attribute, then two, each explaining as many of the episodes
    to explain as it can; then exceptions: more specific rules for the episodes the
    general rules cannot explain. A rule may describe one episode exactly (each attribute
    with its value) when nothing more general holds."""


class PerceiveAttributes(dspy.Signature):
    """Describe the observation by the attributes named.

    Give one short lowercase value per attribute, as seen in the observation."""

    observation: Observation = dspy.InputField(desc="one past observation")
    attributes: list[str] = dspy.InputField(desc="the attributes to describe")
    attribute_values: dict[str, str] = dspy.OutputField(desc="attribute -> its value in the observation")


class LabelObjectByRules(LabelObject):
    """Give one object of a test scene the label that memory of past experience implies for it.

    The episodes are labelled past observations of single objects, the ones closest to this
    object. The hypotheses are the rules, each checked against every past episode, whose
    conditions this object meets, the one that decides first (a more specific rule before a
    general rule it is an exception to); none are given when no checked rule speaks of this
    object. Give the label the first hypothesis states; with no hypothesis, the label the
    episodes most like this object imply: one of the labels given."""
