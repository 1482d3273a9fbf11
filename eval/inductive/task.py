"""The library's problem tasks: ACRE and List Functions (``reasoning_gym``'s data, :mod:`memreason.datasets.inductive`).

Their signatures, words and checked programs are imported when first asked for (:class:`memreason.lazy.Imported`),
so that listing the tasks and the programs that run on them imports no DSPy.
"""

from __future__ import annotations

from typing import Any

from memreason.datasets.inductive import ACRE, ListFunctions
from memreason.lazy import Imported

from ..tasks.problem_task import ProblemTask

__all__ = ["TASKS", "AcreTask", "ListFunctionsTask", "checked_blickets", "checked_list_function"]


def checked_blickets(**knobs: Any) -> Any:
    """ACRE's hypothesis-checked program (:class:`memreason.programs.hdr.CheckedBlickets`) with ``knobs``."""
    from memreason.programs.hdr import CheckedBlickets

    return CheckedBlickets(**knobs)


def checked_list_function(**knobs: Any) -> Any:
    """List Functions' hypothesis-checked program (:class:`memreason.programs.hdr.CheckedListFunction`) with ``knobs``."""
    from memreason.programs.hdr import CheckedListFunction

    return CheckedListFunction(**knobs)


class AcreTask(ProblemTask):
    """ACRE blicket-detector experiments."""

    signature = Imported("memreason.signatures:AnswerDetector")
    description = Imported("memreason.signatures:ACRE_TASK")


class ListFunctionsTask(ProblemTask):
    """List Functions: the output list of a hidden function."""

    signature = Imported("memreason.signatures:ApplyListFunction")
    description = Imported("memreason.signatures:LIST_FUNCTIONS_TASK")


TASKS = [
    AcreTask(
        ACRE(),
        has_oracle=True,  # the experiments settle the blickets (datasets.inductive.acre.true_blickets)
        checked_program=checked_blickets,
        summary="ACRE blicket-detector experiments (reasoning-gym): on, off or undetermined",
    ),
    ListFunctionsTask(
        ListFunctions(),
        checked_program=checked_list_function,
        summary="List Functions (reasoning-gym): the output list of a hidden function",
    ),
]
