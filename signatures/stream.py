"""Signatures of the memory programs over a stream of text problems (:mod:`memreason.programs.stream`).

Every solver signature puts ``memory`` first and the problem last: a server that reuses the KV cache of a
shared prompt prefix (llama-server) then evaluates the memory's tokens once for every problem it precedes.

    answer        <- SolveWithMemory(memory, problem)                               # text answers
    program       <- ProgramWithMemory(memory, problem)                             # a program printing the answer
    program       <- FunctionWithMemory(memory, problem)                            # solve(problem) for any such problem
    answer'       <- RetryWithFeedback(memory, problem, previous, feedback)         # retry after a failed check
    reflection    <- ReflectOnAttempt(problem, attempt, outcome)                    # Reflexion
    cheatsheet'   <- CurateStreamCheatsheet(cheatsheet, problem, solution, outcome) # Dynamic Cheatsheet, cumulative
    cheatsheet    <- SynthesizeCheatsheet(solved, problem)                          # ... retrieval and synthesis
    lessons       <- DistillMemoryItems(problem, attempt, outcome)                  # ReasoningBank: successes and failures
    correct       <- JudgeOwnAnswer(problem, answer)                                # the model's own judgement
"""

from __future__ import annotations

from typing import Annotated

import dspy
from annotated_types import Len
from pydantic import BaseModel, Field

__all__ = [
    "CurateStreamCheatsheet",
    "DistillMemoryItems",
    "FunctionWithMemory",
    "JudgeOwnAnswer",
    "MemoryItem",
    "ProgramWithMemory",
    "ReflectOnAttempt",
    "RetryWithFeedback",
    "SolveWithMemory",
    "SynthesizeCheatsheet",
]

_MEMORY = "what memory holds for problems like this one (may be empty)"


class MemoryItem(BaseModel):
    """One distilled lesson (ReasoningBank's memory item)."""

    title: str = Field(description="a short name for the strategy or pitfall")
    description: str = Field(default="", description="one sentence: when it applies")
    content: str = Field(description="the lesson itself: what to do, or what to avoid and why")


class SolveWithMemory(dspy.Signature):
    """Solve the problem. Use what memory holds where it helps. Give only the final answer in the format the
    problem asks for."""

    memory: str = dspy.InputField(desc=_MEMORY)
    problem: str = dspy.InputField(desc="the problem to solve")
    answer: str = dspy.OutputField(desc="the final answer only, in the format the problem asks for")


class ProgramWithMemory(dspy.Signature):
    """Write a short Python program that computes the answer to the problem and prints it, and nothing else, on
    its last line of output. Use what memory holds where it helps. The program reads no input and no files."""

    memory: str = dspy.InputField(desc=_MEMORY)
    problem: str = dspy.InputField(desc="the problem to solve")
    program: str = dspy.OutputField(desc="Python source that prints the final answer on its last line")


class FunctionWithMemory(dspy.Signature):
    """Write a Python function ``solve(problem: str) -> str`` that solves any problem of this kind: it reads the
    problem's text, computes the answer (searching where needed) and returns it as text in the format the
    problem asks for. Use what memory holds where it helps; a stored program that works may be reused as it is."""

    memory: str = dspy.InputField(desc=_MEMORY)
    problem: str = dspy.InputField(desc="the problem to solve (the function is run on this text)")
    program: str = dspy.OutputField(desc="Python source defining solve(problem: str) -> str")


class RetryWithFeedback(dspy.Signature):
    """Your previous answer to the problem failed a check. Solve it again, correcting what the feedback says.
    Give only the final answer in the format the problem asks for."""

    memory: str = dspy.InputField(desc=_MEMORY)
    problem: str = dspy.InputField(desc="the problem to solve")
    previous: str = dspy.InputField(desc="the previous answer (or program)")
    feedback: str = dspy.InputField(desc="what the check found wrong with it")
    answer: str = dspy.OutputField(desc="the corrected final answer (for a program: the corrected program)")


class ReflectOnAttempt(dspy.Signature):
    """Reflect on an attempt at a problem and its outcome: what worked or went wrong, and the lesson for
    similar problems, in two or three sentences."""

    problem: str = dspy.InputField(desc="the problem")
    attempt: str = dspy.InputField(desc="the answer (or program) given")
    outcome: str = dspy.InputField(desc="what is known of the attempt: right, wrong (and why), or not judged")
    reflection: str = dspy.OutputField(desc="a short verbal reflection and its lesson")


class CurateStreamCheatsheet(dspy.Signature):
    """Update a cheatsheet of strategies for solving problems of this kind.

    Keep what is still useful, merge repeats, and add the reusable strategies, worked patterns and code
    snippets the new problem teaches; where the attempt failed, note what to avoid. Return the whole updated
    cheatsheet, concise: one strategy, pattern or snippet an entry."""

    cheatsheet: str = dspy.InputField(desc="the current cheatsheet, an entry a line; may be empty")
    problem: str = dspy.InputField(desc="a problem just attempted")
    solution: str = dspy.InputField(desc="the answer (or program) given")
    outcome: str = dspy.InputField(desc="what is known of it: right, wrong (and why), or not judged")
    updated_cheatsheet: Annotated[list[str], Len(1, 12)] = dspy.OutputField(
        desc="the whole new cheatsheet: one to twelve entries, each a strategy, pattern or code snippet"
    )


class SynthesizeCheatsheet(dspy.Signature):
    """Write a short cheatsheet for the new problem from similar problems solved before: the strategies,
    patterns and code snippets of theirs that apply to it."""

    solved: str = dspy.InputField(desc="similar earlier problems, each with the answer given and its outcome")
    problem: str = dspy.InputField(desc="the new problem")
    cheatsheet: Annotated[list[str], Len(1, 8)] = dspy.OutputField(desc="one to eight entries useful for the new problem")


class DistillMemoryItems(dspy.Signature):
    """Distil reusable lessons from an attempt at a problem. From a success: the strategy that worked. From a
    failure: what went wrong and how to avoid it. State each in general terms, without this problem's values."""

    problem: str = dspy.InputField(desc="the problem")
    attempt: str = dspy.InputField(desc="the answer (or program) given")
    outcome: str = dspy.InputField(desc="succeeded, failed (and why), or not judged")
    lessons: Annotated[list[MemoryItem], Len(1, 3)] = dspy.OutputField(desc="one to three lessons")


class JudgeOwnAnswer(dspy.Signature):
    """Judge whether the answer to the problem is right, by checking it against the problem's statement."""

    problem: str = dspy.InputField(desc="the problem")
    answer: str = dspy.InputField(desc="the answer given")
    correct: bool = dspy.OutputField(desc="true when the answer is right")
