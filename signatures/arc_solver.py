"""Signatures of the ARC program-synthesis solver: a first program, and a retry with execution feedback.

    program     = Solve(concepts, puzzle)
    program'    = Retry(concepts, puzzle, previous_program, feedback)

Inputs are ordered so what repeats comes first: the concepts (shared by every task
when memory is not selected), then the puzzle (shared by a task's attempts and
retries), then what changes. Programs that use no memory delete ``concepts``.
"""

from __future__ import annotations

import dspy

_RULES = """A grid is a list of rows, each row a list of ints 0-9 (colours; 0 is usually the background).
In the puzzle each grid is written one row per line, one digit per cell. Infer the one rule
that turns every example input into its output, and write complete Python source defining
`transform(grid: list[list[int]]) -> list[list[int]]` that applies it; it must also work on
the test inputs. You may import numpy and the standard library. Do not print, read files
or use the network. Return the complete program."""


class SolveArcPuzzle(dspy.Signature):
    __doc__ = "Write a Python program that solves an ARC puzzle.\n\n" + _RULES

    concepts: str = dspy.InputField(desc="ideas from memory that may help; use those that fit, ignore the rest")
    puzzle: str = dspy.InputField(desc="the example input/output pairs and the test inputs")
    program: str = dspy.OutputField(desc="Python source defining transform(grid)")


class RetryArcPuzzle(dspy.Signature):
    __doc__ = (
        "Your previous program for this ARC puzzle was run and did not solve it. Fix it.\n\n"
        "Read the feedback (the error, or the examples it got wrong with the expected and the\n"
        "produced grids), decide what the rule really is, and write a corrected program.\n\n" + _RULES
    )

    concepts: str = dspy.InputField(desc="ideas from memory that may help; use those that fit, ignore the rest")
    puzzle: str = dspy.InputField(desc="the example input/output pairs and the test inputs")
    previous_program: str = dspy.InputField(desc="the program that was run")
    feedback: str = dspy.InputField(desc="what happened when it ran on the examples")
    program: str = dspy.OutputField(desc="the corrected Python source defining transform(grid)")
