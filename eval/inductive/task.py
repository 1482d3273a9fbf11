"""The library's problem tasks: ACRE and List Functions (``reasoning_gym``'s data, :mod:`memreason.datasets.inductive`)."""

from __future__ import annotations

from memreason.datasets.inductive import ACRE, ListFunctions
from memreason.programs.hdr import CheckedBlickets, CheckedListFunction
from memreason.signatures import ACRE_TASK, LIST_FUNCTIONS_TASK, AnswerDetector, ApplyListFunction

from ..tasks.problem_task import ProblemTask

__all__ = ["TASKS"]

TASKS = [
    ProblemTask(
        ACRE(),
        signature=AnswerDetector,
        description=ACRE_TASK,
        has_oracle=True,  # the experiments settle the blickets (datasets.inductive.acre.true_blickets)
        checked_program=CheckedBlickets,
        summary="ACRE blicket-detector experiments (reasoning-gym): on, off or undetermined",
    ),
    ProblemTask(
        ListFunctions(),
        signature=ApplyListFunction,
        description=LIST_FUNCTIONS_TASK,
        checked_program=CheckedListFunction,
        summary="List Functions (reasoning-gym): the output list of a hidden function",
    ),
]
