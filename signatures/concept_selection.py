"""Signatures of ArcMemo's memory read, concept selection (paper section 3.4), for any problem.

OE:  caption = Caption(problem)                     # observations kept apart from speculation
     chosen  = SelectOE(situations, caption, top_k) # numbers of the most relevant lessons
PS:  chosen  = SelectPS(memory, problem)            # reasoning over cues and types, then titles
retry: more = Reselect(memory, problem, previous_program, feedback, top_k)   # titles (PS) or numbers (OE)

The problem is text (or an image, for a vision model); what a task needs the reader to know
goes in that text (the ARC programs state the grid format and the goal before the grids).
The memory comes first in each selection call, so calls share a prefix. List outputs are
bounded (``Len``) so that, under a JSON grammar, a small model cannot repeat one item until
it runs out of tokens (seen with the embedded model: 104 "asked" titles for one puzzle).
"""

from __future__ import annotations

from typing import Annotated

import dspy
from annotated_types import Len


class CaptionProblem(dspy.Signature):
    """Describe a problem in words, keeping what you see apart from what you guess.

    Observations are concrete and checkable: what the problem states or shows (for a grid
    puzzle: grid sizes, colours, objects, shapes, counts, positions, what changes between
    input and output). Speculation lists candidate rules or approaches that could solve it."""

    problem: str | dspy.Image = dspy.InputField(desc="the problem, as text or as an image")
    observations: Annotated[list[str], Len(1, 8)] = dspy.OutputField(desc="concrete observations")
    speculation: Annotated[list[str], Len(1, 4)] = dspy.OutputField(desc="possible rules or approaches")


class SelectOEConcepts(dspy.Signature):
    """Choose the lessons from memory most relevant to a new problem.

    Each lesson is numbered and given by the situation it applies to. Match situations
    against the problem's description and return the numbers of at most top_k lessons, most
    relevant first."""

    situations: str = dspy.InputField(desc="numbered situations of the stored lessons")
    observations: list[str] = dspy.InputField(desc="what the problem shows")
    speculation: list[str] = dspy.InputField(desc="guesses at how to solve it")
    top_k: int = dspy.InputField(desc="the most lessons to choose")
    chosen: Annotated[list[int], Len(0, 10)] = dspy.OutputField(desc="numbers of the chosen lessons")


class SelectPSConcepts(dspy.Signature):
    """Choose the concepts from a library that help solve a new problem.

    Explore systematically: first find concepts whose relevance cues match the problem;
    then fill in their parameters, using the parameter and output types to find the other
    concepts that could provide those values or routines. Return the exact titles."""

    memory: str = dspy.InputField(desc="the concept library, compressed: title, kind, typed signature, relevance cues")
    problem: str | dspy.Image = dspy.InputField(desc="the problem to solve, as text or as an image")
    selected: Annotated[list[str], Len(0, 10)] = dspy.OutputField(desc="exact titles of the chosen concepts, at most ten")


class ReselectConcepts(dspy.Signature):
    """A program written for a problem was run and failed. Choose the entries of the memory that would
    help write a correct one.

    Read the failed program and what went wrong when it ran, then look for entries whose
    situation or relevance cues match what the program missed. Return the exact names of at
    most top_k entries (an entry's number for numbered lessons, its title for concepts), most
    helpful first; return none if nothing fits."""

    memory: str = dspy.InputField(desc="the memory, compressed: numbered situations, or concept titles with cues")
    problem: str = dspy.InputField(desc="the problem")
    previous_program: str = dspy.InputField(desc="the program that was run")
    feedback: str = dspy.InputField(desc="what happened when it ran on the examples")
    top_k: int = dspy.InputField(desc="the most entries to choose")
    chosen: Annotated[list[str], Len(0, 10)] = dspy.OutputField(desc="names of the chosen entries")


class ReselectOEConcepts(ReselectConcepts):
    __doc__ = ReselectConcepts.__doc__

    chosen: Annotated[list[int], Len(0, 10)] = dspy.OutputField(desc="numbers of the chosen lessons")
