"""The inductive tasks' words: how HDR's consolidator speaks of each, what a reader answers, what a checked
hypothesis is.

ACRE: experiments, each a set of objects put on a detector and the state of its light; a
query asks the light's state for a new set. List Functions: input lists of integers, each
with the output list one hidden function gave; a query asks the output for a new input.

The task descriptions (``ACRE_TASK``, ``LIST_FUNCTIONS_TASK``) reword the consolidator's
prompts for each task and name no rule: not which objects light the detector, nor how,
nor what the function does. The checked programs' proposal signatures state the form a
hypothesis takes (ACRE: the blickets and a rule; List Functions: a Python function
``f(xs)``), which is what code checks.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import dspy
from pydantic import BaseModel, Field

from .memory import Episode
from .task_description import NEUTRAL_TASK

__all__ = [
    "ACRE_TASK",
    "AnswerDetector",
    "ApplyListFunction",
    "BlicketHypothesis",
    "LIST_FUNCTIONS_TASK",
    "ProposeBlicketHypotheses",
    "ProposeListFunction",
    "Refuted",
]

ACRE_TASK = dataclasses.replace(
    NEUTRAL_TASK,
    episodes="episodic memory: experiments, each a set of objects placed on a detector together, "
    "labelled with the state of the detector's light",
    factor_extraction="""List the factors that may explain the state of the detector's light in each experiment.

A factor is a property of the objects placed on the detector, or of the set of them,
whose values could decide the light's state. Revise the current factors against the
experiments: keep those that could matter, drop those that cannot, add any that are
missing, and return the whole revised list, one short noun phrase per factor.""",
)

LIST_FUNCTIONS_TASK = dataclasses.replace(
    NEUTRAL_TASK,
    episodes="episodic memory: input lists of integers, each labelled with the output list one hidden function gave for it",
    factor_extraction="""List the factors that may explain how each output list follows from its input list.

A factor is a property of the input list or of its elements (a position, a value, a
length, a relation between elements) that the output could depend on. Revise the current
factors against the examples: keep those that could matter, drop those that cannot, add
any that are missing, and return the whole revised list, one short noun phrase per factor.""",
)


class AnswerDetector(dspy.Signature):
    """Say the state of the detector's light when the objects given are placed on it together: on, off, or
    undetermined when the experiments in memory do not settle it."""

    objects: list[str] = dspy.InputField(desc="the objects placed on the detector together")
    answer: Literal["on", "off", "undetermined"] = dspy.OutputField(desc="the light's state")


class ApplyListFunction(dspy.Signature):
    """Give the output list that the function behind the examples in memory gives for the input list."""

    input_list: list[int] = dspy.InputField(desc="the new input list")
    answer: list[int] = dspy.OutputField(desc="its output list")


class BlicketHypothesis(BaseModel):
    """Which objects are blickets, and the rule by which the detector's light comes on."""

    blickets: list[str] = Field(description="the objects that are blickets, named as the experiments name them")
    rule: Literal["any", "all"] = Field(
        description="any: the light is on when at least one blicket is on the detector; all: when every blicket is"
    )


class Refuted(BaseModel):
    """A hypothesis the check refuted, and the observations that refute it."""

    hypothesis: str = Field(description="the refuted hypothesis")
    counterexamples: list[str] = Field(description="what refutes it, each naming its observation")


class ProposeBlicketHypotheses(dspy.Signature):
    """Propose hypotheses that explain the detector experiments.

    Some objects, called blickets, can turn the detector's light on. A hypothesis names the
    objects that are blickets and the rule by which the light comes on. Every hypothesis is
    checked against every experiment: it must predict each light's state, and name as
    blickets exactly the objects the experiments show to be blickets. Write hypotheses under
    both rules. The refuted hypotheses are shown with the experiments that refute them: never
    write them again."""

    objects: list[str] = dspy.InputField(desc="every object in the experiments: a hypothesis names only these")
    experiments: list[Episode] = dspy.InputField(
        desc="the experiments in order (experiment 1 first): the objects placed together, and the light"
    )
    refuted: list[Refuted] = dspy.InputField(desc="hypotheses already refuted, with their counterexamples")
    hypotheses: list[BlicketHypothesis] = dspy.OutputField(desc="one to three hypotheses, the most likely first")


class ProposeListFunction(dspy.Signature):
    """Write a Python function ``f(xs)`` that maps each example's input list to its output list.

    ``xs`` is a list of integers and ``f`` returns a list of integers. The function is run on
    every example's input and kept only when it gives every example's output. The refuted
    functions are shown with the inputs they got wrong: write a different function."""

    examples: list[Episode] = dspy.InputField(desc="input lists, each labelled with its output list")
    refuted: list[Refuted] = dspy.InputField(desc="functions already refuted, with the inputs they got wrong")
    function: str = dspy.OutputField(desc="Python source defining f(xs), standard library only")
