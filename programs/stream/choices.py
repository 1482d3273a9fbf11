"""The stream protocol's choices, apart from the programs that make them, so a command line lists them as it starts.

ANSWER_MODES   what the solver writes: the answer, a program that prints it, or a function solve(problem)
LEARN_FROM     what a write from the stream may learn from
LESSONS        what a write reads of an attempt
"""

__all__ = ["ANSWER_MODES", "LEARN_FROM", "LESSONS"]

ANSWER_MODES = ("text", "program", "function")
LEARN_FROM = ("reference", "check", "self", "none")
#: What a write reads of an attempt: the solver's reasoning then its answer, or the answer alone.
LESSONS = ("reasoning", "answer")
