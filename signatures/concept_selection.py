"""Signatures of ArcMemo's memory read, concept selection (paper section 3.4).

OE:  caption = Caption(puzzle)                      # observations kept apart from speculation
     chosen  = SelectOE(situations, caption, top_k) # numbers of the most relevant lessons
PS:  chosen  = SelectPS(memory, puzzle)             # reasoning over cues and types, then titles

The memory comes first in each selection call, so calls share a prefix. List outputs are
bounded (``Len``) so that, under a JSON grammar, a small model cannot repeat one item until
it runs out of tokens (seen with the embedded model: 104 "asked" titles for one puzzle).
"""

from __future__ import annotations

from typing import Annotated

import dspy
from annotated_types import Len


class CaptionArcPuzzle(dspy.Signature):
    """Describe an ARC puzzle in words, keeping what you see apart from what you guess.

    Observations are concrete and checkable: grid sizes, colours, objects, shapes, counts,
    positions, what changes between input and output. Speculation lists candidate
    transformation rules."""

    puzzle: str | dspy.Image = dspy.InputField(desc="the example pairs and test inputs, as text grids or as an image")
    observations: Annotated[list[str], Len(1, 8)] = dspy.OutputField(desc="concrete observations")
    speculation: Annotated[list[str], Len(1, 4)] = dspy.OutputField(desc="possible transformation rules")


class SelectOEConcepts(dspy.Signature):
    """Choose the lessons from memory most relevant to a new ARC puzzle.

    Each lesson is numbered and given by the situation it applies to. Match situations
    against the puzzle's description and return the numbers of at most top_k lessons, most
    relevant first."""

    situations: str = dspy.InputField(desc="numbered situations of the stored lessons")
    observations: list[str] = dspy.InputField(desc="what the puzzle shows")
    speculation: list[str] = dspy.InputField(desc="guesses at its rule")
    top_k: int = dspy.InputField(desc="the most lessons to choose")
    chosen: Annotated[list[int], Len(0, 10)] = dspy.OutputField(desc="numbers of the chosen lessons")


class SelectPSConcepts(dspy.Signature):
    """Choose the concepts from a library that help solve a new ARC puzzle.

    Explore systematically: first find concepts whose relevance cues match the puzzle;
    then fill in their parameters, using the parameter and output types to find the other
    concepts that could provide those values or routines. Return the exact titles."""

    memory: str = dspy.InputField(desc="the concept library, compressed: title, kind, typed signature, relevance cues")
    puzzle: str = dspy.InputField(desc="the example input/output pairs and the test inputs")
    selected: Annotated[list[str], Len(0, 10)] = dspy.OutputField(desc="exact titles of the chosen concepts, at most ten")
