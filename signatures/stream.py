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

ACE's playbook (Zhang et al. 2025), a generator that names the bullets it used, a reflector, a curator of deltas:

    bullet_ids, answer  <- SolveWithPlaybook(memory, problem)                       # ProgramWithPlaybook, FunctionWithPlaybook
    bullet_ids, answer' <- RetryWithPlaybook(memory, problem, previous, feedback)
    diagnosis, bullet_tags, key_insight <- ReflectOnPlaybookUse(problem, attempt, outcome, used_bullets)
    operations          <- CuratePlaybook(playbook, problem, reflection)            # ADD / UPDATE / MERGE / DELETE
"""

from __future__ import annotations

from typing import Annotated, Literal

import dspy
from annotated_types import Len
from pydantic import BaseModel, Field

__all__ = [
    "BulletTag",
    "CuratePlaybook",
    "CurateStreamCheatsheet",
    "DistillMemoryItems",
    "FunctionWithMemory",
    "FunctionWithPlaybook",
    "JudgeOwnAnswer",
    "MemoryItem",
    "PlaybookOperation",
    "PlaybookSection",
    "ProgramWithMemory",
    "ProgramWithPlaybook",
    "ReflectOnAttempt",
    "ReflectOnPlaybookUse",
    "RetryWithFeedback",
    "RetryWithPlaybook",
    "SolveWithMemory",
    "SolveWithPlaybook",
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


# -- ACE: a playbook of bullets ------------------------------------------------------------------------------

#: The sections of a playbook, in the order a read shows them.
PlaybookSection = Literal["strategies", "formulas and snippets", "pitfalls"]

_PLAYBOOK = "the playbook: bullets grouped by section, each starting with its id in brackets, e.g. [e3] (may be empty)"
_CITED = 'the ids of the playbook bullets you used, e.g. ["e3"] (an empty list when you used none)'


class BulletTag(BaseModel):
    """The reflector's judgement of one bullet the generator used."""

    id: str = Field(description="the bullet's id, e.g. e3")
    tag: Literal["helpful", "harmful", "neutral"] = Field(description="what the bullet did for this attempt")


class PlaybookOperation(BaseModel):
    """One change to a playbook, applied in code."""

    op: Literal["ADD", "UPDATE", "MERGE", "DELETE"] = Field(
        description="ADD a new bullet; UPDATE one bullet's text; MERGE two or more bullets into one; DELETE one bullet"
    )
    section: PlaybookSection = Field(default="strategies", description="for ADD: the section of the new bullet")
    ids: list[str] = Field(
        default_factory=list, description="UPDATE, DELETE: the one bullet's id; MERGE: the ids merged; ADD: none"
    )
    content: str = Field(default="", description="ADD, UPDATE, MERGE: the bullet's text; DELETE: empty")


class SolveWithPlaybook(dspy.Signature):
    """Solve the problem. The playbook holds bullets of strategies, formulas and pitfalls learned on earlier
    problems, each with its id in brackets; use those that help. Name the ids of the bullets you used, then give
    only the final answer in the format the problem asks for."""

    memory: str = dspy.InputField(desc=_PLAYBOOK)
    problem: str = dspy.InputField(desc="the problem to solve")
    bullet_ids: list[str] = dspy.OutputField(desc=_CITED)
    answer: str = dspy.OutputField(desc="the final answer only, in the format the problem asks for")


class ProgramWithPlaybook(dspy.Signature):
    """Write a short Python program that computes the answer to the problem and prints it, and nothing else, on
    its last line of output. The playbook holds bullets learned on earlier problems, each with its id in brackets;
    use those that help and name the ids of the bullets you used. The program reads no input and no files."""

    memory: str = dspy.InputField(desc=_PLAYBOOK)
    problem: str = dspy.InputField(desc="the problem to solve")
    bullet_ids: list[str] = dspy.OutputField(desc=_CITED)
    program: str = dspy.OutputField(desc="Python source that prints the final answer on its last line")


class FunctionWithPlaybook(dspy.Signature):
    """Write a Python function ``solve(problem: str) -> str`` that solves any problem of this kind: it reads the
    problem's text, computes the answer (searching where needed) and returns it as text in the format the
    problem asks for. The playbook holds bullets learned on earlier problems, each with its id in brackets; use
    those that help and name the ids of the bullets you used."""

    memory: str = dspy.InputField(desc=_PLAYBOOK)
    problem: str = dspy.InputField(desc="the problem to solve (the function is run on this text)")
    bullet_ids: list[str] = dspy.OutputField(desc=_CITED)
    program: str = dspy.OutputField(desc="Python source defining solve(problem: str) -> str")


class RetryWithPlaybook(dspy.Signature):
    """Your previous answer to the problem failed a check. Solve it again, correcting what the feedback says, with
    the playbook's bullets that help. Name the ids of the bullets you used, then give only the final answer in the
    format the problem asks for."""

    memory: str = dspy.InputField(desc=_PLAYBOOK)
    problem: str = dspy.InputField(desc="the problem to solve")
    previous: str = dspy.InputField(desc="the previous answer (or program)")
    feedback: str = dspy.InputField(desc="what the check found wrong with it")
    bullet_ids: list[str] = dspy.OutputField(desc=_CITED)
    answer: str = dspy.OutputField(desc="the corrected final answer (for a program: the corrected program)")


class ReflectOnPlaybookUse(dspy.Signature):
    """Reflect on an attempt at a problem that used bullets of a playbook. Say what went right or wrong and why,
    tag each bullet used as helpful, harmful or neutral for this attempt, and state the key insight for similar
    problems in one or two sentences, in general terms, without this problem's values."""

    problem: str = dspy.InputField(desc="the problem")
    attempt: str = dspy.InputField(desc="the reasoning (where kept) and the answer (or program) given")
    outcome: str = dspy.InputField(desc="what is known of the attempt: right, wrong (and why), or not judged")
    used_bullets: str = dspy.InputField(desc="the playbook bullets the attempt used, each with its id; may be none")
    diagnosis: str = dspy.OutputField(desc="what went right or wrong in the attempt, and why")
    bullet_tags: list[BulletTag] = dspy.OutputField(desc="one tag for each bullet used (an empty list when none)")
    key_insight: str = dspy.OutputField(desc="the lesson for similar problems: what to do, or what to avoid")


class CuratePlaybook(dspy.Signature):
    """Curate a playbook of bullets for problems of this kind from a reflection on a new attempt. Emit only the
    changes: ADD a bullet for an insight the playbook lacks, UPDATE a bullet the reflection corrects or sharpens,
    MERGE bullets that say the same thing, DELETE a bullet shown to be harmful or wrong. Refer to bullets by id.
    Keep each bullet to one reusable strategy, formula, code snippet or pitfall, in general terms. Emit no
    operation when the playbook already holds the insight."""

    playbook: str = dspy.InputField(desc="the current playbook: each bullet's id, section, helpful/harmful counts and text")
    problem: str = dspy.InputField(desc="the problem just attempted")
    reflection: str = dspy.InputField(desc="the reflection on the attempt and its key insight")
    operations: Annotated[list[PlaybookOperation], Len(0, 4)] = dspy.OutputField(desc="zero to four operations on the playbook")
